"""Condition lists with ``meta.SetStatusCondition`` semantics, and the Workload status transitions we write.

Every status write must be a no-op when nothing changed, or a controller that re-derives status on each event
produces a write storm. So conditions are updated the way apimachinery does it: ``lastTransitionTime`` moves
only when ``status`` flips, and the caller learns whether anything changed at all. The messages and reasons
are Kueue's (``pkg/workload``: SetQuotaReservation, SyncAdmittedCondition, finish.Finish), because users
and tools match on them.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from kueue_webhook.api.conditions import is_true as is_true  # the writers' callers read conditions here too
from kueue_webhook.api.execution_time import ACCUMULATED, accumulated_after_admission
from kueue_webhook.api.objects import AdmissionCheckState
from kueue_webhook.api.objects.common import parse_timestamp
from kueue_webhook.api.pods_ready import NOT_READY_MESSAGE, PODS_READY, WAIT_FOR_START
from kueue_webhook.core.checks import admitted_condition, sync_check_states

JSON = dict[str, Any]
#: condition messages are capped like Kueue's api.TruncateConditionMessage (32 KiB)
MAX_MESSAGE = 32 * 1024


_last_second: list[tuple[int, str]] = [(-1, "")]


def now_rfc3339() -> str:
    """The time as Kubernetes writes condition timestamps (whole seconds, UTC). Formatting is done once
    per second: under load thousands of conditions a second share the same string."""
    second = int(time.time())
    cached_second, text = _last_second[0]
    if second != cached_second:
        text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        _last_second[0] = (second, text)
    return text


def find(conditions: list[JSON] | None, kind: str) -> JSON | None:
    for condition in conditions or []:
        if condition.get("type") == kind:
            return condition
    return None


def observed_generation(obj: JSON) -> int | None:
    """``metadata.generation``, what a condition written now reports as its ``observedGeneration``."""
    value = (obj.get("metadata") or {}).get("generation")
    return value if isinstance(value, int) else None


@dataclass(slots=True)
class ConditionsEdit:
    """Conditions being rewritten at one instant with ``meta.SetStatusCondition`` semantics: the list
    (edited in place), the generation they observe, and the time a flip is stamped with."""

    conditions: list[JSON]
    generation: int | None
    now: str

    @classmethod
    def of(cls, obj: JSON, now: str) -> ConditionsEdit:
        """A copy of ``obj``'s conditions (``obj`` is left as it is), observing its generation. Each condition
        is copied one level deep: an edit replaces a condition's fields, never edits inside one (a
        condition's fields are strings and numbers), and this runs for every status write."""
        conditions = [
            dict(condition) if isinstance(condition, dict) else copy.deepcopy(condition)
            for condition in (obj.get("status") or {}).get("conditions") or []
        ]
        return cls(conditions, observed_generation(obj), now)

    def set(self, kind: str, status: str, reason: str, message: str) -> bool:
        """Insert or update ``kind``; True if anything changed."""
        message = message[:MAX_MESSAGE]
        existing = find(self.conditions, kind)
        if existing is None:
            new: JSON = {"type": kind, "status": status, "reason": reason, "message": message}
            new["lastTransitionTime"] = self.now
            if self.generation is not None:
                new["observedGeneration"] = self.generation
            self.conditions.append(new)
            return True
        changed = False
        if existing.get("status") != status:
            existing["status"] = status
            existing["lastTransitionTime"] = self.now
            changed = True
        for field, value in (("reason", reason), ("message", message)):
            if existing.get(field) != value:
                existing[field] = value
                changed = True
        if self.generation is not None and existing.get("observedGeneration") != self.generation:
            existing["observedGeneration"] = self.generation
            changed = True
        return changed


