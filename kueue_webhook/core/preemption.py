"""Classical preemption: which admitted workloads to evict so that a pending one fits.

This follows Kueue's classical preemptor (``pkg/scheduler/preemption``): candidates are the admitted
workloads that use a flavor/resource the preemptor lacks and that the preemptor's ClusterQueue policy
allows it to preempt:

* its own ClusterQueue, under ``withinClusterQueue`` (``LowerPriority``, or
  ``LowerOrNewerEqualPriority``: also equal priority when the candidate is newer) -> ``InClusterQueue``;
* other ClusterQueues of the cohort tree that are above their quota, under ``reclaimWithinCohort``
  (``LowerPriority`` or ``Any``). When the preemptor would fit in its own subtree's quota the reclaim is
  ``InCohortReclamation``; otherwise it would itself be borrowing, which ``borrowWithinCohort`` allows
  only for candidates of lower priority (and at most ``maxPriorityThreshold``), reason
  ``InCohortReclaimWhileBorrowing``.

Candidates are ordered already-evicting first, other ClusterQueues before the preemptor's own, lower
priority first, most recently admitted first. They are removed one by one from the live ledger until the
preemptor fits (first allowing it to borrow, then not, or the other way round as Kueue decides), then
added back in reverse order wherever the preemptor still fits without them, so the set is minimal.
The ledger is always restored before returning: removal is simulated, never committed. A candidate is
skipped when its ClusterQueue (or a cohort between it and the common ancestor) is no longer above its
quota, which is what keeps a reclaim from taking more than the borrower borrowed.

For a workload placed by topology the search also places its TAS pod sets again after every simulated
removal (``topology``, a ``TopologyCheck``): it fits only when quota and topology both do, as Kueue's
``workloadFits`` checks both, so the victims found anywhere in the cohort free room in one domain of the
level it requires. Without it (every workload not placed by topology) the search costs what it did.

An answer is kept per question (the preemptor's ClusterQueue, requests, priority) until the cohort
tree's usage, the policy or the holders of a ClusterQueue the search looked at change, so the heads that
ask it again, cycle after cycle, and the cycle asking again for a head that can preempt, cost a lookup.

The same search answers the flavor assigner's question ("could preemption make room for this much of
this resource?") through ``simulate``, which is why ``ClassicalPreemption`` is the ``PreemptionOracle``.
A ClusterQueue whose policies are all ``Never`` is answered at once without looking at any workload, so
the non-preempting path costs nothing extra.

With fair sharing on, ``fair_preemption.FairSharingPreemption`` replaces the search. Both are a
``TargetSearch`` and share what this module defines besides the classical search: the candidates as
preemption sees them, who may preempt whom (``policy_allows``), the order candidates are tried in
(``candidate_order``), and the simulated removal from the ledger (``remove``/``restore``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Protocol

from kueue_webhook.api.objects import Preemption
from kueue_webhook.core.assignment import Mode
from kueue_webhook.core.ledger import Ledger, Node, admitted_usage, available
from kueue_webhook.core.model import FlavorResource, WorkloadInfo

__all__ = [
    "REASON_IN_CLUSTER_QUEUE",
    "REASON_IN_COHORT_FAIR_SHARING",
    "REASON_IN_COHORT_RECLAIM_WHILE_BORROWING",
    "REASON_IN_COHORT_RECLAMATION",
    "Candidate",
    "ClassicalPreemption",
    "Needs",
    "QuotaHolders",
    "Requests",
    "Target",
    "TargetSearch",
    "TopologyCheck",
    "candidate_order",
    "policy_allows",
    "preemption_message",
    "queue_path",
    "remove",
    "restore",
    "uses_any",
    "within_nominal",
]

#: what a preemptor asks for, per flavor/resource (nano-units)
Requests = Mapping[FlavorResource, int]
#: the flavor/resources it lacks room for: only candidates using one of them are worth evicting
Needs = frozenset[FlavorResource]

REASON_IN_CLUSTER_QUEUE = "InClusterQueue"
REASON_IN_COHORT_RECLAMATION = "InCohortReclamation"
REASON_IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
REASON_IN_COHORT_FAIR_SHARING = "InCohortFairSharing"

_HUMAN_REASONS = {
    REASON_IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    REASON_IN_COHORT_RECLAMATION: "reclamation within the cohort",
    REASON_IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    REASON_IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}

# how a candidate may be preempted (Kueue's preemption variants)
_WITHIN_CQ, _HIERARCHICAL, _RECLAIM_NO_BORROW, _RECLAIM_WHILE_BORROWING = range(4)
_VARIANT_REASON = {
    _WITHIN_CQ: REASON_IN_CLUSTER_QUEUE,
    _HIERARCHICAL: REASON_IN_COHORT_RECLAMATION,
    _RECLAIM_NO_BORROW: REASON_IN_COHORT_RECLAMATION,
    _RECLAIM_WHILE_BORROWING: REASON_IN_COHORT_RECLAIM_WHILE_BORROWING,
}


@dataclass(frozen=True, slots=True)
class Candidate:
    """An admitted workload holding quota, as preemption sees it."""

    info: WorkloadInfo
    cluster_queue: str
    #: already told to go (Evicted=True, or a Preempt issued by us) and still holding its quota
    evicting: bool
    #: when its quota was reserved, for "most recently admitted first" (bigger is more recent)
    reserved_at: tuple[float, int]
    #: the flavor/resources it holds
    frs: frozenset[FlavorResource] = frozenset()


@dataclass(frozen=True, slots=True)
class Target:
    candidate: Candidate
    reason: str


class TopologyCheck(Protocol):
    """Whether a preemptor's TAS pod sets place with some workloads' TAS usage taken off the trees
    (``tas.preemption.TopologyFit``)."""

    def remove(self, key: str) -> None: ...

    def restore(self, key: str) -> None: ...

    def fits(self) -> bool: ...


class QuotaHolders(Protocol):
    """What preemption reads from the scheduler state."""

    @property
    def ledger(self) -> Ledger: ...

    def preemption_policy(self, cluster_queue: str) -> Preemption: ...

    def holders(self, cluster_queue: str) -> Iterable[Candidate]:
        """The candidates of a ClusterQueue: a new object whenever they change (preemption keeps what
        it derives from them, their order, for as long as it is handed the same object)."""
        ...


def preemption_message(
    *, preemptor_uid: str, preemptor_job_uid: str, reason: str, preemptor_path: str, preemptee_path: str
) -> str:
    """The Evicted/Preempted condition message, worded exactly as Kueue's."""
    return (
        f"Preempted to accommodate a workload (UID: {preemptor_uid or 'UNKNOWN'}, "
        f"JobUID: {preemptor_job_uid or 'UNKNOWN'}) due to {_HUMAN_REASONS.get(reason, 'UNKNOWN')}; "
        f"preemptor path: {preemptor_path or 'UNKNOWN'}; preemptee path: {preemptee_path or 'UNKNOWN'}"
    )


