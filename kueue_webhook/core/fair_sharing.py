"""Fair sharing: each ClusterQueue's (and cohort's) dominant resource share, and who goes next.

A node's share, as Kueue computes it (``pkg/cache/scheduler/fair_sharing.go``), measures only what it
borrows: for every resource, the usage above its subtree quota summed over flavors, divided by what the
rest of the tree could lend it (its parent's potential available of that resource, summed over
flavors), per mille. The *dominant* resource is the one with the largest ratio; dividing by the node's
``fairSharing.weight`` (default 1) gives the weighted share. A node that borrows nothing has share 0;
a node of weight 0 that borrows ranks after every node of positive weight.

When fair sharing is on, the heads of one cohort tree are not taken in the classical order
(non-borrowing first) but by a tournament, again as Kueue does: at every cohort, among the candidates
coming from its children, one whose subtree would not borrow what it asks for goes first, then the one
whose subtree would have the lowest share, both *with the workload admitted*; ties go to higher priority,
then to the older workload. Shares are recomputed before
every pick, because each admission moves them. Everything here reads the ledger and adds a workload's
usage only transiently, restoring it before returning.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from kueue_webhook.core.ledger import Ledger, Node, potential_available
from kueue_webhook.core.model import FlavorResource
from kueue_webhook.core.preemption import within_nominal

__all__ = ["Share", "dominant_resource_share", "pick_fairest"]

_MAX_INT64 = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Share:
    weight: float
    #: borrowed / lendable of the dominant resource, per mille, before weighting
    ratio: float = 0.0
    resource: str = ""

    @property
    def weighted(self) -> float:
        if self.ratio == 0:
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.ratio / self.weight

    @property
    def rounded(self) -> int:
        """``status.fairSharing.weightedShare``: the weighted share rounded up (max int64 for a borrowing
        node of weight 0)."""
        if self.weight == 0 and self.ratio != 0:
            return _MAX_INT64
        return math.ceil(self.weighted)

    def key(self) -> tuple[int, float]:
        """Sort key: lower is fairer to admit (Kueue's CompareDRS)."""
        if self.weight == 0 and self.ratio != 0:
            return (1, self.ratio)
        return (0, self.weighted)


def dominant_resource_share(node: Node, weight: float) -> Share:
    if node.parent is None:
        return Share(weight)
    borrowed: dict[str, int] = {}
    for fr, quota in node.subtree.items():
        over = node.usage.get(fr, 0) - quota
        if over > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + over
    if not borrowed:
        return Share(weight)
    lendable: dict[str, int] = {}
    parent = node.parent
    for fr in node.root().subtree:
        lendable[fr[1]] = lendable.get(fr[1], 0) + potential_available(parent, fr)
    best = Share(weight)
    for resource in sorted(borrowed):
        total = lendable.get(resource, 0)
        if total > 0:
            ratio = borrowed[resource] * 1000.0 / total
            if ratio > best.ratio:
                best = Share(weight, ratio, resource)
    return best


E = TypeVar("E")


@dataclass(slots=True)
class Contender(Generic[E]):
    """A head offered to the tournament: its ClusterQueue, the usage it would add, its tie-breakers."""

    entry: E
    cluster_queue: str
    usage: Mapping[FlavorResource, int]
    priority: int
    created: float
    key: str
    #: preemptors with a claim go first, in the order they preempted
    claim: float = math.inf


def pick_fairest(
    contenders: Sequence[Contender[E]], *, ledger: Ledger, weight: Callable[[Node], float]
) -> Contender[E]:
    """The contender to process next among heads of one cohort tree (or of a lone ClusterQueue)."""
    first = contenders[0]
    node = ledger.queues.get(first.cluster_queue)
    if node is None or node.parent is None:
        return first
    root = node.root()
    # share of every ancestor's child on the path, with the contender's usage added, and whether that child
    # then borrows any of what the contender asks for
    shares: dict[tuple[int, str], tuple[bool, Share]] = {}
    by_queue: dict[str, Contender[E]] = {}
    for contender in contenders:
        by_queue[contender.cluster_queue] = contender
        leaf = ledger.queues.get(contender.cluster_queue)
        if leaf is None:
            continue
        ledger.charge(contender.cluster_queue, contender.usage)
        try:
            current: Node = leaf
            while current.parent is not None:
                shares[(id(current.parent), contender.key)] = (
                    _borrows_any(current, contender.usage),
                    dominant_resource_share(current, weight(current)),
                )
                current = current.parent
        finally:
            ledger.release(contender.cluster_queue, contender.usage)
    winner = _tournament(root, by_queue, shares)
    return winner if winner is not None else first


def _borrows_any(node: Node, usage: Mapping[FlavorResource, int]) -> bool:
    """Whether ``node`` uses more than its subtree quota of any flavor/resource in ``usage``."""
    return not within_nominal(node, (fr for fr, amount in usage.items() if amount > 0))


def _tournament(
    cohort: Node,
    by_queue: Mapping[str, Contender[E]],
    shares: Mapping[tuple[int, str], tuple[bool, Share]],
) -> Contender[E] | None:
    candidates: list[Contender[E]] = []
    for child in cohort.children:
        if child.is_cohort:
            found = _tournament(child, by_queue, shares)
            if found is not None:
                candidates.append(found)
        elif child.name in by_queue:
            candidates.append(by_queue[child.name])
    if not candidates:
        return None

    def order(c: Contender[E]) -> tuple[float, bool, tuple[int, float], int, float, str]:
        # preemptors first, then those not borrowing what they ask for at this level (Kueue's
        # FairSharingPrioritizeNonBorrowing, on by default since v0.17), then the lowest share
        found = shares.get((id(cohort), c.key))
        borrows, key = (found[0], found[1].key()) if found is not None else (False, (0, 0.0))
        return (c.claim, borrows, key, -c.priority, c.created, c.key)

    return min(candidates, key=order)
