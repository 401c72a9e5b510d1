"""An admitted Job is started from its admission write's answer, in that write's task
(``JobReconciler.start_admitted``): no reconciler worker has to take the key first, yet the Job is still
patched once, because the key the answer queued is claimed rather than reconciled a second time, and a key a
worker is already on is left to that worker (client-go's rule: one key is never reconciled twice at once)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

from kueue_webhook.api.owner_references import controller_owner_reference
from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.jobs.reconcile_queue import ReconcileQueue
from kueue_webhook.control.jobs.reconciler import JobReconciler
from kueue_webhook.control.kube.kinds import JOBS, RESOURCE_FLAVORS, WORKLOADS, Kind
from tests.support import builders
from tests.unit.control import plans
from tests.unit.control.fakes import control_context

JSON = dict[str, Any]
KEY = ("batch/job", "team-a", "train")


class StartRecorder:
    """Notes every Job start; the answers leave the store as it was (the Job still suspended), so a second
    reconcile of the key would start it again."""

    def __init__(self) -> None:
        self.started: list[str] = []

    async def patch(self, kind: Kind, obj: JSON, patch: Any, **_: Any) -> JSON | None:
        assert kind is JOBS and {"op": "replace", "path": "/spec/suspend", "value": False} in patch
        self.started.append(obj["metadata"]["name"])
        return None

    async def patch_status(self, kind: Kind, obj: JSON, build: Callable[[JSON], JSON | None]) -> JSON | None:
        return None


def owned(workload: JSON, version: int) -> JSON:
    out = copy.deepcopy(workload)
    out["metadata"]["resourceVersion"] = str(version)
    out["metadata"]["ownerReferences"] = [controller_owner_reference("batch/v1", "Job", "train", "job-uid")]
    return out


def suspended_job_and_reconciler() -> tuple[Store, StartRecorder, JobReconciler]:
    store = Store()
    writer = StartRecorder()
    reconciler = JobReconciler(control_context(store, writer=writer))
    store.subscribe(reconciler.on_change)
    store.upsert(RESOURCE_FLAVORS, builders.resource_flavor("gpu-nodes"))
    store.upsert(JOBS, plans.job())
    store.upsert(WORKLOADS, owned(plans.workload(), 5))
    return store, writer, reconciler


def admission_answered(store: Store) -> JSON:
    """The admission write's answer, put into the store as the writer does (which queues the Job's key)."""
    answer = owned(plans.admitted(), 6)
    store.upsert(WORKLOADS, answer)
    return answer


@contextlib.asynccontextmanager
async def workers(reconciler: JobReconciler) -> AsyncIterator[None]:
    running = asyncio.create_task(reconciler.run())
    try:
        yield
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running


async def test_the_admission_task_starts_the_job_with_no_reconciler_worker_running() -> None:
    store, writer, reconciler = suspended_job_and_reconciler()
    await reconciler.start_admitted(admission_answered(store))  # no worker was ever started
    assert writer.started == ["train"]
    assert len(reconciler.queue) == 0  # the key the answer queued was this reconcile's


async def test_the_key_the_admission_answer_queued_is_not_reconciled_again() -> None:
    store, writer, reconciler = suspended_job_and_reconciler()
    async with workers(reconciler):
        await asyncio.wait_for(reconciler.queue.wait_idle(), 5)
        answer = admission_answered(store)  # queues the Job's key, urgent
        await reconciler.start_admitted(answer)  # before any worker gets a turn
        await asyncio.wait_for(reconciler.queue.wait_idle(), 5)
    assert writer.started == ["train"]


async def test_a_job_a_worker_is_reconciling_is_left_to_that_worker_and_started_once() -> None:
    store, writer, reconciler = suspended_job_and_reconciler()
    taken = await asyncio.wait_for(reconciler.queue.get(), 5)  # this test plays a worker busy on the Job
    assert taken == KEY
    await reconciler.start_admitted(admission_answered(store))
    assert writer.started == []  # not beside the worker on the same key
    reconciler.queue.done(KEY)  # that worker is done: the admission's change is reconciled after it
    async with workers(reconciler):
        await asyncio.wait_for(reconciler.queue.wait_idle(), 5)
    assert writer.started == ["train"]


async def test_a_claimed_key_is_handed_to_no_worker_and_queued_again_if_dirtied_meanwhile() -> None:
    queue = ReconcileQueue()
    queue.add(KEY, urgent=True)
    assert queue.claim(KEY)
    assert not queue.claim(KEY)  # one holder at a time
    taking = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    assert not taking.done()  # the claimed key is no longer waiting
    queue.add(KEY)  # changed while claimed
    await asyncio.sleep(0)
    assert not taking.done()
    queue.done(KEY)
    assert await asyncio.wait_for(taking, 5) == KEY
    queue.done(KEY)
    await asyncio.wait_for(queue.wait_idle(), 5)