def queue_path(ledger: Ledger, cluster_queue: str) -> str:
    """``/<root cohort>/.../<cluster queue>`` as Kueue prints it in preemption messages."""
    node = ledger.queues.get(cluster_queue)
    parts: list[str] = []
    while node is not None:
        parts.append(node.name)
        node = node.parent
    return "/" + "/".join(reversed(parts)) if parts else ""


def within_nominal(node: Node, frs: Iterable[FlavorResource]) -> bool:
    """Whether ``node``'s admitted workloads use no more than its own subtree quota of each of ``frs``
    (it lends, or uses what it lent, but does not borrow): nothing there is to be reclaimed. Room
    claimed there for a waiting preemptor is not borrowing (``ledger.admitted_usage``): counted, it would
    offer a ClusterQueue's workloads within its nominal quota to be reclaimed, when only the claim is
    beyond it."""
    subtree = node.subtree
    if node.claims_below:
        return all(admitted_usage(node, fr) <= subtree.get(fr, 0) for fr in frs)
    usage = node.usage
    for fr in frs:  # noqa: SIM110 (a loop, not all() over a generator: asked for every node a search walks)
        if usage.get(fr, 0) > subtree.get(fr, 0):
            return False
    return True


def uses_any(candidate: Candidate, needs: Needs) -> bool:
    """Whether evicting ``candidate`` frees any of what the preemptor lacks."""
    if candidate.frs:
        return not candidate.frs.isdisjoint(needs)
    return any(fr in needs for fr in candidate.info.usage)


