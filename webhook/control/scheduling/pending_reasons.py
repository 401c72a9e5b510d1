"""Pending reasons on Workloads (QuotaReserved=False): what to write, and when not to write at all.

Every new Workload that does not fit at once is decided to wait, so under a steady arrival rate these
decisions outnumber admissions; most such Workloads are admitted within a second, and a write for each
would be wasted on the API server the admissions need. So a Workload's first pending condition is written
only once it has waited ``PENDING_DEBOUNCE`` seconds, and any write here (a first condition, a change of
reason) goes only while the informational write budget (``webhook.control.kube.api_health``) allows; what is
not written now is written by ``webhook.control.scheduling.pending_messages``, which brings every waiting
Workload up
to date, front of the queue first, as the budget allows. A message whose reason stands and whose wording
alone moved is left to that pass too: Kueue's text carries numbers (``insufficient unused quota for cpu in
flavor rf, 3 more needed``) that change with every admission in the cohort. The message is Kueue's, byte
for byte: queue positions are served by the visibility API (``webhook.core.visibility``), never appended.
The same write sets Admitted=False ``NoReservation``, as Kueue's UnsetQuotaReservationWithCondition does,
so that condition costs no write of its own. The write re-reads the store, so a Workload admitted
meanwhile is not written, and the resourceVersion precondition settles a race with its admission write.
"""

from __future__ import annotations

import logging
from typing import Any

from webhook.api.integrations.statefulsets import released_at_zero
from webhook.api.pods_ready import tracks_pods_ready
from webhook.control.jobs.job_plan import has_reservation
from webhook.control.kube.kinds import WORKLOADS
from webhook.control.kube.leader import NotLeader
from webhook.control.output.conditions import is_true, now_rfc3339, pending_status
from webhook.control.output.context import ControlContext
from webhook.control.scheduling.pending_messages import PendingMessages, quota_condition
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

    async def write(self, decision: Wait, *, at_once: bool = False) -> None:
        """Show ``decision`` on its Workload, now or (unless ``at_once``) when it is worth a write; the
        scheduler has marked its ClusterQueue for the pending messages pass."""
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
        if not at_once:
            first = (quota_condition(workload) or {}).get("status") != "False"
            if first and not self.messages.settled(key):
                self._decided(key, decision)
                return  # admitted within a second, as most are, it never needs this write
            if self.context.budget.take() > 0:
                self._decided(key, decision)
                return  # the API server is busy: the pass writes it when the budget allows
        message = decision.message

        def build(current: JSON) -> JSON | None:
            if not self.context.is_leader() or has_reservation(current) or is_true(current, "Finished"):
                return None
            if released_at_zero(current):
                return None  # its owner released it on purpose (Kueue keeps the OnHold reason and message)
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
        except NotLeader:
            return  # said once by the elector; the next term writes it from the cluster
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