def _check_states(workload: JSON) -> tuple[AdmissionCheckState, ...]:
    out: list[AdmissionCheckState] = []
    for entry in (workload.get("status") or {}).get("admissionChecks") or []:
        if isinstance(entry, dict) and entry.get("name"):
            out.append(
                AdmissionCheckState(
                    str(entry["name"]),
                    str(entry.get("state") or "Pending"),
                    str(entry.get("message") or ""),
                    str(entry.get("lastTransitionTime") or ""),
                )
            )
    return tuple(out)


def _stamped(states: tuple[AdmissionCheckState, ...], now: str) -> list[JSON]:
    """The API requires ``lastTransitionTime`` on every check state: new ones get ``now``."""
    return [
        (state if state.last_transition_time else replace(state, last_transition_time=now)).to_dict()
        for state in states
    ]


def admitted_status(
    workload: JSON,
    *,
    admission: JSON,
    now: str,
    admission_checks: tuple[str, ...] = (),
    pods_ready: bool = False,
) -> JSON:
    """``status`` with the quota reservation recorded, and Admitted as Kueue's SyncAdmittedCondition
    derives it: True at once without admission checks; with checks, ``status.admissionChecks`` lists
    them (new ones Pending) and Admitted stays False until every one is Ready. With waitForPodsReady
    (``pods_ready``) the same write says PodsReady=False WaitForStart, what Kueue's job reconciler sets
    next, so admission stays one status write."""
    edit = ConditionsEdit.of(workload, now)
    cluster_queue = str(admission.get("clusterQueue", ""))
    edit.set("QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {cluster_queue}")
    states: tuple[AdmissionCheckState, ...] = ()
    if admission_checks:
        states, _ = sync_check_states(_check_states(workload), admission_checks)
    edit.set("Admitted", *admitted_condition(has_quota_reservation=True, states=states))
    for kind in ("Evicted", "Preempted"):  # SetQuotaReservation resets active eviction conditions
        previous = find(edit.conditions, kind)
        if previous is not None and previous.get("status") == "True":
            edit.set(kind, "False", "QuotaReserved", f"Previously: {previous.get('message', '')}")
    if pods_ready:
        edit.set(PODS_READY, "False", WAIT_FOR_START, NOT_READY_MESSAGE)
    out: JSON = {"admission": admission, "conditions": edit.conditions}
    if admission_checks:
        out["admissionChecks"] = _stamped(states, now)
    return out


def checks_status(workload: JSON, *, admission_checks: tuple[str, ...], now: str) -> JSON | None:
    """Bring ``status.admissionChecks`` in line with the ClusterQueue's checks and Admitted in line with
    their states (Kueue's workload controller: syncAdmissionCheckConditions + SyncAdmittedCondition);
    None when nothing changes. Only for a Workload holding a reservation."""
    states, changed = sync_check_states(_check_states(workload), admission_checks)
    edit = ConditionsEdit.of(workload, now)
    changed |= edit.set("Admitted", *admitted_condition(has_quota_reservation=True, states=states))
    if not changed:
        return None
    return {"conditions": edit.conditions, "admissionChecks": _stamped(states, now)}


def check_state_status(workload: JSON, *, check: str, state: str, message: str, now: str) -> JSON | None:
    """Set one check's state (what a check controller reports); None when it already says so or the
    Workload does not list that check."""
    states = list(_check_states(workload))
    for index, existing in enumerate(states):
        if existing.name != check:
            continue
        if existing.state == state and existing.message == message:
            return None
        moved = now if existing.state != state else (existing.last_transition_time or now)
        states[index] = AdmissionCheckState(check, state, message, moved)
        return {"admissionChecks": _stamped(tuple(states), now)}
    return None


#: Kueue's Admitted condition of a Workload without a quota reservation (SyncAdmittedCondition, with the
#: UnadmittedWorkloadsObservability gate on by default since 0.19: also when its checks are not all ready)
NO_RESERVATION = ("False", "NoReservation", "The workload has no reservation")


