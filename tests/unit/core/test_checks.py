"""Admission checks as a user sees them: Admitted only when every check is Ready, Retry evicts and
requeues, Rejected deactivates; and the built-in manual approval, including who may approve."""

from __future__ import annotations

from kueue_webhook.api.objects import AdmissionCheck, AdmissionCheckState, Workload, parse_admission_check
from kueue_webhook.core.checks import (
    admitted_condition,
    approval_change_denial,
    check_eviction,
    manual_approval_state,
    sync_check_states,
)
from kueue_webhook.core.scheduler import Admit, Evict

from .builders import admitted_status, cluster_queue, run_until_quiet, state_with, workload

APPROVAL = "approval.kueue-webhook.io/finance"


def test_checks_are_listed_sorted_with_new_ones_pending_and_stale_ones_dropped() -> None:
    current = (AdmissionCheckState("zeta", "Ready"), AdmissionCheckState("gone", "Retry"))
    synced, changed = sync_check_states(current, ["zeta", "alpha"])
    assert changed
    assert [(s.name, s.state) for s in synced] == [("alpha", "Pending"), ("zeta", "Ready")]
    assert sync_check_states(synced, ["alpha", "zeta"]) == (synced, False)


def test_admitted_only_with_reservation_and_every_check_ready() -> None:
    ready = [AdmissionCheckState("a", "Ready"), AdmissionCheckState("b", "Ready")]
    pending = [AdmissionCheckState("a", "Ready"), AdmissionCheckState("b", "Pending")]
    assert admitted_condition(has_quota_reservation=True, states=ready) == (
        "True",
        "Admitted",
        "The workload is admitted",
    )
    assert admitted_condition(has_quota_reservation=True, states=pending) == (
        "False",
        "UnsatisfiedChecks",
        "The workload has not all checks ready",
    )
    assert admitted_condition(has_quota_reservation=False, states=ready)[1] == "NoReservation"


def test_retry_evicts_with_kueues_message_and_rejected_deactivates() -> None:
    retry = check_eviction(
        [AdmissionCheckState("b", "Retry", "no capacity"), AdmissionCheckState("a", "Retry")]
    )
    assert retry is not None and not retry.deactivate
    assert retry.message == 'Evicted due to AdmissionChecks in Retry state: "a"; "b" (no capacity)'
    rejected = check_eviction([AdmissionCheckState("a", "Rejected"), AdmissionCheckState("b", "Retry")])
    assert rejected is not None and rejected.deactivate
    assert rejected.message == 'AdmissionCheck in Rejected state: "a"'
    assert check_eviction([AdmissionCheckState("a", "Pending")]) is None


def test_reserved_workload_with_a_retry_check_is_evicted_once_and_requeues() -> None:
    state = state_with(
        cluster_queue("cq", {"default": {"cpu": 4}}, admissionChecks=["finance"]), checks=("finance",)
    )
    wl = workload("w", {"cpu": "2"})
    state.upsert_workload(wl)
    admits = [d for d in run_until_quiet(state) if isinstance(d, Admit)]
    assert admits[0].admission_checks == ("finance",)
    status = admitted_status("cq", {"cpu": "default"}, {"cpu": "2"})
    status["conditions"] = status["conditions"][:1]  # QuotaReserved only: the check is not Ready yet
    status["admissionChecks"] = [{"name": "finance", "state": "Retry", "message": "try later"}]
    reserved = workload("w", {"cpu": "2"}, status=status)
    state.upsert_workload(reserved)
    evicts = [d for d in run_until_quiet(state) if isinstance(d, Evict)]
    assert [(e.reason, e.message, e.deactivate) for e in evicts] == [
        ("AdmissionCheck", 'Evicted due to AdmissionCheck in Retry state: "finance" (try later)', False)
    ]
    state.upsert_workload(reserved)  # the same status seen again: no second eviction
    assert not [d for d in run_until_quiet(state) if isinstance(d, Evict)]
    state.upsert_workload(wl)  # the reservation is cleared: it queues and is reserved again
    assert [d.workload for d in run_until_quiet(state) if isinstance(d, Admit)] == ["ns/w"]


def test_manual_approval_follows_the_annotation() -> None:
    assert manual_approval_state(check="finance", annotations={})[0] == "Pending"
    assert manual_approval_state(check="finance", annotations={APPROVAL: "approved"}) == ("Ready", "Approved")
    assert manual_approval_state(check="finance", annotations={APPROVAL: "rejected"})[0] == "Rejected"
    state, message = manual_approval_state(check="finance", annotations={APPROVAL: "yes"})
    assert state == "Pending" and "must be" in message


def test_only_approvers_may_set_the_approval() -> None:
    def denial(user: str, approvers: list[str], new: dict[str, str] | None = None) -> str | None:
        return approval_change_denial(
            old_annotations={},
            new_annotations={APPROVAL: "approved"} if new is None else new,
            user=user,
            groups=["devs"],
            approvers=approvers,
        )

    assert denial("mallory", ["alice", "group:leads"]) == (
        "metadata.annotations[approval.kueue-webhook.io/finance]: Forbidden: "
        "user mallory may not approve or reject admission checks"
    )
    assert denial("alice", ["alice"]) is None
    assert denial("bob", ["group:devs"]) is None
    assert denial("mallory", [], new={"team": "x"}) is None  # other annotations are anyone's business


def test_admission_check_objects_parse_and_name_their_controller() -> None:
    parsed = parse_admission_check(
        {"metadata": {"name": "finance"}, "spec": {"controllerName": "kueue-webhook.io/manual-approval"}}
    )
    assert isinstance(parsed, AdmissionCheck) and parsed.controller_name == "kueue-webhook.io/manual-approval"
    errors = parse_admission_check({"metadata": {"name": "x"}, "spec": {}})
    assert isinstance(errors, list) and "spec.controllerName" in str(errors[0])


def test_workload_status_admission_checks_are_parsed() -> None:
    wl = workload("w", status={"admissionChecks": [{"name": "finance", "state": "Ready", "message": "ok"}]})
    assert isinstance(wl, Workload)
    assert wl.admission_checks == (AdmissionCheckState("finance", "Ready", "ok"),)


def test_a_workload_evicted_by_a_check_queues_again_from_the_eviction_time() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 1}}))
    evicted = {
        "conditions": [
            {
                "type": "Evicted",
                "status": "True",
                "reason": "AdmissionCheck",
                "lastTransitionTime": "2026-01-01T00:10:00Z",
            }
        ]
    }
    state.upsert_workload(workload("retried", {"cpu": "1"}, created=0, status=evicted))
    state.upsert_workload(workload("newer", {"cpu": "1"}, created=60))
    assert [d.workload for d in run_until_quiet(state) if isinstance(d, Admit)] == ["ns/newer"]
