"""Spec events in: the one place a change of ResourceFlavor, AdmissionCheck, Cohort, ClusterQueue, LocalQueue,
WorkloadPriorityClass or namespace labels enters the scheduler, and everything such a change moves.

``Catalog`` writes the change into ``specs.Specs`` and the ledger, then does what follows from it: wakes
the parked workloads of the cohort trees it touched (``pending_queues.PendingQueues``), tells the
workloads of a ClusterQueue that closed why they wait, and asks the workload tracker, through
``Occupants``, to move the workloads a change moves (a LocalQueue pointed at another ClusterQueue, a
ClusterQueue deleted under its pending workloads, a queue stopped with ``HoldAndDrain``). It never touches
a workload itself, and keeps no state of its own: what exists is in ``Specs``, what waits is in the
pending queues, what runs is in the tracker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol

from kueue_webhook.api.nodes import NodeView, PodOnNode
from kueue_webhook.api.objects import (
    AdmissionCheck,
    ClusterQueue,
    Cohort,
    LocalQueue,
    ResourceFlavor,
    Topology,
    Workload,
    WorkloadPriorityClass,
)
from kueue_webhook.core.admission_fairness import AdmissionFairness
from kueue_webhook.core.assignment import compile_queue
from kueue_webhook.core.check_references import check_references
from kueue_webhook.core.pending_queue import PendingQueue
from kueue_webhook.core.pending_queues import PendingQueues
from kueue_webhook.core.specs import QueueState, Specs

__all__ = ["Catalog", "Occupants", "SchedulerObject"]

#: the parsed API objects the scheduler keeps (``Catalog.apply``)
SchedulerObject = (
    ResourceFlavor
    | AdmissionCheck
    | Cohort
    | ClusterQueue
    | LocalQueue
    | WorkloadPriorityClass
    | Workload
    | Topology
    | NodeView
)


class Occupants(Protocol):
    """What a queue change asks of the workloads in the queues (``workload_tracker.WorkloadTracker``)."""

    def upsert_workload(self, workload: Workload) -> None: ...

    def cluster_queue_added(self, name: str) -> None:
        """Charge the admitted workloads that named it, queue the pending ones stranded for want of it."""

    def cluster_queue_removed(self, name: str, queue: QueueState) -> None:
        """Strand its pending workloads, uncharge the admitted ones until it comes back."""

    def reroute(self, local_queue: str) -> None:
        """Queue again the pending workloads of a LocalQueue that changed or went."""

    def route_stranded(self, local_queue: str) -> None:
        """Queue the pending workloads stranded for want of this LocalQueue."""

    def drain_if_stopped(self, queue: QueueState) -> None:
        """Evict the workloads holding quota in ``queue`` when it, or their LocalQueue, drains."""


class Catalog:
    """Applies spec events to the specs, and moves what each change moves (no state of its own)."""

    def __init__(
        self,
        specs: Specs,
        pending: PendingQueues,
        occupants: Occupants,
        fairness: AdmissionFairness,
    ) -> None:
        self.specs = specs
        self.pending = pending
        #: admission fair sharing: LocalQueue weights and histories, and the order they give
        self.fairness = fairness
        #: the workloads in these queues (``workload_tracker.WorkloadTracker``)
        self.occupants = occupants
        #: the TAS capacity generation the parked workloads last saw
        self._tas_seen = 0

    def set_fair_sharing(self, enabled: bool) -> None:
        specs = self.specs
        specs.fair_sharing = enabled
        for queue in specs.queues.values():
            queue.compiled = compile_queue(
                queue.spec, fair_sharing=enabled, ignore_undeclared=specs.ignore_undeclared
            )
        self.pending.wake(specs.queues)

    def set_quota_check(self, *, excluded: tuple[str, ...], ignore_undeclared: bool) -> bool:
        """The configuration's ``resources``; True when the excluded prefixes changed, so that pending
        Workloads must be read again (their requests are counted without those resources)."""
        specs = self.specs
        moved = excluded != specs.excluded_resources
        specs.excluded_resources = excluded
        if ignore_undeclared != specs.ignore_undeclared:
            specs.ignore_undeclared = ignore_undeclared
            for queue in specs.queues.values():
                queue.compiled = compile_queue(
                    queue.spec, fair_sharing=specs.fair_sharing, ignore_undeclared=ignore_undeclared
                )
            self.pending.wake(specs.queues)
        return moved

    def upsert_resource_flavor(self, flavor: ResourceFlavor) -> None:
        self.specs.flavors[flavor.name] = flavor
        self.specs.tas.upsert_flavor(flavor)
        self._refresh_flavor_references()
        self.pending.wake(self.specs.queues)

    def delete_resource_flavor(self, name: str) -> None:
        if self.specs.flavors.pop(name, None) is not None:
            self.specs.tas.delete_flavor(name)
            self._refresh_flavor_references()
            self.pending.wake(self.specs.queues)

    def _refresh_flavor_references(self) -> None:
        flavors = self.specs.flavors
        for name, queue in self.specs.queues.items():
            missing = tuple(f for f in queue.spec.flavor_names() if f not in flavors)
            if missing != queue.missing_flavors:
                was_open = queue.open
                queue.missing_flavors = missing
                self.pending.opened_or_closed(name, was_open)

    def upsert_admission_check(self, check: AdmissionCheck) -> None:
        """A check appeared or changed (its controller marks it Active): the queues naming it may open or
        close; one that opens wakes its pending workloads."""
        self.specs.admission_checks[check.name] = check
        self._refresh_check_references()

    def delete_admission_check(self, name: str) -> None:
        if self.specs.admission_checks.pop(name, None) is not None:
            self._refresh_check_references()

    def _refresh_check_references(self) -> None:
        checks = self.specs.admission_checks
        for name, queue in self.specs.queues.items():
            references = check_references(queue.spec, checks)
            if references != queue.checks:
                was_open = queue.open
                queue.checks = references
                self.pending.opened_or_closed(name, was_open)

    def upsert_cluster_queue(self, spec: ClusterQueue) -> None:
        specs, ledger, name = self.specs, self.specs.ledger, spec.name
        queue = specs.queues.get(name)
        old_tree = ledger.tree_queues(name) if queue is not None else []
        ledger.set_cluster_queue(name, cohort=spec.cohort_name, groups=spec.resource_groups)
        self.pending.scans.moved(name)  # its quotas may be new: recorded flavor searches are outdated
        missing = tuple(f for f in spec.flavor_names() if f not in specs.flavors)
        checks = check_references(spec, specs.admission_checks)
        if queue is None:
            queue = QueueState(
                spec,
                compile_queue(
                    spec, fair_sharing=specs.fair_sharing, ignore_undeclared=specs.ignore_undeclared
                ),
                PendingQueue(strict=spec.queueing_strategy == "StrictFIFO", notices=self.pending.notices),
            )
            queue.missing_flavors, queue.checks = missing, checks
            specs.queues[name] = queue
            self.occupants.cluster_queue_added(name)
        else:
            was_open = queue.open
            queue.spec, queue.missing_flavors, queue.checks = spec, missing, checks
            queue.compiled = compile_queue(
                spec, fair_sharing=specs.fair_sharing, ignore_undeclared=specs.ignore_undeclared
            )
            queue.pending.set_strict(spec.queueing_strategy == "StrictFIFO")
            self.pending.opened_or_closed(name, was_open)
        self.pending.wake([*old_tree, *ledger.tree_queues(name)])
        if not queue.open:
            self.pending.notice_closed(name)
        self.occupants.drain_if_stopped(queue)
        self.fairness.refresh(name)

    def delete_cluster_queue(self, name: str) -> None:
        queue = self.specs.queues.pop(name, None)
        if queue is None:
            return
        ledger = self.specs.ledger
        tree = ledger.tree_queues(name)
        ledger.delete_cluster_queue(name)
        self.pending.ready.discard(name)
        self.occupants.cluster_queue_removed(name, queue)
        self.pending.wake(tree)

    def upsert_cohort(self, cohort: Cohort) -> None:
        self.specs.cohorts[cohort.name] = cohort
        before = self._cohort_tree(cohort.name)
        self.specs.ledger.set_cohort(cohort.name, parent=cohort.parent_name, groups=cohort.resource_groups)
        self.pending.wake([*before, *self._cohort_tree(cohort.name)])

    def delete_cohort(self, name: str) -> None:
        if self.specs.cohorts.pop(name, None) is None:
            return
        before = self._cohort_tree(name)
        self.specs.ledger.delete_cohort(name)
        self.pending.wake(before)

    def _cohort_tree(self, name: str) -> list[str]:
        node = self.specs.ledger.cohorts.get(name)
        if node is None:
            return []
        return node.root().queue_names()

    def upsert_local_queue(self, queue: LocalQueue) -> None:
        local_queues = self.specs.local_queues
        old = local_queues.get(queue.key)
        local_queues[queue.key] = queue
        if old is not None and (
            old.cluster_queue != queue.cluster_queue or old.stop_policy != queue.stop_policy
        ):
            self.occupants.reroute(queue.key)
        self.occupants.route_stranded(queue.key)
        if queue.stop_policy == "HoldAndDrain":
            cluster_queue = self.specs.queues.get(queue.cluster_queue)
            if cluster_queue is not None:
                self.occupants.drain_if_stopped(cluster_queue)
        self.fairness.seed(queue)
        if old is not None and old.cluster_queue != queue.cluster_queue:
            self.fairness.refresh(old.cluster_queue)
        self.fairness.refresh(queue.cluster_queue)

    def delete_local_queue(self, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}"
        old = self.specs.local_queues.pop(key, None)
        if old is not None:
            self.occupants.reroute(key)
            self.fairness.forget_local_queue(key)
            self.fairness.refresh(old.cluster_queue)

    def upsert_priority_class(self, priority_class: WorkloadPriorityClass) -> None:
        self.specs.priority_classes[priority_class.name] = priority_class.value

    def delete_priority_class(self, name: str) -> None:
        self.specs.priority_classes.pop(name, None)

    def upsert_namespace(self, name: str, labels: Mapping[str, str] | None) -> None:
        new = dict(labels or {})
        namespaces = self.specs.namespaces
        if namespaces.get(name) != new:
            namespaces[name] = new
            self.pending.wake(self.specs.queues)

    def delete_namespace(self, name: str) -> None:
        self.specs.namespaces.pop(name, None)

    def _upsert_workload(self, workload: Workload) -> None:
        self.occupants.upsert_workload(workload)

    # -- topology-aware scheduling: what changes where pod sets of TAS flavors fit ------------------------

    def upsert_topology(self, topology: Topology) -> None:
        self.specs.tas.upsert_topology(topology)
        self.wake_tas()

    def delete_topology(self, name: str) -> None:
        self.specs.tas.delete_topology(name)
        self.wake_tas()

    def upsert_node(self, node: NodeView) -> None:
        self.specs.tas.upsert_node(node)
        self.wake_tas()

    def delete_node(self, name: str) -> None:
        self.specs.tas.delete_node(name)

    def upsert_pod(self, key: str, pod: PodOnNode | None) -> None:
        """A pod's usage of its node (None: gone, unbound or terminated)."""
        self.specs.tas.upsert_pod(key, pod)
        self.wake_tas()

    def wake_tas(self) -> None:
        """Capacity of a TAS flavor grew: parked workloads of the ClusterQueues using one try again."""
        tas = self.specs.tas
        if tas.grew == self._tas_seen:
            return
        self._tas_seen = tas.grew
        using = [
            name
            for name, queue in self.specs.queues.items()
            if any(tas.topology_of(flavor) for flavor in queue.spec.flavor_names())
        ]
        if using:
            self.pending.wake(using)

    #: the upsert of each kind of parsed object, for ``apply``
    _UPSERTS: ClassVar[Mapping[type, Callable[[Catalog, Any], None]]] = {
        ResourceFlavor: upsert_resource_flavor,
        AdmissionCheck: upsert_admission_check,
        Cohort: upsert_cohort,
        ClusterQueue: upsert_cluster_queue,
        LocalQueue: upsert_local_queue,
        WorkloadPriorityClass: upsert_priority_class,
        Workload: _upsert_workload,
        Topology: upsert_topology,
        NodeView: upsert_node,
    }

    def apply(self, obj: SchedulerObject) -> None:
        """Add or update one parsed object, whatever its kind: the one entry the controller's watch events
        and ``simulate``'s manifests both go through, so neither keeps its own list of kinds."""
        upsert = self._UPSERTS.get(type(obj))
        if upsert is None:
            raise TypeError(f"the scheduler keeps no {type(obj).__name__}")
        upsert(self, obj)
