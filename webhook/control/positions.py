"""Queue positions on pending Workloads: ``(position N in ClusterQueue X)`` after Kueue's pending message.

Users ask "why am I waiting, and behind how many?". The reason is Kueue's QuotaReserved=False message; the
rank is appended to it, so ``kubectl describe workload`` shows both in one place and tools matching Kueue's
text by prefix keep working. Ranks are the expensive part: one admission moves every Workload behind it, so
writing them eagerly would turn each admission into a write per pending Workload. Instead queues are marked
dirty, and a background pass recomputes the ranks from the queue order itself and writes only those that
differ from what the Workload shows, front of the queue first, at most ``writes_per_second`` a second. A
queue of 10,000 therefore converges in seconds without ever producing a write storm.

The same pass keeps Kueue's message current when only its wording moved (``N more needed`` changes with
every admission in the cohort; see ``webhook.control.pending_reasons``): it writes the latest message the
scheduler decided for the Workload, with the rank, under the same rate limit.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from webhook.control.conditions import is_true, now_rfc3339, pending_status
from webhook.control.context import ControlContext
from webhook.control.kinds import WORKLOADS
from webhook.control.reconciler import has_reservation
from webhook.core.view import SchedulerView

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.positions")
_NOT_SHOWN = -1  # remembered: the Workload's message carries no rank
POSITION_SUFFIX = re.compile(r" \(position (\d+) in ClusterQueue [^()]*\)$")


def position_suffix(position: int | None, cluster_queue: str) -> str:
    if position is None or not cluster_queue:
        return ""
    return f" (position {position} in ClusterQueue {cluster_queue})"


def base_message(message: str) -> str:
    """A condition message without our position suffix: Kueue's own text."""
    return POSITION_SUFFIX.sub("", message)


@dataclass(frozen=True, slots=True)
class Shown:
    """What a pending Workload's QuotaReserved=False condition shows: reason, Kueue's message, rank."""

    reason: str
    message: str
    rank: int


def quota_condition(workload: JSON) -> JSON | None:
    for condition in (workload.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "QuotaReserved":
            return dict(condition)
    return None


class QueuePositions:
    """Keeps the rank and message shown on pending Workloads current, at a bounded write rate."""

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
        self._dirty: set[str] = set()  # ClusterQueues whose shown ranks or messages may be stale
        self._ready = asyncio.Event()
        self._shown: dict[str, Shown | None] = {}  # workload key -> its pending condition (None: none)

    def remember(self, key: str, *, reason: str, message: str, position: int | None) -> None:
        """A write elsewhere just showed this reason, Kueue's ``message`` and ``position`` on the Workload."""
        self._shown[key] = Shown(reason, message, _NOT_SHOWN if position is None else position)

    def forget(self, key: str) -> None:
        self._shown.pop(key, None)

    def mark(self, cluster_queue: str) -> None:
        """Ranks or messages in ``cluster_queue`` may have moved; the background writer will look."""
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
            message = str(condition.get("message", ""))
            found = POSITION_SUFFIX.search(message)
            rank = int(found.group(1)) if found else _NOT_SHOWN
            shown = Shown(str(condition.get("reason", "")), base_message(message), rank)
        self._shown[key] = shown
        return shown

    def _stale(self, key: str, rank: int) -> tuple[str, str] | None:
        """(reason, message) to write if what the Workload shows is behind the queue or the scheduler."""
        shown = self.shown(key)
        if shown is None:
            return None  # no pending condition yet: that first write is PendingReasons'
        latest = self.state().last_wait(key)
        if latest is not None:
            reason, message = latest[0] or "Pending", latest[1]
            if (reason, message) != (shown.reason, shown.message):
                return reason, message
        if shown.rank in (_NOT_SHOWN, rank):
            return None
        return shown.reason, shown.message

    async def run(self) -> None:
        """Bring ranks and messages shown on pending Workloads up to date: front of the queue first, at
        most ``writes_per_second`` writes a second, recomputed from the queue on every pass."""
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
            for rank, info in enumerate(self.state().pending_in(cluster_queue), start=1):
                wanted = self._stale(str(info.key), rank)
                if wanted is not None:
                    stale.append((rank, str(info.key), cluster_queue, *wanted))
        stale.sort()
        if len(stale) > self.writes_per_second:
            self._dirty.update(entry[2] for entry in stale)  # the rest on the next pass
        await asyncio.gather(*(self._write(*entry) for entry in stale[: self.writes_per_second]))

    async def _write(self, rank: int, key: str, cluster_queue: str, reason: str, message: str) -> None:
        namespace, _, name = key.partition("/")
        workload = self.context.store.get(WORKLOADS, name, namespace)
        if workload is None:
            return
        shown = message + position_suffix(rank, cluster_queue)

        def build(current: JSON) -> JSON | None:
            condition = quota_condition(current)
            if not self.context.is_leader() or condition is None or condition.get("status") != "False":
                return None
            if has_reservation(current) or is_true(current, "Finished"):
                return None
            return pending_status(current, reason=reason, message=shown, now=now_rfc3339())

        try:
            if await self.context.writer.patch_status(WORKLOADS, workload, build) is not None:
                self.remember(key, reason=reason, message=message, position=rank)
        except Exception as exc:
            log.warning("queue position write failed", extra={"workload": key, "error": repr(exc)})
