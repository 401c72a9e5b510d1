"""A de-duplicating work queue with client-go's guarantee: one key is never processed twice at once.

Store events arrive in bursts (a relist touches every Job); reconciling each event separately would repeat
the same work many times. Keys are therefore coalesced while they wait, and a key dirtied while a worker is
on it is queued again once that worker finishes, so the last state is always reconciled and two workers
never race on one object.

A key may be added as *urgent*: it is handed out before every ordinary key, and workers that serve only
urgent keys (``get(urgent_only=True)``) take it even while every other worker is held up by slow work. A
controller marks urgent the few changes a user is waiting on (a finished Job whose quota must be released, an
admitted Job to start), so they are not served behind a burst of routine ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    def __init__(self) -> None:
        self._pending: dict[K, None] = {}
        #: waiting keys served before every key of ``_pending`` (never in both)
        self._urgent: dict[K, None] = {}
        self._active: set[K] = set()
        #: active keys to queue again once done: False ordinary, True urgent
        self._redo: dict[K, bool] = {}
        self._has_work = asyncio.Event()
        self._has_urgent = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    def __len__(self) -> int:
        return len(self._pending) + len(self._urgent) + len(self._active)

    def add(self, key: K, *, urgent: bool = False) -> None:
        """Queue ``key`` (once, however often it is added); ``urgent`` serves it before ordinary keys."""
        if key in self._active:
            self._redo[key] = self._redo.get(key, False) or urgent
            return
        if key in self._urgent:
            return
        if urgent:
            self._pending.pop(key, None)
            self._urgent[key] = None
            self._has_urgent.set()
        else:
            self._pending[key] = None
        self._idle.clear()
        self._has_work.set()

    async def get(self, *, urgent_only: bool = False) -> K:
        """The next key, urgent ones first; ``urgent_only``: wait for an urgent key and take only those."""
        while not self._urgent and (urgent_only or not self._pending):
            event = self._has_urgent if urgent_only else self._has_work
            event.clear()
            await event.wait()
        waiting = self._urgent if self._urgent else self._pending
        key = next(iter(waiting))
        del waiting[key]
        if not self._urgent:
            self._has_urgent.clear()
        self._active.add(key)
        return key

    def done(self, key: K) -> None:
        self._active.discard(key)
        if key in self._redo:
            self.add(key, urgent=self._redo.pop(key))
        elif not self._pending and not self._urgent and not self._active:
            self._idle.set()

    async def wait_idle(self) -> None:
        """Until nothing is queued or in progress (for tests and orderly shutdown)."""
        await self._idle.wait()

    async def serve(
        self,
        handler: Callable[[K], Awaitable[None]],
        *,
        on_error: Callable[[K, BaseException], None],
        urgent_only: bool = False,
    ) -> None:
        """Worker loop: process keys forever (only urgent ones with ``urgent_only``); a failing key is
        reported and retried later by the caller."""
        while True:
            key = await self.get(urgent_only=urgent_only)
            try:
                await handler(key)
            except asyncio.CancelledError:
                self.done(key)
                raise
            except Exception as exc:
                on_error(key, exc)
            self.done(key)
