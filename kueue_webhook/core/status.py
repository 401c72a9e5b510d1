"""ClusterQueue and LocalQueue ``status`` computed from the scheduler state, as Kueue fills them.

Pure functions returning the ``status`` dict (minus ``lastTransitionTime``, which the writer carries over from
the previous condition when status and reason did not change), so the controller only has to diff and patch,
and ``simulate`` reports exactly what a cluster would show. Field names, condition reasons and messages are
Kueue's: ``Active`` is ``Ready`` or ``Stopped``/``FlavorNotFound``/the AdmissionCheck reasons of
``check_references`` with ``Can't admit new workloads: ...``; usage lists every flavor and covered resource of
the spec in order, resources sorted by name, ``borrowed`` is what exceeds the nominal quota (always 0 outside
a cohort)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_webhook.api.pods_ready import rfc3339
from kueue_webhook.api.quantity import Format, Quantity
from kueue_webhook.core.model import FlavorResource, amount_quantity
from kueue_webhook.core.view import SchedulerView

__all__ = [
    "cluster_queue_active",
    "cluster_queue_status",
    "cohort_status",
    "local_queue_status",
    "reserved_usage",
]


def cluster_queue_active(state: SchedulerView, name: str) -> tuple[str, str, str]:
    """(status, reason, message) of a ClusterQueue's ``Active`` condition."""
    spec = state.cluster_queue(name)
    if spec is None:
        return "False", "Terminating", "Can't admit new workloads; clusterQueue is terminating"
    reasons: list[str] = []
    messages: list[str] = []
    if spec.stop_policy != "None":
        reasons.append("Stopped")
        messages.append("is stopped")
    missing = state.missing_flavors(name)
    if missing:
        reasons.append("FlavorNotFound")
        messages.append(f"references missing ResourceFlavor(s): {','.join(missing)}")
    for reason, message in state.check_references(name).problems():
        reasons.append(reason)
        messages.append(message)
    if reasons:
        return "False", reasons[0], f"Can't admit new workloads: {', '.join(messages)}."
    return "True", "Ready", "Can admit new workloads"


def _flavor_usage(
    state: SchedulerView, name: str, usage: Mapping[FlavorResource, int], *, with_borrowed: bool
) -> list[dict[str, Any]]:
    spec = state.cluster_queue(name)
    if spec is None:
        return []
    in_cohort = bool(spec.cohort_name)
    out: list[dict[str, Any]] = []
    for group in spec.resource_groups:
        for flavor in group.flavors:
            nominal = {quota.name: quota.nominal.nanos for quota in flavor.resources}
            resources = []
            for resource in sorted(group.covered_resources):
                used = usage.get((flavor.name, resource), 0)
                entry: dict[str, Any] = {
                    "name": resource,
                    "total": amount_quantity(resource, used).canonical(),
                }
                if with_borrowed:
                    borrowed = used - nominal.get(resource, 0) if in_cohort else 0
                    entry["borrowed"] = amount_quantity(resource, max(0, borrowed)).canonical()
                resources.append(entry)
            out.append({"name": flavor.name, "resources": resources})
    return out


def _usage_of(workloads: list[tuple[Any, bool]], *, admitted_only: bool) -> dict[FlavorResource, int]:
    total: dict[FlavorResource, int] = {}
    for info, admitted in workloads:
        if admitted_only and not admitted:
            continue
        for fr, amount in info.usage.items():
            total[fr] = total.get(fr, 0) + amount
    return total


def reserved_usage(state: SchedulerView, name: str) -> dict[FlavorResource, int]:
    """What the Workloads holding quota in a ClusterQueue use, per (flavor, resource), in nano-units (the
    totals of ``flavorsReservation``)."""
    return _usage_of(state.reserving_in(name), admitted_only=False)