def policy_allows(policy: str, preemptor: WorkloadInfo, candidate: WorkloadInfo) -> bool:
    """Whether a ``withinClusterQueue``/``reclaimWithinCohort`` policy lets ``preemptor`` evict
    ``candidate`` (Kueue's ``LowerPriority``, ``LowerOrNewerEqualPriority`` and ``Any``)."""
    if policy == "Any":
        return True
    if preemptor.priority > candidate.priority:
        return policy in ("LowerPriority", "LowerOrNewerEqualPriority")
    if policy == "LowerOrNewerEqualPriority" and preemptor.priority == candidate.priority:
        return preemptor.created < candidate.created
    return False


def candidate_order(candidate: Candidate, queue: str) -> tuple[bool, bool, int, float, int, str]:
    """The order candidates are tried in: already evicting first, other ClusterQueues before the
    preemptor's own ``queue``, lower priority first, most recently admitted first."""
    at, seq = candidate.reserved_at
    return (
        not candidate.evicting,
        candidate.cluster_queue == queue,
        candidate.info.priority,
        -at,
        -seq,
        candidate.info.uid,
    )


def remove(ledger: Ledger, candidates: Iterable[Candidate]) -> None:
    """Take the candidates' usage off the ledger, as if they were gone (``restore`` puts it back)."""
    for c in candidates:
        ledger.release(c.cluster_queue, c.info.usage)


def restore(ledger: Ledger, candidates: Iterable[Candidate]) -> None:
    for c in candidates:
        if c.cluster_queue in ledger.queues:
            ledger.charge(c.cluster_queue, c.info.usage)


def _fits_in_quota(node: Node, requests: Requests) -> tuple[bool, dict[FlavorResource, int]]:
    fits = True
    remaining: dict[FlavorResource, int] = {}
    for fr, amount in requests.items():
        if node.subtree.get(fr, 0) < node.usage.get(fr, 0) + amount:
            fits = False
        remaining[fr] = max(0, amount - node.local_available(fr))
    return fits, remaining


class TargetSearch(ABC):
    """A way to pick the workloads to preempt: classical, or by fair share."""

    holders: QuotaHolders

    #: set for the length of one ``targets`` call whose preemptor is placed by topology
    topology: TopologyCheck | None = None

    def targets(
        self,
        *,
        queue: str,
        workload: WorkloadInfo,
        requests: Requests,
        needs: Needs,
        topology: TopologyCheck | None = None,
    ) -> list[Target]:
        """The admitted workloads whose eviction lets ``requests`` fit in ``queue``, as few as the search
        can do with (empty when none does). ``needs`` are the flavor/resources that lack room;
        ``topology``: the preemptor must also fit its flavors' topology."""
        node = self.holders.ledger.queues.get(queue)
        if node is None or not needs:
            return []
        self.topology = topology
        try:
            return self._find(node, workload, self.holders.preemption_policy(queue), requests, needs)
        finally:
            self.topology = None

    def _topology_remove(self, candidate: Candidate) -> None:
        if self.topology is not None:
            self.topology.remove(candidate.info.key)

    def _topology_restore(self, candidate: Candidate) -> None:
        if self.topology is not None:
            self.topology.restore(candidate.info.key)

    def _topology_fits(self) -> bool:
        return self.topology is None or self.topology.fits()

    @abstractmethod
    def _find(
        self, node: Node, workload: WorkloadInfo, policy: Preemption, requests: Requests, needs: Needs
    ) -> list[Target]:
        """``targets``, once the preemptor's ClusterQueue ``node`` and its ``policy`` are known."""


