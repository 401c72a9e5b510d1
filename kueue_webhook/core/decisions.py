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
OVERLAPPING_TARGETS = "Workload has overlapping preemption targets with another workload"
#: the Evicted condition reason of a preemption (Kueue's WorkloadEvictedByPreemption)
EVICTED_BY_PREEMPTION = "Preempted"


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
    each pending workload, so that the same wait is not written twice."""

    def __init__(self) -> None:
        self._queued: list[Decision] = []
        self._last_wait: dict[WorkloadKey, tuple[str, str, int | None]] = {}
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
        seen = (reason, message, position)
        if self._last_wait.get(key) == seen:
            return
        self._last_wait[key] = seen
        out.append(Wait(key, cluster_queue, reason, message, position))

    def restate(self, key: WorkloadKey, cluster_queue: str, reason: str, message: str) -> None:
        """A parked workload would now be told this, found without trying it (another of its shape failed
        so): kept as its latest wait, with no decision of its own. Whoever shows messages learns which
        workloads to look at from ``take_restated``, so a queue of thousands costs no decision each."""
        seen = self._last_wait.get(key)
        if seen is None or (seen[0], seen[1]) == (reason, message):
            return
        self._last_wait[key] = (reason, message, seen[2])
        self._restated[key] = cluster_queue

    def take_restated(self) -> dict[WorkloadKey, str]:
        """The workloads whose wait was restated since the last call, with their ClusterQueues."""
        out, self._restated = self._restated, {}
        return out

    def forget(self, key: WorkloadKey) -> None:
        """The workload was admitted, requeued or is gone: its next wait is news."""
        self._last_wait.pop(key, None)

    def last_wait(self, key: WorkloadKey) -> tuple[str, str] | None:
        seen = self._last_wait.get(key)
        return (seen[0], seen[1]) if seen is not None else None
