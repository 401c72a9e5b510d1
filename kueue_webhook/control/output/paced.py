"""The rhythm the queue status and fair-sharing reporters share: change-driven passes at a bounded rate.

A store change only marks what it touches and kicks the reporter; ``run`` then makes one pass (``flush``)
at most every ``min_interval`` seconds, measured from the start of the previous pass, so a burst of changes
costs one pass and a quiet cluster costs none. Passes write, so only the leader makes them; a follower's
kicks are absorbed. ``flushed`` is set after every pass, for whoever waits on the reporter.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.core.view import SchedulerView


class PacedReporter:
    """Recompute after changes, at most every ``min_interval`` seconds, while leading (``flush``)."""

    def __init__(
        self, context: ControlContext, *, state: Callable[[], SchedulerView], min_interval: float
    ) -> None:
        self.context = context
        self.state = state
        self.min_interval = min_interval
        self.flushed = asyncio.Event()
        self._kick = asyncio.Event()
        self._last_flush = 0.0

    def kick(self) -> None:
        """Something changed: a pass is due."""
        self._kick.set()

    def mark_all(self) -> None:
        """Everything is due at the next pass (on becoming leader, after a configuration change)."""
        self.kick()

    async def run(self) -> None:
        self.mark_all()
        while True:
            await self._kick.wait()
            wait = self._last_flush + self.min_interval - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)  # rate limit: gather a burst into one pass
            self._kick.clear()
            self._last_flush = time.monotonic()
            if self.context.is_leader():
                await self.flush()
            self.flushed.set()

    async def flush(self) -> None:
        raise NotImplementedError
