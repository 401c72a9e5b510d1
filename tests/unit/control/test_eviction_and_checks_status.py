"""Workload status transitions of evictions and admission checks, as Kueue writes them.

Kueue's order (pkg/workload/evict, jobframework reconciler step "handle eviction", workload controller's
SyncAdmittedCondition): Evicted=True (+ Preempted=True) with the checks reset to Pending; the Job stopped;
once it has no active pods, Requeued (True only after a preemption), QuotaReserved=False, Admitted=False.
"""

from __future__ import annotations

from typing import Any

from kueue_webhook.control.jobs.job_plan import ReleaseReservation
from kueue_webhook.control.output.conditions import (
    admitted_status,
    check_state_status,
    checks_status,
    evicted_status,
    find,
    released_status,
)
from tests.unit.control.plans import ADMISSION, job, plan, workload

JSON = dict[str, Any]
NOW = "2026-11-22T01:00:00Z"
LATER = "2026-11-22T02:00:00Z"
MESSAGE = "Preempted to accommodate a workload (UID: u, JobUID: j) due to prioritization in the ClusterQueue"


def with_status(status: JSON, base: JSON | None = None) -> JSON:
    out = base if base is not None else workload()
    out["status"] = {**(out.get("status") or {}), **status}
    return out


def admitted_with_checks(*checks: str) -> JSON:
    return with_status(admitted_status(workload(), admission=ADMISSION, now=NOW, admission_checks=checks))


def test_reservation_with_checks_lists_them_pending_and_is_not_admitted() -> None:
    reserved = admitted_with_checks("finance", "budget")
    conditions = reserved["status"]["conditions"]
    assert find(conditions, "QuotaReserved")["status"] == "True"  # type: ignore[index]
    admitted = find(conditions, "Admitted")
    assert admitted is not None
    assert (admitted["status"], admitted["reason"]) == ("False", "UnsatisfiedChecks")
    assert [(c["name"], c["state"]) for c in reserved["status"]["admissionChecks"]] == [
        ("budget", "Pending"),
        ("finance", "Pending"),
    ]
    assert all(c["lastTransitionTime"] == NOW for c in reserved["status"]["admissionChecks"])


def test_the_last_ready_check_admits_and_a_repeat_writes_nothing() -> None:
    reserved = admitted_with_checks("finance")
    ready = with_status(
        check_state_status(reserved, check="finance", state="Ready", message="Approved", now=LATER) or {},
        reserved,
    )
    assert ready["status"]["admissionChecks"][0]["lastTransitionTime"] == LATER
    synced = checks_status(ready, admission_checks=("finance",), now=LATER)
    assert synced is not None
    admitted = find(synced["conditions"], "Admitted")
    assert admitted is not None and (admitted["status"], admitted["reason"]) == ("True", "Admitted")
    assert checks_status(with_status(synced, ready), admission_checks=("finance",), now=LATER) is None
    assert check_state_status(ready, check="finance", state="Ready", message="Approved", now=LATER) is None
    assert check_state_status(ready, check="unknown", state="Ready", message="", now=LATER) is None


def evict(
    workload: JSON,
    reason: str = "Preempted",
    *,
    preemption: str = "",
    now: str = NOW,
    counted_as: tuple[str, str] | None = None,
) -> JSON:
    """The status of the eviction for ``reason`` (counted under it, with no cause, unless told otherwise)."""
    return evicted_status(
        workload,
        reason=reason,
        message=MESSAGE,
        preemption_reason=preemption,
        now=now,
        counted_as=counted_as or (reason, ""),
    )


