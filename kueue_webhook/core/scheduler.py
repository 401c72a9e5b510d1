"""The scheduler: a long-lived state fed one event at a time, and a ``cycle`` that returns decisions.

The state is in parts that are easily tangled, so each has its own module: what exists (``specs.py``: the
spec objects, over ``ledger.py``), how a spec event moves the rest (``catalog.py``), what waits and in what
order (``pending_queues.py``, over ``pending_queue.py``), the one timed retry of parked workloads
(``revisits.py``), the workloads and the quota they hold (``workload_tracker.py``: what is used, by whom,
and what preemptors claim, ``claims.py``), and the decision code (``cycle.py``, over ``flavors.py`` and
``preemption.py``/``fair_preemption.py``: does this workload fit, where, and at whose expense), which
returns ``decisions.py``'s ``Admit | Wait | Evict``. Everything is updated incrementally by the
controller's watch events (or by ``simulate``'s clock); nothing is rebuilt per cycle.

``SchedulerState`` composes them and is the one object the controller, ``simulate`` and the tests hold: it
only forwards, so its methods are the scheduler's whole interface. Status code reads the state through
``view.SchedulerView``, which names only what it reads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Concatenate, ParamSpec, TypeVar

from kueue_webhook.api.config_model import AdmissionFairSharing
from kueue_webhook.api.objects import LocalQueue, ResourceFlavor
from kueue_webhook.core.admission_fairness import AdmissionFairness
from kueue_webhook.core.catalog import Catalog, SchedulerObject
from kueue_webhook.core.cycle import run_cycle
from kueue_webhook.core.decisions import Admit, Decision, Evict, Notices, Wait
from kueue_webhook.core.fair_preemption import FairSharingPreemption
from kueue_webhook.core.flavors import FlavorAssigner, PreemptionOracle
from kueue_webhook.core.ledger import Ledger
from kueue_webhook.core.model import WorkloadInfo, WorkloadKey
from kueue_webhook.core.pending_queues import PendingQueues
from kueue_webhook.core.preemption import ClassicalPreemption
from kueue_webhook.core.revisits import Revisits
from kueue_webhook.core.specs import Specs
from kueue_webhook.core.tas.replacement import NoReplacement, find_replacement
from kueue_webhook.core.workload_tracker import WorkloadTracker

__all__ = ["Admit", "Decision", "Evict", "SchedulerObject", "SchedulerState", "Wait"]

_P = ParamSpec("_P")
_R = TypeVar("_R")
_Part = TypeVar("_Part")


def _forward(
    part: Callable[[SchedulerState], _Part], method: Callable[Concatenate[_Part, _P], _R]
) -> Callable[Concatenate[SchedulerState, _P], _R]:
    """``method`` of one part of the state, as a method of the state (same signature and docstring)."""

    @functools.wraps(method)
    def forward(self: SchedulerState, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return method(part(self), *args, **kwargs)

    return forward


def _catalog(state: SchedulerState) -> Catalog:
    return state.catalog


def _specs(state: SchedulerState) -> Specs:
    return state.specs


def _pending(state: SchedulerState) -> PendingQueues:
    return state.pending


def _tracker(state: SchedulerState) -> WorkloadTracker:
    return state.tracker


class SchedulerState:
    """Everything the scheduler knows, kept current one event at a time."""

    def __init__(self, *, oracle: PreemptionOracle | None = None) -> None:
        self.notices = Notices()
        self.specs = Specs()
        self.pending = PendingQueues(self.specs, self.notices)
        self.revisits = Revisits(self.specs, self.pending)
        self.fairness = AdmissionFairness(
            self.specs.local_queues,
            uses_usage_based_admission=self._usage_based_admission,
            reorder=self._reorder,
            admitted_usage=lambda cluster_queue, local_queue: self.tracker.admitted_usage(
                cluster_queue, local_queue
            ),
        )
        self.tracker = WorkloadTracker(
            self.specs, self.pending, self.revisits, self.notices, fairness=self.fairness
        )
        # a queue change moves, charges or drains its workloads
        self.catalog = Catalog(self.specs, self.pending, occupants=self.tracker, fairness=self.fairness)
        self.preemption = ClassicalPreemption(holders=self.tracker)
        self.preemption.local_queue_usage = self._local_queue_usage
        self.oracle: PreemptionOracle = oracle or self.preemption
        self.fair_preemption = FairSharingPreemption(
            holders=self.tracker, share=self.specs.share_of, strategies=()
        )
        self.fair_preemption.local_queue_usage = self._local_queue_usage
        self.assigner = FlavorAssigner(self.specs.flavors, self.specs.ledger, self.oracle, self.specs.tas)
        #: how many heads the last cycle tried (admitted or not)
        self.last_cycle_tried = 0
        #: per ClusterQueue, the preemptors the last cycle passed over (``cycle.CycleResult``)
        self.last_cycle_preemption_skips: dict[str, int] = {}

    # == what the state holds ==========================================================================
    @property
    def ledger(self) -> Ledger:
        return self.specs.ledger

    @property
    def flavors(self) -> Mapping[str, ResourceFlavor]:
        return self.specs.flavors

    @property
    def local_queues(self) -> Mapping[str, LocalQueue]:
        return self.specs.local_queues

    @property
    def fair_sharing(self) -> bool:
        """Fair sharing (the ConfigMap's ``fairSharing``): admission order and preemption by share."""
        return self.specs.fair_sharing

    def configure_fair_sharing(self, *, enabled: bool, strategies: tuple[str, ...] = ()) -> None:
        """Turn fair sharing on or off (the ConfigMap's ``fairSharing``) with its preemption strategies."""
        if enabled == self.fair_sharing and strategies == self.fair_preemption.strategies:
            return
        self.fair_preemption.strategies = strategies or (
            "LessThanOrEqualToFinalShare",
            "LessThanInitialShare",
        )
        self.preemption.fair = self.fair_preemption if enabled else None
        self.catalog.set_fair_sharing(enabled)

    def configure_admission_fair_sharing(self, config: AdmissionFairSharing | None) -> None:
        """The configuration's ``admissionFairSharing`` (None: off): LocalQueues' usage orders the
        ClusterQueues whose ``admissionScope`` asks for it (``admission_fairness``)."""
        self.fairness.configure(config, list(self.specs.queues))

    def _usage_based_admission(self, cluster_queue: str) -> bool:
        queue = self.specs.queues.get(cluster_queue)
        return queue is not None and queue.spec.usage_based_admission

    def _local_queue_usage(self, cluster_queue: str) -> Mapping[tuple[str, str], float] | None:
        queue = self.specs.queues.get(cluster_queue)
        return queue.pending.ranks if queue is not None else None

    def _reorder(self, cluster_queue: str, ranks: Mapping[tuple[str, str], float] | None) -> None:
        queue = self.specs.queues.get(cluster_queue)
        if queue is not None:
            queue.pending.set_ranks(ranks)

    def sample_admission_usage(self, now: float) -> list[str]:
        """Move every LocalQueue's consumed resources on to ``now`` (seconds since the epoch), as
        admission fair sharing samples them each ``usageSamplingInterval``: the LocalQueues sampled, whose
        status shows them."""
        self.fairness.now = now
        return self.fairness.sample()

    def configure_quota_check(
        self, *, excluded: tuple[str, ...] = (), ignore_undeclared: bool = False
    ) -> bool:
        """The ConfigMap's ``resources`` (``excludeResourcePrefixes``, ``quotaCheckStrategy``); True when the
        Workloads must be fed again for it to hold (``Catalog.set_quota_check``)."""
        return self.catalog.set_quota_check(excluded=excluded, ignore_undeclared=ignore_undeclared)

    # == spec events: the catalog ======================================================================
    apply = _forward(_catalog, Catalog.apply)
    upsert_resource_flavor = _forward(_catalog, Catalog.upsert_resource_flavor)
    delete_resource_flavor = _forward(_catalog, Catalog.delete_resource_flavor)
    delete_admission_check = _forward(_catalog, Catalog.delete_admission_check)
    upsert_cluster_queue = _forward(_catalog, Catalog.upsert_cluster_queue)
    delete_cluster_queue = _forward(_catalog, Catalog.delete_cluster_queue)
    upsert_cohort = _forward(_catalog, Catalog.upsert_cohort)
    delete_cohort = _forward(_catalog, Catalog.delete_cohort)
    upsert_local_queue = _forward(_catalog, Catalog.upsert_local_queue)
    delete_local_queue = _forward(_catalog, Catalog.delete_local_queue)
    upsert_priority_class = _forward(_catalog, Catalog.upsert_priority_class)
    delete_priority_class = _forward(_catalog, Catalog.delete_priority_class)
    upsert_namespace = _forward(_catalog, Catalog.upsert_namespace)
    delete_namespace = _forward(_catalog, Catalog.delete_namespace)

    # == nodes, bound pods and topologies: where TAS pod sets fit ======================================
    upsert_topology = _forward(_catalog, Catalog.upsert_topology)
    delete_topology = _forward(_catalog, Catalog.delete_topology)
    upsert_node = _forward(_catalog, Catalog.upsert_node)
    delete_node = _forward(_catalog, Catalog.delete_node)
    upsert_pod = _forward(_catalog, Catalog.upsert_pod)

    # == workload events: the tracker ==================================================================
    upsert_workload = _forward(_tracker, WorkloadTracker.upsert_workload)
    delete_workload = _forward(_tracker, WorkloadTracker.delete_workload)
    eviction_failed = _forward(_tracker, WorkloadTracker.eviction_failed)
    confirm = _forward(_tracker, WorkloadTracker.confirm)
    forget = _forward(_tracker, WorkloadTracker.forget)

    def finish_workload(self, key: str) -> None:
        """The workload finished (``Finished=True``): its quota is free for others."""
        self.tracker.delete_workload(key)

    # == the cycle =====================================================================================
    def cycle(self, now: float | None = None) -> list[Decision]:
        """One scheduling pass over the heads of every open ClusterQueue (``cycle.run_cycle``).

        ``now`` (seconds, any clock that only moves forward) first retries the parked workloads of the
        cohort trees whose revisit is due, and plans one for each tree whose usage moved
        (``revisits.Revisits``); without it parked workloads wait only for a chance to fit.
        """
        if now is not None:
            self.revisits.revisit(now)
        search = self.fair_preemption if self.fair_sharing else self.preemption
        result = run_cycle(self.specs, self.pending, self.tracker, assigner=self.assigner, search=search)
        decisions, self.last_cycle_tried = result.decisions, result.tried
        self.last_cycle_preemption_skips = result.preemption_skips
        self.revisits.schedule(now)
        return decisions

    def plan_revisits(self, now: float) -> None:
        """Make the revisits that are due (their parked workloads back in the heap) and plan one for every
        cohort tree whose usage moved since, as ``cycle`` does first and last: called before ``has_work``, a
        change of usage alone, or a revisit that finds nobody parked, needs no cycle of its own."""
        self.revisits.revisit(now)
        self.revisits.schedule(now)

    def has_work(self, now: float | None = None) -> bool:
        """Whether a cycle now could decide anything (a head to try or a notice to deliver) or, given the
        time, has a revisit to plan or to make."""
        if self.notices or self.pending.has_head():
            return True
        revisits = self.revisits
        return now is not None and (revisits.usage_moved_since_scheduled or revisits.due(now))

    def next_revisit(self) -> float | None:
        """When a cycle is next due for a revisit of parked workloads (None: none planned)."""
        return self.revisits.next_due()

    def take_restated(self) -> dict[WorkloadKey, str]:
        """The parked workloads whose latest wait was restated without a decision of their own
        (``Notices.restate``), with their ClusterQueues: whoever shows pending messages should look at
        them."""
        return self.notices.take_restated()

    # == read access for status and reports (``view.SchedulerView``) ===================================
    weight_of = _forward(_specs, Specs.weight_of)
    share_of = _forward(_specs, Specs.share_of)
    fair_share = _forward(_specs, Specs.fair_share)
    cluster_queue = _forward(_specs, Specs.cluster_queue)
    compiled_queue = _forward(_specs, Specs.compiled_queue)
    cluster_queue_names = _forward(_specs, Specs.cluster_queue_names)
    missing_flavors = _forward(_specs, Specs.missing_flavors)
    check_references = _forward(_specs, Specs.check_references)
    local_queue_of = _forward(_specs, Specs.local_queue_of)
    pending_in = _forward(_pending, PendingQueues.pending_in)
    pending_workload = _forward(_pending, PendingQueues.pending_workload)
    pending_unordered = _forward(_pending, PendingQueues.pending_unordered)
    pending_count = _forward(_pending, PendingQueues.pending_count)
    inadmissible_count = _forward(_pending, PendingQueues.inadmissible_count)
    pending_by_local_queue = _forward(_pending, PendingQueues.pending_by_local_queue)
    reserving_in = _forward(_tracker, WorkloadTracker.reserving_in)

    def admission_consumed(self, local_queue: str) -> tuple[dict[str, int], float] | None:
        """A LocalQueue's consumed resources and when they were last moved on, while admission fair
        sharing orders its ClusterQueue (its status shows them); None otherwise."""
        return self.fairness.consumed(local_queue)

    def admission_usage(self, local_queue: str) -> float | None:
        """The usage a LocalQueue's Workloads are ordered by, while admission fair sharing orders its
        ClusterQueue; None otherwise."""
        return self.fairness.reported_usage(local_queue)

    def last_wait(self, key: str) -> tuple[str, str] | None:
        """(reason, message) of the latest wait decided for a pending workload; None if it has not been
        tried since it was queued."""
        return self.notices.last_wait(WorkloadKey(key))

    def workload(self, key: str) -> WorkloadInfo | None:
        tracked = self.tracker.workloads.get(WorkloadKey(key))
        return tracked.info if tracked is not None else None

    def workloads(self) -> Iterable[WorkloadInfo]:
        return (t.info for t in self.tracker.workloads.values())

    def find_replacement(self, key: str, node: str) -> dict[str, dict[str, Any]] | NoReplacement | None:
        """New topology assignments (by pod set) moving the pods of admitted workload ``key`` off the failed
        ``node``, or why there are none; None while the workload is unknown here or holds no quota."""
        tracked = self.tracker.workloads.get(WorkloadKey(key))
        if tracked is None or not tracked.charged:
            return None
        return find_replacement(tracked.info, node, self.specs.tas, self.specs.flavors)
