"""The dispatch decisions of Kueue's MultiKueue workload reconciler (``reconcileGroup``), one rule a test."""

from __future__ import annotations

from typing import Any

from kueue_webhook.control.multikueue.plan import Group, component_binding, next_nomination, plan_dispatch

JSON = dict[str, Any]
TIMEOUT = 900.0
POD_SETS = [{"name": "main", "count": 1}]


def cond(kind: str, status: str = "True", reason: str = "", since: str = "2026-01-01T00:00:00Z") -> JSON:
    return {
        "type": kind,
        "status": status,
        "reason": reason or kind,
        "message": "",
        "lastTransitionTime": since,
    }


def local(
    state: str = "Pending", *conditions: JSON, cluster: str = "", nominated: list[str] | None = None
) -> JSON:
    status: JSON = {
        "admission": {"clusterQueue": "research"},
        "conditions": [cond("QuotaReserved"), *conditions],
        "admissionChecks": [{"name": "workers", "state": state, "message": ""}],
    }
    if cluster:
        status["clusterName"] = cluster
    if nominated is not None:
        status["nominatedClusterNames"] = nominated
    return {"metadata": {"name": "w", "namespace": "ml"}, "spec": {"podSets": POD_SETS}, "status": status}


def copy(*conditions: JSON, pod_sets: list[JSON] | None = None) -> JSON:
    return {
        "spec": {"podSets": POD_SETS if pod_sets is None else pod_sets},
        "status": {"conditions": list(conditions)},
    }


def plan(workload: JSON, remotes: dict[str, JSON | None], **kwargs: Any) -> Any:
    return plan_dispatch(Group(workload, "workers", remotes, **kwargs), worker_lost_timeout=TIMEOUT)


def test_a_reserved_workload_is_copied_to_every_reachable_worker_in_name_order() -> None:
    decided = plan(local(), {"b": None, "a": None}, unreachable={"c": 5.0})
    assert decided.nominate == ["a", "b"]
    assert decided.create == ["a", "b"]
    assert decided.check is None and decided.sync_job is None


def test_the_copy_admitted_first_wins_its_job_is_made_there_and_the_others_go() -> None:
    early = cond("Admitted", since="2026-01-01T00:00:01Z")
    late = cond("Admitted", since="2026-01-01T00:00:05Z")
    decided = plan(local(nominated=["a", "b", "c"]), {"a": copy(late), "b": copy(early), "c": copy()})
    assert decided.sync_job == "b"
    assert decided.delete == ["a", "c"]
    assert decided.check == ("Ready", 'The workload was admitted on "b"')
    assert decided.cluster_name == "b"


def test_a_ready_check_keeps_reading_its_worker_back_without_rewriting_the_check() -> None:
    decided = plan(local("Ready", cond("Admitted"), cluster="b"), {"a": None, "b": copy(cond("Admitted"))})
    assert decided.sync_job == "b" and decided.check is None and decided.delete == []
    assert decided.requeue_after == TIMEOUT


def test_a_finished_copy_finishes_the_manager_workload_after_its_status_is_read_back() -> None:
    done = cond("Finished", reason="Succeeded")
    decided = plan(local("Ready", cluster="b"), {"b": copy(cond("Admitted"), done)})
    assert decided.sync_job == "b"
    assert decided.finish == ("Succeeded", "")


def test_a_copy_finished_out_of_sync_sends_the_check_to_retry_instead() -> None:
    decided = plan(local("Ready", cluster="b"), {"b": copy(cond("Finished", reason="OutOfSync"))})
    assert decided.finish is None
    assert decided.check is not None and decided.check[0] == "Retry"


def test_after_an_out_of_sync_retry_the_stopped_job_s_status_is_still_read_back() -> None:
    out_of_sync = copy(cond("Admitted"), cond("Finished", reason="OutOfSync"))
    decided = plan(local("Pending", cond("Evicted")), {"b": out_of_sync})
    assert decided.finish is None and decided.sync_job == "b"


