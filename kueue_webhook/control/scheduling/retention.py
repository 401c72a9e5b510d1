"""Kueue's ``objectRetentionPolicies.workloads`` carried out: finished Workloads deleted ``afterFinished``,
and the objects of deactivated Workloads deleted ``afterDeactivatedByKueue`` (the rule:
``kueue_webhook.api.retention``; one timer per Workload: ``DeadlineTimers``'). Leader only, read from the
live configuration each time, so a changed policy applies on the Workloads' next change or the next term."""

from __future__ import annotations

import logging

from kueue_webhook.api.finalizers import RESOURCE_IN_USE, is_deleting
from kueue_webhook.api.retention import (
    DEACTIVATED_DELETED,
    FINISHED_DELETED,
    deactivated_expiry,
    finished_expiry,
)
from kueue_webhook.control.cache.store import controller_owner, key_of
from kueue_webhook.control.kube.kinds import WORKLOADS, kind_of
from kueue_webhook.control.scheduling.deadlines import JSON, DeadlineTimers

log = logging.getLogger("kueue_webhook.retention")


class WorkloadRetention(DeadlineTimers):
    """Deletes what the retention policy says has been kept long enough."""

    what = "retention check"
    log = log

    def _expiries(self, workload: JSON) -> tuple[float | None, float | None]:
        policy = self.context.configuration().workload_retention
        return (
            finished_expiry(workload, policy.after_finished),
            deactivated_expiry(workload, policy.after_deactivated_by_kueue),
        )

    def due(self, workload: JSON) -> float | None:
        if is_deleting(workload):
            return None
        moments = [moment for moment in self._expiries(workload) if moment is not None]
        return min(moments) if moments else None

    async def act(self, workload: JSON) -> None:
        finished, deactivated = self._expiries(workload)
        now = self._now()
        if finished is not None and finished <= now:
            await self._delete_finished(workload)
        elif deactivated is not None and deactivated <= now:
            await self._delete_owner(workload)

    async def _delete_finished(self, workload: JSON) -> None:
        writer = self.context.writer
        held = await writer.remove_finalizer(WORKLOADS, workload, RESOURCE_IN_USE)
        if await writer.delete(WORKLOADS, held if held is not None else workload):
            self.context.events.record(workload, type="Normal", reason="Deleted", message=FINISHED_DELETED)
            log.info(
                "finished workload deleted after its retention",
                extra={"workload": "/".join(key_of(workload))},
            )

    async def _delete_owner(self, workload: JSON) -> None:
        """The Workload's object, when it is of an enabled integration and still the one that owns it."""
        ref = controller_owner(workload)
        if ref is None:
            return  # a Workload made directly has no object to delete (Kueue's job reconciler only)
        integration = self.context.configuration().integrations.for_object(ref)
        if integration is None:
            return
        namespace, _ = key_of(workload)
        owner = self.context.store.get(kind_of(integration), str(ref.get("name", "")), namespace)
        if owner is None or (owner.get("metadata") or {}).get("uid") != ref.get("uid"):
            return
        if await self.context.writer.delete(kind_of(integration), owner, propagation="Background"):
            self.context.events.record(owner, type="Normal", reason="Deleted", message=DEACTIVATED_DELETED)
            log.info(
                "deactivated object deleted after its retention", extra={"object": "/".join(key_of(owner))}
            )
