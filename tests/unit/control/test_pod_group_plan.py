"""The pod group plan's excess pods and stop reasons, as Kueue's pod reconciler decides them
(pkg/controller/jobs/pod/pod_controller.go: removeExcessPods with sortActivePods, Stop with the
TerminationTarget condition)."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.integrations.builtin import POD
from kueue_webhook.api.integrations.pod_groups import (
    FAST_ADMISSION_ANNOTATION,
    SERVING_ANNOTATION,
    excess_pods,
    group_workload,
    role_hash,
)
from kueue_webhook.control.jobs.job_plan import (
    CreateWorkload,
    DeleteObjects,
    RemoveExcessPods,
    StartPods,
    plan_job,
)
from kueue_webhook.control.jobs.pod_groups import plan_group
from kueue_webhook.control.output.conditions import termination_target_status

JSON = dict[str, Any]
GATE = {"name": "kueue.x-k8s.io/admission"}
FINALIZER = "kueue.x-k8s.io/managed"


def member(
    name: str,
    *,
    created: str = "2026-01-01T00:00:00Z",
    gated: bool = True,
    held: bool = True,
    phase: str = "Pending",
    total: int = 2,
    cpu: str = "1",
) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "creationTimestamp": created,
            "labels": {
                "kueue.x-k8s.io/queue-name": "q",
                "kueue.x-k8s.io/managed": "true",
                "kueue.x-k8s.io/pod-group-name": "g",
            },
            "annotations": {"kueue.x-k8s.io/pod-group-total-count": str(total)},
            "finalizers": [FINALIZER] if held else [],
        },
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
            **({"schedulingGates": [dict(GATE)]} if gated else {}),
        },
        "status": {"phase": phase},
    }


def _role(pod: JSON) -> str:
    return role_hash(pod).lower()


def names(pods: Any) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def admitted(workload: JSON, *, evicted: str = "") -> JSON:
    conditions = [
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": ""},
        {"type": "Admitted", "status": "True", "reason": "Admitted", "message": ""},
    ]
    if evicted:
        conditions.append({"type": "Evicted", "status": "True", "reason": evicted, "message": "bumped"})
    assignments = [
        {"name": s["name"], "flavors": {}, "count": s["count"]} for s in workload["spec"]["podSets"]
    ]
    return workload | {
        "status": {
            "conditions": conditions,
            "admission": {"clusterQueue": "cq", "podSetAssignments": assignments},
        }
    }


def plan(pods: list[JSON], workload: JSON | None) -> Any:
    return plan_group("g", pods, workload, flavors=lambda _: None)


def test_before_the_workload_the_pods_beyond_the_total_count_are_excess_newest_first() -> None:
    pods = [
        member("c", created="2026-01-01T00:00:03Z"),
        member("a", created="2026-01-01T00:00:01Z"),
        member("b", created="2026-01-01T00:00:02Z"),
    ]
    assert names(excess_pods(pods)) == ["c"]
    assert excess_pods(pods[:2]) == []
    # pods that disagree on the group's size make no Workload, so none of them is excess
    assert excess_pods([*pods, member("d", total=3)]) == []


def test_pods_with_the_finalizer_and_started_pods_are_kept_before_older_ones() -> None:
    old_unheld = member("old", created="2026-01-01T00:00:01Z", held=False)
    young_held = member("young", created="2026-01-01T00:00:05Z")
    assert names(excess_pods([old_unheld, young_held], [{"name": _role(young_held), "count": 1}])) == ["old"]
    old_gated = member("old", created="2026-01-01T00:00:01Z")
    young_started = member("young", created="2026-01-01T00:00:05Z", gated=False)
    assert names(excess_pods([old_gated, young_started], [{"name": _role(old_gated), "count": 1}])) == ["old"]


def test_failed_pods_and_pods_deleted_before_reaching_a_node_do_not_count() -> None:
    failed = member("failed", phase="Failed", created="2026-01-01T00:00:00Z")
    deleted = member("deleted")
    deleted["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    pods = [failed, deleted, member("a"), member("b")]
    assert excess_pods(pods) == []


def test_with_a_workload_each_role_keeps_its_pod_set_count() -> None:
    small = [member(n, total=3, cpu="1") for n in ("s1", "s2")]
    large = [member(n, total=3, cpu="2", created="2026-01-01T00:00:09Z") for n in ("l1", "l2")]
    built = group_workload("g", [*small, large[0]])
    assert isinstance(built, dict)
    assert names(excess_pods([*small, *large], built["spec"]["podSets"])) == ["l2"]


def test_the_plan_deletes_the_excess_before_building_the_workload() -> None:
    pods = [member(n, created=f"2026-01-01T00:00:0{i}Z") for i, n in enumerate(("a", "b", "c"))]
    step = plan(pods, None)
    assert isinstance(step, RemoveExcessPods) and names(step.objects) == ["c"]
    assert isinstance(plan(pods[:2], None), CreateWorkload)


def test_a_pod_joining_an_admitted_group_beyond_its_count_is_excess() -> None:
    pods = [member(n, gated=False, phase="Running") for n in ("a", "b")]
    built = group_workload("g", pods)
    assert isinstance(built, dict)
    late = member("late", created="2026-01-01T00:05:00Z")
    step = plan([*pods, late], admitted(built))
    assert isinstance(step, RemoveExcessPods) and names(step.objects) == ["late"]


def test_an_excess_pod_already_gone_but_for_nothing_is_not_planned_again() -> None:
    pods = [member(n, created=f"2026-01-01T00:00:0{i}Z") for i, n in enumerate(("a", "b", "c"))]
    pods[2]["metadata"] |= {"finalizers": [], "deletionTimestamp": "2026-01-01T00:01:00Z"}
    pods[2]["spec"]["nodeName"] = "n1"  # still active to Kueue, but nothing is left to do for it
    assert not isinstance(plan(pods, None), RemoveExcessPods)


def test_an_evicted_groups_running_pods_are_stopped_with_kueues_reason() -> None:
    pods = [member(n, gated=False, phase="Running") for n in ("a", "b")]
    built = group_workload("g", pods)
    assert isinstance(built, dict)
    step = plan(pods, admitted(built, evicted="Preempted"))
    assert isinstance(step, DeleteObjects)
    assert (step.reason, step.message) == ("WorkloadEvictedDueToPreempted", "bumped")
    assert names(step.objects) == ["a", "b"]


def test_a_single_running_pods_stop_carries_its_reason_too() -> None:
    single = member("solo", gated=False, phase="Running")
    del single["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"]
    step = plan_job(single, None, flavors=lambda _: None, integration=POD)
    assert isinstance(step, DeleteObjects)
    assert (step.reason, step.message) == (
        "NoMatchingWorkload",
        "Missing Workload; unable to restore pod templates",
    )


def test_the_termination_target_condition_is_added_or_replaced() -> None:
    pod = member("a", gated=False, phase="Running")
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    status = termination_target_status(pod, reason="WorkloadDeleted", message="Workload is deleted", now="T1")
    assert status["conditions"] == [
        {"type": "Ready", "status": "True"},
        {
            "type": "TerminationTarget",
            "status": "True",
            "reason": "WorkloadDeleted",
            "message": "Workload is deleted",
            "lastTransitionTime": "T1",
        },
    ]
    pod["status"] = status
    again = termination_target_status(pod, reason="NotAdmitted", message="m", now="T2")
    assert [c["type"] for c in again["conditions"]] == ["Ready", "TerminationTarget"]
    assert again["conditions"][1]["reason"] == "NotAdmitted"
    assert pod["status"]["conditions"][1]["reason"] == "WorkloadDeleted"  # the input is left as it was


def serving(name: str, *, gated: bool = True) -> JSON:
    """A StatefulSet's pod: a serving group, never judged for excess once its Workload exists."""
    pod = member(name, created=f"2026-01-01T00:00:0{name[-1]}Z", gated=gated, total=3, held=False)
    pod["metadata"]["annotations"] |= {SERVING_ANNOTATION: "true", FAST_ADMISSION_ANNOTATION: "true"}
    if not gated:
        pod["status"]["phase"] = "Running"
    return pod


def test_a_serving_group_grown_past_its_workload_starts_no_more_pods_than_admitted() -> None:
    """A StatefulSet scaled from 3 to 5 through the scale subresource (no webhook sees it): its Workload
    holds quota for 3, so only 3 pods run, the oldest first; the others stay gated."""
    built = group_workload("g", [serving(f"p{i}", gated=False) for i in range(3)])
    assert isinstance(built, dict)
    workload = admitted(built)
    step = plan([serving(f"p{i}") for i in range(5)], workload)
    assert isinstance(step, StartPods) and names(p for p, _ in step.patches) == ["p0", "p1", "p2"]
    two_running = [serving("p0", gated=False), serving("p1", gated=False), *map(serving, ("p2", "p3", "p4"))]
    step = plan(two_running, workload)
    assert isinstance(step, StartPods) and names(p for p, _ in step.patches) == ["p2"]
    assert plan([*(serving(f"p{i}", gated=False) for i in range(3)), serving("p3")], workload) is None
