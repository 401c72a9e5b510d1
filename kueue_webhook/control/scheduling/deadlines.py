"""One timer per Workload for whatever falls due at a wall-clock instant (a pods-ready timeout, the end of a
requeue backoff, a time limit).

For every Workload the store reports changed, the next moment something is due (``due``) is armed,
re-armed on each change and dropped when nothing is due. The armed deadlines wait in one heap under a
single event-loop timer set for the earliest: a loop timer per Workload (its handle, context and bound
method) held 4.5 MiB at 10,000 admitted Workloads under ``waitForPodsReady``, the heap and its index 2.3 MiB
(``python -m bench.memory_footprint``, the Workloads' keys included in both). A re-armed Workload leaves
its old entry in the heap, skipped when it comes up (and the heap is rebuilt once such leftovers outnumber
the live entries).
Deadlines are wall-clock instants (condition timestamps); they are converted to the loop's clock once, so a
test that drives the loop's clock (looptime) drives these timers. A timer only queues the Workload: ``act``
runs on the Workload as the store shows it then, after ``due`` is derived again, so a timer that fires late
or for a Workload that changed meanwhile does no harm. Subclasses say what is due and what to do.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import math
import time
from typing import Any

from kueue_webhook.control.cache.store import Change, key_of
from kueue_webhook.control.cache.workqueue import WorkQueue
from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.control.kube.leader import NotLeader
from kueue_webhook.control.output.context import ControlContext

JSON = dict[str, Any]
Key = tuple[str, str]

#: a wake-up this close before an entry's moment serves it (the loop may run a timer a little early);
#: ``check`` re-arms one that is not due yet after all
_EARLY = 0.001


class DeadlineTimers:
    """Arms, re-arms and serves per-Workload deadlines; acts only while leading."""

    #: what a failed ``act`` is logged as
    what = "deadline check"
    log = logging.getLogger("kueue_webhook.deadlines")

    def __init__(self, context: ControlContext) -> None:
        self.context = context
        self.queue: WorkQueue[tuple[str, str]] = WorkQueue()
        self._armed: dict[Key, float] = {}  # Workload -> the loop time it is armed for
        self._heap: list[tuple[float, Key]] = []  # (loop time, Workload), leftovers of re-arming included
        self._wakeup: asyncio.TimerHandle | None = None
        self._wakeup_at = math.inf
        self._offset: float | None = None  # wall clock minus loop clock, fixed at first use

    def due(self, workload: JSON) -> float | None:
        """When something is next due for ``workload`` (seconds since the epoch), or None."""
        raise NotImplementedError

    async def act(self, workload: JSON) -> None:
        """Do what is due (``due`` has passed for the Workload as the store shows it now)."""
        raise NotImplementedError

    def _now(self) -> float:
        """Wall-clock seconds as the loop's clock advances them."""
        loop = asyncio.get_running_loop()
        if self._offset is None:
            self._offset = time.time() - loop.time()
        return self._offset + loop.time()

    def on_change(self, change: Change) -> None:
        if change.kind is not WORKLOADS:
            return
        self._arm(change.key, change.new)

    def resync(self) -> None:
        for workload in self.context.store.items(WORKLOADS):
            self.resync_workload(workload)

    def resync_workload(self, workload: JSON) -> None:
        """``resync`` for one Workload (a term's start hands each one to every controller in one pass)."""
        self._arm(key_of(workload), workload)

    def _arm(self, key: Key, workload: JSON | None) -> None:
        due = self.due(workload) if workload is not None else None
        if due is None:
            self._armed.pop(key, None)  # its heap entry, if any, is now a leftover
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # fed before the loop runs (a test building state): resync arms it later
            self._armed.pop(key, None)
            return
        at = loop.time() + max(0.0, due - self._now())
        held = self._armed.get(key)
        if held is not None and abs(held - at) < _EARLY:
            return  # most changes of a Workload leave its deadline where it was: its entry stands
        self._armed[key] = at  # the old entry, if any, is now a leftover
        heapq.heappush(self._heap, (at, key))
        if len(self._heap) > 2 * len(self._armed) + 64:
            self._heap = [(moment, k) for k, moment in self._armed.items()]
            heapq.heapify(self._heap)
        if at < self._wakeup_at:
            self._wake_at(loop, at)

    def _wake_at(self, loop: asyncio.AbstractEventLoop, at: float) -> None:
        if self._wakeup is not None:
            self._wakeup.cancel()
        self._wakeup_at = at
        self._wakeup = loop.call_at(at, self._fire)

    def _fire(self) -> None:
        """Queue every Workload whose moment has come; wake again at the next one."""
        self._wakeup, self._wakeup_at = None, math.inf
        loop = asyncio.get_running_loop()
        now = loop.time() + _EARLY
        heap = self._heap
        while heap and (heap[0][0] <= now or self._armed.get(heap[0][1]) != heap[0][0]):
            at, key = heapq.heappop(heap)
            if self._armed.get(key) == at:
                del self._armed[key]
                self.queue.add(key)
        if heap:
            self._wake_at(loop, heap[0][0])

    async def run(self) -> None:
        try:
            await self.queue.serve(self.check, on_error=self._failed)
        finally:
            if self._wakeup is not None:
                self._wakeup.cancel()
            self._wakeup, self._wakeup_at = None, math.inf
            self._armed.clear()
            self._heap.clear()

    def _failed(self, key: tuple[str, str], exc: BaseException) -> None:
        if not isinstance(exc, NotLeader):  # a refused write is said once, by the elector
            self.log.warning(f"{self.what} failed, retrying: %r", exc, extra={"workload": "/".join(key)})
        asyncio.get_running_loop().call_later(1.0, self.queue.add, key)

    async def check(self, key: tuple[str, str]) -> None:
        """Act on whatever is due for ``key`` now; re-arm if it is not due yet."""
        namespace, name = key
        workload = self.context.store.get(WORKLOADS, name, namespace)
        if workload is None or not self.context.is_leader():
            return
        due = self.due(workload)
        if due is None:
            return
        if due > self._now():
            self._arm(key, workload)
            return
        await self.act(workload)
