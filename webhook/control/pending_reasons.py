"""Pending reasons on Workloads (QuotaReserved=False): what to write, and when not to write at all.

Every new Workload that does not fit gets Kueue's pending condition, so under a steady arrival rate these
writes outnumber admissions. A Workload's first pending condition, and any change of its reason, is written
at once. A message whose reason stands and whose wording alone moved is not: Kueue's text carries numbers
(``insufficient unused quota for cpu in flavor rf, 3 more needed``) that change with every admission in the
cohort, so writing each change would cost a waiting head many writes. Those are left to
``webhook.control.pending_messages``, which brings the shown message up to date at a bounded rate, front of
the queue first. The message is Kueue's, byte for byte: queue positions are served by the visibility API
(``webhook.core.visibility``), never appended. The same write sets Admitted=False ``NoReservation``, as
Kueue's UnsetQuotaReservationWithCondition does, so that condition costs no write of its own. The write
re-reads the store, so a Workload admitted meanwhile is not written, and the resourceVersion precondition
settles a race with its admission write.

The scheduler loop runs these writes in the same slots as admissions, on purpose: shared slots are
back-pressure. While they are busy the loop does not cycle, so changes accumulate and the next cycle sees
many heads at once and admits in priority order across the cohort; with separate slots every change runs
its own small cycle, low-priority Workloads take freed room first by borrowing it, and then have it
reclaimed (measured in bench/baseline/README.md).
"""

from __future__ import annotations

import logging
from typing import Any

from webhook.api.pods_ready import tracks_pods_ready
from webhook.control.conditions import is_true, now_rfc3339, pending_status
from webhook.control.context import ControlContext
from webhook.control.kinds import WORKLOADS
from webhook.control.pending_messages import PendingMessages, quota_condition
from webhook.control.reconciler import has_reservation
from webhook.core.scheduler import Wait

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.scheduler")


def shown_message(workload: JSON, *, reason: str) -> str | None:
    """Kueue's message of the pending condition the Workload shows with this reason; None when it shows no
    pending condition or another reason."""
    before = quota_condition(workload)
    if before is None or before.get("status") != "False" or before.get("reason") != reason:
        return None
    return str(before.get("message", ""))


class PendingReasons:
    """Writes one pending decision: Kueue's condition, its event and its log line."""

    def __init__(self, context: ControlContext, *, messages: PendingMessages) -> None:
        self.context = context
        self.messages = messages

    async def write(self, decision: Wait) -> None:
        key = str(decision.workload)
        namespace, _, name = key.partition("/")
        workload = self.context.store.get(WORKLOADS, name, namespace)
        if workload is None or not self.context.is_leader():
            return
        reason = decision.reason or "Pending"
        shown = shown_message(workload, reason=reason)
        if shown is not None:
            # the wording alone moved: the pending messages pass brings the Workload up to date, but a new
            # message is still a decision, counted and logged once like any other
            if shown != decision.message:
                self._decided(key, decision)
            return
        message = decision.message

        def build(current: JSON) -> JSON | None:
            if not self.context.is_leader() or has_reservation(current) or is_true(current, "Finished"):
                return None
            return pending_status(
                current,
                reason=reason,
                message=message,
                now=now_rfc3339(),
                pods_ready=tracks_pods_ready(
                    current,
                    self.context.configuration().wait_for_pods_ready,
                    self.context.configuration().pods_ready_kinds(),
                ),
            )

        try:
            updated = await self.context.writer.patch_status(WORKLOADS, workload, build)
        except Exception as exc:
            log.warning("pending status write failed", extra={"workload": key, "error": repr(exc)})
            return
        if updated is None:
            return
        self.messages.remember(key, reason=reason, message=decision.message)
        self.context.events.record(workload, type="Warning", reason=reason, message=decision.message)
        self._decided(key, decision)

    def _decided(self, key: str, decision: Wait) -> None:
        self.context.metrics.admission_attempts.labels("inadmissible", self.context.metrics.role).inc()
        log.info(
            "pending",
            extra={
                "workload": key,
                "cluster_queue": decision.cluster_queue,
                "decision": "wait",
                "reason": decision.message,
            },
        )
