"""Nodes and the pods of topology-aware Workloads, mirrored into a store of their own.

Only pods labelled with their pod set (``kueue.x-k8s.io/podset``) are listed and watched, so a cluster's
pods that no queue started cost nothing here. Every pod a queue starts carries that label (Kueue puts it on
each admitted pod set), so the store keeps of them only the pods Kueue counts as topology-aware (its
``IsTAS``: a pod set that asks for a topology by annotation, or the unconstrained annotation the start put
on a pod set placed by topology implicitly); at 10,000 admitted Jobs the others held 4 MB. Nodes are
watched whole (the failure controller reads their Ready condition), once for the whole controller: the same
informer also feeds the scheduler's :class:`~kueue_webhook.control.scheduling.topology_feed.TopologyFeed`
(``node_sink``), which reduces each Node to what placement reads. (Pods are watched twice on purpose: the
feed needs every *bound* pod's requests, this store every topology-aware pod, bound or still gated; neither
subset contains the other.) The store is separate from the controller's main one: the pod integration
mirrors Pods there under the same resource, and neither must see the other's subset. Both informers run on
every replica, so a new leader starts from a warm view.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kueue_webhook.api.topology_pods import PODSET_LABEL, WORKLOAD_ANNOTATION, is_topology_pod
from kueue_webhook.control.cache.informer import Informer, ListWatchClient, Sink
from kueue_webhook.control.cache.store import Change, Store, key_of
from kueue_webhook.control.kube.kinds import NODES, Kind

__all__ = ["NODES", "PODS", "TopologyWatch", "is_terminated", "workload_of_pod"]

JSON = dict[str, Any]

PODS = Kind("Pod", "", "v1", "pods", namespaced=True)


def workload_of_pod(pod: JSON) -> tuple[str, str] | None:
    """(namespace, Workload name) a pod's ``kueue.x-k8s.io/workload`` annotation names."""
    meta = pod.get("metadata") or {}
    name = (meta.get("annotations") or {}).get(WORKLOAD_ANNOTATION)
    return (str(meta.get("namespace") or ""), name) if isinstance(name, str) and name else None


def is_terminated(pod: JSON) -> bool:
    """Succeeded or Failed (Kueue's IsTerminated): such a pod is replaced, not placed."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


class _TopologyPods:
    """The pod informer's sink: the store gets the topology-aware pods only, and lets go of a pod that is
    no longer one; the others are neither held nor remembered as deleted."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def retain_only(self, kind: Kind, keys: set[tuple[str, str]]) -> None:
        self.store.retain_only(kind, keys)

    def upsert(self, kind: Kind, obj: JSON) -> bool:
        if is_topology_pod(obj):
            return self.store.upsert(kind, obj)
        return self.remove(kind, obj)

    def remove(self, kind: Kind, obj: JSON) -> bool:
        namespace, name = key_of(obj)
        return self.store.contains(kind, name, namespace) and self.store.remove(kind, obj)

    def mark_synced(self, kind: Kind) -> None:
        self.store.mark_synced(kind)


class _Both:
    """An informer sink delivering every Node event to the store and then to a second sink."""

    def __init__(self, store: Store, other: Sink) -> None:
        self.store, self.other = store, other

    def retain_only(self, kind: Kind, keys: set[tuple[str, str]]) -> None:
        self.store.retain_only(kind, keys)
        self.other.retain_only(kind, keys)

    def upsert(self, kind: Kind, obj: JSON) -> bool:
        changed = self.store.upsert(kind, obj)
        return self.other.upsert(kind, obj) or changed

    def remove(self, kind: Kind, obj: JSON) -> bool:
        changed = self.store.remove(kind, obj)
        return self.other.remove(kind, obj) or changed

    def mark_synced(self, kind: Kind) -> None:
        self.store.mark_synced(kind)
        self.other.mark_synced(kind)


class TopologyWatch:
    """The store of topology-aware pods and Nodes, and the informers filling it.

    ``node_sink`` receives the Node events too (the scheduler's topology feed), so the cluster's Nodes are
    listed and watched once. ``node_informer`` is exposed for the controller's readiness.
    """

    def __init__(
        self, client: ListWatchClient, *, watch_timeout_seconds: int = 290, node_sink: Sink | None = None
    ) -> None:
        self.store = Store()
        self._pods = _TopologyPods(self.store)
        self.pod_informer = Informer(
            client=client,
            kind=PODS,
            sink=self._pods,
            label_selector=PODSET_LABEL,
            watch_timeout_seconds=watch_timeout_seconds,
        )
        self.node_informer = Informer(
            client=client,
            kind=NODES,
            sink=self.store if node_sink is None else _Both(self.store, node_sink),
            watch_timeout_seconds=watch_timeout_seconds,
        )
        self.informers = [self.pod_informer, self.node_informer]

    def subscribe(self, listener: Callable[[Change], None]) -> None:
        self.store.subscribe(listener)

    def pods_of(self, namespace: str, workload: str) -> list[JSON]:
        """The pods (any state) annotated with ``workload``."""
        return [
            pod
            for pod in self.store.items(PODS, namespace=namespace)
            if workload_of_pod(pod) == (namespace, workload)
        ]

    def nodes_synced(self) -> bool:
        """Whether the Nodes have been listed: only then does a missing node mean a deleted one."""
        return self.store.is_synced([NODES])

    def node(self, name: str) -> JSON | None:
        return self.store.get(NODES, name)

    def remember(self, pod: JSON) -> None:
        """A pod as a write just returned it, so the next decision sees it before its watch event."""
        pod.setdefault("kind", PODS.kind)
        pod.setdefault("apiVersion", PODS.api_version)
        self._pods.upsert(PODS, pod)

    async def run(self) -> None:
        tasks = [asyncio.ensure_future(informer.run()) for informer in self.informers]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
