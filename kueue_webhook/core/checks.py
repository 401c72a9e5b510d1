"""Admission checks: what a Workload's check states mean, and a built-in manual-approval check.

A ClusterQueue with ``admissionChecks`` (or ``admissionChecksStrategy``) reserves quota first and admits
only when every check reports ``Ready``. The rules are Kueue's (``pkg/workload/admissionchecks.go`` and
the workload controller), kept here as pure functions so the controller only writes what they return:

* ``sync_check_states``: the Workload lists exactly its ClusterQueue's checks, sorted by name, new ones
  ``Pending``;
* ``admitted_condition``: Admitted=True once quota is reserved and all checks are Ready, otherwise
  False with Kueue's reason and message;
* ``check_eviction``: a ``Retry`` check evicts the workload (reason ``AdmissionCheck``, ``Evicted due to
  AdmissionCheck in Retry state: "name" (message)``) so it requeues and the checks start again; a
  ``Rejected`` check deactivates it for good.

The built-in check controller is a manual approval, useful on its own for expensive or sensitive
workloads: an ``AdmissionCheck`` whose ``spec.controllerName`` is ``MANUAL_APPROVAL_CONTROLLER`` is
``Ready`` when the Workload carries the annotation ``approval.kueue-webhook.io/<check name>: approved``
(``rejected`` rejects it). Who may set that annotation is what makes it an approval: the admission
webhook refuses the change unless the requesting user (or one of its groups) is an approver
(``approval_change_denial``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kueue_webhook.api.objects import AdmissionCheckState

__all__ = [
    "APPROVAL_ANNOTATION_PREFIX",
    "MANUAL_APPROVAL_CONTROLLER",
    "CheckEviction",
    "admitted_condition",
    "approval_change_denial",
    "check_eviction",
    "checks_message",
    "manual_approval_state",
    "sync_check_states",
]

MANUAL_APPROVAL_CONTROLLER = "kueue-webhook.io/manual-approval"
APPROVAL_ANNOTATION_PREFIX = "approval.kueue-webhook.io/"
#: the Evicted condition reason of a check-driven eviction (Kueue's WorkloadEvictedByAdmissionCheck)
EVICTED_BY_ADMISSION_CHECK = "AdmissionCheck"


def sync_check_states(
    current: Sequence[AdmissionCheckState], required: Iterable[str]
) -> tuple[tuple[AdmissionCheckState, ...], bool]:
    """The check states the Workload should list, and whether that differs from ``current``."""
    wanted = set(required)
    kept = {state.name: state for state in current if state.name in wanted}
    for name in wanted - set(kept):
        kept[name] = AdmissionCheckState(name, "Pending")
    synced = tuple(kept[name] for name in sorted(kept))
    return synced, synced != tuple(current)


def admitted_condition(
    *, has_quota_reservation: bool, states: Sequence[AdmissionCheckState]
) -> tuple[str, str, str]:
    """(status, reason, message) of the Admitted condition."""
    all_ready = all(state.state == "Ready" for state in states)
    if not has_quota_reservation and not all_ready:
        return (
            "False",
            "NoReservationUnsatisfiedChecks",
            "The workload has no reservation and not all checks ready",
        )
    if not has_quota_reservation:
        return "False", "NoReservation", "The workload has no reservation"
    if not all_ready:
        return "False", "UnsatisfiedChecks", "The workload has not all checks ready"
    return "True", "Admitted", "The workload is admitted"


def checks_message(states: Iterable[AdmissionCheckState], state: str) -> str:
    """``AdmissionCheck(s) in <state> state: "a" (message); "b"`` as Kueue words it."""
    chosen = sorted((s for s in states if s.state == state), key=lambda s: s.name)
    parts = [f'"{s.name}" ({s.message})' if s.message else f'"{s.name}"' for s in chosen]
    noun = "AdmissionChecks" if len(chosen) > 1 else "AdmissionCheck"
    return f"{noun} in {state} state: {'; '.join(parts)}"


@dataclass(frozen=True, slots=True)
class CheckEviction:
    """Take the quota back because of a check: requeue (Retry) or deactivate (Rejected)."""

    reason: str
    message: str
    deactivate: bool


def check_eviction(states: Sequence[AdmissionCheckState]) -> CheckEviction | None:
    if any(s.state == "Rejected" for s in states):
        return CheckEviction(EVICTED_BY_ADMISSION_CHECK, checks_message(states, "Rejected"), True)
    if any(s.state == "Retry" for s in states):
        message = f"Evicted due to {checks_message(states, 'Retry')}"
        return CheckEviction(EVICTED_BY_ADMISSION_CHECK, message, False)
    return None


# -- the manual-approval check -------------------------------------------------------------------------


def approval_annotation(check: str) -> str:
    return f"{APPROVAL_ANNOTATION_PREFIX}{check}"


def manual_approval_state(*, check: str, annotations: Mapping[str, str]) -> tuple[str, str]:
    """(state, message) the manual-approval controller reports for ``check`` on a Workload."""
    key = approval_annotation(check)
    value = annotations.get(key)
    if value is None:
        return "Pending", f"Waiting for approval: an approver sets annotation {key}=approved"
    if value == "approved":
        return "Ready", "Approved"
    if value == "rejected":
        return "Rejected", "Rejected by an approver"
    return "Pending", f'annotation {key} must be "approved" or "rejected", not "{value}"'


def approval_change_denial(
    *,
    old_annotations: Mapping[str, str],
    new_annotations: Mapping[str, str],
    user: str,
    groups: Iterable[str],
    approvers: Iterable[str],
) -> str | None:
    """Why the admission webhook must refuse this Workload update (None: allowed). Only approvers (a
    user name, or ``group:<name>``) may add, change or remove an approval annotation."""
    changed = sorted(
        key
        for key in {*old_annotations, *new_annotations}
        if key.startswith(APPROVAL_ANNOTATION_PREFIX) and old_annotations.get(key) != new_annotations.get(key)
    )
    if not changed:
        return None
    allowed = set(approvers)
    if user in allowed or any(f"group:{group}" in allowed for group in groups):
        return None
    where = f"metadata.annotations[{changed[0]}]"
    return f"{where}: Forbidden: user {user} may not approve or reject admission checks"
