"""One scheduling cycle: the heads of the ClusterQueues in, ``Admit | Wait | Evict`` decisions out.

The cycle takes the head of every ClusterQueue that has one, computes each head's flavor assignment
against the usage at the start of the cycle (Kueue's "nomination"), orders the heads by how far up the
cohort tree they must borrow (Kueue's classical entry ordering: the borrowing level, the height of the
smallest cohort subtree that holds the head, 0 when it fits its own quota), then by priority
(PrioritySortingWithinCohort, on by default), then by age (with fair sharing: one tournament per pick
within each cohort tree, on the usage the picks before left), and admits them one by one, re-checking
each against the usage left by the admissions before it, so two heads of one cohort can never take the
same capacity.

A head that could fit only by evicting others gets ``Evict`` decisions, one per target, and a ``Wait``
(``WaitingForPreemptedWorkloads``, ``... Pending the preemption of N workload(s)``); it keeps a claim on
the room (``claims.Claim``) and goes first when it is tried again. A head that would need preemption
but finds nobody to preempt has the room it lacks *set aside* for the rest of the cycle unless its
ClusterQueue can always reclaim (Kueue's reserveCapacityForUnreclaimablePreempt).

The cycle is kept apart from the state it reads (``specs.py``, ``pending_queues.py``,
``workload_tracker.py``) because it is the one place that decides: everything it needs to remember lasts
only while it runs (``_Pass``), and what outlives it is written back through the tracker.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial

from kueue_webhook.api.objects import Admission, PodSetAssignment
from kueue_webhook.api.selectors import LabelSelector
from kueue_webhook.core import partial as partial_admission
from kueue_webhook.core.assignment import Assignment, CompiledQueue, Mode
from kueue_webhook.core.claims import Claim
from kueue_webhook.core.decisions import (
    EVICTED_BY_PREEMPTION,
    FITS_AFTER_OTHER_PREEMPTIONS,
    NAMESPACE_MISMATCH,
    NO_LONGER_FITS,
    REASON_MISCONFIGURED,
    REASON_WAITING,
    REASON_WAITING_FOR_PREEMPTED,
    Admit,
    Decision,
    Evict,
    Notices,
)
from kueue_webhook.core.fair_sharing import Contender, pick_fairest
from kueue_webhook.core.flavors import FlavorAssigner
from kueue_webhook.core.ledger import Ledger
from kueue_webhook.core.model import FlavorResource, WorkloadInfo, WorkloadKey, amount_quantity
from kueue_webhook.core.pending_queue import RetryCondition
from kueue_webhook.core.pending_queues import PendingQueues
from kueue_webhook.core.preemption import Target, TargetSearch, preemption_message, queue_path
from kueue_webhook.core.specs import QueueState, Specs
from kueue_webhook.core.tas.assign import placements_still_fit
from kueue_webhook.core.tas.preemption import TopologyFit
from kueue_webhook.core.workload_tracker import WorkloadTracker

__all__ = ["CycleResult", "run_cycle"]

#: how heads are ordered: claims first (in the order they were made), then borrowing level, priority, age
_Order = tuple[float, int, int, float, str]
_Head = tuple[WorkloadInfo, QueueState, Assignment]


@dataclass(frozen=True, slots=True)
class CycleResult:
    decisions: list[Decision]
    #: how many heads it tried (admitted or not)
    tried: int
    #: per ClusterQueue, its preemptors that had candidates but lost the room to a head before them in
    #: the cycle (Kueue's kueue_admission_cycle_preemption_skips); only ClusterQueues that had one
    preemption_skips: dict[str, int]


def run_cycle(
    specs: Specs,
    pending: PendingQueues,
    tracker: WorkloadTracker,
    *,
    assigner: FlavorAssigner,
    search: TargetSearch,
) -> CycleResult:
    """One scheduling pass over the heads of every open ClusterQueue (the notices found since the last
    one come first)."""
    cycle = _Pass(specs, pending, pending.notices, tracker, assigner, search)
    decisions = cycle.run()
    return CycleResult(decisions, cycle.tried, cycle.preemption_skips)


@dataclass(slots=True)
class _Pass:
    """One cycle: its decisions, the workloads it chose to preempt, and capacity set aside until it ends."""

    specs: Specs
    pending: PendingQueues
    notices: Notices
    tracker: WorkloadTracker
    assigner: FlavorAssigner
    search: TargetSearch
    decisions: list[Decision] = field(default_factory=list)
    preempted: set[WorkloadKey] = field(default_factory=set)
    set_aside: list[tuple[str, dict[FlavorResource, int]]] = field(default_factory=list)
    #: the preemption targets each head was nominated with
    nominated: dict[WorkloadKey, list[Target]] = field(default_factory=dict)
    tried: int = 0
    preemption_skips: dict[str, int] = field(default_factory=dict)
    #: heads whose flavor search resumed where an earlier one stopped (``scan_progress``)
    resumed: set[WorkloadKey] = field(default_factory=set)

    def run(self) -> list[Decision]:
        tracker, ledger = self.tracker, self.specs.ledger
        self.decisions = self.notices.take()
        heads = self._heads()
        self.tried = len(heads)
        if not heads:
            return self.decisions
        claimed: list[Claim] = []
        for info, _ in heads:  # a preemptor being retried gets back the room claimed for it
            claim = tracker.claims.get(info.key)
            if claim is not None:
                claim.release(ledger)
                claimed.append(claim)
        entries: list[tuple[_Order, WorkloadInfo, QueueState, Assignment]] = []
        scans = self.pending.scans
        scans.cycle += 1
        for info, queue in heads:
            name = queue.spec.name
            # resumed at the flavors after those where its last search stopped, when that is recent
            resume = scans.resume(info.key, name, info.shape)
            if resume is not None:
                self.resumed.add(info.key)
            # with fewer pods, down to minCount, when the whole workload cannot be admitted (partial.py)
            assignment = partial_admission.assign(
                self.assigner,
                info,
                queue.compiled,
                can_preempt=partial(self._can_preempt, name),
                resume=resume,
            )
            scans.record(info.key, name, info.shape, assignment.scan)
            # preemptors whose targets are on their way out go first, in the order they preempted:
            # nobody overtakes a claim
            claim = tracker.claims.get(info.key)
            order = (
                float("inf") if claim is None else claim.sequence,
                assignment.borrowing,
                -info.priority,
                info.created,
                info.key,
            )
            entries.append((order, info, queue, assignment))
            if assignment.mode is not Mode.FIT:
                # whom it would preempt, chosen on the usage at the start of the cycle like its flavors
                # (Kueue's nomination); checked again against the evictions before it when its turn comes
                self.nominated[info.key] = self._targets(info, name, assignment)
        entries.sort(key=lambda entry: entry[0])
        try:
            for info, queue, assignment in self._in_turn(entries):
                self._process(info, queue, assignment)
        finally:
            for name, usage in self.set_aside:  # capacity set aside for this cycle only
                ledger.release(name, usage)
        for claim in claimed:
            if not claim.need:
                # given up without being admitted: what it claimed is free for the others again
                self.pending.wake_tree(claim.cluster_queue, released=True)
        return self.decisions

    def _heads(self) -> list[tuple[WorkloadInfo, QueueState]]:
        """The head of every ready ClusterQueue; heads that cannot be tried now go back at once."""
        specs, ready, workloads = self.specs, self.pending.ready, self.tracker.workloads
        claims = self.tracker.claims
        queues, namespaces = specs.queues, specs.namespaces
        heads: list[tuple[WorkloadInfo, QueueState]] = []
        for name in sorted(ready):
            queue = queues[name]
            if queue.pending.park_unfit_head(partial(specs.ledger.available, name), claimed=claims):
                # woken with others of its cohort, but what it needs was taken before its turn:
                # back to the parked list without a new attempt (its pending message stands)
                continue
            info = queue.pending.pop()
            if info is None:
                ready.discard(name)
                continue
            workloads[info.key].queued = False
            selector = queue.spec.namespace_selector
            if not _namespace_matches(selector, namespaces.get(info.namespace)):
                # no release helps, labels do
                queue.pending.requeue_failed(info, retry_when=((),), alike=True)
                workloads[info.key].queued = True
                self._wait(info, queue, REASON_MISCONFIGURED, NAMESPACE_MISMATCH)
                continue
            heads.append((info, queue))
        return heads

    def _in_turn(self, entries: list[tuple[_Order, WorkloadInfo, QueueState, Assignment]]) -> Iterator[_Head]:
        """The heads in the order they are processed: sorted (classical), or with fair sharing one
        tournament per pick within each cohort tree, on the usage left by the picks before."""
        if not self.specs.fair_sharing:
            for _, info, queue, assignment in entries:
                yield info, queue, assignment
            return
        ledger = self.specs.ledger
        trees: dict[tuple[str, bool], list[Contender[_Head]]] = {}
        for order, info, queue, assignment in entries:
            node = ledger.queues.get(queue.spec.name)
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
                winner = pick_fairest(contenders, ledger=ledger, weight=self.specs.weight_of)
                contenders.remove(winner)
                yield winner.entry

    def _process(self, info: WorkloadInfo, queue: QueueState, assignment: Assignment) -> None:
        tracker, ledger = self.tracker, self.specs.ledger
        tracked = tracker.workloads[info.key]
        name = queue.spec.name
        targets = self.nominated.pop(info.key, [])
        if (
            assignment.mode is Mode.FIT
            and self.specs.tas.trees
            and not placements_still_fit(assignment, info, self.specs.tas)
        ):
            # an admission before it in this cycle took the room its pods were placed in: placed again,
            # on the flavors it was given (Kueue's TASRecomputeAssignmentWithinSchedulingCycle, on by
            # default, with its flavor stickiness)
            assignment, targets = self._reassign(info, queue, assignment)
        recomputed = bool(targets) and not self.preempted.isdisjoint(t.candidate.info.key for t in targets)
        if recomputed:
            # Another preemptor of this cycle chose some of the same victims: assigned again as if the
            # cycle's victims were gone (Kueue's RecomputeAssignmentUponPreemptionTargetsOverlap, on by
            # default since v0.20), it preempts others, waits for those evictions, or fails as it would.
            assignment, targets = self._reassign_past_evictions(info, queue, assignment)
            if assignment.mode is Mode.FIT:
                self._defer(info, queue, assignment)
                return
        mode = assignment.mode
        if not targets:
            tracker.drop_claim(info.key)
        if mode is not Mode.FIT and not targets:
            if mode.needs_preemption and queue.spec.preemption.reclaim_within_cohort != "Any":
                # it would preempt if it could, so the room it lacks is not lent out in this cycle
                # (Kueue's reserveCapacityForUnreclaimablePreempt)
                self._set_aside(name, _reservable(self.specs.ledger, name, assignment))
            if self.pending.scans.pending_flavors(info.key):
                # its search stopped before the group's last flavor: tried again in the next cycle, from
                # the flavor after that one (Kueue requeues such a Workload at once: PendingFlavors)
                queue.pending.requeue_retry(info)
                self.pending.ready.add(name)
                tracked.queued = True
                self._wait(info, queue, assignment.reason(), assignment.message())
                return
            # parked until what it lacks may be free; in a queue that may preempt, also until any
            # release in its own ClusterQueue (``WorkloadTracker._release``)
            # after a recomputation what it failed with is its own, and its flavors were limited to
            # those first given: it is retried on any release
            # a search that resumed past the first flavors did not see them: any release may help
            resumed = info.key in self.resumed
            alike = self._shape_shares(mode) and not recomputed and not resumed
            retry_when = None if recomputed or resumed else assignment.shortfalls
            queue.pending.requeue_failed(info, retry_when=retry_when, alike=alike)
            tracked.queued = True
            reason, message = assignment.reason(), assignment.message()
            self._wait(info, queue, reason, message)
            self._restate_alike(info, queue, reason, message, alike=alike)
            return
        if targets:
            # a preemptor is only parked here, never admitted: it may count on every eviction of the cycle
            target_keys = {t.candidate.info.key for t in targets}
            fits = self._fits_without(name, assignment.usage, self.preempted | target_keys)
        else:
            # An admission takes only room that is free now. Kueue's re-check (scheduler.go ``fits``) also
            # counts the room of workloads preempted earlier in the same cycle as free, so heads that fit
            # one by one at nomination can together exceed the quota until those evictions complete; the
            # victims still run, so that would be over-admission, which an admission here never does.
            available = ledger.available
            fits = all(amount <= available(name, fr) for fr, amount in assignment.usage.items())
        if not fits:
            tracker.drop_claim(info.key)
            # It fitted at nomination but an admission before it in this cycle took the room. Kueue
            # requeues it at once with this message (RequeueReasonFailedAfterNomination: back in the
            # heap, not inadmissible), so the next cycle tries it again and, if it still cannot get in,
            # parks it with the reason that holds then: the message never stays at this one.
            # A preemptor that no longer fits parks until a release instead: retried at once it would
            # find the same targets again, cycle after cycle, while they are still leaving.
            if targets:
                queue.pending.requeue_failed(info, retry_when=None)
                self.preemption_skips[name] = self.preemption_skips.get(name, 0) + 1
            else:
                queue.pending.requeue_retry(info)
                self.pending.ready.add(name)
            tracked.queued = True
            self._wait(info, queue, REASON_WAITING, NO_LONGER_FITS)
            return
        if targets:
            self._preempt(info, queue, assignment, targets)
            return
        admission = _admission(name, assignment)
        checks = queue.spec.admission_checks
        tracker.assume(info, admission, assignment.usage, admitted=not checks)
        self.decisions.append(Admit(info.key, name, admission, assignment.borrowing > 0, checks))

    def _targets(self, info: WorkloadInfo, name: str, assignment: Assignment) -> list[Target]:
        """Whom ``info`` would preempt to be admitted to ``name`` with ``assignment`` (none when it fits
        or nobody can be preempted)."""
        mode = assignment.mode
        block = assignment.topology_block
        if mode.needs_preemption and mode is not Mode.NO_CANDIDATES:
            return self.search.targets(
                queue=name,
                workload=info,
                requests=assignment.usage,
                needs=assignment.needs,
                topology=None if block is None else TopologyFit(self.specs.tas, block.pod_sets),
            )
        if (
            mode is Mode.NO_CANDIDATES
            and block is not None
            and block.needs is not None
            and not assignment.needs
        ):
            # quota fits, the topology does not: room made by TAS workloads of its ClusterQueue or, by
            # reclaim, of the borrowers of its cohort (Kueue's Preempt mode for TAS)
            return self.search.targets(
                queue=name,
                workload=info,
                requests=assignment.usage,
                needs=block.frs,
                topology=TopologyFit(self.specs.tas, block.pod_sets),
            )
        return []

    def _reassign_past_evictions(
        self, info: WorkloadInfo, queue: QueueState, assignment: Assignment
    ) -> tuple[Assignment, list[Target]]:
        """``info``'s assignment and targets as if every victim chosen so far in this cycle were gone,
        on the flavors it was first given (Kueue's flavor stickiness: a recomputation never moves a
        workload to another flavor)."""
        with self.tracker.as_if_gone(self.preempted, wholly=True):
            return self._reassign(info, queue, assignment)

    def _reassign(
        self, info: WorkloadInfo, queue: QueueState, assignment: Assignment
    ) -> tuple[Assignment, list[Target]]:
        """``info``'s assignment and targets computed again now, on the flavors ``assignment`` gave it."""
        name = queue.spec.name
        again = partial_admission.assign(
            self.assigner,
            info,
            queue.compiled,
            can_preempt=partial(self._can_preempt, name),
            nominated=assignment.nomination(),
        )
        # searched from the first flavor, and recorded in place of the nomination's (as Kueue does)
        self.resumed.discard(info.key)
        self.pending.scans.record(info.key, name, info.shape, again.scan)
        return again, self._targets(info, name, again)

    def _defer(self, info: WorkloadInfo, queue: QueueState, assignment: Assignment) -> None:
        """It fits once the evictions other preemptors issued in this cycle are done: it waits for them
        with the room it needs set aside for the rest of the cycle (Kueue's DeferredFit), then, parked
        until a release, tries again like any preemptor."""
        self.tracker.drop_claim(info.key)
        self.pending.scans.drop(info.key)  # the next search starts over: the usage will have changed
        self._set_aside(queue.spec.name, assignment.usage)
        queue.pending.requeue_failed(info, retry_when=None)
        self.tracker.workloads[info.key].queued = True
        self._wait(info, queue, REASON_WAITING_FOR_PREEMPTED, FITS_AFTER_OTHER_PREEMPTIONS)

    def _preempt(
        self, info: WorkloadInfo, queue: QueueState, assignment: Assignment, targets: list[Target]
    ) -> None:
        """Issue the evictions the preemptor needs and keep its claim: the room stays claimed for it in
        this cycle, and it parks until a release in its cohort tree lets it try again (first)."""
        tracker, ledger = self.tracker, self.specs.ledger
        name = queue.spec.name
        tracked = tracker.workloads[info.key]
        self.preempted.update(t.candidate.info.key for t in targets)
        preemptor_path = queue_path(ledger, name)
        for target in targets:
            victim = tracker.workloads.get(target.candidate.info.key)
            if victim is None or victim.evicting:
                continue  # already on its way out: nothing new to write
            tracker.mark_evicting(victim, True)
            message = preemption_message(
                preemptor_uid=info.uid,
                preemptor_job_uid=info.job_uid,
                reason=target.reason,
                preemptor_path=preemptor_path,
                preemptee_path=queue_path(ledger, victim.cluster_queue),
            )
            self.decisions.append(
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
        self.pending.scans.drop(info.key)  # it starts over once its targets are gone
        tracker.stake_claim(info.key, name, assignment.usage, (t.candidate.info.key for t in targets))
        queue.pending.requeue_failed(info, retry_when=None)
        tracked.queued = True
        message = f"{assignment.message()}. Pending the preemption of {len(targets)} workload(s)"
        self._wait(info, queue, REASON_WAITING_FOR_PREEMPTED, message)

    def _fits_without(self, name: str, usage: Mapping[FlavorResource, int], gone: set[WorkloadKey]) -> bool:
        """Whether ``usage`` fits in ``name`` once the workloads in ``gone`` have released their quota to
        the preemptors that chose them (Kueue's ``fits``: the cycle's victims removed, the usage of the
        preemptors before kept)."""
        available = self.specs.ledger.available
        with self.tracker.as_if_gone(gone):
            return all(amount <= available(name, fr) for fr, amount in usage.items())

    def _can_preempt(self, name: str, info: WorkloadInfo, assignment: Assignment) -> bool:
        """Whether preemption finds whom to evict so that ``assignment`` fits in ``name``."""
        return bool(
            self.search.targets(queue=name, workload=info, requests=assignment.usage, needs=assignment.needs)
        )

    def _set_aside(self, name: str, usage: Mapping[FlavorResource, int]) -> None:
        """Charge ``usage`` to ``name`` until the cycle ends."""
        if usage:
            self.specs.ledger.charge(name, usage)
            self.set_aside.append((name, dict(usage)))

    def _shape_shares(self, mode: Mode) -> bool:
        """Whether a head that failed in ``mode`` fails for its whole shape: what it lacks does not hang on
        preemption, so without preemption candidates the outcome depends on quota alone, the same for
        every workload of the shape (a lower priority only has fewer candidates; fair sharing weighs
        shares, so it is left out)."""
        return mode is Mode.NO_FIT or (mode is Mode.NO_CANDIDATES and not self.specs.fair_sharing)

    def _restate_alike(
        self, info: WorkloadInfo, queue: QueueState, reason: str, message: str, *, alike: bool
    ) -> None:
        """Tell the parked workloads of ``info``'s shape what it was just told, when it was retried by a
        wake as the first of them and (``alike``) its outcome holds for its whole shape
        (``_shape_shares``): said once for the shape, however many it holds."""
        group, following = queue.pending.revisited_alike(info, collect=alike)
        name = queue.spec.name
        if group is not None:
            members = partial(queue.pending.parked_in, info.shape)
            self.notices.restate_parked(group, name, reason, message, members)
        if following is not None:
            self.notices.restate(following, name, reason, message)

    def _wait(self, info: WorkloadInfo, queue: QueueState, reason: str, message: str) -> None:
        position = queue.pending.position(info)
        self.notices.wait(self.decisions, info.key, queue.spec.name, reason, message, position)


def _reservable(ledger: Ledger, name: str, assignment: Assignment) -> dict[FlavorResource, int]:
    """What is set aside for a head that would need preemption for the rest of the cycle (Kueue's
    quotaResourcesToReserve): up to its nominal quota, or its borrowing limit when it borrows."""
    node = ledger.queues[name]
    out: dict[FlavorResource, int] = {}
    for fr, amount in assignment.usage.items():
        quota = node.quotas.get(fr)
        nominal = quota.nominal if quota is not None else 0
        used = node.usage.get(fr, 0)
        if assignment.borrowing:
            limit = quota.borrowing_limit if quota is not None else None
            room = amount if limit is None else min(amount, nominal + limit - used)
        else:
            room = min(amount, nominal - used)
        if room > 0:
            out[fr] = room
    return out


def _any_flavor_condition(queue: CompiledQueue, info: WorkloadInfo) -> RetryCondition | None:
    """Fitting is possible only if, for every group the workload needs, some flavor of the group has
    all of the workload's requests of that group available (node constraints aside)."""
    if len(info.pod_sets) != 1:
        return None
    pod_set = info.pod_sets[0]
    needs: dict[int, list[tuple[str, int]]] = {}
    for resource, amount in pod_set.requests:
        group = queue.group_of.get(resource)
        if group is None and queue.ignore_undeclared:
            continue  # not part of the quota check
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
            topology_assignment=result.topology,
        )
        for result in assignment.pod_sets
    )
    return Admission(cluster_queue, pod_sets)
