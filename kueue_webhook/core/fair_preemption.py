"""Fair-sharing preemption: whom to evict so that a pending workload fits, chosen by share.

With fair sharing on (the ConfigMap's ``fairSharing``), Kueue stops asking "who has lower priority?" across
the cohort and asks "who uses more than their fair share?": it takes from the ClusterQueue with the highest
dominant resource share first (``fair_sharing.dominant_resource_share``, divided by its weight), and only
while the configured strategy holds between the preemptor's share and the target's, with reason
``InCohortFairSharing`` (``InClusterQueue`` within the preemptor's own ClusterQueue). It is a different
search over the same candidates as the classical one (``preemption.py``), which it shares: who may be
preempted at all (``policy_allows``), in which order within a ClusterQueue (``candidate_order``), and
how a removal is simulated on the live ledger and undone. Kueue keeps it apart the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kueue_webhook.api.objects import Preemption
from kueue_webhook.core.fair_sharing import Share
from kueue_webhook.core.ledger import Node, available
from kueue_webhook.core.model import WorkloadInfo
from kueue_webhook.core.preemption import (
    REASON_IN_CLUSTER_QUEUE,
    REASON_IN_COHORT_FAIR_SHARING,
    Candidate,
    Needs,
    QuotaHolders,
    Requests,
    Target,
    TargetSearch,
    candidate_order,
    policy_allows,
    remove,
    restore,
    uses_any,
    within_nominal,
)

__all__ = ["FairSharingPreemption"]


class FairSharingPreemption(TargetSearch):
    """Kueue's fair-sharing preemption (``fairPreemptions``): evict from the ClusterQueues with the
    highest share first, as long as the preemption strategy holds between the preemptor's share with the
    workload and the target's share, until the preemptor fits.

    ``LessThanOrEqualToFinalShare``: preempt when the preemptor's new share is at most the target's share
    without the candidate. ``LessThanInitialShare``: when it is below the target's current share. With
    both (the default), candidates refused by the first are retried under the second.
    """

    def __init__(
        self,
        *,
        holders: QuotaHolders,
        share: Callable[[Node], Share],
        strategies: tuple[str, ...],
    ) -> None:
        self.holders = holders
        self.share = share
        self.strategies = strategies or ("LessThanOrEqualToFinalShare", "LessThanInitialShare")

    def _find(
        self, node: Node, workload: WorkloadInfo, policy: Preemption, requests: Requests, needs: Needs
    ) -> list[Target]:
        ledger = self.holders.ledger
        queue = node.name
        candidates = self._candidates(node, workload, policy, needs)
        if not candidates:
            return []
        candidates.sort(key=lambda c: candidate_order(c, queue))
        chosen: list[Target] = []
        ledger.charge(queue, requests)  # shares are compared with the preemptor admitted
        try:
            fits, retry = self._first_strategy(node, requests, candidates, chosen)
            if not fits and len(self.strategies) > 1:
                fits = self._second_strategy(node, requests, retry, chosen)
        finally:
            ledger.release(queue, requests)
        if not fits:
            self._put_back(chosen)
            return []
        kept = self._fill_back(node, requests, chosen)
        self._put_back(kept)
        return kept

    def _put_back(self, targets: list[Target]) -> None:
        restore(self.holders.ledger, (t.candidate for t in targets))
        for target in targets:
            self._topology_restore(target.candidate)

    def _candidates(
        self, node: Node, workload: WorkloadInfo, policy: Preemption, needs: Needs
    ) -> list[Candidate]:
        out: list[Candidate] = []
        if policy.within_cluster_queue != "Never":
            out.extend(
                c
                for c in self.holders.holders(node.name)
                if c.info.key != workload.key
                and uses_any(c, needs)
                and policy_allows(policy.within_cluster_queue, workload, c.info)
            )
        if node.parent is not None and policy.reclaim_within_cohort != "Never":
            stack = [node.root()]
            while stack:
                current = stack.pop()
                if current.is_cohort:
                    stack.extend(current.children)
                    continue
                if current is node or within_nominal(current, needs):
                    continue  # only borrowing ClusterQueues give anything back
                out.extend(
                    c
                    for c in self.holders.holders(current.name)
                    if uses_any(c, needs) and policy_allows(policy.reclaim_within_cohort, workload, c.info)
                )
        return out

    def _fits(self, node: Node, requests: Requests) -> bool:
        """Whether the preemptor fits (its transient charge taken off for the check)."""
        ledger = self.holders.ledger
        ledger.release(node.name, requests)
        try:
            return all(amount <= available(node, fr) for fr, amount in requests.items()) and (
                self._topology_fits()
            )
        finally:
            ledger.charge(node.name, requests)

    def _queue_share(self, name: str) -> Share | None:
        target = self.holders.ledger.queues.get(name)
        return self.share(target) if target is not None else None

    def _first_strategy(
        self,
        node: Node,
        requests: Requests,
        candidates: list[Candidate],
        chosen: list[Target],
    ) -> tuple[bool, list[Candidate]]:
        strategy = self.strategies[0]
        remaining: dict[str, list[Candidate]] = {}
        for c in candidates:
            remaining.setdefault(c.cluster_queue, []).append(c)
        retry: list[Candidate] = []
        while remaining:
            target_queue = self._highest_share(remaining)
            queue_candidates = remaining[target_queue]
            if target_queue == node.name:
                candidate = queue_candidates.pop(0)
                if not queue_candidates:
                    del remaining[target_queue]
                self._take(candidate, REASON_IN_CLUSTER_QUEUE, chosen)
                if self._fits(node, requests):
                    return True, retry
                continue
            preemptor_share = self.share(node)
            target_old = self._queue_share(target_queue)
            while queue_candidates:
                candidate = queue_candidates.pop(0)
                remove(self.holders.ledger, (candidate,))
                target_new = self._queue_share(target_queue)
                restore(self.holders.ledger, (candidate,))
                if _strategy_holds(strategy, preemptor_share, target_old, target_new):
                    self._take(candidate, REASON_IN_COHORT_FAIR_SHARING, chosen)
                    if self._fits(node, requests):
                        return True, retry
                    break  # shares moved: choose the next queue afresh
                retry.append(candidate)
            if not queue_candidates:
                del remaining[target_queue]
        return False, retry

    def _second_strategy(
        self, node: Node, requests: Requests, retry: list[Candidate], chosen: list[Target]
    ) -> bool:
        remaining: dict[str, list[Candidate]] = {}
        for c in retry:
            remaining.setdefault(c.cluster_queue, []).append(c)
        while remaining:
            target_queue = self._highest_share(remaining)
            candidate = remaining.pop(target_queue)[0]  # one try per queue, then the queue is dropped
            if _strategy_holds(
                "LessThanInitialShare", self.share(node), self._queue_share(target_queue), None
            ):
                self._take(candidate, REASON_IN_COHORT_FAIR_SHARING, chosen)
                if self._fits(node, requests):
                    return True
        return False

    def _highest_share(self, remaining: Mapping[str, list[Candidate]]) -> str:
        """The ClusterQueue to take from next: highest share first (recomputed, as removals move it),
        then by name."""

        def rank(name: str) -> tuple[int, float, str]:
            share = self._queue_share(name)
            group, value = share.key() if share is not None else (0, 0.0)
            return (-group, -value, name)

        return min(remaining, key=rank)

    def _take(self, candidate: Candidate, reason: str, chosen: list[Target]) -> None:
        remove(self.holders.ledger, (candidate,))
        self._topology_remove(candidate)
        chosen.append(Target(candidate, reason))

    def _fill_back(self, node: Node, requests: Requests, chosen: list[Target]) -> list[Target]:
        """Put back every target but the last without which the preemptor still fits; the ones kept
        stay removed (the caller restores them)."""
        for index in range(len(chosen) - 2, -1, -1):
            candidate = chosen[index].candidate
            restore(self.holders.ledger, (candidate,))
            self._topology_restore(candidate)
            if (
                all(amount <= available(node, fr) for fr, amount in requests.items())
                and self._topology_fits()
            ):
                del chosen[index]
            else:
                remove(self.holders.ledger, (candidate,))
                self._topology_remove(candidate)
        return chosen


def _strategy_holds(
    strategy: str, preemptor: Share, target_old: Share | None, target_new: Share | None
) -> bool:
    if target_old is None:
        return False
    if strategy == "LessThanOrEqualToFinalShare":
        return target_new is not None and preemptor.key() <= target_new.key()
    return preemptor.key() < target_old.key()
