"""The entry points' event loop: uvloop where installed, the same results either way."""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

from kueue_webhook import runtime


async def _loop_module_and_answer() -> tuple[str, int]:
    await asyncio.sleep(0)
    return type(asyncio.get_running_loop()).__module__, 42


def test_run_returns_the_coroutine_result_on_uvloop_when_installed() -> None:
    module, answer = runtime.run(_loop_module_and_answer())
    assert answer == 42
    installed = importlib.util.find_spec("uvloop") is not None
    assert module.startswith("uvloop") == installed


async def _cancel_as_woken(turns: int, wait: Any) -> str:
    """Cancel a waiter ``turns`` loop turns after its event is set: "ended" if the cancellation ended it,
    "ran on" if it returned as if never cancelled, "done before" if it had returned before the cancel."""
    event = asyncio.Event()
    waiter = asyncio.create_task(wait(event, 3600))
    await asyncio.sleep(0)  # waiting on the event
    event.set()
    for _ in range(turns):
        await asyncio.sleep(0)
    if waiter.done():
        return "done before"
    waiter.cancel()
    try:
        await waiter
    except asyncio.CancelledError:
        return "ended"
    return "ran on"


async def test_a_cancellation_that_arrives_as_the_event_is_set_ends_the_wait() -> None:
    # a scheduling loop cancelled as its term ends, in the same turn as a change wakes it, must stop
    # (CPython gh-86296: asyncio.wait_for on 3.11 returns normally then, and the loop went on for a lost term)
    outcomes = [await _cancel_as_woken(turns, runtime.wait_until_set) for turns in range(4)]
    assert outcomes[0] == "ended"  # woken and cancelled in one turn
    assert "ran on" not in outcomes


async def test_the_wait_ends_when_the_event_is_set_or_the_time_is_up() -> None:
    event = asyncio.Event()
    event.set()
    await asyncio.wait_for(runtime.wait_until_set(event, 3600), 5)  # set: at once (bounds a hang only)
    await asyncio.wait_for(runtime.wait_until_set(asyncio.Event(), 0.01), 5)  # unset: after its timeout
