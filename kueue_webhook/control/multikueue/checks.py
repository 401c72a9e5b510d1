"""The ``Active`` condition of every AdmissionCheck served by MultiKueue (``spec.controllerName:
kueue.x-k8s.io/multikueue``), following its MultiKueueConfig and the ``Active`` conditions of the clusters
that config lists, as Kueue's ``ACReconciler`` keeps it (``kueue_webhook.api.objects.multikueue.check_active``
says which reason when).

A change to any AdmissionCheck, MultiKueueConfig or MultiKueueCluster re-derives every MultiKueue check:
there are a handful of them, and deriving one reads only the store. Runs on the leader only.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kueue_webhook.api.conditions import is_true
from kueue_webhook.api.objects.multikueue import (
    check_active,
    config_clusters,
    is_multikueue_check,
    parameters_config,
)
from kueue_webhook.control.cache.store import Change, key_of
from kueue_webhook.control.cache.workqueue import WorkQueue
from kueue_webhook.control.kube.kinds import ADMISSION_CHECKS, MULTIKUEUE_CLUSTERS, MULTIKUEUE_CONFIGS, Kind
from kueue_webhook.control.kube.leader import NotLeader
from kueue_webhook.control.output.conditions import ConditionsEdit, now_rfc3339
from kueue_webhook.control.output.context import ControlContext

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.multikueue")


class MultiKueueChecks:
    """Keeps MultiKueue AdmissionChecks' ``Active`` condition current; ``run`` while leading."""

    def __init__(self, context: ControlContext) -> None:
        self.context = context
        self.queue: WorkQueue[str] = WorkQueue()

    def on_change(self, change: Change) -> None:
        if change.kind is ADMISSION_CHECKS:
            if change.new is not None and is_multikueue_check(change.new):
                self.queue.add(change.key[1])
        elif (change.kind is MULTIKUEUE_CONFIGS or change.kind is MULTIKUEUE_CLUSTERS) and (
            change.old is None
            or change.new is None
            or _summary(change.kind, change.old) != _summary(change.kind, change.new)
        ):
            self.resync()

    def resync(self) -> None:
        for check in self.context.store.items(ADMISSION_CHECKS):
            if is_multikueue_check(check):
                self.queue.add(key_of(check)[1])

    async def run(self) -> None:
        await self.queue.serve(self.sync, on_error=self._failed)

    def _failed(self, key: str, exc: BaseException) -> None:
        if not isinstance(exc, NotLeader):
            log.warning("MultiKueue check sync failed, retrying: %r", exc, extra={"check": key})
        asyncio.get_running_loop().call_later(1.0, self.queue.add, key)

    def condition_of(self, check: JSON) -> tuple[str, str, str]:
        """(status, reason, message) of ``check``'s ``Active`` condition as the store shows things now."""
        store = self.context.store
        name, problem = parameters_config(check)
        config = store.get(MULTIKUEUE_CONFIGS, name) if name else None
        states: dict[str, bool | None] = {}
        for cluster in config_clusters(config):
            found = store.get(MULTIKUEUE_CLUSTERS, cluster)
            states[cluster] = None if found is None else is_true(found, "Active")
        return check_active(config_name=name, config_problem=problem, config=config, cluster_active=states)

    async def sync(self, name: str) -> None:
        check = self.context.store.get(ADMISSION_CHECKS, name)
        if check is None or not is_multikueue_check(check) or not self.context.is_leader():
            return
        status, reason, message = self.condition_of(check)

        def build(current: JSON) -> JSON | None:
            edit = ConditionsEdit.of(current, now_rfc3339())
            return {"conditions": edit.conditions} if edit.set("Active", status, reason, message) else None

        await self.context.writer.patch_status(ADMISSION_CHECKS, check, build)


def _summary(kind: Kind, obj: JSON) -> tuple[object, ...]:
    """What a MultiKueue check's condition reads of a config (its list) or a cluster (its Active state)."""
    if kind is MULTIKUEUE_CONFIGS:
        return config_clusters(obj)
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Active":
            return condition.get("status"), condition.get("reason")
    return ()
