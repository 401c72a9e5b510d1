"""The execution actor as Kueue's scheduler-performance runner plays it (runner/controller/controller.go).

Kueue's runner is a controller-runtime controller with 5 workers for Workloads (main.go's
GroupKindConcurrency ``Workload: 5``), so at most 5 finishes are in flight and each waits for its round trip:
the time quota stays held after a job's run time follows from the API server's latency, and the figures
measured with the runner include it. This module plays that controller:

* the **predicate** sees every Workload event: it notes the moment a Workload becomes ``Admitted`` (and
  forgets it when it stops being admitted) and enqueues the Workload while it is admitted and not finished;
* the **work queue** holds a key at most once, re-queues a key added while a worker has it only after that
  worker is done, delays requeues by their ``RequeueAfter`` and failures by a per-key exponential back-off
  (controller-runtime's workqueue and its default item rate limiter, 5 ms doubling);
* each **worker** reads the Workload from the watch cache (the informer's), acknowledges an eviction by
  clearing its reservation (``PatchAdmissionStatus``, field manager ``kueue-admission``), and otherwise
  requeues an admitted Workload for the rest of its run time, then sets ``Finished=True`` reason ``ByTest``
  (``SetConditionAndUpdate`` -> ``PatchStatus``, field manager ``kueue-job-controller-Finished``).

Both writes are server-side apply patches of the status subresource, forced, carrying the Workload's
``resourceVersion`` (Kueue's strict apply), so a stale cache gets a 409 and the key is retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import time
from collections import deque
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

JSON = dict[str, Any]
#: main.go: GroupKindConcurrency {"Workload.kueue.x-k8s.io": 5}
WORKERS = 5
#: constants.JobControllerName + "-" + condition type, as SetConditionAndUpdate names its field owner
FINISH_MANAGER = "kueue-job-controller-Finished"
#: constants.AdmissionName, PatchAdmissionStatus's field owner
ADMISSION_MANAGER = "kueue-admission"
#: controller-runtime's default per-item rate limiter: 5 ms doubling up to 1000 s
BACKOFF_BASE_S = 0.005
BACKOFF_MAX_S = 1000.0
API_VERSION = "kueue.x-k8s.io/v1beta2"

Apply = Callable[[str, JSON, str], Awaitable[None]]


class Conflict(Exception):
    """The apply was refused because the cache was stale (409): the key is retried with back-off."""


def _rfc3339(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(conditions: list[JSON], kind: str) -> JSON | None:
    return next((c for c in conditions if c.get("type") == kind), None)


def _is_true(obj: JSON, kind: str) -> bool:
    found = _condition(list((obj.get("status") or {}).get("conditions") or ()), kind)
    return found is not None and found.get("status") == "True"


def _set_condition(conditions: list[JSON], new: JSON) -> bool:
    """apimeta.SetStatusCondition: replace in place, keeping the transition time if the status holds."""
    existing = _condition(conditions, new["type"])
    if existing is None:
        conditions.append(new)
        return True
    changed = False
    if existing.get("status") != new["status"]:
        existing["status"] = new["status"]
        existing["lastTransitionTime"] = new["lastTransitionTime"]
        changed = True
    for field in ("reason", "message", "observedGeneration"):
        if existing.get(field) != new[field]:
            existing[field] = new[field]
            changed = True
    return changed


def _base(obj: JSON) -> JSON:
    """baseSSAWorkload (strict): identity, generation and resourceVersion, labels and annotations; the typed
    Go object also serialises an empty spec and a null creation timestamp."""
    meta = obj.get("metadata") or {}
    out_meta: JSON = {"name": meta.get("name"), "namespace": meta.get("namespace")}
    if meta.get("uid"):
        out_meta["uid"] = meta["uid"]
    if meta.get("resourceVersion"):
        out_meta["resourceVersion"] = meta["resourceVersion"]
    if meta.get("generation"):
        out_meta["generation"] = meta["generation"]
    out_meta["creationTimestamp"] = None
    for field in ("labels", "annotations"):
        if meta.get(field):
            out_meta[field] = dict(meta[field])
    return {"kind": "Workload", "apiVersion": API_VERSION, "metadata": out_meta, "spec": {"podSets": None}}


def finished_apply(obj: JSON, *, now: float) -> JSON:
    """The apply body of SetConditionAndUpdate(Finished, True, "ByTest", "By test runner"): only the
    condition, owned by its own field manager."""
    body = _base(obj)
    generation = (obj.get("metadata") or {}).get("generation")
    condition: JSON = {"type": "Finished", "status": "True"}
    if generation:
        condition["observedGeneration"] = generation
    condition |= {"lastTransitionTime": _rfc3339(now), "reason": "ByTest", "message": "By test runner"}
    body["status"] = {"conditions": [condition]}
    return body


#: patching.admissionManagedConditions, in the order PatchAdmissionStatus copies them
ADMISSION_MANAGED_CONDITIONS = (
    "QuotaReserved",
    "BlockedOnPreemptionGates",
    "Evicted",
    "Admitted",
    "Preempted",
    "Requeued",
    "DeactivationTarget",
    "Finished",
    "PodsReady",
)


def eviction_ack_apply(obj: JSON, *, now: float) -> JSON | None:
    """The apply body of PatchAdmissionStatus(UnsetQuotaReservationWithCondition("Pending", "Evicted by
    the test runner")); None when the reservation is already cleared (Kueue then sends nothing)."""
    status = obj.get("status") or {}
    conditions = [dict(c) for c in status.get("conditions") or ()]
    generation = (obj.get("metadata") or {}).get("generation")
    stamp = _rfc3339(now)
    changed = _set_condition(
        conditions,
        {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Pending",
            "message": "Evicted by the test runner",
            "lastTransitionTime": stamp,
            "observedGeneration": generation,
        },
    )
    if status.get("admission") is not None:
        changed = True
    admitted = _condition(conditions, "Admitted")
    if admitted is not None and admitted.get("status") == "True":  # SyncAdmittedCondition: no reservation
        changed |= _set_condition(
            conditions,
            {
                "type": "Admitted",
                "status": "False",
                "reason": "NoReservation",
                "message": "The workload has no reservation",
                "lastTransitionTime": stamp,
                "observedGeneration": generation,
            },
        )
    if not changed:
        return None
    out: JSON = {}
    requeue = status.get("requeueState") or {}
    if requeue.get("count") is not None or requeue.get("requeueAt") is not None:
        out["requeueState"] = requeue
    if status.get("resourceRequests"):  # no admission any more: the requests are copied back
        out["resourceRequests"] = status["resourceRequests"]
    managed = [c for kind in ADMISSION_MANAGED_CONDITIONS if (c := _condition(conditions, kind)) is not None]
    if managed:
        out["conditions"] = [{k: v for k, v in c.items() if v is not None} for c in managed]
    for field in ("accumulatedPastExecutionTimeSeconds", "clusterName", "nominatedClusterNames"):
        if status.get(field):
            out[field] = status[field]
    if status.get("schedulingStats") is not None:
        out["schedulingStats"] = {"evictions": (status["schedulingStats"] or {}).get("evictions") or None}
    for field in ("unhealthyNodes", "preemptionGates", "admissionChecks"):
        if status.get(field):
            out[field] = status[field]
    body = _base(obj)
    body["status"] = out
    return body


class WorkQueue:
    """controller-runtime's workqueue semantics: a key is queued at most once and never handed to two
    workers; a key added while being processed is queued again when its worker is done."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._ready: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._delayed: list[tuple[float, int, str]] = []
        self._seq = 0
        self._changed = asyncio.Event()
        self._failures: dict[str, int] = {}

    def add(self, key: str) -> None:
        if key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._ready.append(key)
            self._changed.set()

    def add_after(self, key: str, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        self._seq += 1
        heapq.heappush(self._delayed, (self._clock() + delay, self._seq, key))
        self._changed.set()

    def add_rate_limited(self, key: str) -> None:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        self.add_after(key, min(BACKOFF_BASE_S * 2**failures, BACKOFF_MAX_S))

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    def done(self, key: str) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._ready.append(key)
            self._changed.set()

    async def get(self) -> str:
        while True:
            now = self._clock()
            while self._delayed and self._delayed[0][0] <= now:
                self.add(heapq.heappop(self._delayed)[2])
            if self._ready:
                key = self._ready.popleft()
                self._dirty.discard(key)
                self._processing.add(key)
                return key
            self._changed.clear()
            timeout = self._delayed[0][0] - now if self._delayed else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout)

    def __len__(self) -> int:
        return len(self._ready) + len(self._delayed)


class KueueActor:
    """Finishes admitted Workloads and acknowledges evictions with ``workers`` bounded workers."""

    def __init__(
        self,
        *,
        read: Callable[[str], JSON | None],
        apply: Apply,
        runtime_ms: Callable[[str], int],
        workers: int = WORKERS,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._read = read
        self._apply = apply
        self._runtime_ms = runtime_ms
        self._workers = workers
        self._clock = clock
        self._wall = wall_clock
        self.queue = WorkQueue(clock)
        self._admitted_at: dict[str, float] = {}
        self.in_flight = 0
        self.peak_in_flight = 0
        self.writes = 0
        self.conflicts = 0
        self.errors: list[str] = []

    def observe(self, key: str, obj: JSON, *, created: bool = False, at: float | None = None) -> None:
        """The controller's event filter: Create and Update enqueue an admitted, unfinished Workload; an
        Update also notes when it became admitted (the runner's admissionTime): ``at`` on the actor's
        clock, the moment the event was seen (now when not given)."""
        admitted = _is_true(obj, "Admitted")
        if not created:
            if admitted:
                self._admitted_at.setdefault(key, self._clock() if at is None else at)
            else:
                self._admitted_at.pop(key, None)
        if admitted and not _is_true(obj, "Finished"):
            self.queue.add(key)

    def forget(self, key: str) -> None:
        self._admitted_at.pop(key, None)

    async def run(self) -> None:
        await asyncio.gather(*(self._worker() for _ in range(self._workers)))

    async def _worker(self) -> None:
        while True:
            key = await self.queue.get()
            try:
                requeue_after = await self._reconcile(key)
            except Conflict:
                self.conflicts += 1
                self.queue.add_rate_limited(key)
            except Exception as exc:  # controller-runtime logs and requeues with back-off
                self.errors.append(f"{key}: {exc}")
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
                if requeue_after is not None:
                    self.queue.add_after(key, requeue_after)
            finally:
                self.queue.done(key)

    async def _reconcile(self, key: str) -> float | None:
        obj = self._read(key)
        if obj is None:
            return None
        if _is_true(obj, "Evicted"):
            body = eviction_ack_apply(obj, now=self._wall())
            if body is not None:
                await self._write(key, body, ADMISSION_MANAGER)
            return None
        if not _is_true(obj, "Admitted"):
            return None
        admitted_at = self._admitted_at.get(key)
        if admitted_at is None:  # admitted before this actor saw it: the condition's transition time
            admitted_at = self._clock() - max(0.0, self._wall() - _transition_time(obj, "Admitted"))
        remaining = self._runtime_ms(key) / 1000 - (self._clock() - admitted_at)
        if remaining > 0:
            return remaining
        await self._write(key, finished_apply(obj, now=self._wall()), FINISH_MANAGER)
        return None

    async def _write(self, key: str, body: JSON, manager: str) -> None:
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            await self._apply(key, body, manager)
            self.writes += 1
        finally:
            self.in_flight -= 1


def _transition_time(obj: JSON, kind: str) -> float:
    found = _condition(list((obj.get("status") or {}).get("conditions") or ()), kind) or {}
    stamp = str(found.get("lastTransitionTime") or "")
    try:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return time.time()
