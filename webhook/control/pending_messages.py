"""Keeping Kueue's pending message current on waiting Workloads, at a bounded write rate.

The reason a Workload waits is Kueue's QuotaReserved=False condition, byte for byte as Kueue writes it, so
tools and alerts matching Kueue's messages keep working. Its wording carries numbers (``insufficient unused
quota for cpu in flavor rf, 3 more needed``) that move with every admission in the cohort; writing each
move at once would cost a waiting head many writes. ``PendingReasons`` writes a first reason and a change of
reason at once and leaves a reworded message to this pass: ClusterQueues are marked dirty, and a background
pass writes the latest message the scheduler decided for each Workload whose shown message differs, front
of the queue first, at most ``writes_per_second`` a second. A queue of 10,000 therefore converges in seconds
without ever producing a write storm.

Queue positions are not written to Workloads at all (each admission would move every rank behind it): they
are served, as Kueue serves them, by the visibility API (``webhook.core.visibility``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from webhook.control.conditions import is_true, now_rfc3339, pending_status
from webhook.control.context import ControlContext
from webhook.control.kinds import WORKLOADS
from webhook.control.reconciler import has_reservation
from webhook.core.view import SchedulerView

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.pending")


@dataclass(frozen=True, slots=True)
class Shown:
    """What a pending Workload's QuotaReserved=False condition shows: reason and Kueue's message."""

    reason: str
    message: str


def quota_condition(workload: JSON) -> JSON | None:
    for condition in (workload.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "QuotaReserved":
            return dict(condition)
    return None


class PendingMessages:
    """Keeps the message shown on pending Workloads current, at a bounded write rate."""

    def __init__(
        self,
        context: ControlContext,
        *,
        state: Callable[[], SchedulerView],
        writes_per_second: int = 50,
    ) -> None:
        self.context = context
        self.state = state
        self.writes_per_second = writes_per_second
        self._dirty: set[str] = set()  # ClusterQueues whose shown messages may be stale
        self._ready = asyncio.Event()
        self._shown: dict[str, Shown | None] = {}  # workload key -> its pending condition (None: none)

    def remember(self, key: str, *, reason: str, message: str) -> None:
        """A write elsewhere just showed this reason and Kueue's ``message`` on the Workload."""
        self._shown[key] = Shown(reason, message)

    def forget(self, key: str) -> None:
        self._shown.pop(key, None)

    def mark(self, cluster_queue: str) -> None:
        """Messages in ``cluster_queue`` may have moved; the background writer will look."""
        if cluster_queue:
            self._dirty.add(cluster_queue)
            self._ready.set()

    def shown(self, key: str) -> Shown | None:
        """The pending condition the Workload shows now (remembered, or read once from the store)."""
        if key in self._shown:
            return self._shown[key]
        namespace, _, name = key.partition("/")
        condition = quota_condition(self.context.store.get(WORKLOADS, name, namespace) or {})
        shown = None
        if condition is not None and condition.get("status") == "False":
            shown = Shown(str(condition.get("reason", "")), str(condition.get("message", "")))
        self._shown[key] = shown
        return shown

    def _stale(self, key: str) -> tuple[str, str] | None:
        """(reason, message) to write if what the Workload shows is behind the scheduler."""
        shown = self.shown(key)
        if shown is None:
            return None  # no pending condition yet: that first write is PendingReasons'
        latest = self.state().last_wait(key)
        if latest is None:
            return None
        wanted = (latest[0] or "Pending", latest[1])
        return wanted if wanted != (shown.reason, shown.message) else None

    async def run(self) -> None:
        """Bring messages shown on pending Workloads up to date: front of the queue first, at most
        ``writes_per_second`` writes a second, recomputed from the queue on every pass."""
        while True:
            await self._ready.wait()
            self._ready.clear()
            while self._dirty and self.context.is_leader():
                await self.refresh_once()
                await asyncio.sleep(1.0)  # the rate limit itself, not a synchronisation

    async def refresh_once(self) -> None:
        """One pass over the dirty ClusterQueues: up to ``writes_per_second`` writes, the rest stay dirty."""
        queues, self._dirty = self._dirty, set()
        stale: list[tuple[int, str, str, str, str]] = []
        for cluster_queue in sorted(queues):
            for rank, info in enumerate(self.state().pending_in(cluster_queue)):
                wanted = self._stale(str(info.key))
                if wanted is not None:
                    stale.append((rank, str(info.key), cluster_queue, *wanted))
        stale.sort()
        if len(stale) > self.writes_per_second:
            self._dirty.update(entry[2] for entry in stale)  # the rest on the next pass
        await asyncio.gather(
            *(
                self._write(key, reason, message)
                for _, key, _, reason, message in stale[: self.writes_per_second]
            )
        )

    async def _write(self, key: str, reason: str, message: str) -> None:
        namespace, _, name = key.partition("/")
        workload = self.context.store.get(WORKLOADS, name, namespace)
        if workload is None:
            return

        def build(current: JSON) -> JSON | None:
            condition = quota_condition(current)
            if not self.context.is_leader() or condition is None or condition.get("status") != "False":
                return None
            if has_reservation(current) or is_true(current, "Finished"):
                return None
            return pending_status(current, reason=reason, message=message, now=now_rfc3339())

        try:
            if await self.context.writer.patch_status(WORKLOADS, workload, build) is not None:
                self.remember(key, reason=reason, message=message)
        except Exception as exc:
            log.warning("pending message write failed", extra={"workload": key, "error": repr(exc)})
