"""A stand-in for the cluster side of MultiKueue (``kueue_webhook.control.multikueue.workers``): worker
clients by name, one config per check, and a test that says when a worker is lost or back.

The dispatcher only reads ``WorkerClusters``; this plays the part the ``MultiKueueCluster`` connections
play in production, so dispatch tests need no kubeconfig Secrets: a test ``lose``s a worker (as the
cluster side would on a failed connection, with the moment it happened) and ``restore``s it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kueue_webhook.control.kube.client import KubeClient


class StaticWorkers:
    def __init__(self, clients: dict[str, KubeClient], *, checks: dict[str, tuple[str, ...]]) -> None:
        self.clients = dict(clients)
        self.checks = dict(checks)
        self.lost: dict[str, float] = {}
        self._callbacks: list[Callable[[str], None]] = []

    def clusters_for(self, admission_check: str) -> tuple[str, ...] | None:
        return self.checks.get(admission_check)

    def client(self, cluster: str) -> KubeClient | None:
        return None if cluster in self.lost else self.clients.get(cluster)

    def inactive_since(self, cluster: str) -> float | None:
        return self.lost.get(cluster)

    def subscribe(self, callback: Callable[[str], None]) -> None:
        self._callbacks.append(callback)

    def lose(self, cluster: str, *, since: float | None = None) -> None:
        self.lost[cluster] = time.monotonic() if since is None else since
        self._tell(cluster)

    def restore(self, cluster: str) -> None:
        self.lost.pop(cluster, None)
        self._tell(cluster)

    def _tell(self, cluster: str) -> None:
        for callback in self._callbacks:
            callback(cluster)

    async def close(self) -> None:
        for client in self.clients.values():
            await client.close()
