"""The scheduler: a long-lived state fed one event at a time, and a ``cycle`` that returns decisions.

Kueue keeps three things apart and so do we: the pending queues (``queues.py``: what waits, in what
order), the quota ledger (``ledger.py``: what is used), and the decision code (``flavors.py``: does this
workload fit, and where). ``SchedulerState`` owns all three and is updated incrementally by the
controller's watch events (or by ``simulate``'s clock); nothing is rebuilt per cycle.

A cycle takes the head of every ClusterQueue that has one, computes each head's flavor assignment
against the usage at the start of the cycle (Kueue's "nomination"), orders the heads non-borrowing
first, then by priority, then by age, and admits them one by one, re-checking each against the usage
left by the admissions before it, so two heads of one cohort can never take the same capacity. An
admitted workload is *assumed*: its quota is charged at once, before the controller has written the
Workload's status; if that write fails the controller calls ``forget`` and the quota comes back.
Quota held by Workloads that arrive already admitted (a restart) is charged as they are fed in, so the
first cycle after a restart sees the cluster's real usage.

Workloads that cannot be considered at all (missing or stopped LocalQueue or ClusterQueue, inactive
ClusterQueue) get a ``Wait`` decision once, when they arrive or when the obstacle appears, and cost
nothing per cycle afterwards. Wait decisions are only emitted when what the user would read changes.

Preemption (``preemption.py``) turns a head that could fit only by evicting others into ``Evict``
decisions, one per target, plus a ``Wait`` for the preemptor (``WaitingForPreemptedWorkloads``,
``... Pending the preemption of N workload(s)``). Nothing is released by the decision itself: a target
keeps its quota, marked *evicting*, until its owner clears the reservation (``upsert_workload`` without
``status.admission``), exactly as a Workload on the cluster holds quota until then. Meanwhile the
preemptor holds a *claim*: the room it needs stays charged to its ClusterQueue, so nothing admitted in
between can take what the evictions free, and when it is tried again it goes before every other head.
A head that would need preemption but finds nobody to preempt holds the room it lacks for the rest of
that cycle unless its ClusterQueue can always reclaim (Kueue's reserveCapacityForUnreclaimablePreempt).

What the controller does with each decision:

* ``Admit``: write QuotaReserved=True and ``status.admission`` (and Admitted=True when the ClusterQueue
  has no admission checks); on failure call ``forget``.
* ``Wait``: write QuotaReserved=False with the reason and message (position appended as it likes).
* ``Evict``: write ``Evicted=True`` (reason ``Preempted``, or ``ClusterQueueStopped``/``LocalQueueStopped``
  for a drain) and, for a preemption, ``Preempted=True`` with ``preemption_reason``, both with
  ``message``; events ``Preempted`` on the target and ``PreemptedWorkload`` on the preemptor; count
  ``preempted_workloads_total{preempting_cluster_queue, reason}`` and ``evicted_workloads_total``. Then
  stop the Job (re-suspend, template restored) and, once it has no active pods, clear the reservation
  (QuotaReserved=False, Admitted=False, ``status.admission`` removed, Requeued=True); the resulting
  Workload event releases the quota here. If the eviction write fails, call ``eviction_failed``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar

from webhook.api.objects import (
    Admission,
    ClusterQueue,
    Cohort,
    LocalQueue,
    PodSetAssignment,
    Preemption,
    ResourceFlavor,
    Workload,
    WorkloadPriorityClass,
    parse_timestamp,
)
from webhook.api.selectors import LabelSelector
from webhook.core.checks import check_eviction
from webhook.core.fair_preemption import FairSharingPreemption
from webhook.core.fair_sharing import Contender, Share, dominant_resource_share, pick_fairest
from webhook.core.flavors import (
    Assignment,
    CompiledQueue,
    Mode,
    PreemptionOracle,
    assign_flavors,
    compile_queue,
)
from webhook.core.ledger import Ledger, Node
from webhook.core.model import FlavorResource, WorkloadInfo, WorkloadKey, amount_quantity
from webhook.core.preemption import (
    Candidate,
    ClassicalPreemption,
    Target,
    preemption_message,
    queue_path,
)
from webhook.core.queues import PendingQueue, RetryCondition, may_fit

__all__ = ["Admit", "Decision", "Evict", "SchedulerObject", "SchedulerState", "Wait"]

#: the parsed API objects the scheduler keeps (``SchedulerState.apply``)
SchedulerObject = ResourceFlavor | Cohort | ClusterQueue | LocalQueue | WorkloadPriorityClass | Workload

REASON_MISCONFIGURED = "Misconfigured"
REASON_SUSPENDED = "Suspended"
REASON_WAITING = "WaitingForQuota"
NO_LONGER_FITS = "Workload no longer fits after processing another workload"
NAMESPACE_MISMATCH = "workload namespace doesn't match ClusterQueue selector"
REASON_WAITING_FOR_PREEMPTED = "WaitingForPreemptedWorkloads"
OVERLAPPING_TARGETS = "Workload has overlapping preemption targets with another workload"
#: the Evicted condition reason of a preemption (Kueue's WorkloadEvictedByPreemption)
EVICTED_BY_PREEMPTION = "Preempted"


@dataclass(frozen=True, slots=True)
class Admit:
    """Reserve quota: write ``status.admission`` and the QuotaReserved/Admitted conditions."""

    workload: WorkloadKey
    cluster_queue: str
    admission: Admission
    borrowing: bool = False
    #: the ClusterQueue's admission checks: with any, quota is reserved now and ``Admitted`` waits
    #: for the checks; with none, the workload is admitted at once
    admission_checks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Wait:
    """The workload stays pending; QuotaReserved=False with this reason and message.

    ``position`` is the 1-based rank in its ClusterQueue's queue when known (None when the workload
    is not in any ClusterQueue's queue, e.g. its LocalQueue does not exist).
    """

    workload: WorkloadKey
    cluster_queue: str
    reason: str
    message: str
    position: int | None = None


@dataclass(frozen=True, slots=True)
class Evict:
    """Take quota back from an admitted workload: the controller sets ``Evicted=True`` with ``reason`` and
    ``message`` (and, for a preemption, ``Preempted=True`` with ``preemption_reason`` and the same message),
    stops the Job, and once nothing runs any more clears the reservation, which is when the quota is
    released (``upsert_workload`` sees QuotaReserved=False). Until then the workload keeps its quota and
    counts as *evicting*; if the write fails the controller calls ``eviction_failed``.
    """

    workload: WorkloadKey
    cluster_queue: str
    reason: str
    message: str
    #: ``InClusterQueue`` | ``InCohortReclamation`` | ``InCohortReclaimWhileBorrowing`` |
    #: ``InCohortFairSharing`` when ``reason`` is ``Preempted``, else ""
    preemption_reason: str = ""
    #: the workload that needs the room, and its ClusterQueue (metric ``preempting_cluster_queue``)
    preemptor: WorkloadKey | None = None
    preempting_cluster_queue: str = ""
    #: a Rejected admission check: also set ``spec.active=false`` so it does not queue again
    deactivate: bool = False


Decision = Admit | Wait | Evict


@dataclass(slots=True)
class _QueueState:
    """One ClusterQueue: its spec, compiled form, pending queue and what it has admitted."""

    spec: ClusterQueue
    compiled: CompiledQueue
    pending: PendingQueue
    reserving: set[WorkloadKey] = field(default_factory=set)
    missing_flavors: tuple[str, ...] = ()

    @property
    def open(self) -> bool:
        return not self.missing_flavors and self.spec.stop_policy == "None"


@dataclass(slots=True)
class _Tracked:
    """Where a workload is: pending in a ClusterQueue, held outside any queue, or holding quota."""

    info: WorkloadInfo
    cluster_queue: str = ""
    #: pending and sitting in ``cluster_queue``'s PendingQueue
    queued: bool = False
    #: admitted by a cycle but not yet seen back from the API with its reservation
    assumed: bool = False
    #: the Admitted condition is (or will be, for assumed workloads) True
    admitted: bool = False
    #: quota is charged in the ledger
    charged: bool = False
    #: told to give its quota back (Evicted=True or an Evict decision) and still holding it
    evicting: bool = False
    #: when its quota was reserved (QuotaReserved time, then our own sequence), for preemption order
    reserved_at: tuple[float, int] = (0.0, 0)


class SchedulerState:
    """Everything the scheduler knows, kept current one event at a time."""

    def __init__(self, *, oracle: PreemptionOracle | None = None) -> None:
        self.ledger = Ledger()
        self.preemption = ClassicalPreemption(holders=self)
        self.oracle: PreemptionOracle = oracle or self.preemption
        #: fair sharing (the ConfigMap's ``fairSharing``): admission order and preemption by share
        self.fair_sharing = False
        self.fair_preemption = FairSharingPreemption(holders=self, share=self.share_of, strategies=())
        #: preemptors waiting for their targets to go, with the room held for them meanwhile
        self._claims: dict[WorkloadKey, _Claim] = {}
        self._holders_cache: dict[str, list[Candidate]] = {}
        self._sequence = 0
        self.flavors: dict[str, ResourceFlavor] = {}
        self.cohorts: dict[str, Cohort] = {}
        self.local_queues: dict[str, LocalQueue] = {}
        self.priority_classes: dict[str, int] = {}
        self.namespaces: dict[str, Mapping[str, str]] = {}
        self._queues: dict[str, _QueueState] = {}
        #: ClusterQueues that may have a head to offer
        self._ready: set[str] = set()
        self._workloads: dict[WorkloadKey, _Tracked] = {}
        #: pending workloads waiting outside any queue, by LocalQueue key or ClusterQueue name
        self._held_by_local_queue: dict[str, set[WorkloadKey]] = {}
        self._held_by_cluster_queue: dict[str, set[WorkloadKey]] = {}
        self._notices: list[Decision] = []
        self._last_wait: dict[WorkloadKey, tuple[str, str, int | None]] = {}

    # == configuration events ==========================================================================
    def configure_fair_sharing(self, *, enabled: bool, strategies: tuple[str, ...] = ()) -> None:
        """Turn fair sharing on or off (the ConfigMap's ``fairSharing``) with its preemption strategies."""
        if enabled == self.fair_sharing and strategies == self.fair_preemption.strategies:
            return
        self.fair_sharing = enabled
        self.fair_preemption.strategies = strategies or (
            "LessThanOrEqualToFinalShare",
            "LessThanInitialShare",
        )
        self.preemption.fair = self.fair_preemption if enabled else None
        for queue in self._queues.values():
            queue.compiled = compile_queue(queue.spec, fair_sharing=enabled)
        self._wake(self._queues)

    def weight_of(self, node: Node) -> float:
        """``fairSharing.weight`` of a ClusterQueue or Cohort (1 when unset)."""
        spec: ClusterQueue | Cohort | None
        if node.is_cohort:
            spec = self.cohorts.get(node.name)
        else:
            queue = self._queues.get(node.name)
            spec = queue.spec if queue is not None else None
        weight = spec.fair_sharing_weight if spec is not None else None
        return 1.0 if weight is None else weight.nanos / 1e9

    def share_of(self, node: Node) -> Share:
        return dominant_resource_share(node, self.weight_of(node))

    def fair_share(self, cluster_queue: str) -> Share | None:
        """The ClusterQueue's dominant resource share now (``status.fairSharing``), None if unknown."""
        node = self.ledger.queues.get(cluster_queue)
        return self.share_of(node) if node is not None else None

    def upsert_resource_flavor(self, flavor: ResourceFlavor) -> None:
        self.flavors[flavor.name] = flavor
        self._refresh_flavor_references()
        self._wake(self._queues)

    def delete_resource_flavor(self, name: str) -> None:
        if self.flavors.pop(name, None) is not None:
            self._refresh_flavor_references()
            self._wake(self._queues)

    def _refresh_flavor_references(self) -> None:
        for name, queue in self._queues.items():
            missing = tuple(f for f in queue.spec.flavor_names() if f not in self.flavors)
            if missing != queue.missing_flavors:
                was_open = queue.open
                queue.missing_flavors = missing
                self._queue_opened_or_closed(name, was_open)

    def upsert_cluster_queue(self, spec: ClusterQueue) -> None:
        name = spec.name
        queue = self._queues.get(name)
        old_tree = self.ledger.tree_queues(name) if queue is not None else []
        self.ledger.set_cluster_queue(name, cohort=spec.cohort_name, groups=spec.resource_groups)
        missing = tuple(f for f in spec.flavor_names() if f not in self.flavors)
        if queue is None:
            queue = _QueueState(
                spec,
                compile_queue(spec, fair_sharing=self.fair_sharing),
                PendingQueue(strict=spec.queueing_strategy == "StrictFIFO"),
            )
            queue.missing_flavors = missing
            self._queues[name] = queue
            self._charge_waiting_admissions(name)
            self._admit_held_for_cluster_queue(name)
        else:
            was_open = queue.open
            queue.spec, queue.missing_flavors = spec, missing
            queue.compiled = compile_queue(spec, fair_sharing=self.fair_sharing)
            queue.pending.set_strict(spec.queueing_strategy == "StrictFIFO")
            self._queue_opened_or_closed(name, was_open)
        self._wake([*old_tree, *self.ledger.tree_queues(name)])
        if not queue.open:
            self._notice_queue(name)
        for key in sorted(queue.reserving):
            self._drain_if_stopped(self._workloads[key])

    def delete_cluster_queue(self, name: str) -> None:
        queue = self._queues.pop(name, None)
        if queue is None:
            return
        tree = self.ledger.tree_queues(name)
        self.ledger.delete_cluster_queue(name)
        self._ready.discard(name)
        held = self._held_by_cluster_queue.setdefault(name, set())
        for info in list(queue.pending):
            tracked = self._workloads[info.key]
            tracked.queued = False
            held.add(info.key)
            self._emit(info.key, name, REASON_MISCONFIGURED, f"ClusterQueue {name} is terminating or missing")
        self._holders_cache.pop(name, None)
        for key in queue.reserving:
            self._workloads[key].charged = False  # charged again if the ClusterQueue comes back
        for claim in self._claims.values():
            if claim.cluster_queue == name:
                claim.usage = {}  # the room it held went with the ClusterQueue
        self._wake(tree)

    def upsert_cohort(self, cohort: Cohort) -> None:
        self.cohorts[cohort.name] = cohort
        before = self._cohort_tree(cohort.name)
        self.ledger.set_cohort(cohort.name, parent=cohort.parent_name, groups=cohort.resource_groups)
        self._wake([*before, *self._cohort_tree(cohort.name)])

    def delete_cohort(self, name: str) -> None:
        if self.cohorts.pop(name, None) is None:
            return
        before = self._cohort_tree(name)
        self.ledger.delete_cohort(name)
        self._wake(before)

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
            for tracked in list(self._workloads.values()):
                info = tracked.info
                if tracked.queued and self._local_queue_key(info) == queue.key:
                    self._unqueue(tracked)
                    self._route(tracked)
        for key in sorted(self._held_by_local_queue.pop(queue.key, set())):
            held = self._workloads.get(key)
            if held is not None:
                self._route(held)
        if queue.stop_policy == "HoldAndDrain":
            cluster_queue = self._queues.get(queue.cluster_queue)
            for key in sorted(cluster_queue.reserving if cluster_queue is not None else ()):
                self._drain_if_stopped(self._workloads[key])

    def delete_local_queue(self, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}"
        if self.local_queues.pop(key, None) is None:
            return
        for tracked in list(self._workloads.values()):
            if tracked.queued and self._local_queue_key(tracked.info) == key:
                self._unqueue(tracked)
                self._route(tracked)

    def upsert_priority_class(self, priority_class: WorkloadPriorityClass) -> None:
        self.priority_classes[priority_class.name] = priority_class.value

    def delete_priority_class(self, name: str) -> None:
        self.priority_classes.pop(name, None)

    def upsert_namespace(self, name: str, labels: Mapping[str, str] | None) -> None:
        new = dict(labels or {})
        if self.namespaces.get(name) != new:
            self.namespaces[name] = new
            self._wake(self._queues)

    def delete_namespace(self, name: str) -> None:
        self.namespaces.pop(name, None)

    # == workload events ================================================================================
    def _priority_of(self, workload: Workload) -> int:
        if workload.priority is not None:
            return workload.priority
        if workload.priority_class_group == "kueue.x-k8s.io":
            return self.priority_classes.get(workload.priority_class_name, 0)
        return 0

    def upsert_workload(self, workload: Workload) -> None:
        """Add or update a Workload as the API shows it now."""
        key = WorkloadKey(workload.key)
        info = WorkloadInfo.from_workload(workload, priority=self._priority_of(workload))
        tracked = self._workloads.get(key)
        if workload.is_finished or not workload.active:
            if tracked is not None:
                self._drop(tracked)
            return
        if info.admission is not None:  # the API says it holds quota
            reserved = workload.condition("QuotaReserved")
            reserved_time = parse_timestamp(reserved.last_transition_time) if reserved is not None else 0.0
            if tracked is not None and tracked.charged and tracked.info.admission is not None:
                tracked.assumed = False
                tracked.admitted = workload.is_admitted or tracked.admitted
                if workload.is_evicted and not tracked.evicting:
                    self._mark_evicting(tracked, True)
                if reserved_time and reserved_time != tracked.reserved_at[0]:
                    tracked.reserved_at = (reserved_time, tracked.reserved_at[1])
                    self._holders_cache.pop(tracked.cluster_queue, None)
                if tracked.info.usage == info.usage and tracked.cluster_queue == info.admission.cluster_queue:
                    self._evict_on_failed_checks(tracked, workload)
                    return
                self._release(tracked)
            if tracked is not None:
                self._unqueue(tracked)
                self._unhold(tracked)
            self._sequence += 1
            tracked = _Tracked(
                info,
                cluster_queue=info.admission.cluster_queue,
                admitted=workload.is_admitted,
                evicting=workload.is_evicted,
                reserved_at=(reserved_time, self._sequence),
            )
            self._workloads[key] = tracked
            self._charge(tracked)
            self._evict_on_failed_checks(tracked, workload)
            return
        if tracked is not None and tracked.charged:
            if tracked.assumed:
                # An event from before our own admission write reached the API server. Even when the
                # workload is already chosen for eviction its quota stays charged: the write may still land,
                # and releasing now would let a preemptor take the same room (Kueue keeps assumed workloads
                # in its cache until the write fails or the reservation shows up). The controller can only
                # evict a reservation it has seen, so the release comes with a later, real event.
                return
            self._release(tracked)  # the reservation was cleared (evicted): back to the queue
            self._last_wait.pop(key, None)
        if workload.is_deleting:
            # Deleted while pending: it will be gone once its finalizer is removed, so it takes no place in
            # the queue (and nothing is preempted for it). A reservation it still holds is counted above.
            if tracked is not None:
                self._drop(tracked)
            return
        if tracked is not None:
            same_place = tracked.queued and self._target_cluster_queue(info) == tracked.cluster_queue
            if (
                same_place
                and tracked.info.sort_key == info.sort_key
                and tracked.info.pod_sets == info.pod_sets
            ):
                return
            self._unqueue(tracked)
            self._unhold(tracked)
            tracked.info = info
        else:
            tracked = _Tracked(info)
            self._workloads[key] = tracked
        self._route(tracked)

    def delete_workload(self, key: str) -> None:
        tracked = self._workloads.get(WorkloadKey(key))
        if tracked is not None:
            self._drop(tracked)

    #: the upsert of each kind of parsed object, for ``apply``
    _UPSERTS: ClassVar[Mapping[type, Callable[[SchedulerState, Any], None]]] = {
        ResourceFlavor: upsert_resource_flavor,
        Cohort: upsert_cohort,
        ClusterQueue: upsert_cluster_queue,
        LocalQueue: upsert_local_queue,
        WorkloadPriorityClass: upsert_priority_class,
        Workload: upsert_workload,
    }

    def apply(self, obj: SchedulerObject) -> None:
        """Add or update one parsed object, whatever its kind: the one entry the controller's watch events
        and ``simulate``'s manifests both go through, so neither keeps its own list of kinds."""
        upsert = self._UPSERTS.get(type(obj))
        if upsert is None:
            raise TypeError(f"the scheduler keeps no {type(obj).__name__}")
        upsert(self, obj)

    def finish_workload(self, key: str) -> None:
        """The workload finished (``Finished=True``): its quota is free for others."""
        self.delete_workload(key)

    def eviction_failed(self, key: str) -> None:
        """An Evict decision could not be written: the workload holds its quota as before, and the
        preemptors waiting for it try again."""
        tracked = self._workloads.get(WorkloadKey(key))
        if tracked is None or not tracked.evicting:
            return
        self._mark_evicting(tracked, False)
        if tracked.cluster_queue in self.ledger.queues:
            self._wake(self.ledger.tree_queues(tracked.cluster_queue))

    def confirm(self, key: str) -> None:
        """The API server now shows the admission of an assumed workload, as when its status write has
        been observed; from here on an event without a reservation means the reservation was cleared.

        The controller needs no call: the watch event carrying ``status.admission`` does the same. A
        replay whose writes land at once (``simulate``) calls this instead of feeding that event back.
        """
        tracked = self._workloads.get(WorkloadKey(key))
        if tracked is not None and tracked.charged:
            tracked.assumed = False

    def forget(self, key: str) -> None:
        """Undo an assumed admission whose status write failed; the workload queues again."""
        tracked = self._workloads.get(WorkloadKey(key))
        if tracked is None or not tracked.assumed:
            return
        self._release(tracked)
        tracked.assumed = tracked.admitted = False
        tracked.info.admission = None
        tracked.info.usage = {}
        self._last_wait.pop(tracked.info.key, None)
        self._route(tracked)

    # == the cycle ========================================================================================
    def cycle(self) -> list[Decision]:
        """One scheduling pass over the heads of every open ClusterQueue."""
        decisions: list[Decision] = list(self._notices)
        self._notices.clear()
        heads: list[tuple[WorkloadInfo, _QueueState]] = []
        for name in sorted(self._ready):
            queue = self._queues[name]
            info = queue.pending.pop()
            if info is None:
                self._ready.discard(name)
                continue
            self._workloads[info.key].queued = False
            if info.parked and not may_fit(info.retry_when, partial(self.ledger.available, name)):
                # woken with others of its cohort, but what it needs was taken before its turn:
                # back to the parked list without a new attempt (its pending message stands)
                queue.pending.requeue_failed(info, retry_when=info.retry_when)
                self._workloads[info.key].queued = True
                continue
            selector = queue.spec.namespace_selector
            if not _namespace_matches(selector, self.namespaces.get(info.namespace)):
                queue.pending.requeue_failed(info, retry_when=((),))  # no release helps, labels do
                self._workloads[info.key].queued = True
                self._wait(decisions, info, name, REASON_MISCONFIGURED, NAMESPACE_MISMATCH, queue)
                continue
            heads.append((info, queue))
        if not heads:
            return decisions
        claimed: list[_Claim] = []
        for info, _ in heads:  # a preemptor being retried gets back the room held for it
            claim = self._claims.get(info.key)
            if claim is not None:
                claim.unhold(self.ledger)
                claimed.append(claim)
        entries: list[tuple[tuple[float, bool, int, float, str], WorkloadInfo, _QueueState, Assignment]] = []
        for info, queue in heads:
            assignment = assign_flavors(
                workload=info,
                queue=queue.compiled,
                flavors=self.flavors,
                ledger=self.ledger,
                oracle=self.oracle,
            )
            # preemptors whose targets are on their way out go first, in the order they preempted:
            # nobody overtakes a claim
            claim = self._claims.get(info.key)
            order = (
                float("inf") if claim is None else claim.sequence,
                assignment.borrowing,
                -info.priority,
                info.created,
                info.key,
            )
            entries.append((order, info, queue, assignment))
        entries.sort(key=lambda entry: entry[0])
        cycle = _Cycle()
        try:
            for info, queue, assignment in self._in_turn(entries):
                self._process(decisions, cycle, info, queue, assignment)
        finally:
            for name, usage in cycle.holds:  # capacity held for this cycle only
                self.ledger.release(name, usage)
        for claim in claimed:
            if not claim.usage and claim.cluster_queue in self.ledger.queues:
                # given up without being admitted: what it held is free for the others again
                self._wake(self.ledger.tree_queues(claim.cluster_queue), released=True)
        return decisions

    def _in_turn(
        self,
        entries: list[tuple[tuple[float, bool, int, float, str], WorkloadInfo, _QueueState, Assignment]],
    ) -> Iterator[tuple[WorkloadInfo, _QueueState, Assignment]]:
        """The heads in the order they are processed: sorted (classical), or with fair sharing one
        tournament per pick within each cohort tree, on the usage left by the picks before."""
        if not self.fair_sharing:
            for _, info, queue, assignment in entries:
                yield info, queue, assignment
            return
        trees: dict[tuple[str, bool], list[Contender[tuple[WorkloadInfo, _QueueState, Assignment]]]] = {}
        for order, info, queue, assignment in entries:
            node = self.ledger.queues.get(queue.spec.name)
            top = node.root() if node is not None else None
            root = (top.name, top.is_cohort) if top is not None else (queue.spec.name, False)
            contender = Contender(
                (info, queue, assignment),
                queue.spec.name,
                assignment.usage,
                info.priority,
                info.created,
                info.key,
                order[0],
            )
            trees.setdefault(root, []).append(contender)
        for root in sorted(trees):
            contenders = trees[root]
            while contenders:
                winner = pick_fairest(contenders, ledger=self.ledger, weight=self.weight_of)
                contenders.remove(winner)
                yield winner.entry

    def _process(
        self,
        decisions: list[Decision],
        cycle: _Cycle,
        info: WorkloadInfo,
        queue: _QueueState,
        assignment: Assignment,
    ) -> None:
        tracked = self._workloads[info.key]
        name = queue.spec.name
        mode = assignment.mode
        targets: list[Target] = []
        if mode.needs_preemption and mode is not Mode.NO_CANDIDATES:
            search = self.fair_preemption if self.fair_sharing else self.preemption
            targets = search.targets(
                queue=name, workload=info, requests=assignment.usage, needs=assignment.needs
            )
        if not targets:
            self._drop_claim(info.key)
        if mode is not Mode.FIT and not targets:
            if mode.needs_preemption and queue.spec.preemption.reclaim_within_cohort != "Any":
                # it would preempt if it could, so the room it lacks is not lent out in this cycle
                # (Kueue's reserveCapacityForUnreclaimablePreempt)
                cycle.hold(self.ledger, name, self._reservable(name, queue, assignment))
            # parked until what it lacks may be free; in a queue that may preempt, also until any
            # release in its own ClusterQueue (``_release``)
            queue.pending.requeue_failed(info, retry_when=assignment.shortfalls)
            tracked.queued = True
            self._wait(decisions, info, name, assignment.reason(), assignment.message(), queue)
            return
        if targets:
            target_keys = {t.candidate.info.key for t in targets}
            if target_keys & cycle.preempted:
                self._drop_claim(info.key)
                queue.pending.requeue_failed(info, retry_when=None)
                tracked.queued = True
                self._wait(decisions, info, name, REASON_WAITING, OVERLAPPING_TARGETS, queue)
                return
            # a preemptor is only parked here, never admitted: it may count on every eviction of the cycle
            fits = self._fits_without(name, assignment.usage, cycle.preempted | target_keys)
        else:
            # An admission takes only room that is free now. Kueue's re-check (scheduler.go ``fits``) also
            # counts the room of workloads preempted earlier in the same cycle as free, so heads that fit
            # one by one at nomination can together exceed the quota until those evictions complete; the
            # victims still run, so that would be over-admission, which an admission here never does.
            available = self.ledger.available
            fits = all(amount <= available(name, fr) for fr, amount in assignment.usage.items())
        if not fits:
            self._drop_claim(info.key)
            # It fitted at nomination but an admission before it in this cycle took the room.
            # Kueue requeues it for the next cycle with this message. We do the same when some
            # flavor could still hold it; otherwise it parks until enough is available again.
            retry = _any_flavor_condition(queue.compiled, info)
            # (room held for this cycle only is back in the next one: try again then)
            if not targets and (cycle.holds or may_fit(retry, partial(self.ledger.available, name))):
                queue.pending.requeue_retry(info)
                self._ready.add(name)
            else:
                queue.pending.requeue_failed(info, retry_when=None if targets else retry)
            tracked.queued = True
            self._wait(decisions, info, name, REASON_WAITING, NO_LONGER_FITS, queue)
            return
        if targets:
            self._preempt(decisions, cycle, info, queue, assignment, targets)
            return
        admission = _admission(name, assignment)
        info.admission = admission
        info.usage = dict(assignment.usage)
        tracked.cluster_queue = name
        checks = queue.spec.admission_checks
        tracked.assumed, tracked.admitted = True, not checks
        self._sequence += 1
        tracked.reserved_at = (float("inf"), self._sequence)
        self._charge(tracked)
        self._last_wait.pop(info.key, None)
        decisions.append(Admit(info.key, name, admission, assignment.borrowing, checks))

    def _preempt(
        self,
        decisions: list[Decision],
        cycle: _Cycle,
        info: WorkloadInfo,
        queue: _QueueState,
        assignment: Assignment,
        targets: list[Target],
    ) -> None:
        """Issue the evictions the preemptor needs and keep its claim: the room stays held for it in
        this cycle, and it parks until a release in its cohort tree lets it try again (first)."""
        name = queue.spec.name
        tracked = self._workloads[info.key]
        cycle.preempted.update(t.candidate.info.key for t in targets)
        preemptor_path = queue_path(self.ledger, name)
        for target in targets:
            victim = self._workloads.get(target.candidate.info.key)
            if victim is None or victim.evicting:
                continue  # already on its way out: nothing new to write
            self._mark_evicting(victim, True)
            message = preemption_message(
                preemptor_uid=info.uid,
                preemptor_job_uid=info.job_uid,
                reason=target.reason,
                preemptor_path=preemptor_path,
                preemptee_path=queue_path(self.ledger, victim.cluster_queue),
            )
            decisions.append(
                Evict(
                    victim.info.key,
                    victim.cluster_queue,
                    EVICTED_BY_PREEMPTION,
                    message,
                    target.reason,
                    info.key,
                    name,
                )
            )
        claim = self._claims.get(info.key)
        if claim is None:
            self._sequence += 1
            claim = self._claims[info.key] = _Claim(self._sequence, name)
        claim.targets = {t.candidate.info.key for t in targets}
        claim.hold(self.ledger, name, assignment.usage)
        queue.pending.requeue_failed(info, retry_when=None)
        tracked.queued = True
        message = f"{assignment.message()}. Pending the preemption of {len(targets)} workload(s)"
        self._wait(decisions, info, name, REASON_WAITING_FOR_PREEMPTED, message, queue)

    def _may_preempt(self, queue: _QueueState) -> bool:
        """Whether a workload of this ClusterQueue could ever preempt to get in (its policies allow it)."""
        policy = queue.spec.preemption
        return (
            self.fair_sharing
            or policy.within_cluster_queue != "Never"
            or policy.reclaim_within_cohort != "Never"
        )

    def _fits_without(self, name: str, usage: Mapping[FlavorResource, int], gone: set[WorkloadKey]) -> bool:
        """Whether ``usage`` fits in ``name`` once the workloads in ``gone`` have released their quota."""
        removed = [self._workloads[k] for k in gone if k in self._workloads and self._workloads[k].charged]
        for victim in removed:
            self.ledger.release(victim.cluster_queue, victim.info.usage)
        try:
            return all(amount <= self.ledger.available(name, fr) for fr, amount in usage.items())
        finally:
            for victim in removed:
                self.ledger.charge(victim.cluster_queue, victim.info.usage)

    def _reservable(self, name: str, queue: _QueueState, assignment: Assignment) -> dict[FlavorResource, int]:
        """What a head that would need preemption holds back for the rest of the cycle (Kueue's
        quotaResourcesToReserve): up to its nominal quota, or its borrowing limit when it borrows."""
        node = self.ledger.queues[name]
        out: dict[FlavorResource, int] = {}
        for fr, amount in assignment.usage.items():
            quota = node.quotas.get(fr)
            nominal = quota.nominal if quota is not None else 0
            used = node.usage.get(fr, 0)
            if assignment.borrowing:
                limit = quota.borrowing_limit if quota is not None else None
                held = amount if limit is None else min(amount, nominal + limit - used)
            else:
                held = min(amount, nominal - used)
            if held > 0:
                out[fr] = held
        return out

    # == what preemption reads (``preemption.QuotaHolders``) ===========================================
    def preemption_policy(self, cluster_queue: str) -> Preemption:
        queue = self._queues.get(cluster_queue)
        return queue.spec.preemption if queue is not None else Preemption()

    def holders(self, cluster_queue: str) -> list[Candidate]:
        """The workloads holding quota in a ClusterQueue (kept until one is charged, released or
        marked evicting: preemption asks for them many times per cycle)."""
        cached = self._holders_cache.get(cluster_queue)
        if cached is not None:
            return cached
        queue = self._queues.get(cluster_queue)
        if queue is None:
            return []
        out = []
        for key in sorted(queue.reserving):
            tracked = self._workloads[key]
            info = tracked.info
            out.append(
                Candidate(info, cluster_queue, tracked.evicting, tracked.reserved_at, frozenset(info.usage))
            )
        self._holders_cache[cluster_queue] = out
        return out

    def has_work(self) -> bool:
        """Whether a cycle now could decide anything (a head to try or a notice to deliver)."""
        if self._notices:
            return True
        for name in list(self._ready):
            if self._queues[name].pending.peek() is not None:
                return True
            self._ready.discard(name)  # only parked or stalled work: it comes back with a wake-up
        return False

    # == read access for status and reports ============================================================
    def cluster_queue(self, name: str) -> ClusterQueue | None:
        queue = self._queues.get(name)
        return queue.spec if queue is not None else None

    def compiled_queue(self, name: str) -> CompiledQueue | None:
        """The ClusterQueue as flavor assignment reads it."""
        queue = self._queues.get(name)
        return queue.compiled if queue is not None else None

    def cluster_queue_names(self) -> list[str]:
        return sorted(self._queues)

    def missing_flavors(self, name: str) -> tuple[str, ...]:
        queue = self._queues.get(name)
        return queue.missing_flavors if queue is not None else ()

    def pending_in(self, name: str) -> list[WorkloadInfo]:
        """Pending workloads of a ClusterQueue in queue order (for status and reports; O(n log n))."""
        queue = self._queues.get(name)
        return list(queue.pending) if queue is not None else []

    def pending_unordered(self, name: str) -> Iterator[WorkloadInfo]:
        """Pending workloads of a ClusterQueue in no particular order (for counting: O(n), no sort)."""
        queue = self._queues.get(name)
        return queue.pending.unordered() if queue is not None else iter(())

    def pending_count(self, name: str) -> int:
        queue = self._queues.get(name)
        return len(queue.pending) if queue is not None else 0

    def inadmissible_count(self, name: str) -> int:
        """Pending workloads parked until something changes (Kueue's inadmissible ones, as
        ``kueue_pending_workloads{status="inadmissible"}`` counts them); the rest of ``pending_count`` are
        active."""
        queue = self._queues.get(name)
        return queue.pending.parked_count if queue is not None else 0

    def reserving_in(self, name: str) -> list[tuple[WorkloadInfo, bool]]:
        """(workload, admitted) for every workload holding quota in a ClusterQueue."""
        queue = self._queues.get(name)
        if queue is None:
            return []
        out = []
        for key in sorted(queue.reserving):
            tracked = self._workloads[key]
            out.append((tracked.info, tracked.admitted))
        return out

    def last_wait(self, key: str) -> tuple[str, str] | None:
        """(reason, message) of the latest wait decided for a pending workload; None if it has not been
        tried since it was queued."""
        seen = self._last_wait.get(WorkloadKey(key))
        return (seen[0], seen[1]) if seen is not None else None

    def workload(self, key: str) -> WorkloadInfo | None:
        tracked = self._workloads.get(WorkloadKey(key))
        return tracked.info if tracked is not None else None

    def workloads(self) -> Iterable[WorkloadInfo]:
        return (t.info for t in self._workloads.values())

    def local_queue_of(self, info: WorkloadInfo) -> LocalQueue | None:
        return self.local_queues.get(self._local_queue_key(info))

    # == internals =========================================================================================
    @staticmethod
    def _local_queue_key(info: WorkloadInfo) -> str:
        return f"{info.namespace}/{info.queue_name}"

    def _target_cluster_queue(self, info: WorkloadInfo) -> str:
        local_queue = self.local_queues.get(self._local_queue_key(info))
        return local_queue.cluster_queue if local_queue is not None else ""

    def _route(self, tracked: _Tracked) -> None:
        """Put a pending workload where it belongs: its ClusterQueue's queue, or held with a notice."""
        info = tracked.info
        lq_key = self._local_queue_key(info)
        local_queue = self.local_queues.get(lq_key)
        if local_queue is None:
            self._held_by_local_queue.setdefault(lq_key, set()).add(info.key)
            tracked.cluster_queue = ""
            self._emit(
                info.key, "", REASON_MISCONFIGURED, f"LocalQueue {info.queue_name} is terminating or missing"
            )
            return
        if local_queue.stop_policy != "None":
            self._held_by_local_queue.setdefault(lq_key, set()).add(info.key)
            tracked.cluster_queue = ""
            self._emit(info.key, "", REASON_SUSPENDED, f"LocalQueue {info.queue_name} is stopped")
            return
        name = local_queue.cluster_queue
        tracked.cluster_queue = name
        queue = self._queues.get(name)
        if queue is None:
            self._held_by_cluster_queue.setdefault(name, set()).add(info.key)
            self._emit(info.key, name, REASON_MISCONFIGURED, f"ClusterQueue {name} is terminating or missing")
            return
        queue.pending.push(info)
        tracked.queued = True
        if queue.open:
            self._ready.add(name)
        else:
            self._emit_closed(info, name, queue)

    def _emit_closed(self, info: WorkloadInfo, name: str, queue: _QueueState) -> None:
        if queue.spec.stop_policy != "None":
            self._emit(info.key, name, REASON_SUSPENDED, f"ClusterQueue {name} is stopped")
        else:
            self._emit(info.key, name, REASON_SUSPENDED, f"ClusterQueue {name} is inactive")

    def _notice_queue(self, name: str) -> None:
        queue = self._queues[name]
        for info in queue.pending:
            self._emit_closed(info, name, queue)

    def _queue_opened_or_closed(self, name: str, was_open: bool) -> None:
        queue = self._queues[name]
        if queue.open and not was_open:
            queue.pending.wake()
            self._ready.add(name)
        elif not queue.open and was_open:
            self._ready.discard(name)
            self._notice_queue(name)

    def _unqueue(self, tracked: _Tracked) -> None:
        if tracked.queued:
            queue = self._queues.get(tracked.cluster_queue)
            if queue is not None:
                queue.pending.remove(tracked.info.key)
            tracked.queued = False

    def _unhold(self, tracked: _Tracked) -> None:
        key = tracked.info.key
        held = self._held_by_local_queue.get(self._local_queue_key(tracked.info))
        if held is not None:
            held.discard(key)
        held = self._held_by_cluster_queue.get(tracked.cluster_queue)
        if held is not None:
            held.discard(key)

    def _admit_held_for_cluster_queue(self, name: str) -> None:
        for key in sorted(self._held_by_cluster_queue.pop(name, set())):
            tracked = self._workloads.get(key)
            if tracked is not None:
                self._route(tracked)

    def _charge_waiting_admissions(self, name: str) -> None:
        """Workloads admitted to a ClusterQueue we had not seen yet (a restart) are charged now."""
        for tracked in self._workloads.values():
            if tracked.info.admission is not None and not tracked.charged and tracked.cluster_queue == name:
                self._charge(tracked)

    def _charge(self, tracked: _Tracked) -> None:
        queue = self._queues.get(tracked.cluster_queue)
        if queue is None:
            return  # charged when the ClusterQueue appears
        self.ledger.charge(tracked.cluster_queue, tracked.info.usage)
        queue.reserving.add(tracked.info.key)
        self._holders_cache.pop(tracked.cluster_queue, None)
        tracked.charged = True
        self._drain_if_stopped(tracked)

    def _mark_evicting(self, tracked: _Tracked, evicting: bool) -> None:
        tracked.evicting = evicting
        self._holders_cache.pop(tracked.cluster_queue, None)

    def _evict_on_failed_checks(self, tracked: _Tracked, workload: Workload) -> None:
        """A check in Retry or Rejected state takes the quota back (Kueue's reconcileCheckBasedEviction)."""
        if tracked.evicting or not tracked.charged or not workload.admission_checks:
            return
        eviction = check_eviction(workload.admission_checks)
        if eviction is None:
            return
        self._mark_evicting(tracked, True)
        self._notices.append(
            Evict(
                tracked.info.key,
                tracked.cluster_queue,
                eviction.reason,
                eviction.message,
                deactivate=eviction.deactivate,
            )
        )

    def _drain_if_stopped(self, tracked: _Tracked) -> None:
        """``stopPolicy: HoldAndDrain`` on its ClusterQueue or LocalQueue takes an admitted workload's quota
        back (Kueue's workload controller: Evicted with ClusterQueueStopped / LocalQueueStopped)."""
        if tracked.evicting or not tracked.charged:
            return
        queue = self._queues.get(tracked.cluster_queue)
        local_queue = self.local_queues.get(self._local_queue_key(tracked.info))
        if queue is not None and queue.spec.stop_policy == "HoldAndDrain":
            reason, message = "ClusterQueueStopped", "The ClusterQueue is stopped"
        elif local_queue is not None and local_queue.stop_policy == "HoldAndDrain":
            reason, message = "LocalQueueStopped", "The LocalQueue is stopped"
        else:
            return
        self._mark_evicting(tracked, True)
        self._notices.append(Evict(tracked.info.key, tracked.cluster_queue, reason, message))

    def _release(self, tracked: _Tracked) -> None:
        if not tracked.charged:
            return
        name = tracked.cluster_queue
        self.ledger.release(name, tracked.info.usage)
        queue = self._queues.get(name)
        if queue is not None:
            queue.reserving.discard(tracked.info.key)
        self._holders_cache.pop(name, None)
        tracked.charged = False
        if tracked.evicting:
            self._mark_evicting(tracked, False)
            for preemptor, claim in self._claims.items():
                if tracked.info.key in claim.targets:
                    claim.targets.discard(tracked.info.key)
                    if not claim.targets:
                        self._retry_preemptor(preemptor, claim)
        if name in self.ledger.queues:
            self._wake(self.ledger.tree_queues(name), released=True)
        if queue is not None and queue.open and self._may_preempt(queue) and queue.pending.wake():
            # Kueue retries inadmissible workloads on releases in their cohort. Here a release in the
            # cohort retries those whose request may now be free; a release in their own ClusterQueue
            # retries every one, even if others borrowed the room at once: it is their nominal quota,
            # which they may reclaim (waiting for it to be free could take for ever under load). After
            # the cohort-wide wake-up above this can bring back a second workload of a shape; kept because
            # Workloads reclaiming their nominal quota wait less for it (bench/baseline/README.md).
            self._ready.add(name)

    def _retry_preemptor(self, key: WorkloadKey, claim: _Claim) -> None:
        """Its last target is gone: try the preemptor in the next cycle. It cannot wait for a wake-up
        like other parked workloads, since the room it lacks is the room held for it."""
        queue = self._queues.get(claim.cluster_queue)
        if queue is not None and queue.pending.retry(key):
            self._ready.add(claim.cluster_queue)

    def _drop_claim(self, key: WorkloadKey) -> None:
        claim = self._claims.pop(key, None)
        if claim is not None and claim.usage:
            claim.unhold(self.ledger)
            if claim.cluster_queue in self.ledger.queues:
                self._wake(self.ledger.tree_queues(claim.cluster_queue), released=True)

    def _drop(self, tracked: _Tracked) -> None:
        self._drop_claim(tracked.info.key)
        self._release(tracked)
        self._unqueue(tracked)
        self._unhold(tracked)
        self._workloads.pop(tracked.info.key, None)
        self._last_wait.pop(tracked.info.key, None)

    def _wake(self, names: Iterable[str], *, released: bool = False) -> None:
        """Return parked workloads to their queues; after a mere release of quota, only those whose
        needs are now available (anything else changed: all of them)."""
        for name in names:
            queue = self._queues.get(name)
            if queue is None or not queue.open:
                continue
            if released and not queue.pending.waiting:
                continue  # nothing parked or stalled; anything in its heap is already scheduled
            queue.pending.wake(available=self._memo_available(name) if released else None)
            if len(queue.pending):
                self._ready.add(name)

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

    def _emit(self, key: WorkloadKey, cluster_queue: str, reason: str, message: str) -> None:
        self._wait(self._notices, None, cluster_queue, reason, message, None, key=key)

    def _wait(
        self,
        out: list[Decision],
        info: WorkloadInfo | None,
        cluster_queue: str,
        reason: str,
        message: str,
        queue: _QueueState | None,
        *,
        key: WorkloadKey | None = None,
    ) -> None:
        workload_key = info.key if info is not None else key
        assert workload_key is not None
        position = queue.pending.position(info) if queue is not None and info is not None else None
        seen = (reason, message, position)
        if self._last_wait.get(workload_key) == seen:
            return
        self._last_wait[workload_key] = seen
        out.append(Wait(workload_key, cluster_queue, reason, message, position))


@dataclass(slots=True)
class _Claim:
    """A preemptor waiting for its targets: the room it will take stays charged in its ClusterQueue
    (on top of the targets' own usage, which they still hold), so that nobody else takes what the
    evictions free. Released when the preemptor is tried again, admitted, or gone."""

    sequence: int
    cluster_queue: str
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    targets: set[WorkloadKey] = field(default_factory=set)

    def hold(self, ledger: Ledger, name: str, usage: Mapping[FlavorResource, int]) -> None:
        self.unhold(ledger)
        self.cluster_queue, self.usage = name, dict(usage)
        if name in ledger.queues:
            ledger.charge(name, self.usage)

    def unhold(self, ledger: Ledger) -> None:
        if self.usage and self.cluster_queue in ledger.queues:
            ledger.release(self.cluster_queue, self.usage)
        self.usage = {}


@dataclass(slots=True)
class _Cycle:
    """What one cycle remembers: workloads it chose to preempt, and capacity held until it ends."""

    preempted: set[WorkloadKey] = field(default_factory=set)
    holds: list[tuple[str, dict[FlavorResource, int]]] = field(default_factory=list)

    def hold(self, ledger: Ledger, name: str, usage: Mapping[FlavorResource, int]) -> None:
        if usage:
            ledger.charge(name, usage)
            self.holds.append((name, dict(usage)))


def _any_flavor_condition(queue: CompiledQueue, info: WorkloadInfo) -> RetryCondition | None:
    """Fitting is possible only if, for every group the workload needs, some flavor of the group has
    all of the workload's requests of that group available (node constraints aside)."""
    if len(info.pod_sets) != 1:
        return None
    pod_set = info.pod_sets[0]
    needs: dict[int, list[tuple[str, int]]] = {}
    for resource, amount in pod_set.requests:
        group = queue.group_of.get(resource)
        if group is None:
            return ((),)
        needs.setdefault(group, []).append((resource, amount * pod_set.count))
    return tuple(
        tuple(
            tuple(((flavor, resource), amount) for resource, amount in requests)
            for flavor in queue.groups[group][1]
        )
        for group, requests in needs.items()
    )


def _namespace_matches(selector: LabelSelector | None, labels: Mapping[str, str] | None) -> bool:
    """An absent selector admits no namespace; ``{}`` admits all (Kueue's API)."""
    return selector is not None and selector.matches(labels or {})


def _admission(cluster_queue: str, assignment: Assignment) -> Admission:
    pod_sets = tuple(
        PodSetAssignment(
            name=result.name,
            flavors=dict(result.flavors),
            resource_usage={r: amount_quantity(r, amount) for r, amount in result.requests.items()},
            count=result.count,
        )
        for result in assignment.pod_sets
    )
    return Admission(cluster_queue, pod_sets)
