"""The event loop every long-running entry point runs on.

uvloop (libuv under the asyncio API) is used where it is installed: the controller and the webhook spend
a large share of their time in the transport (HTTP, TLS, watch streams), which it runs in C. Where it is not
available (Windows, an environment without the wheel) the standard loop does the same job, slower.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on uvloop when available."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)
