"""An object that stops being queued (its queue label removed while suspended) while it still owns a
Workload: the Workload goes, pending or admitted, so it holds no quota for nothing (``plan_unmanaged``;
Kueue leaves it behind). A running object's reservation is kept while its pods use it. One moved to another
LocalQueue takes its pending Workload along (Kueue's QueueNameChange)."""

from __future__ import annotations

from typing import Any

from kueue_webhook.control.jobs.job_plan import (
    DeleteWorkload,
    RemoveFinalizer,
    UpdateQueueName,
    plan_unmanaged,
)
from kueue_webhook.control.output.conditions import finished_status
from tests.unit.control.plans import admitted, held, job, plan, workload

JSON = dict[str, Any]
NOW = "2026-11-22T02:00:00Z"


def unlabelled(*, suspend: bool = True, active: int = 0, conditions: list[JSON] | None = None) -> JSON:
    obj = job(suspend=suspend, active=active, conditions=conditions)
    obj["metadata"]["labels"] = {}
    return obj


def test_a_suspended_job_without_its_label_loses_its_pending_workload() -> None:
    step = plan_unmanaged(unlabelled(), held(workload()))
    assert isinstance(step, DeleteWorkload)
    assert step.message == "Deleted Workload: team-a/job-train-abcde, the Job no longer names a LocalQueue"


def test_a_suspended_job_without_its_label_loses_its_admitted_workload_too() -> None:
    assert isinstance(plan_unmanaged(unlabelled(), held(admitted())), DeleteWorkload)


def test_the_deleted_workload_lets_go_once_the_job_has_no_active_pods() -> None:
    deleted = held(admitted(), deleted=True)
    assert plan_unmanaged(unlabelled(active=2), deleted) is None
    step = plan_unmanaged(unlabelled(), deleted)
    assert isinstance(step, RemoveFinalizer)
    assert plan_unmanaged(unlabelled(), held(admitted(), deleted=True, finalizers=())) is None


def test_a_running_job_no_longer_managed_keeps_its_reservation_until_it_ends() -> None:
    running = unlabelled(suspend=False, active=1)
    assert plan_unmanaged(running, held(admitted())) is None
    complete = [{"type": "Complete", "status": "True"}]
    finished = unlabelled(suspend=False, conditions=complete)
    assert isinstance(plan_unmanaged(finished, admitted()), DeleteWorkload)


def test_a_running_job_no_longer_managed_loses_a_workload_that_reserves_nothing() -> None:
    assert isinstance(plan_unmanaged(unlabelled(suspend=False), held(workload())), DeleteWorkload)


def test_a_finished_workload_only_lets_go_of_its_finalizer() -> None:
    done = held(workload(finished_status(workload(), reason="Succeeded", message="done", now=NOW)))
    assert plan_unmanaged(unlabelled(), done) == RemoveFinalizer(done, "finished")
    assert plan_unmanaged(unlabelled(), held(done, finalizers=())) is None


def test_nothing_to_do_without_a_workload() -> None:
    assert plan_unmanaged(unlabelled(), None) is None


def test_a_suspended_job_moved_to_another_local_queue_takes_its_pending_workload_along() -> None:
    moved = job()
    moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "cpu"
    pending = held(workload())
    assert pending["spec"]["queueName"] == "gpu"
    assert plan(moved, pending) == UpdateQueueName(pending, "cpu")
    assert plan(job(), pending) is None
    # a reservation keeps it where it is (Kueue's Workload rule: queueName immutable while reserved)
    assert not isinstance(plan(moved, held(admitted())), UpdateQueueName)
