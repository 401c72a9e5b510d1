"""Time limits: an admitted Workload past its ``spec.maximumExecutionTimeSeconds`` is deactivated.

As Kueue's workload controller does it (``reconcileMaxExecutionTime``, then the eviction of an inactive
Workload): a Warning Event ``MaximumExecutionTimeExceeded`` "The maximum execution time (Ns) exceeded",
Evicted=True ``DeactivatedDueToMaximumExecutionTimeExceeded`` with the accumulated time cleared, then
``spec.active=false``; the reconciler stops the job object and releases the quota as for any eviction, and
the Workload does not queue again until a user sets ``spec.active`` back to true. The rule is pure, in
``kueue_webhook.api.execution_time``; the timer per Workload is ``DeadlineTimers``'.
"""

from __future__ import annotations

import logging

from kueue_webhook.api.execution_time import (
    ACCUMULATED,
    DEACTIVATED_MESSAGE,
    DEACTIVATED_REASON,
    MAXIMUM_EXECUTION_TIME_EXCEEDED,
    deadline,
    exceeded_event_message,
)
from kueue_webhook.api.objects import has_quota_reservation
from kueue_webhook.control.cache.store import key_of
from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.control.output.conditions import evicted_status, now_rfc3339
from kueue_webhook.control.output.milestones import count_eviction
from kueue_webhook.control.scheduling.deadlines import JSON, DeadlineTimers

log = logging.getLogger("kueue_webhook.execution_limits")


class ExecutionTimeLimits(DeadlineTimers):
    """Deactivates admitted Workloads whose time is up; runs while leading."""

    what = "time-limit check"
    log = log

    def due(self, workload: JSON) -> float | None:
        return deadline(workload)

    async def act(self, workload: JSON) -> None:
        def build(current: JSON) -> JSON | None:
            due = deadline(current)
            if due is None or due > self._now() or not has_quota_reservation(current):
                return None
            status = evicted_status(
                current,
                reason=DEACTIVATED_REASON,
                message=DEACTIVATED_MESSAGE,
                preemption_reason="",
                now=now_rfc3339(),
                counted_as=("Deactivated", MAXIMUM_EXECUTION_TIME_EXCEEDED),
            )
            status[ACCUMULATED] = None  # Kueue clears it: a reactivated Workload starts a new count
            return status

        updated = await self.context.writer.patch_status(WORKLOADS, workload, build)
        if updated is None:
            return
        count_eviction(self.context, updated, "Deactivated", MAXIMUM_EXECUTION_TIME_EXCEEDED)
        events = self.context.events
        events.record(
            updated,
            type="Warning",
            reason=MAXIMUM_EXECUTION_TIME_EXCEEDED,
            message=exceeded_event_message(updated),
        )
        events.record(
            updated, type="Normal", reason=f"EvictedDueTo{DEACTIVATED_REASON}", message=DEACTIVATED_MESSAGE
        )
        await self.context.writer.patch(WORKLOADS, updated, {"spec": {"active": False}}, patch_type="merge")
        log.info(
            "deactivated: maximum execution time exceeded",
            extra={"workload": "/".join(key_of(updated)), "decision": "evict"},
        )
