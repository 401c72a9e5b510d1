"""Admission fair sharing: LocalQueues that used less go first (Kueue's AdmissionFairSharing).

In a ClusterQueue whose ``spec.admissionScope.admissionMode`` is ``UsageBasedAdmissionFairSharing``, and
while the configuration has an ``admissionFairSharing`` section, pending Workloads are ordered first by
their LocalQueue's *usage*, lowest first, then as usual (priority, age). A LocalQueue's usage is

    sum over resources of weight(resource) * (consumed + pending penalty), divided by its own weight

(Kueue's ``CalculateUsage``; a weight of 0 or less makes it infinite: last). *Consumed* is a decayed
average of what the LocalQueue's admitted Workloads use: every ``usageSamplingInterval`` it moves
towards the current usage by ``alpha = 1 - 0.5 ** (elapsed / usageHalfLifeTime)`` (a half-life of 0
forgets everything), and it is written to ``status.fairSharing.admissionFairSharingStatus``, from which a
restarted controller goes on. So that a burst from one LocalQueue does not win every cycle until the
next sample, each admission adds an *entry penalty* at once: its requests times the alpha of one
sampling interval. The penalty is pushed when the scheduler decides the admission, dropped if the write
fails or the Workload goes before it is admitted, and folded into *consumed* when the Workload is seen
admitted (Kueue's scheduler ``updateEntryPenalty``, workload controller ``updateAfsConsumedUsage``,
LocalQueue controller ``reconcileConsumedUsage``).

Amounts are nano-units, rounded down after every multiplication, as Kueue's ``MulByFloat`` rounds to
nine decimals; usage is compared as floats, as Kueue compares ``AsApproximateFloat64``. The core has no
clock: ``now`` (seconds since the epoch) is set by whoever drives it, before a cycle and a sample.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal

from kueue_webhook.api.config_model import AdmissionFairSharing
from kueue_webhook.api.objects import LocalQueue
from kueue_webhook.core.model import FlavorResource, WorkloadInfo, WorkloadKey

__all__ = ["AdmissionFairness", "by_resource", "decayed", "scaled"]

NANO = 10**9

#: a LocalQueue's key in the ranks a pending queue is ordered by: (namespace, name)
QueueRef = tuple[str, str]


def scaled(amounts: Mapping[str, int], factor: float) -> dict[str, int]:
    """``amounts`` times ``factor``, each rounded down to a nano-unit (Kueue's ``MulByFloat``: the factor
    as its shortest decimal, exact decimal product, nine decimals kept)."""
    exact = Decimal(repr(factor))
    return {name: int((exact * amount).to_integral_value(ROUND_FLOOR)) for name, amount in amounts.items()}


def _alpha(elapsed: float, half_life: float) -> float:
    """How far a sample taken ``elapsed`` seconds after the last one moves the average (0 with no
    half-life: Kueue's ``calculateAlphaRate``)."""
    if half_life == 0:
        return 0.0
    return 1.0 - math.pow(0.5, elapsed / half_life)


def by_resource(usage: Mapping[FlavorResource, int], *, into: dict[str, int] | None = None) -> dict[str, int]:
    """``(flavor, resource) -> amount`` summed per resource (into ``into`` when given)."""
    total = {} if into is None else into
    for (_, resource), amount in usage.items():
        total[resource] = total.get(resource, 0) + amount
    return total


def _summed(*parts: Mapping[str, int]) -> dict[str, int]:
    total: dict[str, int] = {}
    for part in parts:
        for name, amount in part.items():
            total[name] = total.get(name, 0) + amount
    return total


def decayed(
    old: Mapping[str, int], current: Mapping[str, int], elapsed: float, half_life: float
) -> dict[str, int]:
    """The consumed average ``elapsed`` seconds on: ``old * (1 - alpha) + current * alpha`` (Kueue's
    ``CalculateDecayedConsumed``)."""
    alpha = _alpha(elapsed, half_life)
    return _summed(scaled(old, 1 - alpha), scaled(current, alpha))


@dataclass(slots=True)
class _Entry:
    """One LocalQueue's history: Kueue's ``UsageLedgerEntry``."""

    consumed: dict[str, int] = field(default_factory=dict)
    #: per Workload whose admission is decided but not seen yet, the penalty it added
    penalties: dict[WorkloadKey, dict[str, int]] = field(default_factory=dict)
    last_update: float = 0.0
    #: whether the consumed resources of the LocalQueue's status have been taken in (once per process)
    seeded: bool = False

    def pending_penalty(self) -> dict[str, int]:
        return _summed(*self.penalties.values())


class AdmissionFairness:
    """The usage ledger of every LocalQueue, and the order it gives the pending queues that use it."""

    def __init__(
        self,
        local_queues: Mapping[str, LocalQueue],
        uses_usage_based_admission: Callable[[str], bool],
        reorder: Callable[[str, Mapping[QueueRef, float] | None], None],
        admitted_usage: Callable[[str, str], Mapping[str, int]],
    ) -> None:
        #: LocalQueues by "namespace/name" (the specs' own map)
        self._local_queues = local_queues
        #: whether a ClusterQueue asks for usage-based admission (its ``admissionScope``)
        self._usage_based = uses_usage_based_admission
        #: hands a ClusterQueue's pending queue the ranks of its LocalQueues (None: ordinary order)
        self._reorder = reorder
        #: what the admitted Workloads of a LocalQueue (cluster queue, "namespace/name") use, per resource
        self._admitted_usage = admitted_usage
        self.config: AdmissionFairSharing | None = None
        self._entries: dict[str, _Entry] = {}
        #: Workloads with a pending penalty -> their LocalQueue
        self._penalized: dict[WorkloadKey, str] = {}
        #: seconds since the epoch, set before each cycle and sample
        self.now = 0.0

    # == configuration ================================================================================
    def configure(self, config: AdmissionFairSharing | None, cluster_queues: Iterable[str]) -> None:
        """Turn it on, off or retune it (the configuration's ``admissionFairSharing``)."""
        if config == self.config:
            return
        was_on, self.config = self.config is not None, config
        if config is None:
            self._entries.clear()
            self._penalized.clear()
        elif not was_on:
            for queue in self._local_queues.values():
                self.seed(queue)
        for name in cluster_queues:
            self.refresh(name)

    def applies_to(self, cluster_queue: str) -> bool:
        return self.config is not None and self._usage_based(cluster_queue)

    # == what a LocalQueue used ========================================================================
    def usage(self, local_queue: str) -> float:
        """The usage its Workloads are ordered by (lower first): Kueue's ``CalculateUsage``."""
        config = self.config
        entry = self._entries.get(local_queue)
        total = 0.0
        if config is not None and entry is not None:
            weights = dict(config.resource_weights)
            for name, amount in sorted(_summed(entry.consumed, entry.pending_penalty()).items()):
                total += weights.get(name, 1.0) * (amount / NANO)
        spec = self._local_queues.get(local_queue)
        weight = 1.0
        if spec is not None and spec.fair_sharing_weight is not None:
            weight = spec.fair_sharing_weight.nanos / NANO
        if weight <= 0:
            return math.inf
        return total / weight

    def reported_usage(self, local_queue: str) -> float | None:
        """``usage``, for the LocalQueues of ClusterQueues it orders (its gauge); None for the others."""
        spec = self._local_queues.get(local_queue)
        if spec is None or not self.applies_to(spec.cluster_queue):
            return None
        return self.usage(local_queue)

    def consumed(self, local_queue: str) -> tuple[dict[str, int], float] | None:
        """The consumed resources to write to a LocalQueue's status and when they were sampled; None when
        admission fair sharing does not apply to it."""
        spec = self._local_queues.get(local_queue)
        entry = self._entries.get(local_queue)
        if spec is None or entry is None or not entry.last_update or not self.applies_to(spec.cluster_queue):
            return None  # (no time yet: nothing to say when it was sampled)
        return dict(entry.consumed), entry.last_update

    def seed(self, queue: LocalQueue) -> None:
        """Take in what a LocalQueue's status says it consumed, once per process (Kueue's
        ``initializeAfsIfNeeded``: never from live usage, which entry penalties already price)."""
        if self.config is None:
            return
        entry = self._entries.get(queue.key)
        if entry is None:
            entry = self._entries[queue.key] = _Entry(last_update=queue.consumed_at or self.now)
        elif entry.seeded:
            return
        entry.consumed = _summed(entry.consumed, dict(queue.consumed_resources))
        entry.seeded = True

    def forget_local_queue(self, key: str) -> None:
        self._entries.pop(key, None)
        for workload in [w for w, queue in self._penalized.items() if queue == key]:
            del self._penalized[workload]

    # == admissions ====================================================================================
    def decided(self, info: WorkloadInfo, cluster_queue: str) -> None:
        """The scheduler admits ``info`` into ``cluster_queue``: its LocalQueue pays the entry penalty now,
        its requests (what it is charged, over all flavors) times the alpha of one sampling interval (a
        second push for the same Workload replaces the first)."""
        config = self.config
        if config is None or not self._usage_based(cluster_queue):
            return
        requests = by_resource(info.usage)
        key = f"{info.namespace}/{info.queue_name}"
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry(last_update=self.now)
        alpha = _alpha(config.usage_sampling_interval_seconds, config.usage_half_life_seconds)
        entry.penalties[info.key] = scaled(requests, alpha)
        self._penalized[info.key] = key
        self.refresh(cluster_queue)

    def dropped(self, workload: WorkloadKey) -> None:
        """A penalty that will never be settled (the write failed, the Workload finished or went)."""
        key = self._penalized.pop(workload, None)
        entry = self._entries.get(key) if key is not None else None
        if entry is None or entry.penalties.pop(workload, None) is None:
            return
        spec = self._local_queues.get(key or "")
        if spec is not None:
            self.refresh(spec.cluster_queue)

    def admitted(self, info: WorkloadInfo, cluster_queue: str) -> None:
        """``info`` is seen admitted: the LocalQueue's average moves on to now and the penalty is folded
        into it (Kueue's ``updateAfsConsumedUsage``, on every transition into Admitted)."""
        config = self.config
        if config is None or not self._usage_based(cluster_queue):
            return
        key = f"{info.namespace}/{info.queue_name}"
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry(last_update=self.now)
        self._penalized.pop(info.key, None)
        penalty = entry.penalties.pop(info.key, {})
        current = self._admitted_usage(cluster_queue, key)
        elapsed = self._elapsed(entry)
        entry.consumed = _summed(
            decayed(entry.consumed, current, elapsed, config.usage_half_life_seconds), penalty
        )
        entry.last_update = max(entry.last_update, self.now)
        self.refresh(cluster_queue)

    def _elapsed(self, entry: _Entry) -> float:
        """Seconds since the entry was last moved on (0 while it has never been: no clock was set yet)."""
        return max(0.0, self.now - entry.last_update) if entry.last_update else 0.0

    # == sampling ======================================================================================
    def sample(self) -> list[str]:
        """Move every LocalQueue of a usage-based ClusterQueue on to ``now`` (Kueue's LocalQueue controller,
        every ``usageSamplingInterval``); the LocalQueues sampled, whose status should be written."""
        config = self.config
        if config is None:
            return []
        sampled: list[str] = []
        touched: set[str] = set()
        for key, spec in self._local_queues.items():
            if spec.stop_policy != "None" or not self._usage_based(spec.cluster_queue):
                continue
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry(last_update=self.now, seeded=True)
            if config.usage_half_life_seconds == 0:
                entry.consumed = {}
            else:
                current = self._admitted_usage(spec.cluster_queue, key)
                elapsed = self._elapsed(entry)
                entry.consumed = decayed(entry.consumed, current, elapsed, config.usage_half_life_seconds)
            entry.last_update = max(entry.last_update, self.now)
            sampled.append(key)
            touched.add(spec.cluster_queue)
        for name in sorted(touched):
            self.refresh(name)
        return sampled

    # == the order of the pending queues ===============================================================
    def refresh(self, cluster_queue: str) -> None:
        """Hand ``cluster_queue``'s pending queue the usage of each of its LocalQueues (or nothing, when
        it orders as usual)."""
        if not self.applies_to(cluster_queue):
            self._reorder(cluster_queue, None)
            return
        ranks: dict[QueueRef, float] = {}
        for key, spec in self._local_queues.items():
            if spec.cluster_queue == cluster_queue:
                ranks[(spec.namespace, spec.name)] = self.usage(key)
        self._reorder(cluster_queue, ranks)
