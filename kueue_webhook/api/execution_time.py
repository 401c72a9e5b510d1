"""A Workload's time limit: ``spec.maximumExecutionTimeSeconds`` counted over every admission it had.

Kueue's workload controller (``reconcileMaxExecutionTime``) deactivates an admitted Workload once the time
since its Admitted condition turned True, plus ``status.accumulatedPastExecutionTimeSeconds`` (the time of
its earlier admissions, added each time Admitted turns False: ``SyncAdmittedCondition``), reaches the
limit. The Workload is then evicted as deactivated (reason ``DeactivatedDueToMaximumExecutionTimeExceeded``)
and ``spec.active`` set to false, so it does not queue again until a user sets it back to true. Pure: the
controller's timers (``kueue_webhook.control.scheduling.execution_limits``) decide when to look.
"""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.objects.common import parse_timestamp

JSON = dict[str, Any]

#: Kueue's DeactivationTarget reason and eviction cause (``WorkloadMaximumExecutionTimeExceeded``)
MAXIMUM_EXECUTION_TIME_EXCEEDED = "MaximumExecutionTimeExceeded"
#: the Evicted condition Kueue's evict.Evict writes for it (reason ``Deactivated`` + ``DueTo`` + cause)
DEACTIVATED_REASON = f"DeactivatedDueTo{MAXIMUM_EXECUTION_TIME_EXCEEDED}"
DEACTIVATED_MESSAGE = "The workload is deactivated due to exceeding the maximum execution time"
#: the status field Kueue accumulates past admissions' time into
ACCUMULATED = "accumulatedPastExecutionTimeSeconds"


def _condition(workload: JSON, kind: str) -> JSON | None:
    for condition in (workload.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == kind:
            return condition
    return None


def _is_true(workload: JSON, kind: str) -> bool:
    condition = _condition(workload, kind)
    return condition is not None and condition.get("status") == "True"


def limit_seconds(workload: JSON) -> int | None:
    """``spec.maximumExecutionTimeSeconds`` when it is a positive integer (the API's minimum is 1)."""
    limit = (workload.get("spec") or {}).get("maximumExecutionTimeSeconds")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        return None
    return limit


def accumulated_seconds(workload: JSON) -> int:
    """Seconds the Workload ran in its earlier admissions (0 when never evicted)."""
    value = (workload.get("status") or {}).get(ACCUMULATED)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def deadline(workload: JSON) -> float | None:
    """When (seconds since the epoch) the Workload's time is up, or None: no limit, not admitted, or
    already evicted, finished or deactivated (nothing left to enforce)."""
    limit = limit_seconds(workload)
    if limit is None or not _is_true(workload, "Admitted"):
        return None
    if _is_true(workload, "Evicted") or _is_true(workload, "Finished"):
        return None
    if (workload.get("spec") or {}).get("active") is False:
        return None
    admitted = _condition(workload, "Admitted") or {}
    return parse_timestamp(admitted.get("lastTransitionTime")) + limit - accumulated_seconds(workload)


def accumulated_after_admission(workload: JSON, now: float) -> int | None:
    """The accumulated time once an admission that is ending is counted in (Kueue adds whole seconds since
    Admitted turned True when it turns False), or None when the Workload is not admitted now."""
    if not _is_true(workload, "Admitted"):
        return None
    admitted = _condition(workload, "Admitted") or {}
    since = parse_timestamp(admitted.get("lastTransitionTime"))
    if not since:
        return None
    return accumulated_seconds(workload) + max(0, int(now - since))


def exceeded_event_message(workload: JSON) -> str:
    """The Warning Event Kueue records on the Workload (reason ``MaximumExecutionTimeExceeded``)."""
    return f"The maximum execution time ({limit_seconds(workload) or 0}s) exceeded"


def total_execution_seconds(workload: JSON) -> float | None:
    """How long a finished Workload ran over all its admissions (Kueue's ``TotalExecutionTime``): the
    accumulated time of earlier admissions plus Finished's transition minus Admitted's; None unless both
    are True."""
    if not (_is_true(workload, "Admitted") and _is_true(workload, "Finished")):
        return None
    admitted, finished = _condition(workload, "Admitted") or {}, _condition(workload, "Finished") or {}
    since = parse_timestamp(admitted.get("lastTransitionTime"))
    until = parse_timestamp(finished.get("lastTransitionTime"))
    if not since or not until:
        return None
    return accumulated_seconds(workload) + max(0.0, until - since)
