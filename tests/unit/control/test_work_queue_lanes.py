"""The work queue's urgent lane: urgent keys are handed out before ordinary ones, workers kept for them take
nothing else, and a key is still never in two places at once nor processed twice at once."""

from __future__ import annotations

import asyncio

from kueue_webhook.control.cache.workqueue import WorkQueue


async def test_an_urgent_key_is_handed_out_before_ordinary_keys_queued_earlier() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for key in ("a", "b", "c"):
        queue.add(key)
    queue.add("c", urgent=True)  # already waiting: moves to the front, once
    queue.add("d", urgent=True)
    queue.add("d")  # an ordinary add does not demote it
    assert len(queue) == 4
    assert [await queue.get() for _ in range(4)] == ["c", "d", "a", "b"]


async def test_a_worker_kept_for_urgent_keys_takes_only_those() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("routine")
    taking = asyncio.create_task(queue.get(urgent_only=True))
    await asyncio.sleep(0)
    assert not taking.done()
    queue.add("finished", urgent=True)
    assert await asyncio.wait_for(taking, 5) == "finished"
    assert await queue.get() == "routine"


async def test_an_urgent_add_of_a_key_in_progress_is_served_urgently_once_it_is_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("job")
    assert await queue.get() == "job"
    queue.add("job", urgent=True)  # changed while being reconciled
    queue.add("other")
    assert len(queue) == 2
    queue.done("job")
    assert await queue.get(urgent_only=True) == "job"
    queue.done("job")
    assert await queue.get() == "other"
    queue.done("other")
    await asyncio.wait_for(queue.wait_idle(), 5)
