"""A de-duplicating work queue with client-go's guarantee: one key is never processed twice at once.

Store events arrive in bursts (a relist touches every Job); reconciling each event separately would repeat
the same work many times. Keys are therefore coalesced while they wait, and a key dirtied while a worker is
on it is queued again once that worker finishes, so the last state is always reconciled and two workers
never race on one object.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    def __init__(self) -> None:
        self._pending: dict[K, None] = {}
        self._active: set[K] = set()
        self._redo: set[K] = set()
        self._has_work = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    def __len__(self) -> int:
        return len(self._pending) + len(self._active)

    def add(self, key: K) -> None:
        if key in self._active:
            self._redo.add(key)
            return
        self._pending[key] = None
        self._idle.clear()
        self._has_work.set()

    async def get(self) -> K:
        while not self._pending:
            self._has_work.clear()
            await self._has_work.wait()
        key = next(iter(self._pending))
        del self._pending[key]
        self._active.add(key)
        return key

    def done(self, key: K) -> None:
        self._active.discard(key)
        if key in self._redo:
            self._redo.discard(key)
            self.add(key)
        elif not self._pending and not self._active:
            self._idle.set()

    async def wait_idle(self) -> None:
        """Until nothing is queued or in progress (for tests and orderly shutdown)."""
        await self._idle.wait()

    async def serve(
        self, handler: Callable[[K], Awaitable[None]], *, on_error: Callable[[K, BaseException], None]
    ) -> None:
        """Worker loop: process keys forever; a failing key is reported and retried later by the caller."""
        while True:
            key = await self.get()
            try:
                await handler(key)
            except asyncio.CancelledError:
                self.done(key)
                raise
            except Exception as exc:
                on_error(key, exc)
            self.done(key)
