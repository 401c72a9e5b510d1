"""Pods, StatefulSets and LeaderWorkerSets dispatched by MultiKueue, as Kueue's adapters for them and its
jobframework treat them: the manager's pods of a Workload with a MultiKueue check are never ungated
(``ShouldSkipLocalExecution``), pod copies carry the origin and the prebuilt Workload's name and their
status comes back, and a worker names a copied object's Workloads after the manager's object."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.integrations.builtin import POD
from kueue_webhook.api.integrations.leaderworkersets import workload_of_group
from kueue_webhook.api.integrations.pod_groups import group_workload
from kueue_webhook.api.integrations.statefulsets import group_metadata, statefulset_workload
from kueue_webhook.api.multikueue import (
    ORIGIN_LABEL,
    ORIGIN_UID_ANNOTATION,
    PREBUILT_WORKLOAD_LABEL,
    copies_pods,
    dispatchable,
    gated,
    prebuilt_workload_name,
    runs_in_worker,
)
from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.jobs.job_plan import CreateWorkload, StartJob, StartPods, plan_job
from kueue_webhook.control.jobs.leaderworkersets import plan_leaderworkerset
from kueue_webhook.control.jobs.pod_groups import plan_group
from kueue_webhook.control.jobs.statefulsets import AdoptWorkload
from kueue_webhook.control.kube.kinds import kind_of
from kueue_webhook.control.multikueue.copies import (
    gated_object_copy,
    job_copy,
    mirrored_pod_status,
    pod_copy,
    pod_without_activity,
)
from kueue_webhook.control.multikueue.pod_copies import local_pods, workload_owner
from tests.unit.control.test_pod_group_plan import admitted, member

JSON = dict[str, Any]
PODS = kind_of(POD)
SCHEDULED_GATED = {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}


def with_check(workload: JSON, check: str) -> JSON:
    status = dict(workload.get("status") or {})
    status["admissionChecks"] = [{"name": check, "state": "Ready", "message": ""}]
    return workload | {"status": status}


def group_admitted() -> tuple[list[JSON], JSON]:
    pods = [member("a"), member("b")]
    built = group_workload("g", pods)
    assert isinstance(built, dict)
    return pods, admitted(built)


def test_pods_are_dispatched_through_their_gate_jobs_through_managed_by() -> None:
    assert dispatchable("", "Pod") and gated("", "Pod") and copies_pods("", "Pod")
    assert dispatchable("apps", "StatefulSet") and gated("apps", "StatefulSet")
    assert not copies_pods("apps", "StatefulSet")  # the worker's StatefulSet controller makes its pods
    assert dispatchable("batch", "Job") and not gated("batch", "Job")
    assert not dispatchable("apps", "Deployment")


def test_a_workload_runs_in_a_worker_when_its_status_lists_a_multikueue_check() -> None:
    _, workload = group_admitted()
    assert not runs_in_worker(workload, {"workers"})
    assert runs_in_worker(with_check(workload, "workers"), {"workers"})
    assert not runs_in_worker(with_check(workload, "provisioning"), {"workers"})


def test_an_admitted_group_with_a_multikueue_check_keeps_its_pods_gated() -> None:
    pods, workload = group_admitted()
    local = with_check(workload, "workers")
    assert isinstance(plan_group("g", pods, local, flavors=lambda _: None), StartPods)
    assert plan_group("g", pods, local, flavors=lambda _: None, dispatched=True) is None


def test_an_admitted_pod_with_a_multikueue_check_keeps_its_gate() -> None:
    single = member("solo")
    del single["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"]
    built = group_workload("g", [member("a"), member("b")])
    assert isinstance(built, dict)
    workload = admitted(built | {"spec": built["spec"] | {"podSets": [built["spec"]["podSets"][0]]}})
    workload["spec"]["podSets"][0] |= {"name": "main", "count": 1}
    workload["status"]["admission"]["podSetAssignments"] = [{"name": "main", "flavors": {}, "count": 1}]

    def plan(dispatched: bool) -> object:
        return plan_job(single, workload, flavors=lambda _: None, integration=POD, dispatched=dispatched)

    assert isinstance(plan(False), StartJob)
    assert plan(True) is None


def test_a_pod_copy_keeps_the_spec_with_its_gate_and_names_its_workload_copy() -> None:
    local = member("a")
    local["metadata"] |= {"resourceVersion": "3", "ownerReferences": [{"kind": "ReplicaSet"}]}
    copied = pod_copy(local, workload_name="g", origin="mgr")
    meta = copied["metadata"]
    assert meta["labels"]["kueue.x-k8s.io/multikueue-origin"] == "mgr"
    assert meta["annotations"][PREBUILT_WORKLOAD_LABEL] == "g"
    assert prebuilt_workload_name(copied) == "g"
    assert set(meta) == {"name", "namespace", "labels", "annotations"}
    assert copied["spec"] == local["spec"] and copied["spec"]["schedulingGates"]
    assert "status" not in copied


def test_the_prebuilt_name_is_read_from_the_annotation_before_the_label() -> None:
    both = {
        "metadata": {"annotations": {PREBUILT_WORKLOAD_LABEL: "a"}, "labels": {PREBUILT_WORKLOAD_LABEL: "l"}}
    }
    assert prebuilt_workload_name(both) == "a"
    assert prebuilt_workload_name({"metadata": {"labels": {PREBUILT_WORKLOAD_LABEL: "l"}}}) == "l"
    assert prebuilt_workload_name({"metadata": {}}) == ""


def test_a_gated_manager_pod_keeps_its_own_scheduled_condition_until_the_copy_is_scheduled() -> None:
    local = member("a")
    local["status"] = {"phase": "Pending", "conditions": [SCHEDULED_GATED]}
    remote = {"status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]}}
    assert mirrored_pod_status(local, remote) is None
    running = {
        "status": {
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
        }
    }
    assert mirrored_pod_status(local, running) == running["status"]
    local["status"] = running["status"]
    assert mirrored_pod_status(local, running) is None


def test_a_manager_pod_whose_copy_went_without_finishing_shows_no_activity() -> None:
    running = member("a", phase="Running")
    running["status"]["conditions"] = [SCHEDULED_GATED, {"type": "Ready", "status": "True"}]
    assert pod_without_activity(running) == {"phase": "Pending", "conditions": [SCHEDULED_GATED]}
    assert pod_without_activity(member("a", phase="Succeeded")) is None
    assert pod_without_activity(member("a", phase="Pending")) is None


def statefulset(uid: str, *, labels: JSON | None = None, annotations: JSON | None = None) -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": "web",
            "namespace": "ns",
            "uid": uid,
            "labels": {"kueue.x-k8s.io/queue-name": "q", **(labels or {})},
            "annotations": annotations or {},
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}},
        },
    }


def test_a_statefulset_copy_names_its_workload_by_annotation_and_carries_the_manager_s_uid() -> None:
    local = statefulset("manager-uid")
    name = statefulset_workload(local)["metadata"]["name"]
    body = gated_object_copy(job_copy(local, workload_name=name, origin="mgr"), local)
    meta = body["metadata"]
    assert PREBUILT_WORKLOAD_LABEL not in meta["labels"]  # a StatefulSet's name may not fit a label value
    assert meta["annotations"] == {PREBUILT_WORKLOAD_LABEL: name, ORIGIN_UID_ANNOTATION: "manager-uid"}
    assert meta["labels"][ORIGIN_LABEL] == "mgr" and body["spec"] == local["spec"]


def test_a_worker_names_a_statefulset_copy_s_workload_and_pod_group_after_the_manager_s_object() -> None:
    """Kueue's statefulset ``GetOwnerUID``: the origin uid on a copy, the object's own uid otherwise."""
    local = statefulset("manager-uid")
    expected = statefulset_workload(local)["metadata"]["name"]
    copied = statefulset(
        "worker-uid", labels={ORIGIN_LABEL: "mgr"}, annotations={ORIGIN_UID_ANNOTATION: "manager-uid"}
    )
    assert statefulset_workload(copied)["metadata"]["name"] == expected
    pod = {"metadata": {"name": "web-0", "labels": {}, "annotations": {}}, "spec": {}}
    patch = group_metadata(copied, pod, managed=True)
    assert patch is not None and patch["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-name"] == expected
    # without the origin label the annotation is not trusted: the object's own uid names its Workload
    forged = statefulset("worker-uid", annotations={ORIGIN_UID_ANNOTATION: "manager-uid"})
    assert statefulset_workload(forged)["metadata"]["name"] != expected


def leaderworkerset(uid: str, *, labels: JSON | None = None, annotations: JSON | None = None) -> JSON:
    template = {"metadata": {"labels": {"app": "serve"}}, "spec": {"containers": [{"name": "c"}]}}
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {
            "name": "serve",
            "namespace": "ns",
            "uid": uid,
            "labels": {"kueue.x-k8s.io/queue-name": "q", **(labels or {})},
            "annotations": annotations or {},
        },
        "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 1, "workerTemplate": template}},
    }


def test_a_worker_adopts_the_workload_copies_of_a_leaderworkerset_copy_instead_of_making_its_own() -> None:
    local = leaderworkerset("manager-uid")
    copies = [workload_of_group(local, index) for index in (0, 1)]
    for made in copies:  # as the manager copies them: no owner
        del made["metadata"]["ownerReferences"]
    copied = leaderworkerset(
        "worker-uid", labels={ORIGIN_LABEL: "mgr"}, annotations={ORIGIN_UID_ANNOTATION: "manager-uid"}
    )
    step = plan_leaderworkerset(copied, [], copies, managed=True)
    assert isinstance(step, AdoptWorkload) and step.workload is copies[0]
    assert step.patch["metadata"]["ownerReferences"][0]["uid"] == "worker-uid"
    # the manager's own LeaderWorkerSet never adopts a Workload it does not own: it makes its own
    assert isinstance(plan_leaderworkerset(local, [], copies, managed=True), CreateWorkload)


def test_a_workload_copy_not_adopted_yet_still_says_what_it_is_for() -> None:
    """The garbage collection deletes a copy's object with it, even before the worker's object owns it."""
    statefulset_copy = statefulset_workload(statefulset("manager-uid"))
    del statefulset_copy["metadata"]["ownerReferences"]
    assert workload_owner(statefulset_copy) == {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web"}
    _, workload = group_admitted()
    assert workload_owner(workload) == {"apiVersion": "v1", "kind": "Pod"}  # a group's: owned by every pod
    owned = {"metadata": {"ownerReferences": [{"kind": "Job", "name": "j", "controller": True}]}}
    assert workload_owner(owned) == {"kind": "Job", "name": "j", "controller": True}
    assert workload_owner({"metadata": {}}) is None


def test_only_gated_pods_of_a_group_are_copied_to_a_worker() -> None:
    """A pod labelled into someone's group without being queued (no gate) would run in the worker outside
    any quota: it is never copied."""
    store = Store()
    pods, workload = group_admitted()
    intruder = member("intruder", gated=False)
    for pod in [*pods, intruder, member("other")]:
        if pod["metadata"]["name"] == "other":
            pod["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] = "another-group"
        store.upsert(PODS, pod)
    workload["metadata"] |= {"name": "g", "namespace": "ns"}
    found = local_pods(store, PODS, workload)
    assert found is not None and [p["metadata"]["name"] for p in found] == ["a", "b"]