def test_a_lost_worker_is_waited_for_until_the_timeout_then_the_check_retries() -> None:
    workload = local("Ready", cond("Admitted"), cluster="a")
    waiting = plan(workload, {"b": None}, unreachable={"a": 100.0})
    assert waiting.check is None and waiting.requeue_after == TIMEOUT - 100.0
    lost = plan(workload, {"b": None}, unreachable={"a": TIMEOUT + 1})
    assert lost.check == ("Retry", "Admitting remote lost")


def test_a_copy_deleted_by_hand_requeues_the_workload() -> None:
    decided = plan(local("Ready", cluster="a"), {"a": None, "b": None})
    assert decided.check == ("Retry", "Admitting remote no longer exists")


def test_a_copy_evicted_in_its_worker_sends_a_ready_check_to_retry() -> None:
    decided = plan(local("Ready", cluster="a"), {"a": copy(cond("Evicted"))})
    assert decided.check == ("Retry", 'Workload evicted on worker cluster: "a", resetting for re-admission')


def test_once_a_worker_is_chosen_a_stale_admitted_copy_elsewhere_is_deleted_not_chosen() -> None:
    # worker a was lost, the Workload moved to b; a comes back with its old copy, admitted earlier
    old = cond("Admitted", since="2026-01-01T00:00:00Z")
    new = cond("Admitted", since="2026-01-01T01:00:00Z")
    decided = plan(local("Ready", cluster="b"), {"a": copy(old), "b": copy(new)})
    assert decided.delete == ["a"]
    assert decided.sync_job == "b" and decided.check is None


def test_a_manager_eviction_deactivates_the_running_copy_and_reads_its_status_back() -> None:
    evicted = local("Pending", cond("Evicted"))
    decided = plan(evicted, {"a": copy(cond("Admitted")), "b": None})
    assert decided.deactivate == "a" and decided.sync_job == "a"
    stopped = plan(evicted, {"a": copy(cond("Admitted"), cond("Evicted")), "b": None})
    assert stopped.deactivate is None and stopped.sync_job == "a"


def test_a_manager_eviction_with_no_copy_in_sight_waits_for_unreachable_workers_before_zeroing_pods() -> None:
    evicted = local("Pending", cond("Evicted"))
    waiting = plan(evicted, {"b": None}, unreachable={"a": 10.0})
    assert not waiting.reset_job_activity and waiting.requeue_after == TIMEOUT - 10.0
    after = plan(evicted, {"b": None}, unreachable={"a": TIMEOUT})
    assert after.reset_job_activity
    assert after.delete == ["b"]


def test_without_a_reservation_every_copy_goes_and_unreachable_workers_are_looked_at_again() -> None:
    released = local()
    released["status"]["conditions"] = [cond("QuotaReserved", "False")]
    released["status"].pop("admission")
    decided = plan(released, {"a": copy(), "b": None}, unreachable={"c": 1.0})
    assert decided.delete == ["a"] and decided.requeue_after == TIMEOUT


def test_a_deleted_manager_workload_deletes_its_copies() -> None:
    decided = plan(local("Ready", cluster="a"), {"a": copy(cond("Admitted")), "b": copy()}, deleted=True)
    assert decided.delete == ["a", "b"]


def test_a_copy_asking_for_other_pods_is_deleted_and_made_again() -> None:
    decided = plan(local(nominated=["a"]), {"a": copy(pod_sets=[{"name": "main", "count": 2}])})
    assert decided.delete == ["a"] and decided.create == ["a"]


def test_nothing_is_dispatched_while_another_check_is_not_ready() -> None:
    workload = local()
    workload["status"]["admissionChecks"].append({"name": "approval", "state": "Pending"})
    decided = plan(workload, {"a": None})
    assert decided.create == [] and decided.nominate is None


def test_a_rejected_check_is_left_alone() -> None:
    decided = plan(local("Rejected"), {"a": copy()})
    assert decided.delete == [] and decided.check is None


