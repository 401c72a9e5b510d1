"""Workload tracking: where every live workload is, what quota it holds, and what preemptors claim.

A workload is in one of three places: pending in its ClusterQueue's queue, *stranded* outside any queue
(its LocalQueue or ClusterQueue is missing or stopped; it gets one ``Wait`` saying so and costs nothing
per cycle until the obstacle goes), or holding quota, *charged* in the ledger. This is the part of the
state that changes on every event, which is why it is kept apart from the specs (``specs.py``) and from
the cycle that reads both (``cycle.py``); the catalog tells the tracker when a queue changes under its
workloads (``catalog.Occupants``).

An admitted workload is *assumed*: its quota is charged at once, before the controller has written the
Workload's status; if that write fails the controller calls ``forget`` and the quota comes back. Quota held
by Workloads that arrive already admitted (a restart) is charged as they are fed in, so the first cycle
after a restart sees the cluster's real usage. Nothing is released by an eviction decision: a target
keeps its quota, marked *evicting*, until its owner clears the reservation (``upsert_workload`` without
``status.admission``), exactly as a Workload on the cluster holds quota until then. Meanwhile its
preemptor has a *claim*: the room it needs stays charged to its ClusterQueue (less what its targets in
that ClusterQueue still hold, see ``claims.Claim``), so nothing admitted in between can take what the
evictions free, and when it is tried again it goes before every other head.

The tracker is also what preemption reads (``preemption.QuotaHolders``): who holds quota in a
ClusterQueue, since when, and whether it is already on its way out.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from kueue_webhook.api.objects import Admission, Preemption, Workload, parse_timestamp
from kueue_webhook.core.admission_fairness import AdmissionFairness, by_resource
from kueue_webhook.core.checks import check_eviction
from kueue_webhook.core.claims import Claim, uncovered
from kueue_webhook.core.decisions import (
    DEACTIVATED,
    GATED_PREFIX,
    GATES_CLEARED,
    REASON_ADMISSION_GATED,
    REASON_MISCONFIGURED,
    REASON_PENDING_EVALUATION,
    REASON_SUSPENDED,
    Evict,
    Notices,
)
from kueue_webhook.core.ledger import Ledger
from kueue_webhook.core.model import FlavorResource, WorkloadInfo, WorkloadKey
from kueue_webhook.core.pending_queues import PendingQueues
from kueue_webhook.core.preemption import Candidate
from kueue_webhook.core.revisits import Revisits
from kueue_webhook.core.shared_shapes import NO_USAGE, shared_admission, shared_usage
from kueue_webhook.core.specs import QueueState, Specs
from kueue_webhook.core.tas.charges import topology_charges

__all__ = ["Tracked", "WorkloadTracker"]


@dataclass(slots=True)
class Tracked:
    """Where a workload is: pending in a ClusterQueue, stranded outside any queue, or holding quota."""

    info: WorkloadInfo
    cluster_queue: str = ""
    #: pending and sitting in ``cluster_queue``'s PendingQueue
    queued: bool = False
    #: admitted by a cycle but not yet seen back from the API with its reservation
    assumed: bool = False
    #: the Admitted condition is (or will be, for assumed workloads) True
    admitted: bool = False
    #: quota is charged in the ledger
    charged: bool = False
    #: told to give its quota back (Evicted=True or an Evict decision) and still holding it
    evicting: bool = False
    #: when its quota was reserved (QuotaReserved time, then our own sequence), for preemption order
    reserved_at: tuple[float, int] = (0.0, 0)
    #: how preemption last saw it (``holders``), reused while its info, eviction and reservation stand
    candidate: Candidate | None = None


class WorkloadTracker:
    """Every live workload, its reservation and its claim, kept current one event at a time."""

    def __init__(
        self,
        specs: Specs,
        pending: PendingQueues,
        revisits: Revisits,
        notices: Notices,
        fairness: AdmissionFairness,
    ) -> None:
        self.specs = specs
        #: told of admissions decided, seen and undone (admission fair sharing's entry penalties)
        self.fairness = fairness
        self.pending = pending
        self.revisits = revisits
        self.notices = notices
        self.workloads: dict[WorkloadKey, Tracked] = {}
        #: pending workloads waiting outside any queue, by LocalQueue key or ClusterQueue name
        self._stranded_by_local_queue: dict[str, set[WorkloadKey]] = {}
        self._stranded_by_cluster_queue: dict[str, set[WorkloadKey]] = {}
        #: preemptors waiting for their targets to go, with the room claimed for them meanwhile
        self.claims: dict[WorkloadKey, Claim] = {}
        self._holders_cache: dict[str, list[Candidate]] = {}
        #: workloads preemption does not see for a moment (``as_if_gone``)
        self._hidden: frozenset[WorkloadKey] = frozenset()
        self._sequence = 0
        #: pending workloads held out of the queue by admission gates
        self._gated: set[WorkloadKey] = set()

    @property
    def ledger(self) -> Ledger:
        return self.specs.ledger

    # == workload events ================================================================================
    def upsert_workload(self, workload: Workload) -> None:
        """Add or update a Workload as the API shows it now."""
        key = WorkloadKey(workload.key)
        info = WorkloadInfo.from_workload(
            workload, priority=self.specs.priority_of(workload), excluded=self.specs.excluded_resources
        )
        tracked = self.workloads.get(key)
        backing_off = info.admission is None and workload.is_backing_off  # waitForPodsReady's requeue backoff
        on_hold = info.admission is None and workload.is_on_hold  # a StatefulSet scaled to zero
        # deactivated while it holds quota (``kubectl kueue stop workload``): its pods still run, so it stays
        # charged and is evicted below, as Kueue's workload controller does; without a reservation it leaves
        inactive = not workload.active and info.admission is None
        if workload.is_finished or inactive or backing_off or on_hold:
            self._gated.discard(key)
            if tracked is not None:
                self._drop(tracked)
            return
        if info.admission is not None:  # the API says it holds quota
            reserved = workload.condition("QuotaReserved")
            reserved_time = parse_timestamp(reserved.last_transition_time) if reserved is not None else 0.0
            if tracked is not None and tracked.charged and tracked.info.admission is not None:
                self._reservation_seen(tracked, reserved_time, admitted=workload.is_admitted)
                if workload.is_evicted and not tracked.evicting:
                    self.mark_evicting(tracked, True)
                if tracked.info.usage == info.usage and tracked.cluster_queue == info.admission.cluster_queue:
                    if _topologies(tracked.info) != _topologies(info):
                        self._move_topology(tracked, info)  # a failed node's pods given a new place
                    self._evict_if_asked(tracked, workload)
                    return
                if tracked.cluster_queue == info.admission.cluster_queue and _topologies(
                    tracked.info
                ) == _topologies(info):
                    self._recharge(tracked, info)  # some of its pods became reclaimable
                    self._evict_if_asked(tracked, workload)
                    return
                self._release(tracked)
            if tracked is not None:
                self.unqueue(tracked)
                self._unstrand(tracked)
            tracked = Tracked(
                info,
                cluster_queue=info.admission.cluster_queue,
                admitted=workload.is_admitted,
                evicting=workload.is_evicted,
                reserved_at=(reserved_time, self._next_sequence()),
            )
            self.workloads[key] = tracked
            self._charge(tracked)
            self._evict_if_asked(tracked, workload)
            return
        if tracked is not None and tracked.charged:
            if tracked.assumed:
                # An event from before our own admission write reached the API server. Even when the
                # workload is already chosen for eviction its quota stays charged: the write may still land,
                # and releasing now would let a preemptor take the same room (Kueue keeps assumed workloads
                # in its cache until the write fails or the reservation shows up). The controller can only
                # evict a reservation it has seen, so the release comes with a later, real event.
                return
            self._release(tracked)  # the reservation was cleared (evicted): back to the queue
            self.notices.forget(key)
        if workload.is_deleting:
            # Deleted while pending: it will be gone once its finalizer is removed, so it takes no place in
            # the queue (and nothing is preempted for it). A reservation it still holds is counted above.
            self._gated.discard(key)
            if tracked is not None:
                self._drop(tracked)
            return
        if workload.admission_gates:
            # Kueue's AdmissionGatedBy: not queued while a controller it names has not let it go; it says so
            if tracked is not None:
                self._drop(tracked)
            self._gated.add(key)
            message = f"{GATED_PREFIX}{workload.admission_gates}"
            self.notices.emit(key, self.specs.target_cluster_queue(info), REASON_ADMISSION_GATED, message)
            return
        problem = workload.dra_problem()
        if problem is not None:
            # its pods claim devices through DRA that no quota counts: Kueue holds it Misconfigured
            if tracked is not None:
                self._drop(tracked)
            self.notices.emit(key, self.specs.target_cluster_queue(info), REASON_MISCONFIGURED, problem)
            return
        if key in self._gated:
            # its last gate is gone: Kueue's words until the scheduler has tried it
            self._gated.discard(key)
            self.notices.emit(
                key, self.specs.target_cluster_queue(info), REASON_PENDING_EVALUATION, GATES_CLEARED
            )
        if tracked is not None:
            same_place = tracked.queued and self.specs.target_cluster_queue(info) == tracked.cluster_queue
            if (
                same_place
                and tracked.info.sort_key == info.sort_key
                and tracked.info.pod_sets == info.pod_sets
            ):
                return
            self.unqueue(tracked)
            self._unstrand(tracked)
            tracked.info = info
        else:
            tracked = Tracked(info)
            self.workloads[key] = tracked
        self._route(tracked)

    def delete_workload(self, key: str) -> None:
        self._gated.discard(WorkloadKey(key))
        tracked = self.workloads.get(WorkloadKey(key))
        if tracked is not None:
            self._drop(tracked)

    def eviction_failed(self, key: str) -> None:
        """An Evict decision could not be written: the workload holds its quota as before, and the
        preemptors waiting for it try again."""
        tracked = self.workloads.get(WorkloadKey(key))
        if tracked is None or not tracked.evicting:
            return
        self.mark_evicting(tracked, False)
        # it is not leaving: no claim waits for it (a claim waiting for a target that is not evicted would
        # keep its room, and its ClusterQueue, from everyone until the target happened to finish)
        self._target_gone(tracked.info.key, tracked.cluster_queue)
        self.pending.wake_tree(tracked.cluster_queue)

    def confirm(
        self, key: str, *, cluster_queue: str | None = None, reserved_at: float = 0.0, admitted: bool = False
    ) -> bool:
        """The API server now shows the admission of an assumed workload, as when its status write has
        been observed; from here on an event without a reservation means the reservation was cleared.
        False (and nothing changed) unless the workload is assumed (in ``cluster_queue``, when given).

        The watch event carrying ``status.admission`` does the same when parsed. The controller calls this
        instead for the answer of its own admission write when nothing else in it is new, with the
        QuotaReserved time it shows (``reserved_at``) and whether Admitted is True: what that parse would
        take from it. A replay whose writes land at once (``simulate``) calls it without them.
        """
        tracked = self.workloads.get(WorkloadKey(key))
        if tracked is None or not tracked.charged or not tracked.assumed:
            return False
        if cluster_queue is not None and cluster_queue != tracked.cluster_queue:
            return False
        self._reservation_seen(tracked, reserved_at, admitted=admitted)
        return True

    def _reservation_seen(self, tracked: Tracked, reserved_at: float, *, admitted: bool) -> None:
        """The API server shows the reservation the core charged: no longer assumed, Admitted once True
        stays so, and its QuotaReserved time (0: not shown) orders it for preemption."""
        was_admitted = tracked.admitted and not tracked.assumed
        tracked.assumed = False
        tracked.admitted = admitted or tracked.admitted
        if tracked.admitted and not was_admitted:
            self.fairness.admitted(tracked.info, tracked.cluster_queue)
        if reserved_at and reserved_at != tracked.reserved_at[0]:
            tracked.reserved_at = (reserved_at, tracked.reserved_at[1])
            self._holders_cache.pop(tracked.cluster_queue, None)

    def forget(self, key: str) -> None:
        """Undo an assumed admission whose status write failed; the workload queues again."""
        tracked = self.workloads.get(WorkloadKey(key))
        if tracked is None or not tracked.assumed:
            return
        self._release(tracked)
        self.fairness.dropped(tracked.info.key)
        tracked.assumed = tracked.admitted = False
        tracked.info.admission = None
        tracked.info.usage = NO_USAGE
        self.notices.forget(tracked.info.key)
        self._route(tracked)

    # == what the cycle does to a workload =============================================================
    def assume(
        self, info: WorkloadInfo, admission: Admission, usage: Mapping[FlavorResource, int], *, admitted: bool
    ) -> None:
        """Charge a workload the cycle admits, before the API server has seen the admission (``admitted``:
        at once, no admission check to wait for)."""
        tracked = self.workloads[info.key]
        info.admission = shared_admission(admission)  # one copy per shape (``shared_shapes``)
        info.usage = shared_usage(usage)
        tracked.cluster_queue = admission.cluster_queue
        tracked.assumed, tracked.admitted = True, admitted
        tracked.reserved_at = (float("inf"), self._next_sequence())
        self._charge(tracked)
        self.notices.forget(info.key)
        self.pending.scans.drop(info.key)
        self.fairness.decided(info, admission.cluster_queue)

    def claim(self, key: WorkloadKey, name: str) -> Claim:
        """The claim of a preemptor in ``name``, made now if it has none (claims keep their order)."""
        claim = self.claims.get(key)
        if claim is None:
            claim = self.claims[key] = Claim(self._next_sequence(), name)
        return claim

    def stake_claim(
        self, key: WorkloadKey, name: str, need: Mapping[FlavorResource, int], targets: Iterable[WorkloadKey]
    ) -> Claim:
        """The preemptor's claim on ``need`` in ``name`` while ``targets`` leave (made now if it has none)."""
        claim = self.claim(key, name)
        claim.targets = set(targets)
        before = (claim.cluster_queue, claim.usage)
        claim.cluster_queue = name
        claim.stake(self.ledger, name, need, self.covered(claim))
        if (claim.cluster_queue, claim.usage) != before:
            self.revisits.usage_moved(name)
        return claim

    def covered(self, claim: Claim, gone: frozenset[WorkloadKey] = frozenset()) -> dict[FlavorResource, int]:
        """What the claim's targets in its own ClusterQueue still hold (those in ``gone`` counted out)."""
        covered: dict[FlavorResource, int] = {}
        for key in claim.targets - gone:
            target = self.workloads.get(key)
            if target is None or not target.charged or target.cluster_queue != claim.cluster_queue:
                continue
            for fr, amount in target.info.usage.items():
                covered[fr] = covered.get(fr, 0) + amount
        return covered

    def claims_without(self, gone: frozenset[WorkloadKey]) -> list[tuple[str, dict[FlavorResource, int]]]:
        """What the claims would add to the ledger if the workloads in ``gone`` had left: the room their
        targets hold passes to the preemptors (Kueue's ``fits`` removes the cycle's victims and keeps the
        usage of the preemptors that chose them)."""
        out: list[tuple[str, dict[FlavorResource, int]]] = []
        for claim in self.claims.values():
            if not claim.need or claim.targets.isdisjoint(gone):
                continue
            more = uncovered(uncovered(claim.need, self.covered(claim, gone)), claim.usage)
            if more:
                out.append((claim.cluster_queue, more))
        return out

    def drop_claim(self, key: WorkloadKey) -> None:
        claim = self.claims.pop(key, None)
        if claim is not None and claim.usage:
            claim.release(self.ledger)
            self.revisits.usage_moved(claim.cluster_queue)
            self.pending.wake_tree(claim.cluster_queue, released=True)

    def mark_evicting(self, tracked: Tracked, evicting: bool) -> None:
        tracked.evicting = evicting
        self._holders_cache.pop(tracked.cluster_queue, None)

    def charged(self, keys: Iterable[WorkloadKey]) -> list[Tracked]:
        """The workloads among ``keys`` that hold quota now."""
        return [self.workloads[k] for k in keys if k in self.workloads and self.workloads[k].charged]

    @contextmanager
    def as_if_gone(self, keys: Iterable[WorkloadKey], *, wholly: bool = False) -> Iterator[None]:
        """While it lasts, the workloads among ``keys`` hold no quota, and the room they hold has passed
        to the preemptors that chose them (Kueue's ``fits``); ``wholly``: they also hold no topology
        room and are no preemption candidates (Kueue's ``SimulateWorkloadRemoval``). Put back after."""
        gone = frozenset(keys)
        removed = self.charged(gone)
        passed = self.claims_without(gone)
        ledger, tas = self.ledger, self.specs.tas
        for victim in removed:
            ledger.release(victim.cluster_queue, victim.info.usage)
        for queue, more in passed:
            ledger.charge_claim(queue, more)
        aside = [(victim.info.key, tas.set_aside(victim.info.key)) for victim in removed] if wholly else []
        touched = {victim.cluster_queue for victim in removed} if wholly else set()
        if wholly:
            self._hidden = gone
        for name in touched:
            self._holders_cache.pop(name, None)
        try:
            yield
        finally:
            self._hidden = frozenset()
            for name in touched:
                self._holders_cache.pop(name, None)
            for key, charges in aside:
                tas.put_back(key, charges)
            for queue, more in passed:
                ledger.release_claim(queue, more)
            for victim in removed:
                ledger.charge(victim.cluster_queue, victim.info.usage)

    # == what preemption reads (``preemption.QuotaHolders``) ===========================================
    def preemption_policy(self, cluster_queue: str) -> Preemption:
        return self.specs.preemption_policy(cluster_queue)

    def holders(self, cluster_queue: str) -> list[Candidate]:
        """The workloads holding quota in a ClusterQueue (kept until one is charged, released or
        marked evicting: preemption asks for them many times per cycle)."""
        cached = self._holders_cache.get(cluster_queue)
        if cached is not None:
            return cached
        queue = self.specs.queues.get(cluster_queue)
        if queue is None:
            return []
        out: list[Candidate] = []
        hidden = self._hidden
        for tracked in self._reserving(queue):
            if hidden and tracked.info.key in hidden:
                continue
            candidate = tracked.candidate
            if (
                candidate is None
                or candidate.info is not tracked.info
                or candidate.evicting != tracked.evicting
                or candidate.reserved_at != tracked.reserved_at
                or candidate.cluster_queue != cluster_queue
            ):
                candidate = tracked.candidate = Candidate(
                    tracked.info,
                    cluster_queue,
                    tracked.evicting,
                    tracked.reserved_at,
                    frozenset(tracked.info.usage),
                )
            out.append(candidate)
        self._holders_cache[cluster_queue] = out
        return out

    def reserving_in(self, name: str) -> list[tuple[WorkloadInfo, bool]]:
        """(workload, admitted) for every workload holding quota in a ClusterQueue."""
        queue = self.specs.queues.get(name)
        return [(t.info, t.admitted) for t in self._reserving(queue)] if queue is not None else []

    def _reserving(self, queue: QueueState) -> list[Tracked]:
        """The workloads holding quota in ``queue``, in key order."""
        return [self.workloads[key] for key in sorted(queue.reserving)]

    # == what a queue change does to its workloads (``catalog.Occupants``) =============================
    def cluster_queue_added(self, name: str) -> None:
        for tracked in self.workloads.values():  # admitted to it before we saw it (a restart)
            if tracked.info.admission is not None and not tracked.charged and tracked.cluster_queue == name:
                self._charge(tracked)
        for key in sorted(self._stranded_by_cluster_queue.pop(name, set())):
            stranded = self.workloads.get(key)
            if stranded is not None:
                self._route(stranded)

    def cluster_queue_removed(self, name: str, queue: QueueState) -> None:
        stranded = self._stranded_by_cluster_queue.setdefault(name, set())
        for info in list(queue.pending):
            self.workloads[info.key].queued = False
            stranded.add(info.key)
            self.notices.emit(
                info.key, name, REASON_MISCONFIGURED, f"ClusterQueue {name} is terminating or missing"
            )
        self._holders_cache.pop(name, None)
        for key in queue.reserving:
            self.workloads[key].charged = False  # charged again if the ClusterQueue comes back
        for claim in self.claims.values():
            if claim.cluster_queue == name:
                claim.usage, claim.need = {}, {}  # the room it claimed went with the ClusterQueue

    def reroute(self, local_queue: str) -> None:
        for tracked in list(self.workloads.values()):
            if tracked.queued and self.specs.local_queue_key(tracked.info) == local_queue:
                self.unqueue(tracked)
                self._route(tracked)

    def route_stranded(self, local_queue: str) -> None:
        for key in sorted(self._stranded_by_local_queue.pop(local_queue, set())):
            stranded = self.workloads.get(key)
            if stranded is not None:
                self._route(stranded)

    def drain_if_stopped(self, queue: QueueState) -> None:
        for key in sorted(queue.reserving):
            self._drain_if_stopped(self.workloads[key])

    # == internals =====================================================================================
    def _next_sequence(self) -> int:
        self._sequence += 1
        return self._sequence

    def _route(self, tracked: Tracked) -> None:
        """Put a pending workload where it belongs: its ClusterQueue's queue, or stranded with a notice."""
        info = tracked.info
        lq_key = self.specs.local_queue_key(info)
        local_queue = self.specs.local_queues.get(lq_key)
        if local_queue is None:
            self._stranded_by_local_queue.setdefault(lq_key, set()).add(info.key)
            tracked.cluster_queue = ""
            self.notices.emit(
                info.key, "", REASON_MISCONFIGURED, f"LocalQueue {info.queue_name} is terminating or missing"
            )
            return
        if local_queue.stop_policy != "None":
            self._stranded_by_local_queue.setdefault(lq_key, set()).add(info.key)
            tracked.cluster_queue = ""
            self.notices.emit(info.key, "", REASON_SUSPENDED, f"LocalQueue {info.queue_name} is stopped")
            return
        name = local_queue.cluster_queue
        tracked.cluster_queue = name
        queue = self.specs.queues.get(name)
        if queue is None:
            self._stranded_by_cluster_queue.setdefault(name, set()).add(info.key)
            self.notices.emit(
                info.key, name, REASON_MISCONFIGURED, f"ClusterQueue {name} is terminating or missing"
            )
            return
        queue.pending.push(info)
        tracked.queued = True
        if queue.open:
            self.pending.ready.add(name)
        else:
            self.pending.emit_closed(info, name, queue)

    def unqueue(self, tracked: Tracked) -> None:
        if tracked.queued:
            queue = self.specs.queues.get(tracked.cluster_queue)
            if queue is not None:
                queue.pending.remove(tracked.info.key)
            tracked.queued = False

    def _unstrand(self, tracked: Tracked) -> None:
        key = tracked.info.key
        for stranded in (
            self._stranded_by_local_queue.get(self.specs.local_queue_key(tracked.info)),
            self._stranded_by_cluster_queue.get(tracked.cluster_queue),
        ):
            if stranded is not None:
                stranded.discard(key)

    def _charge(self, tracked: Tracked) -> None:
        queue = self.specs.queues.get(tracked.cluster_queue)
        if queue is None:
            return  # charged when the ClusterQueue appears
        self.ledger.charge(tracked.cluster_queue, tracked.info.usage)
        if self.specs.tas.trees:
            self.specs.tas.charge_workload(tracked.info.key, topology_charges(tracked.info, self.specs.tas))
        self.revisits.usage_moved(tracked.cluster_queue)
        queue.reserving.add(tracked.info.key)
        self._holders_cache.pop(tracked.cluster_queue, None)
        tracked.candidate = None  # a new reservation: its usage may differ from the last one's
        tracked.charged = True
        self._drain_if_stopped(tracked)

    def _move_topology(self, tracked: Tracked, info: WorkloadInfo) -> None:
        """The same quota placed elsewhere in its flavors' topology: the TAS charges follow the new
        assignment."""
        tracked.info.admission = info.admission
        self.specs.tas.release_workload(tracked.info.key)
        if self.specs.tas.trees:
            self.specs.tas.charge_workload(tracked.info.key, topology_charges(tracked.info, self.specs.tas))
        self.revisits.usage_moved(tracked.cluster_queue)

    def _evict_if_asked(self, tracked: Tracked, workload: Workload) -> None:
        """An admitted workload deactivated (``spec.active=false``) gives its quota back through an eviction
        (Kueue's workload controller: Evicted ``Deactivated``, "The workload is deactivated"); a check in
        Retry or Rejected state does too (Kueue's reconcileCheckBasedEviction)."""
        if tracked.evicting or not tracked.charged:
            return
        if not workload.active:
            self.mark_evicting(tracked, True)
            self.notices.evict(
                Evict(tracked.info.key, tracked.cluster_queue, DEACTIVATED, "The workload is deactivated")
            )
            return
        if not workload.admission_checks:
            return
        eviction = check_eviction(workload.admission_checks)
        if eviction is None:
            return
        self.mark_evicting(tracked, True)
        self.notices.evict(
            Evict(
                tracked.info.key,
                tracked.cluster_queue,
                eviction.reason,
                eviction.message,
                deactivate=eviction.deactivate,
            )
        )

    def _drain_if_stopped(self, tracked: Tracked) -> None:
        """``stopPolicy: HoldAndDrain`` on its ClusterQueue or LocalQueue takes an admitted workload's quota
        back (Kueue's workload controller: Evicted with ClusterQueueStopped / LocalQueueStopped)."""
        if tracked.evicting or not tracked.charged:
            return
        queue = self.specs.queues.get(tracked.cluster_queue)
        local_queue = self.specs.local_queue_of(tracked.info)
        if queue is not None and queue.spec.stop_policy == "HoldAndDrain":
            reason, message = "ClusterQueueStopped", "The ClusterQueue is stopped"
        elif local_queue is not None and local_queue.stop_policy == "HoldAndDrain":
            reason, message = "LocalQueueStopped", "The LocalQueue is stopped"
        else:
            return
        self.mark_evicting(tracked, True)
        self.notices.evict(Evict(tracked.info.key, tracked.cluster_queue, reason, message))

    def _release(self, tracked: Tracked) -> None:
        if not tracked.charged:
            return
        name = tracked.cluster_queue
        self.ledger.release(name, tracked.info.usage)
        self.specs.tas.release_workload(tracked.info.key)
        self.revisits.usage_moved(name)
        self.pending.scans.moved(name)
        queue = self.specs.queues.get(name)
        if queue is not None:
            queue.reserving.discard(tracked.info.key)
        self._holders_cache.pop(name, None)
        tracked.charged = False
        if tracked.evicting:
            self.mark_evicting(tracked, False)
        # evicted or not (its eviction refused, it finished or was deleted first), a target that gave its
        # quota back is gone for the preemptors waiting for it
        self._target_gone(tracked.info.key, tracked.cluster_queue)
        self._wake_after_release(name)

    def _target_gone(self, key: WorkloadKey, cluster_queue: str) -> None:
        """No preemptor waits for ``key`` (of ``cluster_queue``) any more: what it held in a preemptor's
        ClusterQueue passes to the claim, and a preemptor left without targets is tried in the next cycle."""
        for preemptor, claim in self.claims.items():
            if key in claim.targets:
                claim.targets.discard(key)
                if claim.need and claim.cluster_queue == cluster_queue:
                    claim.recharge(self.ledger, self.covered(claim))
                if not claim.targets:
                    self._retry_preemptor(preemptor, claim)

    def _recharge(self, tracked: Tracked, info: WorkloadInfo) -> None:
        """An admitted workload reported pods it will not run again (``status.reclaimablePods``): it is
        charged for the rest from now on, and what it gave back may admit others at once (Kueue's
        ReclaimablePods). Its place in preemption order is kept. One being evicted keeps its charge: a
        preemptor's claim counts on it, and all of it is released with the eviction."""
        name = tracked.cluster_queue
        if tracked.evicting:
            return
        self.ledger.release(name, tracked.info.usage)
        tracked.info = info
        self.ledger.charge(name, info.usage)
        self.revisits.usage_moved(name)
        self.pending.scans.moved(name)
        self._holders_cache.pop(name, None)
        self._wake_after_release(name)

    def _wake_after_release(self, name: str) -> None:
        """Quota was given back in ``name``: the workloads it may now admit are tried again."""
        queue = self.specs.queues.get(name)
        self.pending.wake_tree(name, released=True)
        if queue is not None and queue.open and self.specs.may_preempt(queue) and queue.pending.wake():
            # Kueue retries inadmissible workloads on releases in their cohort. Here a release in the
            # cohort retries those whose request may now be free; a release in their own ClusterQueue
            # retries every one, even if others borrowed the room at once: it is their nominal quota,
            # which they may reclaim (waiting for it to be free could take for ever under load). After
            # the cohort-wide wake-up above this can bring back a second workload of a shape; kept because
            # Workloads reclaiming their nominal quota wait less for it (bench/baseline/README.md).
            self.pending.ready.add(name)

    def _retry_preemptor(self, key: WorkloadKey, claim: Claim) -> None:
        """Its last target is gone: try the preemptor in the next cycle. It cannot wait for a wake-up
        like other parked workloads, since the room it lacks is the room claimed for it."""
        queue = self.specs.queues.get(claim.cluster_queue)
        if queue is not None and queue.pending.retry(key):
            self.pending.ready.add(claim.cluster_queue)

    def admitted_usage(self, cluster_queue: str, local_queue: str) -> dict[str, int]:
        """What the admitted workloads of one LocalQueue ("namespace/name") in ``cluster_queue`` use, per
        resource over all flavors (Kueue's LocalQueue ``GetAdmittedUsage``)."""
        queue = self.specs.queues.get(cluster_queue)
        total: dict[str, int] = {}
        if queue is None:
            return total
        for key in queue.reserving:
            tracked = self.workloads[key]
            info = tracked.info
            if tracked.admitted and f"{info.namespace}/{info.queue_name}" == local_queue:
                by_resource(info.usage, into=total)
        return total

    def _drop(self, tracked: Tracked) -> None:
        self.fairness.dropped(tracked.info.key)
        self.drop_claim(tracked.info.key)
        self.pending.scans.drop(tracked.info.key)
        self._release(tracked)
        self.unqueue(tracked)
        self._unstrand(tracked)
        self.workloads.pop(tracked.info.key, None)
        self.notices.forget(tracked.info.key)


def _topologies(info: WorkloadInfo) -> list[object]:
    """The topology assignment of each pod set of an admitted workload."""
    admission = info.admission
    return [a.topology_assignment for a in admission.pod_set_assignments] if admission is not None else []
