"""Garbage collection of copies in the workers (Kueue's ``runGC``).

A copy whose manager Workload is gone, or being deleted, is left behind when the manager could not reach its
worker at the time (or a previous leader stopped midway). Every ``gc_interval`` each reachable worker is
listed for this manager's Workload copies (by the origin label) and those without a live manager Workload are
deleted with their job. ``gcInterval: 0`` turns the collection off, as in Kueue.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from kueue_webhook.api.finalizers import is_deleting
from kueue_webhook.control.cache.store import key_of
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.control.multikueue.pod_copies import workload_owner
from kueue_webhook.control.multikueue.scope import clusters_in_use, workload_kind
from kueue_webhook.control.multikueue.settings import DispatchSettings
from kueue_webhook.control.multikueue.worker_objects import delete_copies, list_copies
from kueue_webhook.control.multikueue.workers import WorkerClusters
from kueue_webhook.control.output.context import ControlContext

log = logging.getLogger("kueue_webhook.multikueue")

#: while the collection is off (``gcInterval: 0``), how often the configuration is looked at again
GC_OFF_RECHECK = 2.0


class GarbageCollector:
    """Deletes orphaned copies in every reachable worker, every ``gc_interval``; runs while leading."""

    def __init__(
        self, context: ControlContext, *, workers: WorkerClusters, settings: Callable[[], DispatchSettings]
    ) -> None:
        self.context = context
        self.workers = workers
        self._settings = settings

    async def run(self) -> None:
        """Every ``gc_interval``: copies whose manager Workload is gone or being deleted go, with their
        job."""
        while True:
            settings = self._settings()
            interval = settings.gc_interval
            await asyncio.sleep(interval if interval > 0 else GC_OFF_RECHECK)
            if interval <= 0:
                continue  # Kueue's gcInterval 0: no garbage collection
            for cluster in clusters_in_use(self.context.store, self.workers):
                client = self.workers.client(cluster)
                if client is None or not self.context.is_leader():
                    continue
                try:
                    await self.collect(cluster, client)
                except (TimeoutError, ApiError, OSError) as exc:
                    log.info("garbage collection of a worker failed: %r", exc, extra={"worker": cluster})

    async def collect(self, cluster: str, client: KubeClient) -> None:
        origin = self._settings().origin
        for remote in await list_copies(client, WORKLOADS, origin):
            namespace, name = key_of(remote)
            local = self.context.store.get(WORKLOADS, name, namespace)
            if local is not None and not is_deleting(local):
                continue
            owner = workload_owner(remote)  # a copy not adopted yet names its owner in annotations
            job_kind = workload_kind(self.context.configuration(), remote)
            await delete_copies(
                client,
                cluster,
                origin=origin,
                namespace=namespace,
                name=name,
                job_kind=job_kind,
                job_name=str((owner or {}).get("name", "")),
            )
            log.info("garbage collected", extra={"workload": f"{namespace}/{name}", "worker": cluster})
