"""The catalog: the spec objects the scheduler decides with, and the pending queue of each ClusterQueue.

ResourceFlavors, Cohorts, ClusterQueues, LocalQueues, WorkloadPriorityClasses and namespace labels change
rarely and are read on every cycle; workloads change all the time. Keeping the specs here, apart from
the workload tracking (``tracking.py``) and the cycle (``cycle.py``), is Kueue's split between its cache of
specs and its queue manager. A spec change still moves workloads (a LocalQueue pointed at another
ClusterQueue, a ClusterQueue deleted under its pending workloads, a queue stopped with
``HoldAndDrain``); the catalog says so through ``Occupants``, the few calls the tracker answers, and never
touches a workload itself.

Every ClusterQueue carries its ``PendingQueue``, the set of workloads holding quota in it, and whether it
is open (all its flavors exist, not stopped). ``ready`` names the ClusterQueues that may have a head to
offer; ``wake`` returns parked workloads to their queues when something changed that could let them in
(quota released in the cohort tree, a spec changed, namespace labels changed), so parked workloads never
wait on a timer for a chance to fit and cost nothing while nothing changes.

What a parked workload is told must stay true, though: when others take room in its cohort tree, it needs
more than its message says. As Kueue retries the inadmissible workloads of a cohort tree one batch period
after a change there (its requeuer's one second), a change of usage in a tree (``usage_moved``) schedules
one ``revisit`` of the tree's parked workloads ``REVISIT_AFTER`` later, however many changes follow in
between: each is tried once more and told what holds then. Only ClusterQueues that cannot preempt are
revisited: there a retry can only re-word a message (fitting needs a release, which wakes them anyway),
while elsewhere it could find new victims after an admission, which Kueue never retries on. Time is an
argument (``schedule_revisits``, ``revisit``): the controller passes its clock, ``simulate`` its simulated
one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from webhook.api.objects import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    Preemption,
    ResourceFlavor,
    Workload,
    WorkloadPriorityClass,
)
from webhook.core.decisions import REASON_SUSPENDED, Notices
from webhook.core.fair_sharing import Share, dominant_resource_share
from webhook.core.flavors import CompiledQueue, compile_queue
from webhook.core.ledger import Ledger, Node
from webhook.core.model import FlavorResource, WorkloadInfo, WorkloadKey
from webhook.core.queues import PendingQueue

__all__ = ["REVISIT_AFTER", "Catalog", "Occupants", "QueueState", "SchedulerObject"]

#: seconds from a change of usage in a cohort tree to the retry of its parked workloads (Kueue's
#: requeueBatchPeriod: the delay its inadmissible-workload requeuer adds, batching the changes meanwhile)
REVISIT_AFTER = 1.0

#: the parsed API objects the scheduler keeps (``Catalog.apply``)
SchedulerObject = ResourceFlavor | Cohort | ClusterQueue | LocalQueue | WorkloadPriorityClass | Workload


@dataclass(slots=True)
class QueueState:
    """One ClusterQueue: its spec, compiled form, pending queue and what it has admitted."""

    spec: ClusterQueue
    compiled: CompiledQueue
    pending: PendingQueue
    reserving: set[WorkloadKey] = field(default_factory=set)
    missing_flavors: tuple[str, ...] = ()

    @property
    def open(self) -> bool:
        return not self.missing_flavors and self.spec.stop_policy == "None"


class Occupants(Protocol):
    """What a queue change asks of the workloads in the queues (``tracking.WorkloadTracker``)."""

    def upsert_workload(self, workload: Workload) -> None: ...

    def cluster_queue_added(self, name: str) -> None:
        """Charge the admitted workloads that named it, queue the pending ones held for it."""

    def cluster_queue_removed(self, name: str, queue: QueueState) -> None:
        """Hold its pending workloads, uncharge the admitted ones until it comes back."""

    def reroute(self, local_queue: str) -> None:
        """Queue again the pending workloads of a LocalQueue that changed or went."""

    def route_held(self, local_queue: str) -> None:
        """Queue the pending workloads held for want of this LocalQueue."""

    def drain_if_stopped(self, queue: QueueState) -> None:
        """Evict the workloads holding quota in ``queue`` when it, or their LocalQueue, drains."""


class Catalog:
    """The specs and the ClusterQueues' pending queues, kept current one event at a time."""

    #: the workloads in these queues; bound by the owner once both exist (each refers to the other)
    occupants: Occupants

    def __init__(self, notices: Notices) -> None:
        self.notices = notices
        self.ledger = Ledger()
        #: fair sharing (the ConfigMap's ``fairSharing``): admission order and preemption by share
        self.fair_sharing = False
        self.flavors: dict[str, ResourceFlavor] = {}
        self.cohorts: dict[str, Cohort] = {}
        self.local_queues: dict[str, LocalQueue] = {}
        self.priority_classes: dict[str, int] = {}
        self.namespaces: dict[str, Mapping[str, str]] = {}
        self.queues: dict[str, QueueState] = {}
        #: ClusterQueues that may have a head to offer
        self.ready: set[str] = set()
        #: ClusterQueues whose cohort tree's usage moved since ``schedule_revisits``
        self._moved: set[str] = set()
        #: per cohort tree (its root), when its parked workloads are revisited and one ClusterQueue in it
        self._revisit_at: dict[tuple[str, bool], tuple[float, str]] = {}

    # == fair sharing ==================================================================================
    def set_fair_sharing(self, enabled: bool) -> None:
        self.fair_sharing = enabled
        for queue in self.queues.values():
            queue.compiled = compile_queue(queue.spec, fair_sharing=enabled)
        self.wake(self.queues)

    def weight_of(self, node: Node) -> float:
        """``fairSharing.weight`` of a ClusterQueue or Cohort (1 when unset)."""
        spec: ClusterQueue | Cohort | None
        if node.is_cohort:
            spec = self.cohorts.get(node.name)
        else:
            queue = self.queues.get(node.name)
            spec = queue.spec if queue is not None else None
        weight = spec.fair_sharing_weight if spec is not None else None
        return 1.0 if weight is None else weight.nanos / 1e9

    def share_of(self, node: Node) -> Share:
        return dominant_resource_share(node, self.weight_of(node))

    def fair_share(self, cluster_queue: str) -> Share | None:
        """The ClusterQueue's dominant resource share now (``status.fairSharing``), None if unknown."""
        node = self.ledger.queues.get(cluster_queue)
        return self.share_of(node) if node is not None else None

    # == spec events ===================================================================================
    def upsert_resource_flavor(self, flavor: ResourceFlavor) -> None:
        self.flavors[flavor.name] = flavor
        self._refresh_flavor_references()
        self.wake(self.queues)

    def delete_resource_flavor(self, name: str) -> None:
        if self.flavors.pop(name, None) is not None:
            self._refresh_flavor_references()
            self.wake(self.queues)

    def _refresh_flavor_references(self) -> None:
        for name, queue in self.queues.items():
            missing = tuple(f for f in queue.spec.flavor_names() if f not in self.flavors)
            if missing != queue.missing_flavors:
                was_open = queue.open
                queue.missing_flavors = missing
                self._opened_or_closed(name, was_open)

    def upsert_cluster_queue(self, spec: ClusterQueue) -> None:
        name = spec.name
        queue = self.queues.get(name)
        old_tree = self.ledger.tree_queues(name) if queue is not None else []
        self.ledger.set_cluster_queue(name, cohort=spec.cohort_name, groups=spec.resource_groups)
        missing = tuple(f for f in spec.flavor_names() if f not in self.flavors)
        if queue is None:
            queue = QueueState(
                spec,
                compile_queue(spec, fair_sharing=self.fair_sharing),
                PendingQueue(strict=spec.queueing_strategy == "StrictFIFO"),
            )
            queue.missing_flavors = missing
            self.queues[name] = queue
            self.occupants.cluster_queue_added(name)
        else:
            was_open = queue.open
            queue.spec, queue.missing_flavors = spec, missing
            queue.compiled = compile_queue(spec, fair_sharing=self.fair_sharing)
            queue.pending.set_strict(spec.queueing_strategy == "StrictFIFO")
            self._opened_or_closed(name, was_open)
        self.wake([*old_tree, *self.ledger.tree_queues(name)])
        if not queue.open:
            self._notice_closed(name)
        self.occupants.drain_if_stopped(queue)

    def delete_cluster_queue(self, name: str) -> None:
        queue = self.queues.pop(name, None)
        if queue is None:
            return
        tree = self.ledger.tree_queues(name)
        self.ledger.delete_cluster_queue(name)
        self.ready.discard(name)
        self.occupants.cluster_queue_removed(name, queue)
        self.wake(tree)

    def upsert_cohort(self, cohort: Cohort) -> None:
        self.cohorts[cohort.name] = cohort
        before = self._cohort_tree(cohort.name)
        self.ledger.set_cohort(cohort.name, parent=cohort.parent_name, groups=cohort.resource_groups)
        self.wake([*before, *self._cohort_tree(cohort.name)])

    def delete_cohort(self, name: str) -> None:
        if self.cohorts.pop(name, None) is None:
            return
        before = self._cohort_tree(name)
        self.ledger.delete_cohort(name)
        self.wake(before)

    def _cohort_tree(self, name: str) -> list[str]:
        node = self.ledger.cohorts.get(name)
        if node is None:
            return []
        return node.root().queue_names()

    def upsert_local_queue(self, queue: LocalQueue) -> None:
        old = self.local_queues.get(queue.key)
        self.local_queues[queue.key] = queue
        if old is not None and (
            old.cluster_queue != queue.cluster_queue or old.stop_policy != queue.stop_policy
        ):
            self.occupants.reroute(queue.key)
        self.occupants.route_held(queue.key)
        if queue.stop_policy == "HoldAndDrain":
            cluster_queue = self.queues.get(queue.cluster_queue)
            if cluster_queue is not None:
                self.occupants.drain_if_stopped(cluster_queue)

    def delete_local_queue(self, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}"
        if self.local_queues.pop(key, None) is not None:
            self.occupants.reroute(key)

    def upsert_priority_class(self, priority_class: WorkloadPriorityClass) -> None:
        self.priority_classes[priority_class.name] = priority_class.value

    def delete_priority_class(self, name: str) -> None:
        self.priority_classes.pop(name, None)

    def upsert_namespace(self, name: str, labels: Mapping[str, str] | None) -> None:
        new = dict(labels or {})
        if self.namespaces.get(name) != new:
            self.namespaces[name] = new
            self.wake(self.queues)

    def delete_namespace(self, name: str) -> None:
        self.namespaces.pop(name, None)

    def _upsert_workload(self, workload: Workload) -> None:
        self.occupants.upsert_workload(workload)

    #: the upsert of each kind of parsed object, for ``apply``
    _UPSERTS: ClassVar[Mapping[type, Callable[[Catalog, Any], None]]] = {
        ResourceFlavor: upsert_resource_flavor,
        Cohort: upsert_cohort,
        ClusterQueue: upsert_cluster_queue,
        LocalQueue: upsert_local_queue,
        WorkloadPriorityClass: upsert_priority_class,
        Workload: _upsert_workload,
    }

    def apply(self, obj: SchedulerObject) -> None:
        """Add or update one parsed object, whatever its kind: the one entry the controller's watch events
        and ``simulate``'s manifests both go through, so neither keeps its own list of kinds."""
        upsert = self._UPSERTS.get(type(obj))
        if upsert is None:
            raise TypeError(f"the scheduler keeps no {type(obj).__name__}")
        upsert(self, obj)

    # == what a workload's spec points at =============================================================
    def priority_of(self, workload: Workload) -> int:
        if workload.priority is not None:
            return workload.priority
        if workload.priority_class_group == "kueue.x-k8s.io":
            return self.priority_classes.get(workload.priority_class_name, 0)
        return 0

    @staticmethod
    def local_queue_key(info: WorkloadInfo) -> str:
        return f"{info.namespace}/{info.queue_name}"

    def local_queue_of(self, info: WorkloadInfo) -> LocalQueue | None:
        return self.local_queues.get(self.local_queue_key(info))

    def target_cluster_queue(self, info: WorkloadInfo) -> str:
        local_queue = self.local_queue_of(info)
        return local_queue.cluster_queue if local_queue is not None else ""

    def preemption_policy(self, cluster_queue: str) -> Preemption:
        queue = self.queues.get(cluster_queue)
        return queue.spec.preemption if queue is not None else Preemption()

    def may_preempt(self, queue: QueueState) -> bool:
        """Whether a workload of this ClusterQueue could ever preempt to get in (its policies allow it)."""
        policy = queue.spec.preemption
        return (
            self.fair_sharing
            or policy.within_cluster_queue != "Never"
            or policy.reclaim_within_cohort != "Never"
        )

    # == waking and closing ============================================================================
    def wake(self, names: Iterable[str], *, released: bool = False) -> None:
        """Return parked workloads to their queues; after a mere release of quota, only those whose
        needs are now available (anything else changed: all of them)."""
        for name in names:
            queue = self.queues.get(name)
            if queue is None or not queue.open:
                continue
            if released and not queue.pending.waiting:
                continue  # nothing parked or stalled; anything in its heap is already scheduled
            queue.pending.wake(available=self._memo_available(name) if released else None)
            if len(queue.pending):
                self.ready.add(name)

    def wake_tree(self, name: str, *, released: bool = False) -> None:
        """``wake`` every ClusterQueue of ``name``'s cohort tree, if ``name`` still exists."""
        if name in self.ledger.queues:
            self.wake(self.ledger.tree_queues(name), released=released)

    # == revisiting parked workloads ==================================================================
    def usage_moved(self, name: str) -> None:
        """Quota was charged or released in ``name``: what its tree's parked workloads lack has moved."""
        self._moved.add(name)

    @property
    def usage_moved_since_scheduled(self) -> bool:
        return bool(self._moved)

    def schedule_revisits(self, now: float | None) -> None:
        """Plan a revisit ``REVISIT_AFTER`` from ``now`` for every tree whose usage moved, unless one is
        planned already (changes meanwhile are batched into it). No clock (``now`` None): none."""
        if not self._moved:
            return
        moved, self._moved = self._moved, set()
        if now is None:
            return
        queues, revisit_at = self.ledger.queues, self._revisit_at
        for name in moved:
            node = queues.get(name)
            if node is None:
                continue
            root = node.root()
            key = (root.name, root.is_cohort)
            if key not in revisit_at:
                revisit_at[key] = (now + REVISIT_AFTER, name)

    def next_revisit(self) -> float | None:
        """When the next planned revisit is due (None: none planned)."""
        return min((at for at, _ in self._revisit_at.values()), default=None)

    def revisit_due(self, now: float) -> bool:
        return any(at <= now for at, _ in self._revisit_at.values())

    def revisit(self, now: float) -> None:
        """Retry the parked workloads of every tree whose revisit is due (the first of each shape for real;
        ``PendingQueue.revisited_alike`` tells the cycle who shares its outcome)."""
        for key, (at, name) in list(self._revisit_at.items()):
            if at <= now:
                del self._revisit_at[key]
                self.wake([q for q in self.ledger.tree_queues(name) if not self._preempts(q)])

    def _preempts(self, name: str) -> bool:
        """Whether a retry in ``name`` could preempt: there a revisit could change who runs, not only what a
        parked workload is told, which Kueue's requeue after an admission (there is none) never does; such
        queues are retried on releases only (``WorkloadTracker._release``)."""
        queue = self.queues.get(name)
        return queue is not None and self.may_preempt(queue)

    def _memo_available(self, name: str) -> Callable[[FlavorResource], int]:
        """``available`` for one ClusterQueue while the ledger does not change (one wake-up)."""
        memo: dict[FlavorResource, int] = {}
        ledger_available = self.ledger.available

        def available(fr: FlavorResource) -> int:
            value = memo.get(fr)
            if value is None:
                value = memo[fr] = ledger_available(name, fr)
            return value

        return available

    def _opened_or_closed(self, name: str, was_open: bool) -> None:
        queue = self.queues[name]
        if queue.open and not was_open:
            queue.pending.wake()
            self.ready.add(name)
        elif not queue.open and was_open:
            self.ready.discard(name)
            self._notice_closed(name)

    def _notice_closed(self, name: str) -> None:
        queue = self.queues[name]
        for info in queue.pending:
            self.emit_closed(info, name, queue)

    def emit_closed(self, info: WorkloadInfo, name: str, queue: QueueState) -> None:
        """Tell a workload queued in a closed ClusterQueue why it waits."""
        if queue.spec.stop_policy != "None":
            self.notices.emit(info.key, name, REASON_SUSPENDED, f"ClusterQueue {name} is stopped")
        else:
            self.notices.emit(info.key, name, REASON_SUSPENDED, f"ClusterQueue {name} is inactive")

    def has_head(self) -> bool:
        """Whether some open ClusterQueue has a head to try now."""
        for name in list(self.ready):
            if self.queues[name].pending.peek() is not None:
                return True
            self.ready.discard(name)  # only parked or stalled work: it comes back with a wake-up
        return False

    # == read access for status and reports ============================================================
    def cluster_queue(self, name: str) -> ClusterQueue | None:
        queue = self.queues.get(name)
        return queue.spec if queue is not None else None

    def compiled_queue(self, name: str) -> CompiledQueue | None:
        """The ClusterQueue as flavor assignment reads it."""
        queue = self.queues.get(name)
        return queue.compiled if queue is not None else None

    def cluster_queue_names(self) -> list[str]:
        return sorted(self.queues)

    def missing_flavors(self, name: str) -> tuple[str, ...]:
        queue = self.queues.get(name)
        return queue.missing_flavors if queue is not None else ()

    def pending_in(self, name: str) -> list[WorkloadInfo]:
        """Pending workloads of a ClusterQueue in queue order (for status and reports; O(n log n))."""
        queue = self.queues.get(name)
        return list(queue.pending) if queue is not None else []

    def pending_unordered(self, name: str) -> Iterator[WorkloadInfo]:
        """Pending workloads of a ClusterQueue in no particular order (for counting: O(n), no sort)."""
        queue = self.queues.get(name)
        return queue.pending.unordered() if queue is not None else iter(())

    def pending_count(self, name: str) -> int:
        queue = self.queues.get(name)
        return len(queue.pending) if queue is not None else 0

    def inadmissible_count(self, name: str) -> int:
        """Pending workloads parked until something changes (Kueue's inadmissible ones, as
        ``kueue_pending_workloads{status="inadmissible"}`` counts them); the rest of ``pending_count`` are
        active."""
        queue = self.queues.get(name)
        return queue.pending.parked_count if queue is not None else 0
