"""Pending reasons on Workloads (QuotaReserved=False), written in the background behind admissions.

Every new Workload that does not fit gets Kueue's pending condition, so under a steady arrival rate these
writes outnumber admissions. Sharing the admission loop's write slots with them put each admission behind a
queue of pending writes and stretched the time from a quota release to the next admission. Here they have
their own, smaller pool and their own queue, coalesced per Workload: a Workload decided pending three times
before its turn is written once, with the latest reason, and one admitted meanwhile is not written at all
(the write re-reads the store and finds the reservation). Only the reason and Kueue's message decide whether
to write; a rank that moved alone is left to ``webhook.control.positions``, which refreshes ranks at a
bounded rate.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from webhook.control.conditions import is_true, now_rfc3339, pending_status
from webhook.control.events import EventSink
from webhook.control.kinds import WORKLOADS
from webhook.control.metrics import Metrics
from webhook.control.positions import QueuePositions, base_message, position_suffix, quota_condition
from webhook.control.reconciler import has_reservation
from webhook.control.store import Store
from webhook.control.writers import Writer
from webhook.core.scheduler import Wait

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.admission_loop")


def shows_reason(workload: JSON, *, reason: str, message: str) -> bool:
    """The Workload already shows this pending reason and Kueue's message (whatever rank follows it)."""
    before = quota_condition(workload)
    return (
        before is not None
        and before.get("status") == "False"
        and before.get("reason") == reason
        and base_message(str(before.get("message", ""))) == message
    )


class PendingReasons:
    """A coalescing queue of pending-reason writes, drained by ``run`` with at most ``max_in_flight``."""

    def __init__(
        self,
        *,
        store: Store,
        writer: Writer,
        events: EventSink,
        metrics: Metrics,
        positions: QueuePositions,
        is_leader: Callable[[], bool],
        max_in_flight: int = 4,
    ) -> None:
        self.store = store
        self.writer = writer
        self.events = events
        self.metrics = metrics
        self.positions = positions
        self.is_leader = is_leader
        self.max_in_flight = max_in_flight
        self._queued: dict[str, Wait] = {}  # insertion order is write order; a newer decision replaces
        self._ready = asyncio.Event()
        self._in_flight: set[asyncio.Task[None]] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    def submit(self, decision: Wait) -> None:
        """Queue the latest pending decision for a Workload (replacing an older one not yet written)."""
        self._queued[str(decision.workload)] = decision
        self._idle.clear()
        self._ready.set()

    def drop(self, key: str) -> None:
        """The Workload was admitted or deleted: an unwritten pending reason has nothing left to say."""
        self._queued.pop(key, None)

    @property
    def outstanding(self) -> int:
        """Pending-reason writes queued or running."""
        return len(self._queued) + len(self._in_flight)

    async def wait_idle(self) -> None:
        """Until nothing is queued or in flight (tests, orderly shutdown)."""
        await self._idle.wait()

    async def run(self) -> None:
        slots = asyncio.Semaphore(self.max_in_flight)
        try:
            while True:
                await self._ready.wait()
                self._ready.clear()
                while self._queued:
                    await slots.acquire()
                    if not self._queued:  # drained while we waited for a slot
                        slots.release()
                        break
                    key = next(iter(self._queued))
                    task = asyncio.get_running_loop().create_task(self._write(self._queued.pop(key)))
                    self._in_flight.add(task)
                    task.add_done_callback(lambda done: self._done(done, slots))
                if not self._in_flight and not self._queued:
                    self._idle.set()
        finally:
            for task in list(self._in_flight):
                task.cancel()

    def _done(self, task: asyncio.Task[None], slots: asyncio.Semaphore) -> None:
        self._in_flight.discard(task)
        slots.release()
        if not task.cancelled() and task.exception() is not None:
            log.error("pending status write crashed", extra={"error": repr(task.exception())})
        if not self._in_flight and not self._queued:
            self._idle.set()

    async def _write(self, decision: Wait) -> None:
        key = str(decision.workload)
        namespace, _, name = key.partition("/")
        workload = self.store.get(WORKLOADS, name, namespace)
        if workload is None or not self.is_leader():
            return
        reason = decision.reason or "Pending"
        if shows_reason(workload, reason=reason, message=decision.message):
            return
        message = decision.message + position_suffix(decision.position, decision.cluster_queue)

        def build(current: JSON) -> JSON | None:
            if not self.is_leader() or has_reservation(current) or is_true(current, "Finished"):
                return None
            return pending_status(current, reason=reason, message=message, now=now_rfc3339())

        try:
            updated = await self.writer.patch_status(WORKLOADS, workload, build)
        except Exception as exc:
            log.warning("pending status write failed", extra={"workload": key, "error": repr(exc)})
            return
        if updated is None:
            return
        self.metrics.admission_attempts.labels("inadmissible", self.metrics.role).inc()
        if decision.position is not None:
            self.positions.remember(key, decision.position)
        self.events.record(workload, type="Warning", reason=reason, message=decision.message)
        log.info(
            "pending",
            extra={
                "workload": key,
                "cluster_queue": decision.cluster_queue,
                "decision": "wait",
                "reason": decision.message,
            },
        )
