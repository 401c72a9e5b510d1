"""waitForPodsReady's timers: evict an admitted Workload whose pods are not ready in time, and requeue it
once its backoff is over (Kueue's workload controller: ``reconcileNotReadyTimeout`` and the Requeued
``BackoffFinished`` step).

The rules (which deadline, what the eviction writes, how long the backoff is) are pure, in
``webhook.api.pods_ready``. What lives here is when to look again: for every Workload the store reports
changed, the next moment something is due (its timeout, or the end of its backoff) is armed as one timer on
the event loop (``loop.call_at``), re-armed on each change and dropped when nothing is due. Deadlines are
wall-clock instants (condition timestamps); they are converted to the loop's clock once, so a test that
drives the loop's clock (looptime) drives these timers. A timer only queues the Workload: the handler
re-reads it from the store and re-derives everything, so a timer that fires late or for a Workload that
changed meanwhile does no harm.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from webhook.api.conditions import is_true
from webhook.api.objects import has_quota_reservation
from webhook.api.pods_ready import (
    PODS_READY_TIMEOUT,
    backoff_ends,
    exceeds_requeuing_limit,
    not_ready_timeout,
    requeue_state_after_timeout,
    timeout_message,
)
from webhook.control.cache.store import Change, key_of
from webhook.control.cache.workqueue import WorkQueue
from webhook.control.kube.kinds import WORKLOADS
from webhook.control.kube.leader import NotLeader
from webhook.control.output.admitted import priority_class_of
from webhook.control.output.conditions import ConditionsEdit, evicted_status, now_rfc3339
from webhook.control.output.context import ControlContext

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.pods_ready")
#: Kueue's Evicted reason when it deactivates a Workload past backoffLimitCount (Deactivated + cause)
DEACTIVATED_BY_LIMIT = "DeactivatedDueToRequeuingLimitExceeded"
DEACTIVATED_MESSAGE = "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
BACKOFF_FINISHED = ("True", "BackoffFinished", "The workload backoff was finished")


class PodsReadyTimers:
    """Times out not-ready Workloads and ends their requeue backoff; runs while leading."""

    def __init__(self, context: ControlContext) -> None:
        self.context = context
        self.queue: WorkQueue[tuple[str, str]] = WorkQueue()
        self._timers: dict[tuple[str, str], asyncio.TimerHandle] = {}
        self._offset: float | None = None  # wall clock minus loop clock, fixed at first use

    def _now(self) -> float:
        """Wall-clock seconds as the loop's clock advances them."""
        loop = asyncio.get_running_loop()
        if self._offset is None:
            self._offset = time.time() - loop.time()
        return self._offset + loop.time()

    def _due(self, workload: JSON) -> float | None:
        config = self.context.configuration().wait_for_pods_ready
        if not config.enable:
            return None
        timeout = not_ready_timeout(workload, config)
        if timeout is not None:
            return timeout.at
        if has_quota_reservation(workload):
            return None
        return backoff_ends(workload)

    def on_change(self, change: Change) -> None:
        if change.kind is not WORKLOADS:
            return
        self._arm(change.key, change.new)

    def resync(self) -> None:
        for workload in self.context.store.items(WORKLOADS):
            self._arm(key_of(workload), workload)

    def _arm(self, key: tuple[str, str], workload: JSON | None) -> None:
        previous = self._timers.pop(key, None)
        if previous is not None:
            previous.cancel()
        due = self._due(workload) if workload is not None else None
        if due is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # fed before the loop runs (a test building state): resync arms it later
            return
        at = loop.time() + max(0.0, due - self._now())
        self._timers[key] = loop.call_at(at, self.queue.add, key)

    async def run(self) -> None:
        try:
            await self.queue.serve(self.check, on_error=self._failed)
        finally:
            for timer in self._timers.values():
                timer.cancel()
            self._timers.clear()

    def _failed(self, key: tuple[str, str], exc: BaseException) -> None:
        if not isinstance(exc, NotLeader):  # a refused write is said once, by the elector
            log.warning("pods-ready check failed, retrying: %r", exc, extra={"workload": "/".join(key)})
        asyncio.get_running_loop().call_later(1.0, self.queue.add, key)

    async def check(self, key: tuple[str, str]) -> None:
        """Act on whatever is due for ``key`` now; re-arm if it is not due yet."""
        namespace, name = key
        workload = self.context.store.get(WORKLOADS, name, namespace)
        if workload is None or not self.context.is_leader():
            return
        due = self._due(workload)
        if due is None:
            return
        if due > self._now():
            self._arm(key, workload)
            return
        config = self.context.configuration().wait_for_pods_ready
        if has_quota_reservation(workload):
            if exceeds_requeuing_limit(workload, config):
                await self._deactivate(workload)
            else:
                await self._evict(workload)
        else:
            await self._requeue(workload)

    async def _evict(self, workload: JSON) -> None:
        """Evicted=True PodsReadyTimeout with one more requeue counted (Kueue's evict.Evict with
        UpdateRequeueState); the reconciler then stops the Job and releases the quota as for any eviction,
        writing Requeued=False PodsReadyTimeout."""
        namespace, name = key_of(workload)
        message = timeout_message(namespace, name)
        config = self.context.configuration().wait_for_pods_ready
        cause = ""

        def build(current: JSON) -> JSON | None:
            nonlocal cause
            timeout = not_ready_timeout(current, config)
            if not has_quota_reservation(current) or timeout is None or timeout.at > self._now():
                return None
            cause = timeout.cause
            status = evicted_status(
                current, reason=PODS_READY_TIMEOUT, message=message, preemption_reason="", now=now_rfc3339()
            )
            status["requeueState"] = requeue_state_after_timeout(current, config, now=self._now())
            return status

        updated = await self.context.writer.patch_status(WORKLOADS, workload, build)
        if updated is None:
            return
        cluster_queue = str(((updated.get("status") or {}).get("admission") or {}).get("clusterQueue", ""))
        self._count_eviction(updated, cluster_queue, PODS_READY_TIMEOUT, cause)
        self.context.events.record(
            updated, type="Normal", reason=f"EvictedDueTo{PODS_READY_TIMEOUT}", message=message
        )
        log.info(
            "evicted",
            extra={"workload": f"{namespace}/{name}", "decision": "evict", "reason": message, "cause": cause},
        )

    async def _deactivate(self, workload: JSON) -> None:
        """Past backoffLimitCount: no more requeues. Like Kueue (triggerDeactivation, then the eviction of an
        inactive workload) the Workload is evicted as deactivated, its requeueState cleared, and
        ``spec.active`` set to false; a user sets it back to true to try again."""
        config = self.context.configuration().wait_for_pods_ready

        def build(current: JSON) -> JSON | None:
            timeout = not_ready_timeout(current, config)
            if not has_quota_reservation(current) or timeout is None or timeout.at > self._now():
                return None
            status = evicted_status(
                current,
                reason=DEACTIVATED_BY_LIMIT,
                message=DEACTIVATED_MESSAGE,
                preemption_reason="",
                now=now_rfc3339(),
            )
            status["requeueState"] = None
            return status

        updated = await self.context.writer.patch_status(WORKLOADS, workload, build)
        if updated is None:
            return
        cluster_queue = str(((updated.get("status") or {}).get("admission") or {}).get("clusterQueue", ""))
        self._count_eviction(updated, cluster_queue, "Deactivated", "RequeuingLimitExceeded")
        self.context.events.record(
            updated, type="Normal", reason=f"EvictedDueTo{DEACTIVATED_BY_LIMIT}", message=DEACTIVATED_MESSAGE
        )
        await self.context.writer.patch(WORKLOADS, updated, {"spec": {"active": False}}, patch_type="merge")

    async def _requeue(self, workload: JSON) -> None:
        """The backoff is over: Requeued=True BackoffFinished and ``requeueAt`` cleared, so the scheduler
        queues the Workload again (Kueue keeps ``requeueState.count`` for the next backoff)."""

        def build(current: JSON) -> JSON | None:
            ends = backoff_ends(current)
            if (
                has_quota_reservation(current)
                or is_true(current, "Finished")
                or ends is None
                or ends > self._now()
            ):
                return None
            edit = ConditionsEdit.of(current, now_rfc3339())
            edit.set("Requeued", *BACKOFF_FINISHED)
            # a merge patch removes a field set to null; ``count`` stays for the next backoff
            return {"conditions": edit.conditions, "requeueState": {"requeueAt": None}}

        updated = await self.context.writer.patch_status(WORKLOADS, workload, build)
        if updated is not None:
            log.info("requeued after backoff", extra={"workload": "/".join(key_of(updated))})

    def _count_eviction(self, workload: JSON, cluster_queue: str, reason: str, cause: str) -> None:
        """``kueue_evicted_workloads_total`` with Kueue's labels (reason, underlying cause)."""
        metrics = self.context.metrics
        metrics.evicted_workloads.labels(
            cluster_queue, reason, cause, priority_class_of(workload), metrics.role
        ).inc()
