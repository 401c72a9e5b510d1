"""What the scheduler tells the controller: ``Admit``, ``Wait`` or ``Evict`` one workload.

A decision is a frozen value carrying everything its writer needs, so the core never writes anything
itself: the controller (``kueue_webhook/control/scheduling/scheduler_loop.py``) and ``simulate`` act on the
same
list. They
live apart from the code that makes them because both sides import them, and the side that acts should
not have to load the scheduler's machinery to read what it was told. ``Notices`` is the one piece of
memory that goes with them: a ``Wait`` is said again only when what the user would read changes.

What the controller does with each decision:

* ``Admit``: write QuotaReserved=True and ``status.admission`` (and Admitted=True when the ClusterQueue
  has no admission checks); on failure call ``SchedulerState.forget``.
* ``Wait``: write QuotaReserved=False with the reason and message (position appended as it likes).
* ``Evict``: write ``Evicted=True`` (reason ``Preempted``, or ``ClusterQueueStopped``/``LocalQueueStopped``
  for a drain) and, for a preemption, ``Preempted=True`` with ``preemption_reason``, both with
  ``message``; events ``Preempted`` on the target and ``PreemptedWorkload`` on the preemptor; count
  ``preempted_workloads_total{preempting_cluster_queue, reason}`` and ``evicted_workloads_total``. Then
  stop the Job (re-suspend, template restored) and, once it has no active pods, clear the reservation
  (QuotaReserved=False, Admitted=False, ``status.admission`` removed, Requeued=True); the resulting
  Workload event releases the quota. If the eviction write fails, call ``SchedulerState.eviction_failed``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

from kueue_webhook.api.objects import Admission
from kueue_webhook.core.model import WorkloadKey

__all__ = ["Admit", "Decision", "Evict", "Notices", "Wait"]

REASON_MISCONFIGURED = "Misconfigured"
REASON_SUSPENDED = "Suspended"
REASON_WAITING = "WaitingForQuota"
NO_LONGER_FITS = "Workload no longer fits after processing another workload"
NAMESPACE_MISMATCH = "workload namespace doesn't match ClusterQueue selector"
REASON_WAITING_FOR_PREEMPTED = "WaitingForPreemptedWorkloads"
#: a Workload held out of the queue by admission gates (Kueue's AdmissionGatedBy), and the words Kueue uses
#: once the last gate goes, before the scheduler has tried it
REASON_ADMISSION_GATED = "AdmissionGated"
REASON_PENDING_EVALUATION = "PendingEvaluation"
GATES_CLEARED = "AdmissionGatedBy cleared, waiting for quota reservation"
GATED_PREFIX = "Admission is gated by: "
#: a head whose targets another preemptor of the cycle chose fits once those evictions are done (Kueue's
#: DeferredFit under RecomputeAssignmentUponPreemptionTargetsOverlap)
FITS_AFTER_OTHER_PREEMPTIONS = (
    "Workload has overlapping preemption targets with another workload, but will fit after these "
    "preemptions complete"
)
#: the Evicted condition reason of a preemption (Kueue's WorkloadEvictedByPreemption)
EVICTED_BY_PREEMPTION = "Preempted"
#: the Evicted reason of a workload whose spec.active turned false while it held quota
DEACTIVATED = "Deactivated"
#: the most workloads noted per parked group between two restatements (``Notices._since``)
SINCE_AT_MOST = 1024


@dataclass(frozen=True, slots=True)
class Admit:
    """Reserve quota: write ``status.admission`` and the QuotaReserved/Admitted conditions."""

    workload: WorkloadKey
    cluster_queue: str
    admission: Admission
    borrowing: bool = False
    #: the ClusterQueue's admission checks: with any, quota is reserved now and ``Admitted`` waits
    #: for the checks; with none, the workload is admitted at once
    admission_checks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Wait:
    """The workload stays pending; QuotaReserved=False with this reason and message.

    ``position`` is the 1-based rank in its ClusterQueue's queue when known (None when the workload
    is not in any ClusterQueue's queue, e.g. its LocalQueue does not exist).
    """

    workload: WorkloadKey
    cluster_queue: str
    reason: str
    message: str
    position: int | None = None


@dataclass(frozen=True, slots=True)
class Evict:
    """Take quota back from an admitted workload: the controller sets ``Evicted=True`` with ``reason`` and
    ``message`` (and, for a preemption, ``Preempted=True`` with ``preemption_reason`` and the same message),
    stops the Job, and once nothing runs any more clears the reservation, which is when the quota is
    released (``upsert_workload`` sees QuotaReserved=False). Until then the workload keeps its quota and
    counts as *evicting*; if the write fails the controller calls ``eviction_failed``.
    """

    workload: WorkloadKey
    cluster_queue: str
    reason: str
    message: str
    #: ``InClusterQueue`` | ``InCohortReclamation`` | ``InCohortReclaimWhileBorrowing`` |
    #: ``InCohortFairSharing`` when ``reason`` is ``Preempted``, else ""
    preemption_reason: str = ""
    #: the workload that needs the room, and its ClusterQueue (metric ``preempting_cluster_queue``)
    preemptor: WorkloadKey | None = None
    preempting_cluster_queue: str = ""
    #: a Rejected admission check: also set ``spec.active=false`` so it does not queue again
    deactivate: bool = False


Decision = Admit | Wait | Evict


class Notices:
    """Decisions reached between cycles (delivered with the next one), and the last ``Wait`` said to
    each pending workload, so that the same wait is not written twice.

    A failure that holds for a whole *shape* of parked workloads (``PendingQueue.revisited_alike``) is
    kept once for the shape (``restate_parked``), not once per member: a parked workload reads it through
    its shape while it stays parked (``last_wait``), and takes it as its own when it leaves the parked
    list (``unparked``). Whether the shape's word or a workload's own is the latest is told by ``_tick``,
    which every wait and restatement moves. Whoever shows messages still learns which workloads' message
    moved (``take_restated``), but a restatement that repeats the shape's last one looks only at the
    workloads parked since: a revisit that changes nothing costs nothing per parked workload.
    """

    def __init__(self) -> None:
        self._queued: list[Decision] = []
        #: per workload: reason, message, position and the tick it was said at
        self._last_wait: dict[WorkloadKey, tuple[str, str, int | None, int]] = {}
        self._tick = 0
        #: per parked workload: its parked group (a ClusterQueue's shape) and the tick it was parked at
        self._parked: dict[WorkloadKey, tuple[Hashable, int]] = {}
        #: per parked group: the tick, reason and message of its latest restatement
        self._said: dict[Hashable, tuple[int, str, str]] = {}
        #: per group with a restatement: the workloads parked in it since (some may have left)
        self._parked_since: dict[Hashable, list[WorkloadKey]] = {}
        #: workloads whose wait was restated since ``take_restated``, with their ClusterQueue
        self._restated: dict[WorkloadKey, str] = {}

    def __bool__(self) -> bool:
        return bool(self._queued)

    def take(self) -> list[Decision]:
        """The decisions reached since the last cycle, which the next cycle delivers first."""
        out = list(self._queued)
        self._queued.clear()
        return out

    def evict(self, decision: Evict) -> None:
        self._queued.append(decision)

    def emit(self, key: WorkloadKey, cluster_queue: str, reason: str, message: str) -> None:
        """A wait found outside a cycle (no position: the workload is in no queue, or a closed one)."""
        self.wait(self._queued, key, cluster_queue, reason, message, None)

    def wait(
        self,
        out: list[Decision],
        key: WorkloadKey,
        cluster_queue: str,
        reason: str,
        message: str,
        position: int | None,
    ) -> None:
        """Add a ``Wait`` to ``out`` unless it says what the workload was last told."""
        if self._told(key) == (reason, message, position):
            return
        self._tick += 1
        self._last_wait[key] = (reason, message, position, self._tick)
        self._moved(key)
        out.append(Wait(key, cluster_queue, reason, message, position))

    def restate(self, key: WorkloadKey, cluster_queue: str, reason: str, message: str) -> None:
        """A workload would now be told this, found without trying it (another of its shape failed so):
        kept as its latest wait, with no decision of its own (``take_restated`` names it)."""
        seen = self._told(key)
        if seen is None or (seen[0], seen[1]) == (reason, message):
            return
        self._tick += 1
        self._last_wait[key] = (reason, message, seen[2], self._tick)
        self._moved(key)
        self._restated[key] = cluster_queue

    def restate_parked(
        self,
        group: Hashable,
        cluster_queue: str,
        reason: str,
        message: str,
        members: Callable[[], Iterable[WorkloadKey]],
    ) -> None:
        """Every workload parked in ``group`` now (``members``) would be told this: ``restate`` for each,
        in O(1) for what it records. ``take_restated`` names those whose message moved; when the group was
        last told the same, only those parked since can have moved, and ``members`` is not called."""
        said = self._said.get(group)
        since = self._parked_since.get(group)
        repeated = said is not None and since is not None and (said[1], said[2]) == (reason, message)
        candidates = since if repeated and since is not None else members()
        restated, told, parked = self._restated, self._told, self._parked
        for key in candidates:
            where = parked.get(key)
            if where is None or where[0] != group:
                continue  # left the group since
            seen = told(key)
            if seen is not None and (seen[0], seen[1]) != (reason, message):
                restated[key] = cluster_queue
        self._tick += 1
        self._said[group] = (self._tick, reason, message)
        self._parked_since[group] = []

    def parked(self, key: WorkloadKey, group: Hashable) -> None:
        """``key`` was parked in ``group``: a later ``restate_parked`` of the group speaks for it."""
        self._tick += 1
        self._parked[key] = (group, self._tick)
        self._since(group, key)

    def unparked(self, key: WorkloadKey) -> None:
        """``key`` left the parked list: what its group said for it becomes its own."""
        parked = self._parked.pop(key, None)
        if parked is None:
            return
        said = self._said.get(parked[0])
        if said is None or said[0] < parked[1]:
            return
        seen = self._last_wait.get(key)
        if seen is not None and seen[3] < said[0]:
            self._last_wait[key] = (said[1], said[2], seen[2], said[0])

    def _moved(self, key: WorkloadKey) -> None:
        """``key`` was told something of its own: if it is parked, its group's next restatement, even one
        that repeats the last, must look at it."""
        where = self._parked.get(key)
        if where is not None:
            self._since(where[0], key)

    def _since(self, group: Hashable, key: WorkloadKey) -> None:
        """Note ``key`` among those a repeated restatement of ``group`` must look at; past
        ``SINCE_AT_MOST`` of them, the next restatement lists the group's members instead."""
        since = self._parked_since.get(group)
        if since is None:
            return
        if len(since) >= SINCE_AT_MOST:
            del self._parked_since[group]
        else:
            since.append(key)

    def group_emptied(self, group: Hashable) -> None:
        """Nothing is parked in ``group`` any more: its restatement speaks for nobody."""
        self._said.pop(group, None)
        self._parked_since.pop(group, None)

    def take_restated(self) -> dict[WorkloadKey, str]:
        """The workloads whose wait was restated since the last call, with their ClusterQueues."""
        out, self._restated = self._restated, {}
        return out

    def forget(self, key: WorkloadKey) -> None:
        """The workload was admitted, requeued or is gone (so not parked): its next wait is news."""
        self._last_wait.pop(key, None)
        self._parked.pop(key, None)  # left behind by a ClusterQueue deleted while it was parked there

    def _told(self, key: WorkloadKey) -> tuple[str, str, int | None] | None:
        """What the workload was last told (reason, message, position): its own latest wait, or what its
        parked group said after it, if later."""
        seen = self._last_wait.get(key)
        if seen is None:
            return None
        parked = self._parked.get(key)
        if parked is not None:
            said = self._said.get(parked[0])
            if said is not None and said[0] > parked[1] and said[0] > seen[3]:
                return (said[1], said[2], seen[2])
        return (seen[0], seen[1], seen[2])

    def last_wait(self, key: WorkloadKey) -> tuple[str, str] | None:
        told = self._told(key)
        return (told[0], told[1]) if told is not None else None
