"""What the admission rules need to know about the cluster, and nothing more.

The rules are pure functions; whatever they read about the cluster comes through :class:`ClusterView`, a
read-only Protocol the controller implements from its informer store (answers must be synchronous and cheap:
the webhook sits on the API server's write path with a 5 s budget). :class:`StaticClusterView` is the
in-memory implementation used by tests, the benchmark, and a webhook running without a controller.

The owners an object claims in its ownerReferences are checked through :meth:`ClusterView.owner` (Kueue's
owner lookup; ``kueue_webhook.api.integrations.owners``): a view answers for the kinds it holds and says
:class:`Unresolved` for the others, and the object is then queued on its own.

A namespace we have not seen yet is not an error: kube-apiserver always labels a namespace with
``kubernetes.io/metadata.name``, so :func:`namespace_labels_or_default` falls back to that label alone, which
is what selectors written against it expect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kueue_webhook.api.integrations.owners import OwnerAnswer, Unresolved

__all__ = ["NAMESPACE_NAME_LABEL", "ClusterView", "StaticClusterView", "namespace_labels_or_default"]

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


class ClusterView(Protocol):
    """Read-only questions the admission rules ask about the cluster."""

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The namespace's labels, or None when the namespace is not known (yet)."""
        ...

    def local_queue_names(self, namespace: str) -> Sequence[str]:
        """Names of the LocalQueues in ``namespace`` (any order)."""
        ...

    def workload(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The Workload ``namespace/name`` as last seen, None when there is none."""
        ...

    def owner(self, namespace: str, api_version: str, kind: str, name: str) -> OwnerAnswer:
        """The object ``namespace/name`` of ``api_version``/``kind`` (an ownerReference's target) as last
        seen, None when it does not exist, :class:`Unresolved` when the view cannot tell."""
        ...

    def dispatches_to_workers(self, namespace: str, local_queue: str) -> bool:
        """Whether the LocalQueue's ClusterQueue lists an AdmissionCheck served by MultiKueue (its Jobs run
        in worker clusters), as last seen; False when any of them is not known."""
        ...

    def has_workload_priority_class(self, name: str) -> bool:
        """Whether the WorkloadPriorityClass ``name`` exists, as last seen."""
        ...


def namespace_labels_or_default(view: ClusterView, namespace: str) -> Mapping[str, str]:
    labels = view.namespace_labels(namespace)
    if labels is None:
        return {NAMESPACE_NAME_LABEL: namespace}
    if NAMESPACE_NAME_LABEL not in labels:
        return {**labels, NAMESPACE_NAME_LABEL: namespace}
    return labels


@dataclass(slots=True)
class StaticClusterView:
    """A ClusterView over plain dictionaries: namespace -> labels, namespace -> LocalQueue names, and the
    objects ownerReferences may name, by (namespace, apiVersion, kind, name); one not held does not exist,
    unless its ``(apiVersion, kind)`` is in ``unresolved`` (a kind the view cannot look up)."""

    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    local_queues: dict[str, set[str]] = field(default_factory=dict)
    workloads: dict[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    owners: dict[tuple[str, str, str, str], Mapping[str, Any]] = field(default_factory=dict)
    unresolved: set[tuple[str, str]] = field(default_factory=set)
    #: (namespace, LocalQueue) pairs whose ClusterQueue has a MultiKueue check
    multikueue_queues: set[tuple[str, str]] = field(default_factory=set)
    #: the names of the WorkloadPriorityClasses
    workload_priority_classes: set[str] = field(default_factory=set)

    def dispatches_to_workers(self, namespace: str, local_queue: str) -> bool:
        return (namespace, local_queue) in self.multikueue_queues

    def has_workload_priority_class(self, name: str) -> bool:
        return name in self.workload_priority_classes

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self.namespaces.get(namespace)

    def local_queue_names(self, namespace: str) -> Sequence[str]:
        return sorted(self.local_queues.get(namespace, ()))

    def workload(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.workloads.get((namespace, name))

    def owner(self, namespace: str, api_version: str, kind: str, name: str) -> OwnerAnswer:
        if (api_version, kind) in self.unresolved:
            return Unresolved(f"{kind} objects are not watched")
        return self.owners.get((namespace, api_version, kind, name))

    def add_owner(self, obj: Mapping[str, Any]) -> None:
        """Hold ``obj`` (apiVersion, kind, namespace and name set) as an object ownerReferences may name."""
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(obj.get("apiVersion")), str(obj.get("kind")))
        self.owners[(*key, str(meta.get("name") or ""))] = obj

    def add_local_queue(self, namespace: str, name: str) -> None:
        self.local_queues.setdefault(namespace, set()).add(name)
