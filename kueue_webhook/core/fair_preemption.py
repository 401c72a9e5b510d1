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

from collections.abc import Callable, Iterator, Mapping

from kueue_webhook.api.objects import Preemption
from kueue_webhook.core.fair_sharing import Share
from kueue_webhook.core.ledger import Node, available
from kueue_webhook.core.model import WorkloadInfo
from kueue_webhook.core.preemption import (
    REASON_IN_CLUSTER_QUEUE,
    REASON_IN_COHORT_FAIR_SHARING,
    REASON_IN_COHORT_RECLAMATION,
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
        #: per ClusterQueue, its LocalQueues' usage where admission fair sharing orders it (None: not)
        self.local_queue_usage: Callable[[str], Mapping[tuple[str, str], float] | None] = lambda _: None

    def _find(
        self, node: Node, workload: WorkloadInfo, policy: Preemption, requests: Requests, needs: Needs
    ) -> list[Target]:
        ledger = self.holders.ledger
        queue = node.name
        candidates = self._candidates(node, workload, policy, needs)
        if not candidates:
            return []
        candidates.sort(key=lambda c: self._order(c, queue))
        chosen: list[Target] = []
        ledger.charge(queue, requests)  # shares are compared with the preemptor admitted
        try:
            fits, retry = self._first_strategy(node, requests, needs, candidates, chosen)
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

    def _order(self, candidate: Candidate, queue: str) -> tuple[object, ...]:
        """``candidate_order``, with admission fair sharing's rule where its ClusterQueue follows it: after
        those already evicting and other ClusterQueues' first, the Workloads of the LocalQueue that used
        more go first (Kueue's CandidatesOrdering compares LocalQueue usage only within one ClusterQueue, so
        the usage of another ClusterQueue's candidates decides nothing between ClusterQueues: each one's
        candidates are taken in their own order)."""
        order = candidate_order(candidate, queue)
        usage = self.local_queue_usage(candidate.cluster_queue)
        info = candidate.info
        used = usage.get((info.namespace, info.queue_name), 0.0) if usage is not None else 0.0
        return (*order[:2], -used, *order[2:])

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

    def _first_strategy(
        self,
        node: Node,
        requests: Requests,
        needs: Needs,
        candidates: list[Candidate],
        chosen: list[Target],
    ) -> tuple[bool, list[Candidate]]:
        strategy = self.strategies[0]
        ordering = _Ordering(node, candidates, self.share, queue=node.name)
        # a preemptor within its nominal quota where it lacks room (itself counted in) takes that room back
        # from anyone borrowing, without a share comparison (Kueue's FairSharingPreemptWithinNominal, on by
        # default)
        within = within_nominal(node, needs)
        retry: list[Candidate] = []
        for target_queue in ordering:
            if target_queue is node or within:
                reason = REASON_IN_CLUSTER_QUEUE if target_queue is node else REASON_IN_COHORT_RECLAMATION
                self._take(ordering.pop(target_queue), reason, chosen)
                if self._fits(node, requests):
                    return True, retry
                continue
            preemptor_share, target_old = ordering.shares(target_queue)
            if preemptor_share.key()[0] and not target_old.key()[0]:
                # an infinite share (weight 0, borrowing) is below no finite one: no candidate passes
                while ordering.has(target_queue):
                    retry.append(ordering.pop(target_queue))
                continue
            while ordering.has(target_queue):
                candidate = ordering.pop(target_queue)
                remove(self.holders.ledger, (candidate,))
                target_new = ordering.shares(target_queue)[1]
                restore(self.holders.ledger, (candidate,))
                if _strategy_holds(strategy, preemptor_share, target_old, target_new):
                    self._take(candidate, REASON_IN_COHORT_FAIR_SHARING, chosen)
                    if self._fits(node, requests):
                        return True, retry
                    break  # shares moved: choose the next queue afresh
                retry.append(candidate)
        return False, retry

    def _second_strategy(
        self, node: Node, requests: Requests, retry: list[Candidate], chosen: list[Target]
    ) -> bool:
        ordering = _Ordering(node, retry, self.share, queue=node.name)
        for target_queue in ordering:
            preemptor_share, target_old = ordering.shares(target_queue)
            candidate = ordering.pop(target_queue)
            if _strategy_holds("LessThanInitialShare", preemptor_share, target_old, None):
                self._take(candidate, REASON_IN_COHORT_FAIR_SHARING, chosen)
                if self._fits(node, requests):
                    return True
            ordering.drop(target_queue)  # one try per queue
        return False

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


class _Ordering:
    """Which ClusterQueue the next candidate is taken from (Kueue's TargetClusterQueueOrdering): from the
    root of the preemptor's cohort tree down, at each cohort to the child with the highest share (a
    ClusterQueue, or a cohort to descend into), passing over what does not borrow and is not on the
    preemptor's path; the preemptor's own ClusterQueue is a child like the others. Shares are compared
    where the preemptor's and the target's paths meet (``shares``)."""

    def __init__(
        self,
        preemptor: Node,
        candidates: list[Candidate],
        share: Callable[[Node], Share],
        *,
        queue: str,
    ) -> None:
        self.preemptor = preemptor
        self.share = share
        self.queue = queue
        #: per ClusterQueue, its candidates still to try, in candidate order
        self.waiting: dict[str, list[Candidate]] = {}
        for candidate in candidates:
            self.waiting.setdefault(candidate.cluster_queue, []).append(candidate)
        #: the preemptor's cohorts, up to the root
        self.on_path: set[int] = set()
        parent = preemptor.parent
        while parent is not None:
            self.on_path.add(id(parent))
            parent = parent.parent
        self.pruned: set[int] = set()

    def __iter__(self) -> Iterator[Node]:
        preemptor = self.preemptor
        if preemptor.parent is None:
            while id(preemptor) not in self.pruned and self.has(preemptor):
                yield preemptor
            return
        root = preemptor.root()
        while id(root) not in self.pruned:
            target = self._next(root)
            if target is not None:
                yield target

    def has(self, queue: Node) -> bool:
        return bool(self.waiting.get(queue.name))

    def pop(self, queue: Node) -> Candidate:
        return self.waiting[queue.name].pop(0)

    def drop(self, queue: Node) -> None:
        self.pruned.add(id(queue))

    def shares(self, target: Node) -> tuple[Share, Share]:
        """The preemptor's and the target's shares, each taken at the child of the cohort where their
        paths meet (the ClusterQueues themselves when they meet at their parent)."""
        meeting = target.parent
        while meeting is not None and id(meeting) not in self.on_path:
            meeting = meeting.parent
        return self.share(_child_on_path(self.preemptor, meeting)), self.share(
            _child_on_path(target, meeting)
        )

    def _next(self, cohort: Node) -> Node | None:
        best_queue: Node | None = None
        best_queue_share: tuple[int, float] | None = None
        best_cohort: Node | None = None
        best_cohort_share: tuple[int, float] | None = None
        for child in cohort.children:
            if id(child) in self.pruned:
                continue
            share = self.share(child)
            key = share.key()
            lends_only = within_nominal(child, child.subtree)  # Kueue's DRS not IsBorrowing
            if not child.is_cohort:
                if (lends_only and child is not self.preemptor) or not self.has(child):
                    self.pruned.add(id(child))
                elif best_queue_share is None or key > best_queue_share:
                    best_queue, best_queue_share = child, key
                elif (
                    key == best_queue_share
                    and best_queue is not None
                    and self._first_goes_first(child, best_queue)
                ):
                    best_queue = child
            elif lends_only and id(child) not in self.on_path:
                self.pruned.add(id(child))
            elif best_cohort_share is None or key >= best_cohort_share:
                best_cohort, best_cohort_share = child, key
        if best_queue is None and best_cohort is None:
            self.pruned.add(id(cohort))
            return None
        if best_cohort is not None and (
            best_queue_share is None or best_cohort_share is None or best_cohort_share >= best_queue_share
        ):
            return self._next(best_cohort)
        return best_queue

    def _first_goes_first(self, a: Node, b: Node) -> bool:
        """Of two ClusterQueues with equal shares, whether ``a``'s first candidate comes before ``b``'s."""
        first_a, first_b = self.waiting[a.name][0], self.waiting[b.name][0]
        return candidate_order(first_a, self.queue) < candidate_order(first_b, self.queue)


def _child_on_path(node: Node, meeting: Node | None) -> Node:
    """``node``'s ancestor (or ``node``) whose parent is ``meeting``."""
    while node.parent is not None and node.parent is not meeting:
        node = node.parent
    return node
