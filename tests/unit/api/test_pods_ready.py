"""waitForPodsReady's pure rules, each named after the Kueue function it follows."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_webhook.api.config import RequeuingStrategy, WaitForPodsReady
from kueue_webhook.api.objects.common import parse_timestamp
from kueue_webhook.api.pods_ready import (
    admission_blocked,
    backoff_ends,
    backoff_seconds,
    desired_pods_ready,
    exceeds_requeuing_limit,
    job_pods_ready,
    not_ready_timeout,
    requeue_state_after_timeout,
    timeout_message,
    tracks_pods_ready,
)

JSON = dict[str, Any]
ADMITTED_AT = "2026-01-01T10:00:00Z"
ON = WaitForPodsReady(enable=True, timeout_seconds=300.0, recovery_timeout_seconds=60.0)


def job(*, parallelism: int | None = 3, completions: int | None = None, **status: Any) -> JSON:
    spec: JSON = {}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    return {"spec": spec, "status": status}


def cond(kind: str, status: str, reason: str = "R", when: str = ADMITTED_AT) -> JSON:
    return {"type": kind, "status": status, "reason": reason, "message": "", "lastTransitionTime": when}


def workload(*conditions: JSON, admission: bool = True, **status: Any) -> JSON:
    out: JSON = {"spec": {}, "status": {"conditions": list(conditions), **status}}
    if admission:
        out["status"]["admission"] = {"clusterQueue": "cq"}
    return out


def admitted(*extra: JSON, **status: Any) -> JSON:
    return workload(cond("QuotaReserved", "True"), cond("Admitted", "True"), *extra, **status)


# -- Job.PodsReady (pkg/controller/jobs/job) --------------------------------------------------------------


@pytest.mark.parametrize(
    ("the_job", "ready"),
    [
        (job(ready=2), False),
        (job(ready=3), True),
        (job(ready=1, succeeded=2), True),  # succeeded pods count as ready
        (job(ready=2, uncountedTerminatedPods={"succeeded": ["u1"]}), True),  # so do uncounted ones
        (job(parallelism=5, completions=2, ready=2), True),  # min(parallelism, completions)
        (job(parallelism=None, ready=1), True),  # parallelism defaults to 1
        (job(parallelism=None), False),
    ],
)
def test_job_pods_ready_counts_ready_and_succeeded_against_min_of_parallelism_and_completions(
    the_job: JSON, ready: bool
) -> None:
    assert job_pods_ready(the_job) is ready


# -- generatePodsReadyCondition (pkg/controller/jobframework) ----------------------------------------------


def test_generate_pods_ready_condition_not_admitted_waits_for_start() -> None:
    assert desired_pods_ready(workload(admission=False), pods_ready=True) == (
        "False",
        "WaitForStart",
        "Not all pods are ready or succeeded",
    )


def test_generate_pods_ready_condition_started_then_recovery_then_recovered() -> None:
    fresh = admitted(cond("PodsReady", "False", "WaitForStart"))
    assert desired_pods_ready(fresh, pods_ready=False)[:2] == ("False", "WaitForStart")
    assert desired_pods_ready(fresh, pods_ready=True) == (
        "True",
        "Started",
        "All pods reached readiness and the workload is running",
    )
    running = admitted(cond("PodsReady", "True", "Started"))
    assert desired_pods_ready(running, pods_ready=False) == (
        "False",
        "WaitForRecovery",
        "At least one pod has failed, waiting for recovery",
    )
    recovering = admitted(cond("PodsReady", "False", "WaitForRecovery"))
    assert desired_pods_ready(recovering, pods_ready=False)[:2] == ("False", "WaitForRecovery")
    assert desired_pods_ready(recovering, pods_ready=True)[:2] == ("True", "Recovered")


# -- admittedNotReadyWorkload (pkg/controller/core/workload_controller.go) --------------------------------


def test_admitted_not_ready_workload_times_out_timeout_after_admitted() -> None:
    timeout = not_ready_timeout(admitted(cond("PodsReady", "False", "WaitForStart")), ON)
    assert timeout is not None
    assert timeout.cause == "WaitForStart"
    assert timeout.at == parse_timestamp(ADMITTED_AT) + 300


def test_admitted_not_ready_workload_in_recovery_times_out_recovery_timeout_after_pods_ready_fell() -> None:
    fell = "2026-01-01T11:00:00Z"
    timeout = not_ready_timeout(admitted(cond("PodsReady", "False", "WaitForRecovery", fell)), ON)
    assert timeout is not None and timeout.cause == "WaitForRecovery"
    assert timeout.at == parse_timestamp(fell) + 60
    # recoveryTimeout defaults to timeout
    unset = WaitForPodsReady(enable=True, timeout_seconds=300.0)
    defaulted = not_ready_timeout(admitted(cond("PodsReady", "False", "WaitForRecovery", fell)), unset)
    assert defaulted is not None and defaulted.at == parse_timestamp(fell) + 300
    # a recoveryTimeout of 0s turns recovery checking off
    off = WaitForPodsReady(enable=True, recovery_timeout_seconds=0.0)
    assert not_ready_timeout(admitted(cond("PodsReady", "False", "WaitForRecovery", fell)), off) is None


@pytest.mark.parametrize(
    "the_workload",
    [
        admitted(cond("PodsReady", "True", "Started")),  # ready
        workload(cond("QuotaReserved", "True"), cond("Admitted", "False")),  # checks still pending
        admitted(cond("Evicted", "True", "Preempted")),  # already evicted
        admitted(cond("Finished", "True", "Succeeded")),
    ],
)
def test_admitted_not_ready_workload_has_no_deadline_when_ready_unadmitted_evicted_or_finished(
    the_workload: JSON,
) -> None:
    assert not_ready_timeout(the_workload, ON) is None


def test_no_deadline_when_wait_for_pods_ready_is_disabled() -> None:
    assert not_ready_timeout(admitted(), WaitForPodsReady(enable=False)) is None


def test_the_eviction_message_names_the_workload() -> None:
    assert timeout_message("team-a", "job-x-1") == "Exceeded the PodsReady timeout team-a/job-x-1"


# -- UpdateRequeueState / triggerDeactivation ----------------------------------------------------------------


def test_requeue_backoff_doubles_from_the_base_and_stops_at_the_max() -> None:
    delays = [backoff_seconds(n, base=60, maximum=3600) for n in range(1, 9)]
    assert delays == [60, 120, 240, 480, 960, 1920, 3600, 3600]
    assert backoff_seconds(3, base=10, maximum=0) == 40  # a max of 0 caps nothing


def test_update_requeue_state_counts_one_more_requeue_and_sets_requeue_at() -> None:
    config = WaitForPodsReady(enable=True, requeuing_strategy=RequeuingStrategy(backoff_base_seconds=10))
    now = parse_timestamp("2026-01-01T12:00:00Z")
    first = requeue_state_after_timeout(admitted(), config, now=now)
    assert first == {"count": 1, "requeueAt": "2026-01-01T12:00:10Z"}
    second = requeue_state_after_timeout(admitted(requeueState={"count": 1}), config, now=now)
    assert second == {"count": 2, "requeueAt": "2026-01-01T12:00:20Z"}


def test_set_requeue_state_keeps_a_later_requeue_at() -> None:
    config = WaitForPodsReady(enable=True)
    later = "2026-01-02T00:00:00Z"
    state = requeue_state_after_timeout(
        admitted(requeueState={"count": 2, "requeueAt": later}), config, now=parse_timestamp(ADMITTED_AT)
    )
    assert state == {"count": 3, "requeueAt": later}


def test_trigger_deactivation_once_the_next_requeue_would_pass_backoff_limit_count() -> None:
    limited = WaitForPodsReady(enable=True, requeuing_strategy=RequeuingStrategy(backoff_limit_count=2))
    assert not exceeds_requeuing_limit(admitted(), limited)
    assert not exceeds_requeuing_limit(admitted(requeueState={"count": 1}), limited)
    assert exceeds_requeuing_limit(admitted(requeueState={"count": 2}), limited)
    assert not exceeds_requeuing_limit(admitted(requeueState={"count": 99}), ON)  # no limit: requeue forever


def test_backoff_ends_at_requeue_at_only_while_requeued_is_false_for_a_pods_ready_timeout() -> None:
    waiting = workload(
        cond("Requeued", "False", "PodsReadyTimeout"),
        admission=False,
        requeueState={"count": 1, "requeueAt": "2026-01-01T12:00:10Z"},
    )
    assert backoff_ends(waiting) == parse_timestamp("2026-01-01T12:00:10Z")
    preempted = workload(cond("Requeued", "True", "Preempted"), admission=False)
    assert backoff_ends(preempted) is None


# -- podsReadyForAllAdmittedWorkloads (pkg/cache/scheduler) -------------------------------------------------


def test_block_admission_while_a_reserving_workload_is_not_pods_ready() -> None:
    blocking = WaitForPodsReady(enable=True, block_admission=True)
    ready = admitted(cond("PodsReady", "True", "Started"))
    not_ready = admitted(cond("PodsReady", "False", "WaitForStart"))
    pending = workload(cond("QuotaReserved", "False"), admission=False)
    finished = admitted(cond("Finished", "True"))
    assert not admission_blocked([ready, pending, finished], blocking)
    assert admission_blocked([ready, not_ready], blocking)
    assert not admission_blocked([not_ready], ON)  # blockAdmission off


def test_only_a_jobs_workload_carries_pods_ready_as_kueues_job_reconciler_sets_it() -> None:
    owned = {"metadata": {"ownerReferences": [{"kind": "Job", "name": "j", "controller": True}]}}
    bare: JSON = {"metadata": {}}
    assert tracks_pods_ready(owned, ON)
    assert not tracks_pods_ready(bare, ON)
    assert not tracks_pods_ready(owned, WaitForPodsReady(enable=False))


def test_a_pod_groups_workload_carries_pods_ready_though_no_pod_is_its_controller() -> None:
    group = {
        "metadata": {
            "annotations": {"kueue.x-k8s.io/is-group-workload": "true"},
            "ownerReferences": [{"kind": "Pod", "name": "a"}, {"kind": "Pod", "name": "b"}],
        }
    }
    assert tracks_pods_ready(group, ON, kinds=("Job", "Pod"))
    assert not tracks_pods_ready(group, ON, kinds=("Job",))  # the pod integration is off
