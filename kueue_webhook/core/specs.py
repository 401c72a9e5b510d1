"""The specs the scheduler decides with, and what a workload's spec points at.

ResourceFlavors, AdmissionChecks, Cohorts, ClusterQueues, LocalQueues, WorkloadPriorityClasses and namespace
labels change rarely and are read on every cycle. ``Specs`` holds them as the last event left them, with the
one record per ClusterQueue (``QueueState``: its spec, its compiled form for flavor assignment, its pending
queue and the workloads reserving quota in it) and the ledger of quotas and usage. It only answers questions
(which ClusterQueue a workload's LocalQueue points at, its priority, a queue's preemption policy, a node's
fair-sharing weight); the events that change it go through ``catalog.Catalog``, which also moves whatever a
change moves.

In Kueue the specs sit in the scheduler's cache (``pkg/cache/scheduler``), together with the workloads
that reserve quota and their usage; here those are ``workload_tracker.py`` and ``ledger.py``, and the pending
workloads, which Kueue's queue manager (``pkg/cache/queue``) keeps, are ``pending_queues.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kueue_webhook.api.objects import (
    AdmissionCheck,
    ClusterQueue,
    Cohort,
    LocalQueue,
    Preemption,
    ResourceFlavor,
    Workload,
)
from kueue_webhook.core.assignment import CompiledQueue
from kueue_webhook.core.check_references import NO_PROBLEMS, CheckReferences
from kueue_webhook.core.fair_sharing import Share, dominant_resource_share
from kueue_webhook.core.ledger import Ledger, Node
from kueue_webhook.core.model import WorkloadInfo, WorkloadKey
from kueue_webhook.core.pending_queue import PendingQueue
from kueue_webhook.core.tas.capacity import TopologyCapacity

__all__ = ["QueueState", "Specs"]


@dataclass(slots=True)
class QueueState:
    """One ClusterQueue: its spec, compiled form, pending queue and what it has admitted."""

    spec: ClusterQueue
    compiled: CompiledQueue
    pending: PendingQueue
    reserving: set[WorkloadKey] = field(default_factory=set)
    missing_flavors: tuple[str, ...] = ()
    #: its AdmissionChecks that are missing, inactive or misused (``check_references``)
    checks: CheckReferences = NO_PROBLEMS

    @property
    def open(self) -> bool:
        return not self.missing_flavors and not self.checks.blocking and self.spec.stop_policy == "None"


class Specs:
    """The spec objects as the latest events left them, and the answers read from them."""

    def __init__(self) -> None:
        self.ledger = Ledger()
        #: fair sharing (the ConfigMap's ``fairSharing``): admission order and preemption by share
        self.fair_sharing = False
        #: the ConfigMap's ``resources``: resource name prefixes not counted, and whether a ClusterQueue's
        #: undeclared resources are left out of its quota check (``quotaCheckStrategy: IgnoreUndeclared``)
        self.excluded_resources: tuple[str, ...] = ()
        self.ignore_undeclared = False
        self.flavors: dict[str, ResourceFlavor] = {}
        self.admission_checks: dict[str, AdmissionCheck] = {}
        self.cohorts: dict[str, Cohort] = {}
        self.local_queues: dict[str, LocalQueue] = {}
        self.priority_classes: dict[str, int] = {}
        self.namespaces: dict[str, Mapping[str, str]] = {}
        #: every ClusterQueue by name (the dict is never replaced: other parts keep a reference to it)
        self.queues: dict[str, QueueState] = {}
        #: nodes, topologies and TAS usage: where pod sets on TAS flavors fit
        self.tas = TopologyCapacity()

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

    # == fair-sharing weights ==========================================================================
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

    def check_references(self, name: str) -> CheckReferences:
        queue = self.queues.get(name)
        return queue.checks if queue is not None else NO_PROBLEMS