@dataclass(slots=True)
class _Elem:
    candidate: Candidate
    variant: int
    #: the cohort where the preemptor and the candidate meet (None within the ClusterQueue)
    meeting: Node | None


#: a candidate's place in ``candidate_order`` less the "preemptor's own ClusterQueue" part, which is the
#: same for every candidate of one group (its own ClusterQueue's, or the cohort's)
_Rank = tuple[bool, int, float, int, str]
_Ranked = list[tuple[_Rank, Candidate]]
_by_rank = itemgetter(0)


def _rank(candidate: Candidate) -> _Rank:
    at, seq = candidate.reserved_at
    return (not candidate.evicting, candidate.info.priority, -at, -seq, candidate.info.uid)


def _by_local_queue_usage(
    ranked: list[tuple[_Rank, _Elem]], usage: Mapping[tuple[str, str], float]
) -> list[tuple[_Rank, _Elem]]:
    """Candidates of one ClusterQueue that admission fair sharing orders: after those already evicting,
    the ones whose LocalQueue used more go first, whatever their priority (Kueue's CandidatesOrdering
    with AdmissionFairSharing, between Workloads of one ClusterQueue and different LocalQueues)."""

    def key(entry: tuple[_Rank, _Elem]) -> tuple[object, ...]:
        rank, elem = entry
        info = elem.candidate.info
        return (rank[0], -usage.get((info.namespace, info.queue_name), 0.0), *rank[1:])

    return sorted(ranked, key=key)


def _ranked(source: Iterable[Candidate]) -> _Ranked:
    return sorted(((_rank(c), c) for c in source), key=_by_rank)


#: more new candidates than this at once: sorted afresh rather than inserted one by one
_FEW = 8


def _rerank(previous: _Ranked, source: Iterable[Candidate]) -> _Ranked:
    """``source`` in preemption order, from the order of the same ClusterQueue's holders before: an
    admission, a release or an eviction changes a few candidates (the tracker hands the others over as
    the same objects), so the others keep their places and the new ones are inserted. The result is the
    full sort's, ties included (a tie with a new candidate is sorted afresh)."""
    present = {id(c) for c in source}
    ranked = [entry for entry in previous if id(entry[1]) in present]
    if len(ranked) == len(present):
        return ranked
    if len(present) - len(ranked) > _FEW:
        return _ranked(source)
    kept = {id(entry[1]) for entry in ranked}
    for candidate in source:
        if id(candidate) in kept:
            continue
        rank = _rank(candidate)
        index = bisect_right(ranked, rank, key=_by_rank)
        if (index and ranked[index - 1][0] == rank) or (index < len(ranked) and ranked[index][0] == rank):
            return _ranked(source)
        ranked.insert(index, (rank, candidate))
    return ranked


@dataclass(slots=True)
class _RankedHolders:
    """A ClusterQueue's candidates in preemption order, and the holders object they were ranked from.

    ``offered`` keeps what searches made of them, by question (policy, the preemptor's priority and
    age as far as the policy reads them, what it lacks, how a candidate would be preempted): every head
    of the cohort asks the same few questions until the holders change, and then all of it goes."""

    source: Iterable[Candidate]
    ranked: _Ranked
    keys: frozenset[str]
    offered: dict[tuple[object, ...], list[tuple[_Rank, _Elem]]] = field(default_factory=dict)


