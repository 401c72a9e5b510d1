"""The scheduler loop never holds the event loop: with a revisit of parked workloads already due it still
gives the loop a turn, and a replica that stopped leading while its loop still runs waits instead of spinning
(a spin would never let the cancellation that ends its term arrive, nor the Lease be renewed)."""

from __future__ import annotations

import asyncio
import dataclasses

from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.scheduling.scheduler_loop import SchedulerLoop
from tests.unit.control.fakes import control_context


def loop_with_revisit_due(*, leading: bool) -> SchedulerLoop:
    context = dataclasses.replace(control_context(Store()), is_leader=lambda: leading)
    scheduler = SchedulerLoop(context)
    scheduler.state.next_revisit = lambda: 0.0  # type: ignore[method-assign]  # long past on any clock
    return scheduler


async def test_a_due_revisit_still_suspends_once_so_other_tasks_and_cancellations_run() -> None:
    waiting = loop_with_revisit_due(leading=True)._kicked_or_revisit_due()
    try:
        waiting.send(None)  # without a suspension this raises StopIteration at once
    finally:
        waiting.close()


async def test_a_replica_that_stopped_leading_waits_for_a_kick_instead_of_spinning() -> None:
    scheduler = loop_with_revisit_due(leading=False)
    waiting = asyncio.create_task(scheduler._kicked_or_revisit_due())
    for _ in range(10):
        await asyncio.sleep(0)
    assert not waiting.done()
    scheduler.kick()
    await asyncio.wait_for(waiting, timeout=5)  # bounds a hang only


async def test_the_run_of_a_replica_that_stopped_leading_ends_when_cancelled() -> None:
    scheduler = loop_with_revisit_due(leading=False)
    running = asyncio.create_task(scheduler.run())
    for _ in range(10):
        await asyncio.sleep(0)  # a spinning run would never hand the loop back: this line would not return
    running.cancel()
    done, _ = await asyncio.wait({running}, timeout=5)
    assert done == {running} and running.cancelled()
