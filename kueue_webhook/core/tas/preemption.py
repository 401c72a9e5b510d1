"""Preemption for topology: which admitted TAS workloads of the same ClusterQueue to evict so that a pod set
that fits quota also fits its flavor's topology.

Kueue's preemptor, for a workload in Preempt mode because of TAS, removes candidates one by one in its usual
order (lowest priority first, then the most recently admitted) until the preemptor fits with the topology
check included, then puts back every victim whose removal turned out unnecessary (its minimal-set pass). The
same is done here on the capacity tree: a candidate's TAS usage is set aside, the placement tried again,
and everything put back before returning. Only the ClusterQueue's own workloads are candidates
(``withinClusterQueue``); reclaiming from other ClusterQueues of a cohort for topology is not done.
"""

from __future__ import annotations

from collections.abc import Iterable

from kueue_webhook.api.objects import Preemption
from kueue_webhook.core.model import WorkloadInfo, WorkloadKey
from kueue_webhook.core.preemption import (
    REASON_IN_CLUSTER_QUEUE,
    Candidate,
    Target,
    candidate_order,
    policy_allows,
)
from kueue_webhook.core.tas.assign import TopologyBlock
from kueue_webhook.core.tas.capacity import TopologyCapacity
from kueue_webhook.core.tas.placement import place

__all__ = ["topology_targets"]


def topology_targets(
    *,
    tas: TopologyCapacity,
    queue: str,
    preemptor: WorkloadInfo,
    block: TopologyBlock,
    policy: Preemption,
    holders: Iterable[Candidate],
    taken: set[WorkloadKey],
) -> list[Target]:
    """The fewest workloads of ``queue`` (not in ``taken``, chosen by other preemptors of this cycle) whose
    eviction lets ``block``'s pod set be placed; empty when none does."""
    tree = tas.trees.get(block.flavor)
    if tree is None or policy.within_cluster_queue == "Never":
        return []
    candidates = sorted(
        (
            c
            for c in holders
            if not c.evicting
            and c.info.key not in taken
            and c.info.key != preemptor.key
            and tas.uses_flavor(c.info.key, block.flavor)
            and policy_allows(policy.within_cluster_queue, preemptor, c.info)
        ),
        key=lambda c: candidate_order(c, queue),
    )
    if not candidates:
        return []

    def fits() -> bool:
        return not place(tree, block.needs, implied=block.implied).failure

    aside: list[tuple[Candidate, list[tuple[str, tuple[str, ...], dict[str, int]]]]] = []
    try:
        for candidate in candidates:
            aside.append((candidate, tas.set_aside(candidate.info.key)))
            if fits():
                break
        else:
            return []
        # the minimal set: a victim whose usage can come back with the preemptor still placed stays
        chosen: list[Candidate] = []
        for candidate, charges in reversed(aside[:-1]):
            tas.put_back(candidate.info.key, charges)
            if fits():
                continue
            tas.set_aside(candidate.info.key)
            chosen.append(candidate)
        chosen.append(aside[-1][0])
        return [
            Target(c, REASON_IN_CLUSTER_QUEUE)
            for c in sorted(chosen, key=lambda c: candidate_order(c, queue))
        ]
    finally:
        for candidate, charges in aside:
            if not tas.charged(candidate.info.key):
                tas.put_back(candidate.info.key, charges)