def cluster_queue_status(state: SchedulerView, name: str) -> dict[str, Any]:
    """The ``status`` of a ClusterQueue (conditions without timestamps)."""
    reserving = state.reserving_in(name)
    status, reason, message = cluster_queue_active(state, name)
    out: dict[str, Any] = {
        "conditions": [{"type": "Active", "status": status, "reason": reason, "message": message}],
        "flavorsReservation": _flavor_usage(
            state, name, _usage_of(reserving, admitted_only=False), with_borrowed=True
        ),
        "flavorsUsage": _flavor_usage(
            state, name, _usage_of(reserving, admitted_only=True), with_borrowed=True
        ),
        "pendingWorkloads": state.pending_count(name),
        "reservingWorkloads": len(reserving),
        "admittedWorkloads": sum(1 for _, admitted in reserving if admitted),
    }
    share = state.fair_share(name) if state.fair_sharing else None
    if share is not None:
        out["fairSharing"] = {"weightedShare": share.rounded}
    return out


def cohort_status(state: SchedulerView, name: str) -> dict[str, Any]:
    """The ``status`` of a Cohort: its weighted share while fair sharing is on (empty otherwise)."""
    node = state.ledger.cohorts.get(name)
    if not state.fair_sharing or node is None:
        return {}
    return {"fairSharing": {"weightedShare": state.share_of(node).rounded}}


def local_queue_conditions(state: SchedulerView, namespace: str, name: str) -> list[dict[str, str]]:
    """A LocalQueue's ``Active`` condition: stopped, its ClusterQueue missing or inactive, or ready."""
    local_queue = state.local_queues.get(f"{namespace}/{name}")
    cluster_queue = local_queue.cluster_queue if local_queue is not None else ""
    if local_queue is None or local_queue.stop_policy != "None":
        reason, message = "Stopped", "LocalQueue is stopped"
    elif state.cluster_queue(cluster_queue) is None:
        reason, message = "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue"
    elif cluster_queue_active(state, cluster_queue)[0] != "True":
        reason, message = "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue"
    else:
        return [
            {
                "type": "Active",
                "status": "True",
                "reason": "Ready",
                "message": "Can submit new workloads to localQueue",
            }
        ]
    return [{"type": "Active", "status": "False", "reason": reason, "message": message}]


def local_queue_active(state: SchedulerView, namespace: str, name: str) -> str:
    """The status of the LocalQueue's ``Active`` condition ("True" or "False")."""
    return local_queue_conditions(state, namespace, name)[0]["status"]


def local_queue_status(state: SchedulerView, namespace: str, name: str) -> dict[str, Any]:
    """The ``status`` of a LocalQueue: its share of its ClusterQueue's pending and admitted work."""
    local_queue = state.local_queues.get(f"{namespace}/{name}")
    cluster_queue = local_queue.cluster_queue if local_queue is not None else ""
    conditions = local_queue_conditions(state, namespace, name)
    mine = [
        (info, admitted)
        for info, admitted in state.reserving_in(cluster_queue)
        if info.namespace == namespace and info.queue_name == name
    ]
    pending = sum(
        1
        for info in state.pending_unordered(cluster_queue)
        if info.namespace == namespace and info.queue_name == name
    )
    out: dict[str, Any] = {
        "conditions": conditions,
        "pendingWorkloads": pending,
        "reservingWorkloads": len(mine),
        "admittedWorkloads": sum(1 for _, admitted in mine if admitted),
        "flavorsReservation": _flavor_usage(
            state, cluster_queue, _usage_of(mine, admitted_only=False), with_borrowed=False
        ),
        "flavorsUsage": _flavor_usage(
            state, cluster_queue, _usage_of(mine, admitted_only=True), with_borrowed=False
        ),
    }
    consumed = state.admission_consumed(f"{namespace}/{name}")
    if consumed is not None:  # admission fair sharing's history (``admission_fairness``)
        amounts, at = consumed
        out["fairSharing"] = {
            "weightedShare": 0,
            "admissionFairSharingStatus": {
                "consumedResources": {
                    resource: Quantity(amount, Format.DECIMAL_SI).canonical()
                    for resource, amount in sorted(amounts.items())
                },
                "lastUpdate": rfc3339(at),
            },
        }
    return out