def test_eviction_resets_checks_that_are_not_pending() -> None:
    reserved = admitted_with_checks("finance", "budget")
    ready = with_status(
        check_state_status(reserved, check="finance", state="Ready", message="Approved", now=NOW) or {},
        reserved,
    )
    evicted = evict(ready, preemption="InClusterQueue", now=LATER)
    by_name = {c["name"]: c for c in evicted["admissionChecks"]}
    assert by_name["finance"]["state"] == "Pending"
    assert by_name["finance"]["message"] == "Reset to Pending after eviction. Previously: Ready"
    assert by_name["budget"]["lastTransitionTime"] == NOW  # already Pending: untouched
    preempted = find(evicted["conditions"], "Preempted")
    assert preempted is not None and (preempted["reason"], preempted["message"]) == (
        "InClusterQueue",
        MESSAGE,
    )
    assert "admissionChecks" not in evict(admitted_with_checks(), now=LATER)


def evicted(reason: str) -> JSON:
    reserved = admitted_with_checks()
    preemption = "InClusterQueue" if reason == "Preempted" else ""
    return with_status(evict(reserved, reason, preemption=preemption), reserved)


def test_release_after_a_preemption_requeues_with_the_eviction_reason_and_message() -> None:
    released = released_status(evicted("Preempted"), reason="Pending", message=MESSAGE, now=LATER)
    conditions = released["conditions"]
    requeued = find(conditions, "Requeued")
    assert requeued is not None
    assert (requeued["status"], requeued["reason"], requeued["message"]) == ("True", "Preempted", MESSAGE)
    assert find(conditions, "QuotaReserved")["status"] == "False"  # type: ignore[index]
    admitted = find(conditions, "Admitted")
    assert admitted is not None and (admitted["status"], admitted["reason"]) == ("False", "NoReservation")
    assert released["admission"] is None


def test_release_after_a_drain_is_not_a_requeue() -> None:
    released = released_status(evicted("ClusterQueueStopped"), reason="Pending", message="stopped", now=LATER)
    requeued = find(released["conditions"], "Requeued")
    assert requeued is not None and (requeued["status"], requeued["reason"]) == (
        "False",
        "ClusterQueueStopped",
    )


def test_quota_is_released_only_once_the_job_has_no_active_pods() -> None:
    stopping = job(suspend=True)
    stopping["status"]["active"] = 2
    assert plan(stopping, evicted("Preempted")) is None
    stopping["status"]["active"] = 0
    assert isinstance(plan(stopping, evicted("Preempted")), ReleaseReservation)


def test_a_readmission_resets_the_eviction_in_its_status_and_leaves_the_read_workload_as_it_was() -> None:
    """The status written is a new one; the Workload it was derived from (the store's copy, or the one a
    conflict's retry derives from again) still shows the eviction."""
    evicted = with_status(evict(admitted_with_checks()))
    before = {
        kind: dict(find(evicted["status"]["conditions"], kind) or {}) for kind in ("Evicted", "Admitted")
    }
    status = admitted_status(evicted, admission=ADMISSION, now=LATER)
    assert (find(status["conditions"], "Evicted") or {}).get("status") == "False"
    assert (find(status["conditions"], "Admitted") or {}).get("status") == "True"
    after = {kind: find(evicted["status"]["conditions"], kind) for kind in ("Evicted", "Admitted")}
    assert after == before


def test_each_eviction_is_counted_in_the_scheduling_stats_by_reason_and_cause() -> None:
    """Kueue's workloadEvictionStateInc: status.schedulingStats.evictions, one entry per (reason,
    underlyingCause), its count up by one at each eviction."""
    first = with_status(evict(admitted_with_checks(), preemption="InClusterQueue"))
    second = evict(
        first,
        "DeactivatedDueToMaximumExecutionTimeExceeded",
        now=LATER,
        counted_as=("Deactivated", "MaximumExecutionTimeExceeded"),
    )
    again = evict(with_status(second, first), preemption="InClusterQueue", now=LATER)
    assert again["schedulingStats"] == {
        "evictions": [
            {"reason": "Preempted", "underlyingCause": "", "count": 2},
            {"reason": "Deactivated", "underlyingCause": "MaximumExecutionTimeExceeded", "count": 1},
        ]
    }
