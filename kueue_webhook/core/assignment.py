"""What flavor assignment reads and returns: a ClusterQueue compiled to its resource groups, and per
workload an ``Assignment`` (the flavor of each resource of each pod set, the usage it charges, how well it
fits). Apart from the search (``core.flavors``) so the topology step (``core.tas.assign``), the cycle and
preemption read and write them without importing the search."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from kueue_webhook.api.objects import ClusterQueue, FlavorFungibility
from kueue_webhook.core.decisions import REASON_WAITING
from kueue_webhook.core.model import FlavorResource
from kueue_webhook.core.scan_progress import Scan
from kueue_webhook.core.tas.block import TopologyBlock

__all__ = ["Assignment", "CompiledQueue", "Mode", "Nomination", "PodSetResult", "compile_queue"]

#: per pod set name, the flavor each of its resources was given when the cycle first assigned it: a
#: recomputation within the cycle may use only these (Kueue's nomination mapping, "flavor stickiness")
Nomination = Mapping[str, Mapping[str, str]]


class Mode(IntEnum):
    """How a flavor (or a whole assignment) could be used; higher is better."""

    NO_FIT = 0
    NO_CANDIDATES = 1  # would need preemption, and nothing can be preempted
    PREEMPT = 2  # would need preemption, candidates found (some in its own ClusterQueue)
    RECLAIM = 3  # would need preemption, candidates found only in other ClusterQueues of the cohort
    FIT = 4

    @property
    def needs_preemption(self) -> bool:
        return self in (Mode.NO_CANDIDATES, Mode.PREEMPT, Mode.RECLAIM)


@dataclass(frozen=True, slots=True)
class CompiledQueue:
    """A ClusterQueue reduced to what flavor assignment reads."""

    name: str
    groups: tuple[tuple[frozenset[str], tuple[str, ...]], ...]
    group_of: Mapping[str, int]
    nominal: Mapping[FlavorResource, int]
    fungibility: FlavorFungibility
    #: ``borrowWithinCohort`` allows preempting while borrowing (Kueue's canPreemptWhileBorrowing)
    preempt_while_borrowing: bool = False
    #: a resource no group covers is left out of the quota check instead of failing it
    #: (``quotaCheckStrategy: IgnoreUndeclared``)
    ignore_undeclared: bool = False


def compile_queue(
    queue: ClusterQueue, *, fair_sharing: bool = False, ignore_undeclared: bool = False
) -> CompiledQueue:
    """``fair_sharing``: reclaiming lets a borrowing workload preempt too (canPreemptWhileBorrowing);
    ``ignore_undeclared``: the configuration's ``quotaCheckStrategy`` is IgnoreUndeclared."""
    groups = tuple(
        (frozenset(group.covered_resources), tuple(f.name for f in group.flavors))
        for group in queue.resource_groups
    )
    group_of = {resource: index for index, (covered, _) in enumerate(groups) for resource in covered}
    nominal = {
        (flavor.name, quota.name): quota.nominal.nanos
        for group in queue.resource_groups
        for flavor in group.flavors
        for quota in flavor.resources
    }
    return CompiledQueue(
        queue.name,
        groups,
        group_of,
        nominal,
        queue.flavor_fungibility,
        queue.preemption.borrow_within_cohort != "Never"
        or (fair_sharing and queue.preemption.reclaim_within_cohort != "Never"),
        ignore_undeclared,
    )


@dataclass(slots=True)
class PodSetResult:
    name: str
    count: int
    flavors: dict[str, str] = field(default_factory=dict)
    #: total for the pod set (per pod x count), nano-units
    requests: dict[str, int] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    mode: Mode = Mode.FIT
    #: the ``topologyAssignment`` (Kueue's v1beta2 encoding) when its flavor is a TAS flavor
    topology: dict[str, Any] | None = None

    def message(self) -> str:
        return ", ".join(sorted(self.reasons))


@dataclass(slots=True)
class Assignment:
    pod_sets: list[PodSetResult]
    usage: dict[FlavorResource, int]
    mode: Mode
    #: Kueue's borrowing level: 0 within its own quota, else the height of the smallest cohort subtree
    #: whose quota holds it (``ledger.borrowing_height``); heads borrowing less go first in a cycle
    borrowing: int = 0
    no_fit_reason: str = ""
    #: the flavor/resources of the chosen flavors that lack unused quota (what preemption must free)
    needs: frozenset[FlavorResource] = frozenset()
    #: when this workload could fit again: per failing resource group, the alternatives (flavors) that
    #: only lacked unused quota, each as the ``(fr, amount)`` that must be available. ``None`` when
    #: unknown (several pod sets): then any release may help.
    shortfalls: tuple[tuple[tuple[tuple[FlavorResource, int], ...], ...], ...] | None = None
    #: the pod set that fits quota but waits for room in its flavor's topology (``tas.assign``)
    topology_block: TopologyBlock | None = None
    #: where the search stopped, per pod set and resource (``scan_progress``)
    scan: Scan = ()

    def message(self) -> str:
        """``couldn't assign flavors to pod set main: ...`` as Kueue words it ("" when it fits)."""
        parts = [
            f"couldn't assign flavors to pod set {ps.name}: {ps.message()}"
            for ps in self.pod_sets
            if ps.mode is not Mode.FIT
        ]
        return "; ".join(parts)

    def nomination(self) -> Nomination:
        """The flavors this assignment gave each pod set's resources."""
        return {ps.name: dict(ps.flavors) for ps in self.pod_sets}

    def reason(self) -> str:
        """The QuotaReserved reason when this assignment cannot be admitted now."""
        if self.mode is Mode.NO_FIT:
            return self.no_fit_reason or "Pending"
        return REASON_WAITING
