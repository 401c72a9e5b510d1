"""ClusterQueue and LocalQueue status, computed from the store as Kueue's queue controllers report it.

The status is a pure function of what the store holds (the queue's spec, which ResourceFlavors exist, the
Workloads that point at it), so it can be recomputed after any event and compared with what the object
already shows: only a difference is written. The field layout is Kueue's: ``flavorsReservation`` counts
Workloads holding a reservation, ``flavorsUsage`` those also admitted, each listing every flavor of the
queue's resource groups in spec order and every covered resource with ``total`` and (ClusterQueue only)
``borrowed`` above the nominal quota; the ``Active`` condition says Ready or names what is missing, with
Kueue's reasons and messages (pkg/cache/scheduler/clusterqueue.go, pkg/controller/core/localqueue_controller).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from webhook.api.quantity import QuantityError, parse_quantity
from webhook.control.conditions import find, is_true, set_condition
from webhook.core.model import format_amount

JSON = dict[str, Any]
FlavorResource = tuple[str, str]


def workload_usage(workload: JSON) -> dict[FlavorResource, int]:
    """Nano-units charged by a Workload's ``status.admission``, per (flavor, resource)."""
    usage: dict[FlavorResource, int] = {}
    admission = (workload.get("status") or {}).get("admission") or {}
    for assignment in admission.get("podSetAssignments") or []:
        flavors = assignment.get("flavors") or {}
        for resource, amount in (assignment.get("resourceUsage") or {}).items():
            flavor = flavors.get(resource)
            if flavor is None:
                continue
            try:
                nanos = parse_quantity(amount).nanos
            except QuantityError:
                continue
            key = (str(flavor), str(resource))
            usage[key] = usage.get(key, 0) + nanos
    return usage


def has_reservation(workload: JSON) -> bool:
    return is_true(workload, "QuotaReserved") and bool((workload.get("status") or {}).get("admission"))


def is_pending(workload: JSON) -> bool:
    return not has_reservation(workload) and not is_true(workload, "Finished")


def _layout(cluster_queue: JSON) -> list[tuple[str, list[tuple[str, int | None]]]]:
    """[(flavor, [(resource, nominal nanos)])] in spec order."""
    out: list[tuple[str, list[tuple[str, int | None]]]] = []
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            resources: list[tuple[str, int | None]] = []
            for resource in flavor.get("resources") or []:
                try:
                    nominal: int | None = parse_quantity(resource.get("nominalQuota", 0)).nanos
                except QuantityError:
                    nominal = None
                resources.append((str(resource.get("name", "")), nominal))
            out.append((str(flavor.get("name", "")), resources))
    return out


def _sum(workloads: Iterable[JSON]) -> dict[FlavorResource, int]:
    total: dict[FlavorResource, int] = {}
    for workload in workloads:
        for key, nanos in workload_usage(workload).items():
            total[key] = total.get(key, 0) + nanos
    return total


def _flavor_list(
    layout: list[tuple[str, list[tuple[str, int | None]]]],
    totals: Mapping[FlavorResource, int],
    *,
    borrowed: bool,
) -> list[JSON]:
    out: list[JSON] = []
    for flavor, resources in layout:
        entries: list[JSON] = []
        for resource, nominal in resources:
            used = totals.get((flavor, resource), 0)
            entry: JSON = {"name": resource, "total": format_amount(resource, used)}
            if borrowed:
                entry["borrowed"] = format_amount(resource, max(0, used - (nominal or 0)))
            entries.append(entry)
        out.append({"name": flavor, "resources": entries})
    return out


def cluster_queue_active(cluster_queue: JSON, *, existing_flavors: set[str]) -> tuple[str, str, str]:
    """(status, reason, message) of the ``Active`` condition."""
    spec = cluster_queue.get("spec") or {}
    reasons: list[str] = []
    messages: list[str] = []
    if (spec.get("stopPolicy") or "None") != "None":
        reasons.append("Stopped")
        messages.append("is stopped")
    missing = [name for name, _ in _layout(cluster_queue) if name not in existing_flavors]
    if missing:
        reasons.append("FlavorNotFound")
        messages.append(f"references missing ResourceFlavor(s): {','.join(dict.fromkeys(missing))}")
    if (cluster_queue.get("metadata") or {}).get("deletionTimestamp"):
        return "False", "Terminating", "Can't admit new workloads; clusterQueue is terminating"
    if reasons:
        return "False", reasons[0], f"Can't admit new workloads: {', '.join(messages)}."
    return "True", "Ready", "Can admit new workloads"


