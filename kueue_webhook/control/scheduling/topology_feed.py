"""Nodes and bound pods for topology-aware scheduling: the sink of their informers, apart from the store.

Nodes and pods are the largest and busiest kinds of a cluster, and TAS needs a few fields of each: a node's
labels, allocatable, taints and readiness, a bound pod's node and requests. Mirroring them whole in the
store would hold every byte of every pod; this sink reduces each object to its view
(:mod:`kueue_webhook.api.nodes`) as it arrives, keeps only the views, and tells its listeners (the
scheduler loop's core) only when a view changed: a pod's status update that changes neither its node nor
its phase's meaning costs a comparison. The pod informer asks only for bound pods (``spec.nodeName!=``).
The views outlive a leadership change, so a rebuilt core is replayed from them without a relist.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from kueue_webhook.api.nodes import NodeView, PodOnNode, node_view, pod_on_node
from kueue_webhook.control.kube.kinds import BOUND_PODS, NODES, Kind

__all__ = ["BOUND_PODS_SELECTOR", "TopologyFeed", "TopologyListener"]

JSON = dict[str, Any]
#: the pod informer's field selector: pods bound to a node
BOUND_PODS_SELECTOR = "spec.nodeName!="


class TopologyListener(Protocol):
    """What the feed calls (the scheduler loop implements it)."""

    def node_changed(self, name: str, node: NodeView | None) -> None: ...

    def pod_changed(self, key: str, pod: PodOnNode | None) -> None: ...


def _key(obj: JSON) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class TopologyFeed:
    """Informer sink for ``NODES`` and ``BOUND_PODS``."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeView] = {}
        self.pods: dict[str, PodOnNode] = {}
        self.listeners: list[TopologyListener] = []
        self._synced: set[Kind] = set()

    def subscribe(self, listener: TopologyListener) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def replay(self, listener: TopologyListener) -> None:
        """Feed everything known to a fresh listener."""
        for name, node in self.nodes.items():
            listener.node_changed(name, node)
        for key, pod in self.pods.items():
            listener.pod_changed(key, pod)

    # -- the informer's Sink ---------------------------------------------------------------------------

    def upsert(self, kind: Kind, obj: JSON) -> bool:
        if kind is NODES:
            view = node_view(obj)
            if view is None or self.nodes.get(view.name) == view:
                return False
            self.nodes[view.name] = view
            for listener in self.listeners:
                listener.node_changed(view.name, view)
            return True
        if kind is BOUND_PODS:
            namespace, name = _key(obj)
            return self._set_pod(f"{namespace}/{name}", pod_on_node(obj))
        return False

    def remove(self, kind: Kind, obj: JSON) -> bool:
        namespace, name = _key(obj)
        if kind is NODES:
            if self.nodes.pop(name, None) is None:
                return False
            for listener in self.listeners:
                listener.node_changed(name, None)
            return True
        if kind is BOUND_PODS:
            return self._set_pod(f"{namespace}/{name}", None)
        return False

    def retain_only(self, kind: Kind, keys: set[tuple[str, str]]) -> None:
        if kind is NODES:
            for name in [n for n in self.nodes if ("", n) not in keys]:
                self.remove(kind, {"metadata": {"name": name}})
        elif kind is BOUND_PODS:
            for key in list(self.pods):
                namespace, _, name = key.partition("/")
                if (namespace, name) not in keys:
                    self._set_pod(key, None)

    def mark_synced(self, kind: Kind) -> None:
        self._synced.add(kind)

    def is_synced(self, kind: Kind) -> bool:
        return kind in self._synced

    def _set_pod(self, key: str, pod: PodOnNode | None) -> bool:
        if self.pods.get(key) == pod:
            return False
        if pod is None:
            del self.pods[key]
        else:
            self.pods[key] = pod
        for listener in self.listeners:
            listener.pod_changed(key, pod)
        return True
