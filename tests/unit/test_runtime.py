"""The entry points' event loop: uvloop where installed, the same results either way."""

from __future__ import annotations

import asyncio
import importlib.util

from kueue_webhook import runtime


async def _loop_module_and_answer() -> tuple[str, int]:
    await asyncio.sleep(0)
    return type(asyncio.get_running_loop()).__module__, 42


def test_run_returns_the_coroutine_result_on_uvloop_when_installed() -> None:
    module, answer = runtime.run(_loop_module_and_answer())
    assert answer == 42
    installed = importlib.util.find_spec("uvloop") is not None
    assert module.startswith("uvloop") == installed
