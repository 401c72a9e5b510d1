"""Condition lists with ``meta.SetStatusCondition`` semantics, and the Workload status transitions we write.

Every status write must be a no-op when nothing changed, or a controller that re-derives status on each event
produces a write storm. So conditions are updated the way apimachinery does it: ``lastTransitionTime`` moves
only when ``status`` flips, and the caller learns whether anything changed at all. The messages and reasons
are Kueue's (``pkg/workload``: SetQuotaReservation, SyncAdmittedCondition, finish.Finish), because users
and tools match on them.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

JSON = dict[str, Any]
#: condition messages are capped like Kueue's api.TruncateConditionMessage (32 KiB)
MAX_MESSAGE = 32 * 1024


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def find(conditions: list[JSON] | None, kind: str) -> JSON | None:
    for condition in conditions or []:
        if condition.get("type") == kind:
            return condition
    return None


def is_true(obj: JSON | None, kind: str) -> bool:
    condition = find(((obj or {}).get("status") or {}).get("conditions"), kind)
    return condition is not None and condition.get("status") == "True"


def set_condition(
    conditions: list[JSON],
    *,
    kind: str,
    status: str,
    reason: str,
    message: str,
    generation: int | None,
    now: str,
) -> bool:
    """Insert or update ``kind`` in place; True if anything changed."""
    message = message[:MAX_MESSAGE]
    existing = find(conditions, kind)
    if existing is None:
        new: JSON = {"type": kind, "status": status, "reason": reason, "message": message}
        new["lastTransitionTime"] = now
        if generation is not None:
            new["observedGeneration"] = generation
        conditions.append(new)
        return True
    changed = False
    if existing.get("status") != status:
        existing["status"] = status
        existing["lastTransitionTime"] = now
        changed = True
    for field, value in (("reason", reason), ("message", message)):
        if existing.get(field) != value:
            existing[field] = value
            changed = True
    if generation is not None and existing.get("observedGeneration") != generation:
        existing["observedGeneration"] = generation
        changed = True
    return changed


def _generation(workload: JSON) -> int | None:
    value = (workload.get("metadata") or {}).get("generation")
    return value if isinstance(value, int) else None


def _conditions_copy(workload: JSON) -> list[JSON]:
    return copy.deepcopy(list((workload.get("status") or {}).get("conditions") or []))


def admitted_status(workload: JSON, *, admission: JSON, now: str) -> JSON:
    """``status`` with the quota reservation and admission recorded (no admission checks: both at once)."""
    conditions = _conditions_copy(workload)
    generation = _generation(workload)
    cluster_queue = str(admission.get("clusterQueue", ""))
    set_condition(
        conditions,
        kind="QuotaReserved",
        status="True",
        reason="QuotaReserved",
        message=f"Quota reserved in ClusterQueue {cluster_queue}",
        generation=generation,
        now=now,
    )
    set_condition(
        conditions,
        kind="Admitted",
        status="True",
        reason="Admitted",
        message="The workload is admitted",
        generation=generation,
        now=now,
    )
    for kind in ("Evicted", "Preempted"):  # SetQuotaReservation resets active eviction conditions
        previous = find(conditions, kind)
        if previous is not None and previous.get("status") == "True":
            set_condition(
                conditions,
                kind=kind,
                status="False",
                reason="QuotaReserved",
                message=f"Previously: {previous.get('message', '')}",
                generation=generation,
                now=now,
            )
    return {"admission": admission, "conditions": conditions}


def pending_status(workload: JSON, *, reason: str, message: str, now: str) -> JSON | None:
    """``status.conditions`` with QuotaReserved=False and the scheduler's reason; None if unchanged."""
    conditions = _conditions_copy(workload)
    changed = set_condition(
        conditions,
        kind="QuotaReserved",
        status="False",
        reason=reason,
        message=message,
        generation=_generation(workload),
        now=now,
    )
    return {"conditions": conditions} if changed else None


def finished_status(workload: JSON, *, reason: str, message: str, now: str) -> JSON | None:
    """``status.conditions`` with Finished=True (Succeeded, Failed, FailedToStart...); None if already."""
    if is_true(workload, "Finished"):
        return None
    conditions = _conditions_copy(workload)
    set_condition(
        conditions,
        kind="Finished",
        status="True",
        reason=reason,
        message=message,
        generation=_generation(workload),
        now=now,
    )
    return {"conditions": conditions}


def released_status(workload: JSON, *, reason: str, message: str, now: str) -> JSON:
    """Clear the reservation (the owner acknowledging an eviction): QuotaReserved=False, no admission."""
    conditions = _conditions_copy(workload)
    generation = _generation(workload)
    set_condition(
        conditions,
        kind="QuotaReserved",
        status="False",
        reason=reason,
        message=message,
        generation=generation,
        now=now,
    )
    set_condition(
        conditions,
        kind="Admitted",
        status="False",
        reason="NoReservation",
        message="The workload has no reservation",
        generation=generation,
        now=now,
    )
    return {"admission": None, "conditions": conditions}


def evicted_status(workload: JSON, *, reason: str, message: str, preemption_reason: str, now: str) -> JSON:
    """Evicted=True (and Preempted=True for a preemption), as Kueue's SetEvictedCondition does."""
    conditions = _conditions_copy(workload)
    generation = _generation(workload)
    set_condition(
        conditions,
        kind="Evicted",
        status="True",
        reason=reason,
        message=message,
        generation=generation,
        now=now,
    )
    if preemption_reason:
        set_condition(
            conditions,
            kind="Preempted",
            status="True",
            reason=preemption_reason,
            message=message,
            generation=generation,
            now=now,
        )
    return {"conditions": conditions}
