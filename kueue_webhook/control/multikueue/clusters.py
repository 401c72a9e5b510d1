"""The worker-cluster connections: one client per ``MultiKueueCluster``, its ``Active`` condition kept true to
whether the worker answers, and the ``WorkerClusters`` answers the dispatcher reads.

Each MultiKueueCluster gets one task (``cluster_link.ClusterLink``) that reads its kubeconfig
(``kubeconfig_source``), connects, keeps a watch open and writes its ``Active`` condition
(``active_condition``). This module keeps the set of them equal to the MultiKueueClusters in the store, wakes
the one whose Secret or spec changed, and tells the dispatcher when a cluster's state or config membership
changes.

All of this runs on the leader only (it writes status), started and cancelled with leadership; a replica
that does not lead has no clients, so ``client`` answers None there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kueue_webhook.api.config import Configuration
from kueue_webhook.api.objects.multikueue import (
    KUBECONFIG_PATH_PREFIX,
    config_clusters,
    is_multikueue_check,
    parameters_config,
)
from kueue_webhook.control.cache.store import Change
from kueue_webhook.control.kube.client import Fence, KubeClient
from kueue_webhook.control.kube.kinds import (
    ADMISSION_CHECKS,
    MULTIKUEUE_CLUSTERS,
    MULTIKUEUE_CONFIGS,
    SECRETS,
)
from kueue_webhook.control.multikueue.cluster_link import ClusterLink
from kueue_webhook.control.multikueue.workers import WorkerClusters
from kueue_webhook.control.output.context import ControlContext

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.multikueue")

#: Kueue's reconnect schedule (``retryAfter``: 5 s doubling up to 7 steps); here with jitter
RETRY_BASE = 5.0
RETRY_CAP = 320.0
#: how often a ``locationType: Path`` kubeconfig is looked at for changes
FILE_POLL_SECONDS = 2.0
#: the connection check's limit: a worker slower than this to list is not usable
CONNECT_TIMEOUT = 15.0
#: the worker's watch is reopened this often (the server ends it; reopening is not a reconnect)
WATCH_TIMEOUT_SECONDS = 290
#: connections per worker client (the dispatcher's writes; watches have their own)
WORKER_CONNECTIONS = 4


class WorkerConnections:
    """``WorkerClusters`` (``kueue_webhook.control.multikueue.workers``) over live connections.

    Feed it store changes with ``on_change`` and ``run`` it while leading; ``client``, ``clusters_for``,
    ``inactive_since`` and ``subscribe`` may be called at any time from the event loop."""

    def __init__(
        self,
        context: ControlContext,
        *,
        namespace: str,
        path_prefix: Path = Path(KUBECONFIG_PATH_PREFIX),
        retry_base: float = RETRY_BASE,
        retry_cap: float = RETRY_CAP,
        file_poll: float = FILE_POLL_SECONDS,
        connect_timeout: float = CONNECT_TIMEOUT,
        fence: Fence | None = None,
    ) -> None:
        self.context = context
        #: the leader's fence (``LeaderElector.fence``): the dispatcher's writes to a worker go out only while
        #: this replica surely holds the Lease, as its writes to the manager do
        self.fence = fence
        self.namespace = namespace
        self.path_prefix = path_prefix
        self.retry_base = retry_base
        self.retry_cap = retry_cap
        self.file_poll = file_poll
        self.connect_timeout = connect_timeout
        self._links: dict[str, ClusterLink] = {}
        self._callbacks: list[Callable[[str], None]] = []
        self._running = False
        #: set while ``run`` owns the links; cleared when leadership ends
        self._loop: asyncio.AbstractEventLoop | None = None
        #: when a cluster with no connection task was first asked about (the dispatcher's lost timer)
        self._unknown_since: dict[str, float] = {}
        self._origin = context.configuration().multi_kueue.origin

    # -- WorkerClusters -------------------------------------------------------------------------------------

    def clusters_for(self, admission_check: str) -> tuple[str, ...] | None:
        check = self.context.store.get(ADMISSION_CHECKS, admission_check)
        if check is None or not is_multikueue_check(check):
            return None
        name, _ = parameters_config(check)
        config = self.context.store.get(MULTIKUEUE_CONFIGS, name) if name else None
        return config_clusters(config) if config is not None else None

    def client(self, cluster: str) -> KubeClient | None:
        link = self._links.get(cluster)
        if link is None or not link.active or link.client is None:
            return None
        return link.client if self.fence is None else link.client.fenced(self.fence)

    def inactive_since(self, cluster: str) -> float | None:
        link = self._links.get(cluster)
        if link is None:
            return self._unknown_since.setdefault(cluster, time.monotonic())
        return None if link.active else link.inactive_since

    def subscribe(self, callback: Callable[[str], None]) -> None:
        self._callbacks.append(callback)

    # -- store side -----------------------------------------------------------------------------------------

    def notify(self, cluster: str) -> None:
        """Tell subscribers about ``cluster`` on a later turn of the loop (never from inside their call)."""
        loop = self._loop
        if loop is None:
            with contextlib.suppress(RuntimeError):
                loop = asyncio.get_running_loop()
        if loop is None:
            return
        for callback in list(self._callbacks):
            loop.call_soon(_safely, callback, cluster)

    def on_change(self, change: Change) -> None:
        """Route a store change to the cluster tasks it concerns."""
        if change.kind is MULTIKUEUE_CLUSTERS:
            name = change.key[1]
            if change.new is None or (change.new.get("metadata") or {}).get("deletionTimestamp"):
                self._drop(name)  # Kueue's reconciler: a cluster being deleted is disconnected at once
            elif self._running and (change.old is None or change.old.get("spec") != change.new.get("spec")):
                self._ensure(name).wake.set()
        elif change.kind is SECRETS and change.key[0] == self.namespace:
            for link in self._links.values():
                if link.secret == change.key[1]:
                    link.wake.set()
        elif change.kind is MULTIKUEUE_CONFIGS:
            old, new = set(config_clusters(change.old)), set(config_clusters(change.new))
            for cluster in sorted(old ^ new if change.old and change.new else old | new):
                self.notify(cluster)
        elif change.kind is ADMISSION_CHECKS and (
            is_multikueue_check(change.old) or is_multikueue_check(change.new)
        ):
            for check in (change.old, change.new):
                if check is None:
                    continue
                config_name, _ = parameters_config(check)
                config = self.context.store.get(MULTIKUEUE_CONFIGS, config_name) if config_name else None
                for cluster in config_clusters(config):
                    self.notify(cluster)

    def reconfigure(self, configuration: Configuration) -> None:
        """A new ``multiKueue.origin`` changes which Workloads on the workers are ours: every connection is
        checked again with it (live, like every field of the ConfigMap)."""
        origin = configuration.multi_kueue.origin
        if origin == self._origin:
            return
        self._origin = origin
        for link in self._links.values():
            link.fingerprint = ""
            link.wake.set()

    async def run(self) -> None:
        """Keep a task per MultiKueueCluster until cancelled (leadership lost); then close every client."""
        self._loop = asyncio.get_running_loop()
        self._running = True
        try:
            for cluster in self.context.store.items(MULTIKUEUE_CLUSTERS):
                if not cluster["metadata"].get("deletionTimestamp"):
                    self._ensure(str(cluster["metadata"]["name"]))
            await asyncio.Event().wait()
        finally:
            self._running = False
            links, self._links = list(self._links.values()), {}
            for link in links:
                await link.stop()
                self.notify(link.name)
            self._loop = None

    def _ensure(self, name: str) -> ClusterLink:
        link = self._links.get(name)
        if link is None:
            link = ClusterLink(self, name)
            self._links[name] = link
            self._unknown_since.pop(name, None)
            link.start()
        return link

    def _drop(self, name: str) -> None:
        link = self._links.pop(name, None)
        if link is not None:
            asyncio.get_running_loop().create_task(link.stop(), name=f"multikueue-close-{name}")
            self.notify(name)


def _safely(callback: Callable[[str], None], cluster: str) -> None:
    try:
        callback(cluster)
    except Exception:  # one subscriber's bug must not stop the others' news
        log.exception("worker cluster subscriber failed", extra={"cluster": cluster})


def as_worker_clusters(connections: WorkerConnections) -> WorkerClusters:
    """``connections`` as the seam's type (and where mypy proves it implements ``WorkerClusters``)."""
    return connections
