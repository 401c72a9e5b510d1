"""Builders for core tests: manifests in, typed objects out, so a test reads like the YAML users write."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.objects import (
    AdmissionCheck,
    ClusterQueue,
    Cohort,
    LocalQueue,
    ResourceFlavor,
    Workload,
    parse_admission_check,
    parse_cluster_queue,
    parse_cohort,
    parse_local_queue,
    parse_resource_flavor,
    parse_workload,
)
from kueue_webhook.core.scheduler import Admit, Decision, SchedulerState, Wait
from tests.support.builders import Quota, groups


def cluster_queue(name: str, *resource_groups: dict[str, dict[str, Quota]], **spec: Any) -> ClusterQueue:
    body = {"namespaceSelector": {}, "resourceGroups": groups(*resource_groups), **spec}
    parsed = parse_cluster_queue({"metadata": {"name": name}, "spec": body})
    assert isinstance(parsed, ClusterQueue), parsed
    return parsed


def cohort(name: str, *resource_groups: dict[str, dict[str, Quota]], parent: str = "") -> Cohort:
    spec: dict[str, Any] = {"resourceGroups": groups(*resource_groups)}
    if parent:
        spec["parentName"] = parent
    parsed = parse_cohort({"metadata": {"name": name}, "spec": spec})
    assert isinstance(parsed, Cohort), parsed
    return parsed


def flavor(
    name: str, *, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None
) -> ResourceFlavor:
    parsed = parse_resource_flavor(
        {"metadata": {"name": name}, "spec": {"nodeLabels": labels or {}, "nodeTaints": taints or []}}
    )
    assert isinstance(parsed, ResourceFlavor), parsed
    return parsed


def admission_check(
    name: str, *, active: bool = True, controller: str = "kueue-webhook.io/manual-approval"
) -> AdmissionCheck:
    """An AdmissionCheck as its controller leaves it: ``Active=True`` unless ``active`` is False."""
    status = {"conditions": [{"type": "Active", "status": "True" if active else "False"}]}
    parsed = parse_admission_check(
        {"metadata": {"name": name}, "spec": {"controllerName": controller}, "status": status}
    )
    assert isinstance(parsed, AdmissionCheck), parsed
    return parsed


def local_queue(name: str, cluster_queue_name: str, namespace: str = "ns", **spec: Any) -> LocalQueue:
    parsed = parse_local_queue(
        {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue_name, **spec},
        }
    )
    assert isinstance(parsed, LocalQueue), parsed
    return parsed


def workload(
    name: str,
    requests: dict[str, Any] | None = None,
    *,
    queue: str = "lq",
    namespace: str = "ns",
    count: int = 1,
    priority: int | None = None,
    created: int = 0,
    pod_sets: list[dict[str, Any]] | None = None,
    pod_spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    deleting: bool = False,
    annotations: dict[str, str] | None = None,
    active: bool | None = None,
) -> Workload:
    container = {"name": "c", "resources": {"requests": requests if requests is not None else {"cpu": "1"}}}
    template = {"spec": {"containers": [container], **(pod_spec or {})}}
    spec: dict[str, Any] = {
        "queueName": queue,
        "podSets": pod_sets or [{"name": "main", "count": count, "template": template}],
    }
    if priority is not None:
        spec["priority"] = priority
    minutes, seconds = divmod(created, 60)
    body: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "creationTimestamp": f"2026-01-01T00:{minutes:02d}:{seconds:02d}Z",
        },
        "spec": spec,
    }
    if annotations is not None:
        body["metadata"]["annotations"] = annotations
    if active is not None:
        spec["active"] = active
    if deleting:  # deleted, held by its finalizer
        body["metadata"]["deletionTimestamp"] = "2026-01-01T01:00:00Z"
        body["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
    if status is not None:
        body["status"] = status
    parsed = parse_workload(body)
    assert isinstance(parsed, Workload), parsed
    return parsed


def admitted_status(
    cluster_queue_name: str, flavors: dict[str, str], usage: dict[str, str], count: int = 1
) -> dict[str, Any]:
    return {
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
            {"type": "Admitted", "status": "True", "reason": "Admitted"},
        ],
        "admission": {
            "clusterQueue": cluster_queue_name,
            "podSetAssignments": [
                {"name": "main", "flavors": flavors, "resourceUsage": usage, "count": count}
            ],
        },
    }


def state_with(
    *queues: ClusterQueue,
    flavors: tuple[str, ...] = ("default",),
    local_queues: dict[str, str] | None = None,
    namespaces: dict[str, dict[str, str]] | None = None,
    checks: tuple[str, ...] = (),
) -> SchedulerState:
    """Flavors, active AdmissionChecks, ClusterQueues, namespace ``ns`` and LocalQueues (default: ``lq`` ->
    the first queue)."""
    state = SchedulerState()
    for name, labels in (namespaces or {"ns": {}}).items():
        state.upsert_namespace(name, labels)
    for name in flavors:
        state.upsert_resource_flavor(flavor(name))
    for name in checks:
        state.apply(admission_check(name))
    for queue in queues:
        state.upsert_cluster_queue(queue)
    routes = local_queues if local_queues is not None else {"lq": queues[0].name}
    for lq_name, cq_name in routes.items():
        state.upsert_local_queue(local_queue(lq_name, cq_name))
    return state


def run_until_quiet(
    state: SchedulerState, limit: int = 10_000, *, now: float | None = None
) -> list[Decision]:
    """Cycle until nothing more can be decided (what the controller and simulate do after events), at
    ``now`` on the scheduler's clock when given."""
    decisions: list[Decision] = []
    for _ in range(limit):
        if not state.has_work(now):
            return decisions
        decisions.extend(state.cycle(now))
    raise AssertionError("the scheduler kept deciding forever")


def admitted(decisions: list[Decision]) -> list[str]:
    return [d.workload for d in decisions if isinstance(d, Admit)]


def last_wait(decisions: list[Decision], key: str) -> Wait:
    waits = [d for d in decisions if isinstance(d, Wait) and d.workload == key]
    assert waits, f"no Wait decision for {key} in {decisions}"
    return waits[-1]
