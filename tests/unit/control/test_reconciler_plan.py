"""Job ⇄ Workload rules (Kueue's jobframework reconciler order), one user-visible situation per test."""

from __future__ import annotations

from kueue_webhook.control.jobs.job_plan import (
    CreateWorkload,
    FinishWorkload,
    ReleaseReservation,
    RemoveFinalizer,
    StartJob,
    StopJob,
)
from kueue_webhook.control.output.conditions import admitted_status, finished_status, pending_status
from tests.unit.control.plans import ADMISSION, FINALIZER, NOW, admitted, held, job, plan, workload


def test_new_suspended_job_gets_a_workload_owned_by_it() -> None:
    step = plan(job(), None)
    assert isinstance(step, CreateWorkload)
    owner = step.body["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("Job", "job-uid", True)
    assert step.body["spec"]["queueName"] == "gpu"


def test_admitted_workload_starts_its_job_on_the_flavor() -> None:
    step = plan(job(), admitted())
    assert isinstance(step, StartJob)
    ops = {op["path"]: op.get("value") for op in step.patch}
    assert ops["/spec/suspend"] is False
    assert ops["/spec/template/spec/nodeSelector"] == {"pool": "a100"}
    assert ops["/spec/template/spec/tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert step.cluster_queue == "research"


def test_admitted_workload_waits_for_a_flavor_not_yet_seen() -> None:
    admission = {
        **ADMISSION,
        "podSetAssignments": [{**ADMISSION["podSetAssignments"][0], "flavors": {"nvidia.com/gpu": "later"}}],
    }
    w = workload(admitted_status(workload(), admission=admission, now=NOW))
    assert plan(job(), w) is None


def test_flavor_contradicting_the_jobs_node_selector_fails_the_workload() -> None:
    step = plan(job(node_selector={"pool": "h100"}), admitted())
    assert isinstance(step, FinishWorkload) and step.reason == "FailedToStart"


def test_user_unsuspending_a_pending_job_gets_it_suspended_again() -> None:
    pending = workload(pending_status(workload(), reason="Pending", message="insufficient quota", now=NOW))
    step = plan(job(suspend=False), pending)
    assert isinstance(step, StopJob)
    assert step.message == "Not admitted by cluster queue"
    assert step.patch[0] == {"op": "replace", "path": "/spec/suspend", "value": True}


def test_running_admitted_job_is_left_alone() -> None:
    assert plan(job(suspend=False), admitted()) is None


def test_completed_job_finishes_its_workload_with_the_jobs_message() -> None:
    done = job(
        suspend=False,
        conditions=[
            {"type": "Complete", "status": "True", "message": "Reached expected number of succeeded pods"}
        ],
    )
    step = plan(done, admitted())
    assert isinstance(step, FinishWorkload)
    assert (step.reason, step.message) == ("Succeeded", "Reached expected number of succeeded pods")
    finished = workload(finished_status(admitted(), reason=step.reason, message=step.message, now=NOW))
    assert plan(done, finished) is None


def test_failed_job_finishes_its_workload_as_failed() -> None:
    failed = job(
        suspend=False, conditions=[{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}]
    )
    step = plan(failed, admitted())
    assert isinstance(step, FinishWorkload) and step.reason == "Failed"


def test_evicted_workload_stops_the_job_then_releases_the_reservation() -> None:
    evicted = admitted()
    evicted["status"]["conditions"].append(
        {
            "type": "Evicted",
            "status": "True",
            "reason": "Preempted",
            "message": "Preempted to accommodate a workload",
        }
    )
    stop = plan(job(suspend=False), evicted)
    assert isinstance(stop, StopJob) and stop.message == "Preempted to accommodate a workload"
    release = plan(job(suspend=True), evicted)
    assert isinstance(release, ReleaseReservation)


def test_pending_status_is_unchanged_when_reason_and_message_are_the_same() -> None:
    once = workload(pending_status(workload(), reason="Pending", message="insufficient quota", now=NOW))
    assert (
        pending_status(once, reason="Pending", message="insufficient quota", now="2030-01-01T00:00:00Z")
        is None
    )
    moved = pending_status(once, reason="Pending", message="other", now="2030-01-01T00:00:00Z")
    assert moved is not None
    condition, admitted = moved["conditions"]
    assert condition["lastTransitionTime"] == NOW  # status did not flip, so the transition time stays
    assert (admitted["type"], admitted["reason"], admitted["lastTransitionTime"]) == (
        "Admitted",
        "NoReservation",
        NOW,
    )


def test_admission_status_has_kueue_condition_texts() -> None:
    status = admitted_status(workload(), admission=ADMISSION, now=NOW)
    texts = {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}
    assert texts == {
        "QuotaReserved": ("True", "QuotaReserved", "Quota reserved in ClusterQueue research"),
        "Admitted": ("True", "Admitted", "The workload is admitted"),
    }


# -- Kueue's resource-in-use finalizer -------------------------------------------------------------------


def test_new_workload_holds_the_resource_in_use_finalizer() -> None:
    step = plan(job(), None)
    assert isinstance(step, CreateWorkload)
    assert step.body["metadata"]["finalizers"] == [FINALIZER]


def test_deleting_the_workload_of_a_running_job_stops_the_job_first() -> None:
    step = plan(job(suspend=False, active=1), held(admitted(), deleted=True))
    assert isinstance(step, StopJob) and step.message == "Workload is deleted"
    assert step.patch[0] == {"op": "replace", "path": "/spec/suspend", "value": True}


def test_deleted_workload_keeps_its_finalizer_while_the_stopped_jobs_pods_are_active() -> None:
    assert plan(job(suspend=True, active=1), held(admitted(), deleted=True)) is None


def test_deleted_workload_lets_go_once_its_job_is_stopped_and_has_no_active_pods() -> None:
    step = plan(job(suspend=True), held(admitted(), deleted=True))
    assert isinstance(step, RemoveFinalizer)


def test_deleted_pending_workload_lets_go_at_once() -> None:
    pending = workload(pending_status(workload(), reason="Pending", message="insufficient quota", now=NOW))
    assert isinstance(plan(job(), held(pending, deleted=True)), RemoveFinalizer)


def test_deleted_workload_of_a_finished_job_lets_go() -> None:
    done = job(suspend=False, conditions=[{"type": "Complete", "status": "True", "message": "done"}])
    assert isinstance(plan(done, held(admitted(), deleted=True)), RemoveFinalizer)


def test_deleted_workload_held_only_by_someone_elses_finalizer_is_left_to_them() -> None:
    assert plan(job(), held(admitted(), deleted=True, finalizers=("example.com/audit",))) is None


def test_finished_workload_no_longer_needs_the_finalizer() -> None:
    finished = workload(finished_status(admitted(), reason="Succeeded", message="done", now=NOW))
    done = job(suspend=False, conditions=[{"type": "Complete", "status": "True", "message": "done"}])
    assert isinstance(plan(done, held(finished)), RemoveFinalizer)
    assert plan(done, finished) is None


def test_a_job_whose_workload_is_gone_gets_a_new_one_only_once_its_pods_are_gone() -> None:
    assert plan(job(suspend=True, active=2), None) is None
    assert isinstance(plan(job(suspend=True), None), CreateWorkload)
