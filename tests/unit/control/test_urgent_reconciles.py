"""What a user waits on is not served behind routine work: while every reconciler worker is held up by a
burst of Workload creations (a restart, hundreds of Jobs submitted at once), a Job that has just finished
still has its Workload marked Finished (which releases its quota), and a Job whose Workload has just been
admitted is still started (``kueue_webhook.control.jobs.urgency``). The work queue's urgent lane itself is
in ``test_work_queue_lanes``."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kueue_webhook.api.integrations import JOB
from kueue_webhook.api.owner_references import controller_owner_reference
from kueue_webhook.control.cache.store import Change, Store
from kueue_webhook.control.jobs.reconciler import JobReconciler
from kueue_webhook.control.jobs.urgency import object_change_is_urgent, workload_change_is_urgent
from kueue_webhook.control.kube.kinds import JOBS, RESOURCE_FLAVORS, WORKLOADS, Kind
from tests.support import builders
from tests.unit.control import plans
from tests.unit.control.fakes import control_context

JSON = dict[str, Any]
WORKERS = 4
BURST = 12  # Jobs submitted at once, more than the reconciler has workers
COMPLETE = [{"type": "Complete", "status": "True", "reason": "CompletionsReached", "message": "done"}]


class BusyWriter:
    """Workload creations hang until ``release`` (a slow, busy API server); every other write is answered at
    once and noted."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.release = asyncio.Event()
        self.creating = 0
        self.all_workers_busy = asyncio.Event()
        self.started: list[str] = []
        self.finished: list[str] = []
        self.wrote = asyncio.Event()

    async def create(self, kind: Kind, body: JSON) -> JSON | None:
        assert kind is WORKLOADS
        self.creating += 1
        if self.creating >= self.workers:
            self.all_workers_busy.set()
        await self.release.wait()
        return None

    async def patch(self, kind: Kind, obj: JSON, patch: Any, **_: Any) -> JSON | None:
        assert kind is JOBS and {"op": "replace", "path": "/spec/suspend", "value": False} in patch
        self.started.append(obj["metadata"]["name"])
        self.wrote.set()
        return None

    async def patch_status(self, kind: Kind, obj: JSON, build: Callable[[JSON], JSON | None]) -> JSON | None:
        assert kind is WORKLOADS
        status = build(obj)
        if status is not None and any(c["type"] == "Finished" for c in status.get("conditions", [])):
            self.finished.append(obj["metadata"]["name"])
            self.wrote.set()
        return None


def owned(workload: JSON, version: int = 5) -> JSON:
    out = copy.deepcopy(workload)
    out["metadata"]["resourceVersion"] = str(version)
    out["metadata"]["ownerReferences"] = [controller_owner_reference("batch/v1", "Job", "train", "job-uid")]
    return out


def versioned(obj: JSON, version: int) -> JSON:
    obj["metadata"]["resourceVersion"] = str(version)
    return obj


def burst_job(index: int) -> JSON:
    return builders.job(
        f"burst-{index}",
        "team-a",
        queue="gpu",
        metadata={"uid": f"burst-{index}"},
        pod_spec={"containers": [{"name": "c", "image": "i"}]},
    )


@contextlib.asynccontextmanager
async def busy_reconciler(*objects: tuple[Any, JSON]) -> AsyncIterator[tuple[Store, BusyWriter]]:
    """A running reconciler whose every ordinary worker is creating a Workload for the burst, with more of
    the burst queued behind them."""
    store = Store()
    writer = BusyWriter(WORKERS)
    reconciler = JobReconciler(control_context(store, writer=writer), workers=WORKERS)
    store.subscribe(reconciler.on_change)
    store.upsert(RESOURCE_FLAVORS, builders.resource_flavor("gpu-nodes"))
    for kind, obj in objects:
        store.upsert(kind, obj)
    running = asyncio.create_task(reconciler.run())
    try:
        await asyncio.wait_for(reconciler.queue.wait_idle(), 5)  # the pair as it stands needs nothing
        for index in range(BURST):
            store.upsert(JOBS, burst_job(index))
        await asyncio.wait_for(writer.all_workers_busy.wait(), 5)
        yield store, writer
    finally:
        writer.release.set()
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running


async def test_an_admitted_job_starts_while_the_workers_are_busy_with_a_burst_of_new_jobs() -> None:
    async with busy_reconciler((JOBS, plans.job()), (WORKLOADS, owned(plans.workload()))) as (store, writer):
        store.upsert(WORKLOADS, owned(plans.admitted(), version=6))
        await asyncio.wait_for(writer.wrote.wait(), 5)
        assert writer.started == ["train"]
        assert not writer.release.is_set()  # the burst's creations are all still in flight


async def test_a_finished_jobs_workload_is_finished_while_the_workers_are_busy() -> None:
    running = versioned(plans.job(suspend=False, active=1), 1)
    async with busy_reconciler((JOBS, running), (WORKLOADS, owned(plans.admitted()))) as (store, writer):
        store.upsert(JOBS, versioned(plans.job(suspend=False, conditions=COMPLETE), 2))
        await asyncio.wait_for(writer.wrote.wait(), 5)
        assert writer.finished == ["job-train-abcde"]
        assert not writer.release.is_set()


def job_change(old: JSON | None, new: JSON | None) -> Change:
    return Change(JOBS, ("team-a", "train"), old, new)


def workload_change(old: JSON | None, new: JSON | None) -> Change:
    return Change(WORKLOADS, ("team-a", "job-train-abcde"), old, new)


@pytest.mark.parametrize(
    ("old", "new", "urgent"),
    [
        (plans.job(suspend=False), plans.job(suspend=False, conditions=COMPLETE), True),
        (plans.job(suspend=False), None, True),  # deleted: its Workload goes, and its quota with it
        (plans.job(suspend=False), plans.job(suspend=False, active=1), False),  # a routine status update
        (plans.job(conditions=COMPLETE), plans.job(conditions=COMPLETE), False),  # finished long ago
        (None, plans.job(), False),  # a new Job: its Workload is created in turn
    ],
)
def test_an_object_change_is_urgent_when_it_finishes_or_goes(old: JSON, new: JSON, urgent: bool) -> None:
    assert object_change_is_urgent(JOB, job_change(old, new)) is urgent


def test_a_workload_change_is_urgent_when_admitted_or_evicted_not_for_a_pending_reason() -> None:
    pending = plans.workload()
    waiting = plans.workload(
        {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "m"}]}
    )
    admitted = plans.admitted()
    evicted = copy.deepcopy(admitted)
    evicted["status"]["conditions"].append({"type": "Evicted", "status": "True", "reason": "Preempted"})
    assert workload_change_is_urgent(workload_change(pending, admitted))
    assert workload_change_is_urgent(workload_change(admitted, evicted))
    assert not workload_change_is_urgent(workload_change(pending, waiting))
    assert not workload_change_is_urgent(workload_change(admitted, copy.deepcopy(admitted)))
    assert not workload_change_is_urgent(workload_change(admitted, None))