def pending_status(
    workload: JSON, *, reason: str, message: str, now: str, pods_ready: bool = False
) -> JSON | None:
    """``status.conditions`` with QuotaReserved=False and the scheduler's reason, and Admitted=False
    ``NoReservation`` in the same write, as Kueue's UnsetQuotaReservationWithCondition syncs it; None if
    unchanged. With waitForPodsReady (``pods_ready``) a Workload without PodsReady gets False WaitForStart
    in the same write, as Kueue's job reconciler sets it on every Workload it sees, admitted or not."""
    edit = ConditionsEdit.of(workload, now)
    changed = edit.set("QuotaReserved", "False", reason, message)
    changed |= edit.set("Admitted", *NO_RESERVATION)
    if pods_ready and changed and find(edit.conditions, PODS_READY) is None:
        edit.set(PODS_READY, "False", WAIT_FOR_START, NOT_READY_MESSAGE)
    return {"conditions": edit.conditions} if changed else None


#: ours: an admitted Workload whose Job the API server refused to start (abnormal-true, like Kueue's
#: Evicted); absent until a start is refused, False again (reason ``Started``) once the Job starts
START_FAILED = "StartFailed"


def start_failed_status(workload: JSON, *, failed: bool, reason: str, message: str, now: str) -> JSON | None:
    """``status.conditions`` with StartFailed set (``failed``) or cleared; None if nothing changes.

    Clearing a Workload that never failed writes nothing: a start that succeeds at once costs no write.
    """
    edit = ConditionsEdit.of(workload, now)
    if not failed and find(edit.conditions, START_FAILED) is None:
        return None
    changed = edit.set(START_FAILED, "True" if failed else "False", reason, message)
    return {"conditions": edit.conditions} if changed else None


def finished_status(workload: JSON, *, reason: str, message: str, now: str) -> JSON | None:
    """``status.conditions`` with Finished=True (Succeeded, Failed, FailedToStart...); None if already."""
    if is_true(workload, "Finished"):
        return None
    edit = ConditionsEdit.of(workload, now)
    edit.set("Finished", "True", reason, message)
    return {"conditions": edit.conditions}


def released_status(workload: JSON, *, reason: str, message: str, now: str) -> JSON:
    """Clear the reservation (the owner acknowledging an eviction): QuotaReserved=False, no admission.

    After an eviction this is Kueue's jobframework step "the job is no longer active, clear the
    workload's admission": first ``Requeued`` with the Evicted condition's reason and message (True only
    for a preemption, the one eviction after which the workload simply queues again), then
    QuotaReserved=False and Admitted=False; the time the admission lasted is added to
    ``accumulatedPastExecutionTimeSeconds`` (what a time limit counts,
    ``kueue_webhook.api.execution_time``)."""
    edit = ConditionsEdit.of(workload, now)
    evicted = find(edit.conditions, "Evicted")
    if evicted is not None and evicted.get("status") == "True":
        evicted_reason = str(evicted.get("reason", ""))
        requeued = "True" if evicted_reason == "Preempted" else "False"
        edit.set("Requeued", requeued, evicted_reason, str(evicted.get("message", "")))
    edit.set("QuotaReserved", "False", reason, message)
    accumulated = accumulated_after_admission(workload, parse_timestamp(now))
    edit.set("Admitted", *NO_RESERVATION)
    if find(edit.conditions, PODS_READY) is not None:  # no longer admitted: Kueue's WaitForStart again
        edit.set(PODS_READY, "False", WAIT_FOR_START, NOT_READY_MESSAGE)
    status: JSON = {"admission": None, "conditions": edit.conditions}
    if accumulated is not None:  # Kueue's SyncAdmittedCondition counts the admission that ends
        status[ACCUMULATED] = accumulated
    return status