def _eligible(ranked: _Ranked, needs: Needs, rule: str, workload: WorkloadInfo) -> _Ranked:
    """The candidates of ``ranked`` (order kept) that free something the preemptor needs and that the
    ``rule`` (``policy_allows``) lets it preempt, filtered without a call per candidate."""
    if rule == "Any":
        allowed = ranked
    elif rule == "LowerPriority":
        priority = workload.priority
        allowed = [entry for entry in ranked if entry[1].info.priority < priority]
    elif rule == "LowerOrNewerEqualPriority":
        priority, created = workload.priority, workload.created
        allowed = [
            entry
            for entry in ranked
            if entry[1].info.priority < priority
            or (entry[1].info.priority == priority and created < entry[1].info.created)
        ]
    else:
        return []
    if len(needs) == 1:
        (fr,) = needs
        return [entry for entry in allowed if fr in entry[1].frs or uses_any(entry[1], needs)]
    return [entry for entry in allowed if uses_any(entry[1], needs)]


@dataclass(slots=True)
class _Answers:
    """The targets found for one ClusterQueue's preemptors, kept while what they were found in holds:
    the usage of its cohort tree (``Ledger.stamp``), its policy, and the holders of every ClusterQueue the
    searches looked at (which ones a search looks at follows from the usage and the policy alone). A head
    that fails to find targets is followed, cycle after cycle, by heads asking the same question (same
    requests, same priority) until a release, an admission or an eviction in the tree."""

    stamp: tuple[int, int]
    policy: Preemption
    #: the candidates of the ClusterQueues the searches looked at, as ranked when they did
    ranked: dict[str, _RankedHolders] = field(default_factory=dict)
    #: by (requests, needs, priority, creation time when the policy reads it)
    found: dict[tuple[object, ...], list[Target]] = field(default_factory=dict)
    reads_age: bool = False

    def __post_init__(self) -> None:
        self.reads_age = "LowerOrNewerEqualPriority" in (
            self.policy.within_cluster_queue,
            self.policy.reclaim_within_cohort,
        )

    def holds(self, stamp: tuple[int, int], policy: Preemption, holders: QuotaHolders) -> bool:
        if stamp != self.stamp or policy != self.policy:
            return False
        for queue, ranked in self.ranked.items():  # noqa: SIM110 (asked for every preemptor: no generator)
            if holders.holders(queue) is not ranked.source:
                return False
        return True

    def held_by(self, key: str) -> bool:
        """Whether the preemptor holds quota where the searches looked (its answer is then its own)."""
        for ranked in self.ranked.values():  # noqa: SIM110
            if key in ranked.keys:
                return True
        return False


