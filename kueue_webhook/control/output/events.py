"""Kubernetes Events (core/v1), recorded off the critical path.

Events explain to ``kubectl describe`` users what happened (QuotaReserved, Admitted, Pending, Finished, a
rejected configuration). They are best-effort by nature, so recording never blocks or fails an admission:
``record`` only enqueues, a background task writes, and a full queue drops the oldest intent rather than
growing without bound (counted in ``kueue_webhook_events_dropped_total``). Repeats of the same (object,
reason, message) within a short window are folded into one Event with a count, as client-go's correlator
does, so a pending Workload cannot flood etcd.

Writes draw on the informational write budget (``kueue_webhook.control.kube.api_health``), whose rate follows
the
API
server's health, and only while it has room to spare: a burst of admissions would otherwise send two Events
per admission to a busy API server, competing with the writes that admit and release quota. On a quiet
cluster every Event is written; on a congested one most are dropped (counted), as the pending reasons and
queue status written on the objects themselves say the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kueue_webhook.control.kube.api_health import WriteBudget
from kueue_webhook.control.kube.kinds import EVENTS
from kueue_webhook.control.kube.verbs import Creates
from kueue_webhook.control.output.conditions import now_rfc3339

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.events")
COMPONENT = "kueue-webhook"
#: the share of the write budget Events leave to pending reasons and queue status
SPARE = 0.5


class EventClient(Creates, Protocol):
    """The one verb the recorder sends."""


class EventSink(Protocol):
    """What controllers call; ``Recorder`` implements it, tests can collect instead."""

    def record(self, obj: JSON, *, type: str, reason: str, message: str) -> None: ...


@dataclass(frozen=True, slots=True)
class EventIntent:
    involved: JSON
    namespace: str
    type: str
    reason: str
    message: str


def involved_object(obj: JSON) -> JSON:
    meta = obj.get("metadata") or {}
    ref = {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
    }
    if meta.get("namespace"):
        ref["namespace"] = meta["namespace"]
    return ref


class Recorder:
    """Queue of Event intents drained by ``run``; identical repeats within ``fold_seconds`` are dropped."""

    def __init__(
        self,
        *,
        client: EventClient,
        instance: str,
        budget: WriteBudget,
        max_queue: int = 1000,
        fold_seconds: float = 60.0,
        on_drop: Callable[[], None] | None = None,
    ) -> None:
        self.client = client
        self.instance = instance
        self.budget = budget
        self.fold_seconds = fold_seconds
        self.on_drop = on_drop
        self._queue: deque[EventIntent] = deque(maxlen=max_queue)
        self._wake = asyncio.Event()
        self._recent: OrderedDict[int, float] = OrderedDict()  # hash of (uid, type, reason, message)
        self.written = 0
        self.dropped = 0

    @property
    def pending(self) -> int:
        """Events waiting to be written."""
        return len(self._queue)

    def record(self, obj: JSON, *, type: str, reason: str, message: str) -> None:
        involved = involved_object(obj)
        signature = hash((str(involved.get("uid")), type, reason, message))
        now = time.monotonic()
        seen = self._recent.get(signature)
        if seen is not None and now - seen < self.fold_seconds:
            return
        self._recent[signature] = now
        self._recent.move_to_end(signature)
        while len(self._recent) > 4096:
            self._recent.popitem(last=False)
        namespace = involved.get("namespace") or "default"
        if len(self._queue) == self._queue.maxlen:
            self.dropped += 1  # the oldest intent goes: the newest say most about the present
            if self.on_drop is not None:
                self.on_drop()
        self._queue.append(EventIntent(involved, namespace, type, reason, message))
        self._wake.set()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                delay = self.budget.take(keep=SPARE)
                if delay > 0:
                    await asyncio.sleep(delay)  # the rate limit itself, not a synchronisation
                    continue
                intent = self._queue.popleft()
                with contextlib.suppress(Exception):
                    await self._write(intent)

    async def _write(self, intent: EventIntent) -> None:
        now = now_rfc3339()
        name = f"{intent.involved.get('name', 'object')}.{uuid.uuid4().hex[:16]}"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": intent.namespace},
            "involvedObject": intent.involved,
            "type": intent.type,
            "reason": intent.reason,
            "message": intent.message,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.instance,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            await self.client.create(EVENTS, body, namespace=intent.namespace)
            self.written += 1
        except Exception as exc:
            log.info("event not recorded", extra={"reason": intent.reason, "error": repr(exc)})
            raise