def test_another_dispatcher_s_nomination_is_honoured() -> None:
    decided = plan_dispatch(
        Group(local(nominated=["b"]), "workers", {"a": None, "b": None}),
        worker_lost_timeout=TIMEOUT,
        dispatcher="example.com/own-dispatcher",
    )
    assert decided.nominate is None and decided.create == ["b"]


def test_each_incremental_round_adds_the_next_workers_in_name_order() -> None:
    assert next_nomination([], ["c", "a", "d", "b"], 3) == ["a", "b", "c"]
    assert next_nomination(["a", "b", "c"], ["c", "a", "d", "b"], 3) == ["a", "b", "c", "d"]
    assert next_nomination(["a", "b", "c", "d"], ["c", "a", "d", "b"], 3) == []


def _prioritised(workload: JSON, name: str, value: int, kind: str = "WorkloadPriorityClass") -> JSON:
    group = "kueue.x-k8s.io" if kind == "WorkloadPriorityClass" else "scheduling.k8s.io"
    ref = {"group": group, "kind": kind, "name": name}
    return {**workload, "spec": {**workload["spec"], "priorityClassRef": ref, "priority": value}}


def test_a_changed_workload_priority_is_given_to_the_copies_not_deleted_with_them() -> None:
    """Kueue's MultiKueue workload reconciler, step 5: a priority change updates the copy in place."""
    admitted = local("Ready", cond("Admitted"), cluster="b")
    raised = _prioritised(admitted, "urgent", 1000)
    decided = plan(raised, {"b": _prioritised(copy(cond("Admitted")), "low", 10)})
    assert decided.update_priority == ["b"] and decided.delete == [] and decided.sync_job == "b"
    # the class's value changed, its name did not
    decided = plan(raised, {"b": _prioritised(copy(cond("Admitted")), "urgent", 10)})
    assert decided.update_priority == ["b"]
    assert plan(raised, {"b": _prioritised(copy(cond("Admitted")), "urgent", 1000)}).update_priority == []
    # a pod PriorityClass's priority is never changed in the copies
    pod_class = _prioritised(admitted, "p", 5, kind="PriorityClass")
    assert (
        plan(pod_class, {"b": _prioritised(copy(cond("Admitted")), "p", 1, "PriorityClass")}).update_priority
        == []
    )


def test_a_group_of_an_object_with_several_waits_then_goes_only_where_the_first_group_went() -> None:
    """Kueue's component Workloads (a LeaderWorkerSet's groups): none is sent before all exist and the
    lowest group has its worker; then the others go only there, and copies elsewhere are deleted."""
    held = plan(local(), {"a": None, "b": None}, hold=True)
    assert held.nominate is None and held.create == []
    bound = plan(local(), {"a": copy(), "b": None}, bound_to="b")
    assert bound.nominate == ["b"] and bound.create == ["b"] and bound.delete == ["a"]
    unreachable = plan(local(), {"a": None}, unreachable={"b": 1.0}, bound_to="b")
    assert unreachable.create == [] and not unreachable.nominate


def group_workload(index: int, cluster: str = "") -> JSON:
    workload = local(cluster=cluster)
    workload["metadata"]["annotations"] = {"kueue.x-k8s.io/component-workload-index": str(index)}
    return workload


def test_the_lowest_group_picks_the_worker_once_all_groups_exist_and_the_others_follow_it() -> None:
    """Kueue's ``isPrimaryComponentWorkload`` and ``allExpectedWorkloadsExist``."""
    first, second = group_workload(0), group_workload(1)
    assert component_binding(first, [], expected=2) == (None, True)  # the second group is not there yet
    assert component_binding(first, [second], expected=2) == (None, False)
    assert component_binding(second, [first], expected=2) == (None, True)
    assert component_binding(second, [group_workload(0, cluster="b")], expected=2) == ("b", False)