class ClassicalPreemption(TargetSearch):
    """Kueue's classical preemption over the live ledger (removals are simulated and undone)."""

    def __init__(self, *, holders: QuotaHolders) -> None:
        self.holders = holders
        #: set while fair sharing is on: the flavor assigner's question is then answered by it
        self.fair: TargetSearch | None = None
        #: each ClusterQueue's candidates in preemption order, ranked once per change of its holders
        #: (every head of its cohort asks for them, cycle after cycle)
        self._ranked: dict[str, _RankedHolders] = {}
        #: per preemptor's ClusterQueue, the answers found since its tree last changed
        self._answers: dict[str, _Answers] = {}
        #: during a search kept for others: the ClusterQueues whose candidates it looked at
        self._consulted: dict[str, _RankedHolders] | None = None
        #: per ClusterQueue, its LocalQueues' usage where admission fair sharing orders it (None: not)
        self.local_queue_usage: Callable[[str], Mapping[tuple[str, str], float] | None] = lambda _: None

    @property
    def ledger(self) -> Ledger:
        return self.holders.ledger

    # -- the flavor assigner's question -------------------------------------------------------------
    def simulate(
        self, *, queue: str, workload: WorkloadInfo, fr: FlavorResource, amount: int
    ) -> tuple[Mode, int]:
        policy = self.holders.preemption_policy(queue)
        if policy.within_cluster_queue == "Never" and policy.reclaim_within_cohort == "Never":
            return Mode.NO_CANDIDATES, 0
        search = self.fair if self.fair is not None else self
        targets = search.targets(
            queue=queue, workload=workload, requests={fr: amount}, needs=frozenset((fr,))
        )
        ledger = self.ledger
        if not targets:
            return Mode.NO_CANDIDATES, ledger.borrowing_height(queue, fr, amount)
        node = ledger.queues[queue]
        stamp = ledger.stamp(node)
        remove(ledger, (t.candidate for t in targets))
        try:
            borrow = ledger.borrowing_height(queue, fr, amount)
        finally:
            restore(ledger, (t.candidate for t in targets))
            ledger.rewind(node, stamp)
        if any(t.candidate.cluster_queue == queue for t in targets):
            return Mode.PREEMPT, borrow
        return Mode.RECLAIM, borrow

    # -- the targets ----------------------------------------------------------------------------------
    def _find(
        self, node: Node, workload: WorkloadInfo, policy: Preemption, requests: Requests, needs: Needs
    ) -> list[Target]:
        """The answer kept for the same question while the tree's usage and holders stay the same, else
        the search (which leaves the ledger as it found it, stamp included)."""
        if self.topology is not None or self.local_queue_usage(node.name) is not None:
            # not kept: LocalQueue usage moves without the holders changing
            return self._find_minimal(node, workload, policy, requests, needs)
        ledger = self.ledger
        stamp = ledger.stamp(node)
        answers = self._answers.get(node.name)
        if answers is None or not answers.holds(stamp, policy, self.holders):
            answers = self._answers[node.name] = _Answers(stamp, policy)
        question = (
            tuple(requests.items()),
            needs,
            workload.priority,
            workload.created if answers.reads_age else None,
        )
        found = None if answers.held_by(workload.key) else answers.found.get(question)
        if found is None:
            consulted: dict[str, _RankedHolders] = {}
            self._consulted = consulted
            try:
                found = self._find_minimal(node, workload, policy, requests, needs)
            finally:
                self._consulted = None
            ledger.rewind(node, stamp)
            # its own quota elsewhere is never its candidate: such an answer is its alone
            if not any(workload.key in ranked.keys for ranked in consulted.values()):
                answers.found[question] = found
                answers.ranked.update(consulted)
        return list(found)

    def _find_minimal(
        self, node: Node, workload: WorkloadInfo, policy: Preemption, requests: Requests, needs: Needs
    ) -> list[Target]:
        """The minimal set: candidates removed in order until the preemptor fits, then put back."""
        same = self._same_queue(node.name, workload, policy, needs)
        usage = self.local_queue_usage(node.name)
        if usage is not None and same:
            same = _by_local_queue_usage(same, usage)
        forbidden = policy.borrow_within_cohort == "Never"
        # borrowing forbidden and no room under its nominal quota: it is searched only as borrowing,
        # where a reclaim that needs the preemptor not to borrow is never valid, so none is collected
        borrowing_only = forbidden and not self._under_nominal(node, needs)
        hierarchy, by_priority = self._cohort_candidates(
            node, workload, policy, requests, needs, borrowing_only=borrowing_only
        )
        # each ClusterQueue's candidates come ranked: sorting their concatenation merges sorted runs
        hierarchy.sort(key=_by_rank)
        by_priority.sort(key=_by_rank)
        ordered: list[_Elem] = []
        for want_evicting in (True, False):
            for group in (hierarchy, by_priority, same):
                ordered.extend(e for _, e in group if e.candidate.evicting is want_evicting)
        if not ordered:
            return []
        attempts: tuple[bool, ...]
        if (not hierarchy and not by_priority) or borrowing_only:
            attempts = (True,)
        elif forbidden and not hierarchy:
            attempts = (False, True)
        else:
            attempts = (True, False)
        for allow_borrowing in attempts:
            found = self._search(node, ordered, requests, needs, allow_borrowing)
            if found:
                return found
        return []

    @staticmethod
    def _under_nominal(node: Node, needs: Iterable[FlavorResource]) -> bool:
        for fr in needs:
            quota = node.quotas.get(fr)
            if quota is None or quota.nominal <= admitted_usage(node, fr):
                return False
        return True

    def _ranked_holders(self, queue: str) -> _RankedHolders:
        """``queue``'s candidates in preemption order, ranked again only when its holders changed."""
        source = self.holders.holders(queue)
        cached = self._ranked.get(queue)
        if cached is not None and cached.source is source:
            return cached
        ranked = _rerank(cached.ranked, source) if cached is not None else _ranked(source)
        holders = _RankedHolders(source, ranked, frozenset(c.info.key for _, c in ranked))
        if queue in self.ledger.queues:
            self._ranked[queue] = holders
        else:
            self._ranked.pop(queue, None)
        return holders

    def _offered(
        self,
        queue: str,
        workload: WorkloadInfo,
        rule: str,
        needs: Needs,
        variant: int | None,
        meeting: Node | None,
        threshold: int | None = None,
    ) -> list[tuple[_Rank, _Elem]]:
        """The candidates of ``queue`` that a search may try, in order, each with how it would be
        preempted (``variant``; ``None``: by ``_reclaim`` with ``threshold``). Not the
        preemptor itself. Asked again with the same question, the same list is returned until the
        holders of ``queue`` change."""
        holders = self._ranked_holders(queue)
        if self._consulted is not None:
            self._consulted[queue] = holders
        # the preemptor holding quota there itself (being admitted elsewhere) is never its own candidate
        itself = workload.key in holders.keys
        question = (
            rule,
            workload.priority if rule != "Any" or variant is None else None,
            workload.created if rule == "LowerOrNewerEqualPriority" else None,
            needs,
            variant,
            meeting,
            threshold,
        )
        found = None if itself else holders.offered.get(question)
        if found is None:
            eligible = _eligible(holders.ranked, needs, rule, workload)
            if itself:
                eligible = [entry for entry in eligible if entry[1].info.key != workload.key]
            if variant is not None:
                found = [(rank, _Elem(c, variant, meeting)) for rank, c in eligible]
            else:
                found = [
                    (rank, _Elem(c, self._reclaim(c, workload, threshold), meeting)) for rank, c in eligible
                ]
            if not itself:
                holders.offered[question] = found
        return found

    def _same_queue(
        self, queue: str, workload: WorkloadInfo, policy: Preemption, needs: Needs
    ) -> list[tuple[_Rank, _Elem]]:
        if policy.within_cluster_queue == "Never":
            return []
        return self._offered(queue, workload, policy.within_cluster_queue, needs, _WITHIN_CQ, None)

    def _cohort_candidates(
        self,
        node: Node,
        workload: WorkloadInfo,
        policy: Preemption,
        requests: Requests,
        needs: Needs,
        *,
        borrowing_only: bool,
    ) -> tuple[list[tuple[_Rank, _Elem]], list[tuple[_Rank, _Elem]]]:
        """The candidates of the cohort tree: reclaimed while the preemptor fits in the subtree it shares
        with them (``hierarchy``), or otherwise (``by_priority``; left out when ``borrowing_only``:
        reclaiming them without borrowing is ``_RECLAIM_NO_BORROW``, never valid when it must borrow)."""
        hierarchy: list[tuple[_Rank, _Elem]] = []
        by_priority: list[tuple[_Rank, _Elem]] = []
        if node.parent is None or policy.reclaim_within_cohort == "Never":
            return hierarchy, by_priority
        advantage, remaining = _fits_in_quota(node, requests)
        previous: Node | None = None
        current: Node | None = node.parent
        while current is not None:
            if advantage or not borrowing_only:
                into = hierarchy if advantage else by_priority
                self._collect(current, current, previous, node, workload, policy, needs, advantage, into)
            fits, remaining = _fits_in_quota(current, remaining)
            advantage = advantage or fits
            previous = current
            current = current.parent
        return hierarchy, by_priority

    def _collect(
        self,
        cohort: Node,
        meeting: Node,
        skip: Node | None,
        preemptor_node: Node,
        workload: WorkloadInfo,
        policy: Preemption,
        needs: Needs,
        advantage: bool,
        into: list[tuple[_Rank, _Elem]],
    ) -> None:
        rule = policy.reclaim_within_cohort
        for child in cohort.children:
            if child is skip or child is preemptor_node or within_nominal(child, needs):
                continue
            if child.is_cohort:
                self._collect(child, meeting, skip, preemptor_node, workload, policy, needs, advantage, into)
                continue
            if advantage or policy.borrow_within_cohort == "Never":
                variant = _HIERARCHICAL if advantage else _RECLAIM_NO_BORROW
                into.extend(self._offered(child.name, workload, rule, needs, variant, meeting))
            else:
                threshold = policy.max_priority_threshold
                into.extend(self._offered(child.name, workload, rule, needs, None, meeting, threshold))

    @staticmethod
    def _reclaim(candidate: Candidate, workload: WorkloadInfo, threshold: int | None) -> int:
        """How a candidate of another ClusterQueue is reclaimed by a preemptor that would borrow:
        ``borrowWithinCohort`` lets it go only below the preemptor's priority and ``maxPriorityThreshold``."""
        priority = candidate.info.priority
        if priority >= workload.priority or (threshold is not None and priority > threshold):
            return _RECLAIM_NO_BORROW
        return _RECLAIM_WHILE_BORROWING

    def _valid(self, elem: _Elem, queue: str, needs: Needs, allow_borrowing: bool) -> bool:
        candidate = elem.candidate
        if candidate.cluster_queue == queue:
            return True
        if allow_borrowing and elem.variant == _RECLAIM_NO_BORROW:
            return False
        node: Node | None = self.ledger.queues.get(candidate.cluster_queue)
        if node is None or within_nominal(node, needs):
            return False
        node = node.parent
        while node is not None and node is not elem.meeting:
            if within_nominal(node, needs):
                return False
            node = node.parent
        return True

    def _fits(self, node: Node, requests: Requests, allow_borrowing: bool) -> bool:
        for fr, amount in requests.items():
            if not allow_borrowing and node.usage.get(fr, 0) + amount > node.subtree.get(fr, 0):
                return False
            if amount > available(node, fr):
                return False
        return self._topology_fits()

    def _remove(self, candidate: Candidate) -> None:
        remove(self.ledger, (candidate,))
        self._topology_remove(candidate)

    def _restore(self, candidate: Candidate) -> None:
        restore(self.ledger, (candidate,))
        self._topology_restore(candidate)

    def _search(
        self,
        node: Node,
        ordered: list[_Elem],
        requests: Requests,
        needs: Needs,
        allow_borrowing: bool,
    ) -> list[Target]:
        chosen: list[_Elem] = []
        try:
            for elem in ordered:
                if not self._valid(elem, node.name, needs, allow_borrowing):
                    continue
                self._remove(elem.candidate)
                chosen.append(elem)
                if self._fits(node, requests, allow_borrowing):
                    return [
                        Target(e.candidate, _VARIANT_REASON[e.variant])
                        for e in self._fill_back(node, chosen, requests, allow_borrowing)
                    ]
            return []
        finally:
            for elem in chosen:
                self._restore(elem.candidate)

    def _fill_back(
        self, node: Node, chosen: list[_Elem], requests: Requests, allow_borrowing: bool
    ) -> list[_Elem]:
        """Put back every target (newest choice first, the last one excepted) without which it still fits.

        On return ``chosen`` holds exactly the removed targets (the caller restores them)."""
        for index in range(len(chosen) - 2, -1, -1):
            elem = chosen[index]
            self._restore(elem.candidate)
            if self._fits(node, requests, allow_borrowing):
                del chosen[index]
            else:
                self._remove(elem.candidate)
        return list(chosen)
