"""waitForPodsReady's timers: evict an admitted Workload whose pods are not ready in time, and requeue it
once its backoff is over (Kueue's workload controller: ``reconcileNotReadyTimeout`` and the Requeued
``BackoffFinished`` step).

The rules (which deadline, what the eviction writes, how long the backoff is) are pure, in
``kueue_webhook.api.pods_ready``; when to look again is ``DeadlineTimers``' (one timer per Workload, armed on
each change). What lives here is what is due (its timeout, or the end of its backoff) and what to write.
"""

from __future__ import annotations

import logging
from typing import Any

from kueue_webhook.api.conditions import is_true
from kueue_webhook.api.objects import has_quota_reservation
from kueue_webhook.api.pods_ready import (
    PODS_READY_TIMEOUT,
    backoff_ends,
    exceeds_requeuing_limit,
    not_ready_timeout,
    requeue_state_after_timeout,
    timeout_message,
)
from kueue_webhook.control.cache.store import key_of
from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.control.output.conditions import ConditionsEdit, evicted_status, now_rfc3339
from kueue_webhook.control.output.milestones import count_eviction
from kueue_webhook.control.scheduling.deadlines import DeadlineTimers

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.pods_ready")
#: Kueue's Evicted reason when it deactivates a Workload past backoffLimitCount (Deactivated + cause)
DEACTIVATED_BY_LIMIT = "DeactivatedDueToRequeuingLimitExceeded"
DEACTIVATED_MESSAGE = "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
BACKOFF_FINISHED = ("True", "BackoffFinished", "The workload backoff was finished")


class PodsReadyTimers(DeadlineTimers):
    """Times out not-ready Workloads and ends their requeue backoff; runs while leading."""

    what = "pods-ready check"
    log = log

    def due(self, workload: JSON) -> float | None:
        config = self.context.configuration().wait_for_pods_ready
        if not config.enable:
            return None
        timeout = not_ready_timeout(workload, config)
        if timeout is not None:
            return timeout.at
        if has_quota_reservation(workload):
            return None
        return backoff_ends(workload)

    async def act(self, workload: JSON) -> None:
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
                current,
                reason=PODS_READY_TIMEOUT,
                message=message,
                preemption_reason="",
                now=now_rfc3339(),
                counted_as=(PODS_READY_TIMEOUT, cause),
            )
            status["requeueState"] = requeue_state_after_timeout(current, config, now=self._now())
            return status

        updated = await self.context.writer.patch_status(WORKLOADS, workload, build)
        if updated is None:
            return
        count_eviction(self.context, updated, PODS_READY_TIMEOUT, cause)
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
                counted_as=("Deactivated", "RequeuingLimitExceeded"),
            )
            status["requeueState"] = None
            return status

        updated = await self.context.writer.patch_status(WORKLOADS, workload, build)
        if updated is None:
            return
        count_eviction(self.context, updated, "Deactivated", "RequeuingLimitExceeded")
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