def cluster_queue_status(
    cluster_queue: JSON, *, existing_flavors: set[str], workloads: Iterable[JSON], pending: int, now: str
) -> JSON:
    """The full ``status`` Kueue would show; ``workloads`` are those holding a reservation in this queue."""
    reserving = [w for w in workloads if has_reservation(w)]
    admitted = [w for w in reserving if is_true(w, "Admitted")]
    layout = _layout(cluster_queue)
    status = dict(cluster_queue.get("status") or {})
    conditions = [dict(c) for c in status.get("conditions") or []]
    active, reason, message = cluster_queue_active(cluster_queue, existing_flavors=existing_flavors)
    generation = (cluster_queue.get("metadata") or {}).get("generation")
    set_condition(
        conditions,
        kind="Active",
        status=active,
        reason=reason,
        message=message,
        generation=generation if isinstance(generation, int) else None,
        now=now,
    )
    status.update(
        {
            "conditions": conditions,
            "flavorsReservation": _flavor_list(layout, _sum(reserving), borrowed=True),
            "flavorsUsage": _flavor_list(layout, _sum(admitted), borrowed=True),
            "pendingWorkloads": pending,
            "reservingWorkloads": len(reserving),
            "admittedWorkloads": len(admitted),
        }
    )
    return status


def local_queue_status(
    local_queue: JSON, *, cluster_queue: JSON | None, workloads: Iterable[JSON], pending: int, now: str
) -> JSON:
    """LocalQueue ``status``: Active, counts, and per-flavor totals of its own Workloads."""
    reserving = [w for w in workloads if has_reservation(w)]
    admitted = [w for w in reserving if is_true(w, "Admitted")]
    status = dict(local_queue.get("status") or {})
    conditions = [dict(c) for c in status.get("conditions") or []]
    if ((local_queue.get("spec") or {}).get("stopPolicy") or "None") != "None":
        active, reason, message = "False", "Stopped", "LocalQueue is stopped"
    elif cluster_queue is None:
        active, reason, message = (
            "False",
            "ClusterQueueDoesNotExist",
            "Can't submit new workloads to clusterQueue",
        )
    elif is_true(cluster_queue, "Active"):
        active, reason, message = "True", "Ready", "Can submit new workloads to localQueue"
    else:
        active, reason, message = (
            "False",
            "ClusterQueueIsInactive",
            "Can't submit new workloads to clusterQueue",
        )
    generation = (local_queue.get("metadata") or {}).get("generation")
    set_condition(
        conditions,
        kind="Active",
        status=active,
        reason=reason,
        message=message,
        generation=generation if isinstance(generation, int) else None,
        now=now,
    )
    layout = _layout(cluster_queue) if cluster_queue is not None else []
    status.update(
        {
            "conditions": conditions,
            "pendingWorkloads": pending,
            "reservingWorkloads": len(reserving),
            "admittedWorkloads": len(admitted),
            "flavorsReservation": _flavor_list(layout, _sum(reserving), borrowed=False),
            "flavorsUsage": _flavor_list(layout, _sum(admitted), borrowed=False),
        }
    )
    return status


def status_differs(old: JSON | None, new: JSON) -> bool:
    """True when a write would change what users see (transition times alone never trigger a write)."""
    old = old or {}
    for key, value in new.items():
        if key == "conditions":
            for condition in value:
                before = find(old.get("conditions"), str(condition.get("type")))
                if before is None or any(
                    before.get(f) != condition.get(f)
                    for f in ("status", "reason", "message", "observedGeneration")
                ):
                    return True
        elif old.get(key) != value:
            return True
    return False