def pods_ready_status(workload: JSON, *, condition: tuple[str, str, str], now: str) -> JSON | None:
    """``status.conditions`` with PodsReady as ``condition`` (status, reason, message) says; None when it
    already has that status and reason (Kueue's HasConditionWithTypeAndReason)."""
    existing = find((workload.get("status") or {}).get("conditions"), PODS_READY)
    status, reason, message = condition
    if existing is not None and existing.get("status") == status and existing.get("reason") == reason:
        return None
    edit = ConditionsEdit.of(workload, now)
    edit.set(PODS_READY, status, reason, message)
    return {"conditions": edit.conditions}


def evicted_status(
    workload: JSON,
    *,
    reason: str,
    message: str,
    preemption_reason: str,
    now: str,
    counted_as: tuple[str, str],
) -> JSON:
    """Evicted=True (and Preempted=True for a preemption), as Kueue's evict.Evict does, which also resets
    every admission check that is not Pending to Pending so the checks start again on readmission, and
    forgets the worker cluster MultiKueue chose or nominated (``resetClusterNomination``), so the
    readmitted Workload is dispatched afresh. ``counted_as`` is the eviction's (reason, underlying cause) as
    ``status.schedulingStats.evictions`` counts it (``workloadEvictionStateInc``)."""
    edit = ConditionsEdit.of(workload, now)
    states = _check_states(workload)
    edit.set("Evicted", "True", reason, message)
    if preemption_reason:
        edit.set("Preempted", "True", preemption_reason, message)
    out: JSON = {"conditions": edit.conditions, "schedulingStats": _evictions_counted(workload, *counted_as)}
    for field_name in ("clusterName", "nominatedClusterNames"):
        if field_name in (workload.get("status") or {}):
            out[field_name] = None
    if any(state.state != "Pending" for state in states):
        out["admissionChecks"] = [
            state.to_dict()
            if state.state == "Pending"
            else AdmissionCheckState(
                state.name, "Pending", f"Reset to Pending after eviction. Previously: {state.state}", now
            ).to_dict()
            for state in states
        ]
    return out


def _evictions_counted(workload: JSON, reason: str, cause: str) -> JSON:
    """``status.schedulingStats`` with one more eviction for (``reason``, ``cause``)."""
    stats = (workload.get("status") or {}).get("schedulingStats") or {}
    evictions = [dict(e) for e in stats.get("evictions") or [] if isinstance(e, dict)]
    for entry in evictions:
        if entry.get("reason") == reason and entry.get("underlyingCause", "") == cause:
            entry["count"] = int(entry.get("count") or 0) + 1
            break
    else:
        evictions.append({"reason": reason, "underlyingCause": cause, "count": 1})
    return {**stats, "evictions": evictions}


def evictions_of(workload: JSON, reason: str, cause: str) -> int:
    """How many evictions for (``reason``, ``cause``) ``status.schedulingStats`` counts."""
    for entry in ((workload.get("status") or {}).get("schedulingStats") or {}).get("evictions") or []:
        if (
            isinstance(entry, dict)
            and entry.get("reason") == reason
            and entry.get("underlyingCause", "") == cause
        ):
            count = entry.get("count")
            return count if isinstance(count, int) else 0
    return 0


#: Kueue's pod condition marking a pod it is about to delete (``pod_controller.go``)
TERMINATION_TARGET = "TerminationTarget"


def termination_target_status(pod: JSON, *, reason: str, message: str, now: str) -> JSON:
    """A pod's ``status.conditions`` with ``TerminationTarget=True`` saying why it is stopped, written before
    the pod is deleted, as Kueue's ``Pod.Stop`` applies it (stamped with the time of the write)."""
    marked = {
        "type": TERMINATION_TARGET,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": now,
    }
    conditions = copy.deepcopy(list((pod.get("status") or {}).get("conditions") or []))
    for index, condition in enumerate(conditions):
        if condition.get("type") == TERMINATION_TARGET:
            conditions[index] = marked
            return {"conditions": conditions}
    return {"conditions": [*conditions, marked]}
