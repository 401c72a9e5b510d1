"""How the reconciler asks a kind what to do: ``QueueingMode``, one small object per way of queueing.

Kueue's jobframework keeps each kind's rules behind ``GenericJob`` and optional interfaces. Here the kind's
fields are data (``kueue_webhook.api.integrations``) and what differs between kinds is how they are queued,
which
is one of four modes: an object suspended and started itself (a Job, a JobSet, a declared CRD:
``own_objects``), pods queued one by one or as a group (``pods``, ``pod_groups``), a StatefulSet queued as
one group of its pods (``statefulsets``), and a Deployment whose pods are queued for it (nothing of its own,
``modes``). The reconciler routes store changes to work-queue keys and asks the kind's mode for the keys
and for one reconcile of a key; the mode plans a step and hands it to the one executor (``executor``)
through the ``Host`` it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from kueue_webhook.api.integrations import Integration
from kueue_webhook.api.integrations.engine import PriorityClasses
from kueue_webhook.api.integrations.owners import Ancestry
from kueue_webhook.api.objects import ResourceFlavor
from kueue_webhook.control.cache.store import Change
from kueue_webhook.control.output.context import ControlContext

__all__ = ["GROUP_KEY", "Host", "ObjectKey", "PlanInputs", "QueueingMode", "namespace_labels"]

JSON = dict[str, Any]
#: (framework name, namespace, name) of a queued object; a pod group's name is ``GROUP_KEY`` + its name
ObjectKey = tuple[str, str, str]
#: pod names cannot hold a "/", so a group's key never collides with a pod's
GROUP_KEY = "group/"


@dataclass(frozen=True, slots=True)
class PlanInputs:
    """What every plan reads beside the object and its Workload, read afresh for each reconcile."""

    #: a ResourceFlavor by name, None while it is not in the store
    flavors: Callable[[str], ResourceFlavor | None]
    #: the WorkloadPriorityClasses and PriorityClasses a new Workload's priority is read from
    priority_classes: PriorityClasses
    #: waitForPodsReady is on
    pods_ready: bool
    #: the names of the AdmissionChecks served by MultiKueue: a Workload listing one runs in a worker, so
    #: the pods of a gated kind (``kueue_webhook.api.multikueue.GATED``) are never ungated here
    multikueue_checks: frozenset[str] = frozenset()
    #: the configuration's ``integrations.labelKeysToCopy``: labels a new Workload gets from its object
    label_keys: tuple[str, ...] = ()


class Host(Protocol):
    """What a mode may use of the reconciler that runs it."""

    @property
    def context(self) -> ControlContext: ...

    def queue_key(self, key: ObjectKey, *, urgent: bool = False) -> None:
        """Reconcile ``key`` (soon, once); ``urgent``: before routine keys (``urgency``)."""

    def queue_orphan(self, workload: JSON) -> None:
        """Let a deleted Workload go once nothing needs it (``JobReconciler.release_orphan``)."""

    def remember_deleted(self, key: ObjectKey, uid: str) -> None:
        """The object of ``key`` was deleted: its Workload is deleted when the key is reconciled."""

    async def delete_workload_of_deleted(self, key: ObjectKey) -> None:
        """Delete the Workload of a deleted object at once (the garbage collector would, later)."""

    def remember_ancestor(self, key: ObjectKey, ancestor_uid: str | None) -> None:
        """A change of the ancestor's Workload reconciles ``key`` (None: no ancestor to follow)."""

    async def ancestry(self, obj: JSON, integration: Integration) -> Ancestry:
        """The object's queued ancestor, if any (owners the store does not watch fetched)."""

    def inputs(self) -> PlanInputs: ...

    async def execute(self, obj: JSON, step: Any, integration: Integration) -> None:
        """Write one step (``kueue_webhook.control.jobs.executor``)."""


class QueueingMode(Protocol):
    """One way of queueing a kind: which keys its changes queue, and one reconcile of a key."""

    integration: Integration

    @property
    def has_objects(self) -> bool:
        """The kind has objects of its own to watch and reconcile (not a Deployment: its pods are queued)."""

    def key(self, obj: JSON) -> ObjectKey:
        """The work-queue key of one of its objects."""

    def on_change(self, host: Host, change: Change) -> None:
        """An object of the kind changed: queue what must be reconciled."""

    def keys_for_workload(self, workload: JSON) -> Iterable[ObjectKey]:
        """The keys a change of ``workload`` (or its admission's flavors) must reconcile."""

    async def reconcile(self, host: Host, key: ObjectKey) -> bool:
        """Plan and execute one step for ``key``; True when the key's retry backoff may be forgotten."""


def namespace_labels(host: Host, namespace: str) -> dict[str, str]:
    """The namespace's labels, or the one the API server always sets when it is not in the store yet."""
    return host.context.store.namespace_labels(namespace) or {"kubernetes.io/metadata.name": namespace}


def may_queue_in(host: Host, namespace: str, *, has_workload: bool) -> bool:
    """Whether an object of ``namespace`` may be given a Workload: Kueue's reconcilers leave the objects of a
    namespace outside ``managedJobsNamespaceSelector`` alone, queue label or not
    (ManagedJobsNamespaceSelectorAlwaysRespected, GA and locked on since v0.19), so such a Job, created
    suspended by the webhook, waits without a Workload. One that already has its Workload (its namespace
    relabelled since) is still followed to its end, so that what it was admitted with keeps its quota."""
    if has_workload:
        return True
    return host.context.configuration().manages_namespace(namespace_labels(host, namespace))
