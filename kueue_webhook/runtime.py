"""The event loop every long-running entry point runs on, how its loops wait, and the JSON lines it logs.

uvloop (libuv under the asyncio API) is used where it is installed: the controller and the webhook spend
a large share of their time in the transport (HTTP, TLS, watch streams), which it runs in C. Where it is not
available (Windows, an environment without the wheel) the standard loop does the same job, slower.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

import orjson

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on uvloop when available."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


async def wait_until_set(event: asyncio.Event, timeout: float | None) -> None:
    """Until ``event`` is set or ``timeout`` seconds have passed, whichever comes first.

    Not ``asyncio.wait_for``: on Python 3.11 it returns normally when a cancellation arrives just as the
    awaited future completes (CPython gh-86296, fixed in 3.12), so a loop cancelled at the instant it is
    woken (a scheduling term ending with its leadership, a shutdown) would run on and never end.
    ``asyncio.timeout`` tells its own expiry from a cancellation by someone else."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            await event.wait()


_STANDARD_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and every ``extra=`` field."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_RECORD_FIELDS:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


JsonFormatter.converter = time.gmtime
