"""The store tolerates duplicate, stale and out-of-order watch events, and notifies only on real change."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_webhook.admission.view import ClusterView
from kueue_webhook.control.cache.store import Change, Store
from kueue_webhook.control.kube.kinds import JOBS, LOCAL_QUEUES, NAMESPACES, WORKLOADS


def obj(name: str, rv: int, *, uid: str = "u1", namespace: str = "ns", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": uid, "resourceVersion": str(rv)}
    meta.update(extra)
    return {"metadata": meta}


def recording_store() -> tuple[Store, list[Change]]:
    store = Store()
    seen: list[Change] = []
    store.subscribe(seen.append)
    return store, seen


def test_duplicate_event_is_a_no_op() -> None:
    store, seen = recording_store()
    assert store.upsert(JOBS, obj("a", 5))
    assert not store.upsert(JOBS, obj("a", 5))
    assert len(seen) == 1


def test_older_version_does_not_overwrite_newer() -> None:
    store, _ = recording_store()
    store.upsert(JOBS, obj("a", 7, labels={"v": "new"}))
    store.upsert(JOBS, obj("a", 6, labels={"v": "old"}))
    held = store.get(JOBS, "a", "ns")
    assert held is not None and held["metadata"]["labels"] == {"v": "new"}


def test_late_modified_after_delete_does_not_resurrect() -> None:
    store, seen = recording_store()
    store.upsert(JOBS, obj("a", 5))
    store.remove(JOBS, obj("a", 8))
    assert not store.upsert(JOBS, obj("a", 6))
    assert store.get(JOBS, "a", "ns") is None
    assert [c.new is None for c in seen] == [False, True]


def test_recreated_object_with_newer_version_is_accepted_after_delete() -> None:
    store, _ = recording_store()
    store.upsert(JOBS, obj("a", 5, uid="first"))
    store.remove(JOBS, obj("a", 8, uid="first"))
    assert store.upsert(JOBS, obj("a", 9, uid="second"))
    held = store.get(JOBS, "a", "ns")
    assert held is not None and held["metadata"]["uid"] == "second"


def test_late_delete_of_earlier_incarnation_keeps_current_object() -> None:
    store, _ = recording_store()
    store.upsert(JOBS, obj("a", 9, uid="second"))
    assert not store.remove(JOBS, obj("a", 8, uid="first"))
    assert store.get(JOBS, "a", "ns") is not None


def test_relist_removes_objects_deleted_while_disconnected() -> None:
    store, seen = recording_store()
    store.upsert(JOBS, obj("a", 1))
    store.upsert(JOBS, obj("b", 2, uid="u2"))
    store.replace(JOBS, [obj("b", 2, uid="u2"), obj("c", 4, uid="u3")])
    assert sorted(o["metadata"]["name"] for o in store.items(JOBS)) == ["b", "c"]
    assert sorted((c.key[1], c.new is None) for c in seen[2:]) == [("a", True), ("c", False)]


def test_workload_found_by_its_owner_job_uid() -> None:
    store = Store()
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "job-a", "uid": "job-uid", "controller": True}
    store.upsert(WORKLOADS, obj("job-a-123", 3, ownerReferences=[owner]))
    found = store.workload_owned_by(namespace="ns", owner_uid="job-uid")
    assert found is not None and found["metadata"]["name"] == "job-a-123"
    store.remove(WORKLOADS, obj("job-a-123", 4))
    assert store.workload_owned_by(namespace="ns", owner_uid="job-uid") is None


def test_a_workload_stays_found_by_its_owner_through_updates_and_an_owner_change() -> None:
    store = Store()
    first = {"apiVersion": "batch/v1", "kind": "Job", "name": "job-a", "uid": "first", "controller": True}
    second = {**first, "uid": "second"}
    store.upsert(WORKLOADS, obj("job-a-123", 3, ownerReferences=[first]))
    store.upsert(WORKLOADS, obj("job-a-123", 4, ownerReferences=[first], labels={"changed": "yes"}))
    found = store.workload_owned_by(namespace="ns", owner_uid="first")
    assert found is not None and found["metadata"]["resourceVersion"] == "4"
    store.upsert(WORKLOADS, obj("job-a-123", 5, ownerReferences=[second]))
    assert store.workload_owned_by(namespace="ns", owner_uid="first") is None
    assert store.workload_owned_by(namespace="ns", owner_uid="second") is not None
    store.upsert(WORKLOADS, obj("job-a-123", 6))
    assert store.workload_owned_by(namespace="ns", owner_uid="second") is None


def test_cluster_view_answers_namespace_labels_and_local_queues() -> None:
    store = Store()
    assert store.namespace_labels("team-a") is None
    store.upsert(NAMESPACES, {"metadata": {"name": "team-a", "resourceVersion": "1", "labels": {"x": "y"}}})
    assert store.namespace_labels("team-a") == {"x": "y", "kubernetes.io/metadata.name": "team-a"}
    store.upsert(LOCAL_QUEUES, obj("gpu", 2, namespace="team-a"))
    store.upsert(LOCAL_QUEUES, obj("cpu", 3, namespace="team-a", uid="u2"))
    store.upsert(LOCAL_QUEUES, obj("other", 4, namespace="team-b", uid="u3"))
    view: ClusterView = store
    assert list(view.local_queue_names("team-a")) == ["cpu", "gpu"]


events = st.lists(
    st.tuples(st.sampled_from(["upsert", "remove"]), st.sampled_from(["a", "b"]), st.integers(1, 30)),
    max_size=25,
)


@given(events)
def test_replaying_any_event_sequence_twice_gives_the_same_state(
    sequence: list[tuple[str, str, int]],
) -> None:
    """Idempotence: a watch replay after reconnect (every event seen again) changes nothing."""
    store = Store()

    def play() -> None:
        for op, name, rv in sequence:
            event = obj(name, rv, uid=name)
            if op == "upsert":
                store.upsert(JOBS, event)
            else:
                store.remove(JOBS, event)

    play()
    first = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in store.items(JOBS)}
    play()
    assert {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in store.items(JOBS)} == first


@given(events)
def test_held_object_is_the_newest_upsert_after_the_last_newer_delete(
    sequence: list[tuple[str, str, int]],
) -> None:
    """Order-insensitivity: what the store holds depends on versions, not on arrival order."""
    store = Store()
    for op, name, rv in sequence:
        event = obj(name, rv, uid=name)
        if op == "upsert":
            store.upsert(JOBS, event)
        else:
            store.remove(JOBS, event)
    for name in ("a", "b"):
        upserts = [rv for op, n, rv in sequence if n == name and op == "upsert"]
        removes = [rv for op, n, rv in sequence if n == name and op == "remove"]
        newest = max(upserts, default=-1)
        alive = newest > max(removes, default=-1)
        held = store.get(JOBS, name, "ns")
        if alive:
            assert held is not None and held["metadata"]["resourceVersion"] == str(newest)
        else:
            assert held is None


def test_managed_fields_and_last_applied_configuration_are_not_kept() -> None:
    store = Store()
    annotations = {"kubectl.kubernetes.io/last-applied-configuration": "{...}", "team": "a"}
    store.upsert(JOBS, obj("a", 1, managedFields=[{"manager": "kubectl"}], annotations=annotations))
    held = store.get(JOBS, "a", "ns")
    assert held is not None
    assert "managedFields" not in held["metadata"]
    assert held["metadata"]["annotations"] == {"team": "a"}


def test_every_object_reads_back_exactly_after_the_kind_dictionary_is_retrained() -> None:
    from kueue_webhook.control.cache.store import RETRAIN_AT

    store = Store()
    written: dict[str, dict[str, object]] = {}
    for index in range(RETRAIN_AT + 50):
        job = obj(f"job-{index}", index + 1, uid=f"uid-{index}", labels={"n": str(index) * (index % 7)})
        store.upsert(JOBS, job)
        written[f"job-{index}"] = job
    for index in range(0, RETRAIN_AT + 50, 3):  # updates: the dictionary is retrained with some of them
        job = obj(f"job-{index}", RETRAIN_AT + 100 + index, uid=f"uid-{index}")
        job["status"] = {"conditions": [{"type": "Complete", "status": "True", "message": f"done {index}"}]}
        store.upsert(JOBS, job)
        written[f"job-{index}"] = job
    assert {o["metadata"]["name"]: o for o in store.items(JOBS)} == written
    held = store.get(JOBS, "job-3", "ns")
    assert held == written["job-3"]
    assert held is not store.get(JOBS, "job-3", "ns")  # every read is a fresh copy


def test_workloads_created_in_a_burst_and_then_admitted_are_held_in_few_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import kueue_webhook.control.cache.store as store_module

    monkeypatch.setattr(store_module, "HOT_BYTES", 4096)  # a few objects: nearly all are held deflated

    def workload(index: int, version: int, *, admitted: bool) -> dict[str, Any]:
        held = obj(f"w-{index}", version, uid=f"uid-{index:06d}", creationTimestamp="2026-01-01T00:00:00Z")
        held["spec"] = {
            "queueName": "lq",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
                    },
                }
            ],
        }
        if admitted:
            condition = {
                "status": "True",
                "lastTransitionTime": "2026-01-01T00:00:01Z",
                "message": "admitted",
            }
            held["status"] = {
                "conditions": [
                    {"type": "QuotaReserved", "reason": "QuotaReserved", **condition},
                    {"type": "Admitted", "reason": "Admitted", **condition},
                ],
                "admission": {
                    "clusterQueue": "cq",
                    "podSetAssignments": [
                        {"name": "main", "flavors": {"cpu": "rf"}, "resourceUsage": {"cpu": "1"}, "count": 1}
                    ],
                },
            }
        return held

    count = 2 * store_module.RETRAIN_AT
    store = Store()
    for index in range(count):  # a burst of creations: the first retraining sees no update yet
        store.upsert(WORKLOADS, workload(index, index + 1, admitted=False))
    for index in range(count):
        store.upsert(WORKLOADS, workload(index, count + index + 1, admitted=True))
    assert store.get(WORKLOADS, "w-7", "ns") == workload(7, count + 8, admitted=True)
    # a dictionary of created Workloads alone held each admitted one in ~200 bytes, one with admitted
    # Workloads in it holds each in less than half that
    assert store.held_bytes(WORKLOADS) < 100 * count


def test_objects_read_back_exactly_whether_recently_written_or_long_since(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import kueue_webhook.control.cache.store as store_module

    monkeypatch.setattr(store_module, "HOT_BYTES", 600)  # a handful of objects
    store = Store()
    changes: list[Change] = []
    store.subscribe(changes.append)
    written: dict[str, dict[str, object]] = {}
    version = 0
    for index in range(store_module.RETRAIN_AT + 40):
        version += 1
        job = obj(f"job-{index}", version, uid=f"uid-{index}")
        store.upsert(JOBS, job)
        written[f"job-{index}"] = job
    for index in range(0, store_module.RETRAIN_AT + 40, 5):  # long cold, rewritten: old state reported
        version += 1
        updated = obj(f"job-{index}", version, uid=f"uid-{index}", labels={"rewritten": "yes"})
        assert store.upsert(JOBS, updated)
        assert changes[-1].old == written[f"job-{index}"] and changes[-1].new == updated
        written[f"job-{index}"] = updated
    assert not store.upsert(JOBS, {**written["job-5"]})  # same content again: no change
    store.remove(JOBS, written["job-7"])
    assert changes[-1].old == written.pop("job-7") and changes[-1].new is None
    assert {o["metadata"]["name"]: o for o in store.items(JOBS)} == written


def test_a_changed_owner_moves_the_owner_index_and_a_deletion_clears_it() -> None:
    store = Store()
    first = {"apiVersion": "batch/v1", "kind": "Job", "name": "a", "uid": "uid-a", "controller": True}
    second = {**first, "name": "b", "uid": "uid-b"}
    store.upsert(WORKLOADS, obj("wl", 3, ownerReferences=[first]))
    store.upsert(WORKLOADS, obj("wl", 4, ownerReferences=[second]))
    assert store.workload_owned_by(namespace="ns", owner_uid="uid-a") is None
    found = store.workload_owned_by(namespace="ns", owner_uid="uid-b")
    assert found is not None and found["metadata"]["resourceVersion"] == "4"
    store.remove(WORKLOADS, obj("wl", 5))
    assert store.workload_owned_by(namespace="ns", owner_uid="uid-b") is None


def test_listeners_read_the_previous_object_as_it_was_held() -> None:
    store, seen = recording_store()
    store.upsert(JOBS, obj("a", 1, labels={"v": "1"}))
    store.upsert(JOBS, obj("a", 2, labels={"v": "2"}))
    store.remove(JOBS, obj("a", 3))
    added, updated, deleted = seen
    assert added.added and added.old is None
    assert not updated.added
    assert updated.old == obj("a", 1, labels={"v": "1"})
    assert updated.new == obj("a", 2, labels={"v": "2"})
    assert deleted.new is None and deleted.old == obj("a", 2, labels={"v": "2"})
    assert updated.old is updated.old  # decoded once, then shared by every listener


def test_the_echo_of_a_stored_write_answer_tells_no_listener() -> None:
    """Our write's answer is stored at once; the watch then delivers the same resourceVersion again."""
    store, seen = recording_store()
    store.upsert(WORKLOADS, obj("wl", 7))
    answer = obj("wl", 8, labels={"admitted": "yes"})
    assert store.upsert(WORKLOADS, answer)
    assert not store.upsert(WORKLOADS, obj("wl", 8, labels={"admitted": "yes"}))
    assert len(seen) == 2


def test_a_gated_listener_hears_only_the_changes_made_while_its_gate_is_open() -> None:
    store = Store()
    open_gate = [False]
    heard: list[str] = []
    always: list[str] = []
    store.subscribe(lambda change: heard.append(change.key[1]), when=lambda: open_gate[0])
    store.subscribe(lambda change: always.append(change.key[1]))
    store.upsert(JOBS, obj("before", 1))
    open_gate[0] = True
    store.upsert(JOBS, obj("while", 2))
    assert heard == ["while"]
    assert always == ["before", "while"]
