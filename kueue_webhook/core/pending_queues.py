"""The pending queues of all ClusterQueues: which may offer a head, waking parked workloads, and what a
workload in a closed queue is told.

Every ClusterQueue's ``PendingQueue`` lives in its ``specs.QueueState``; ``PendingQueues`` holds what
spans them. ``ready`` names the ClusterQueues that may have a head to offer; ``wake`` returns parked
workloads to their queues when something changed that could let them in (quota released in the cohort
tree, a spec changed, namespace labels changed), so parked workloads never wait on a timer for a chance to
fit and cost nothing while nothing changes (the one timed retry is ``revisits.py``'s). A ClusterQueue that
closes (a flavor missing, a stop policy) tells each workload queued in it why it waits, once. The queries
at the end answer status and reports without exposing the queues themselves.

This is the part of Kueue's queue manager (``pkg/cache/queue``) that the scheduler reads: its ClusterQueue
heaps and inadmissible lists, and the requeueing of those on a change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from kueue_webhook.core.decisions import REASON_SUSPENDED, Notices
from kueue_webhook.core.model import FlavorResource, WorkloadInfo, WorkloadKey
from kueue_webhook.core.scan_progress import ScanProgress
from kueue_webhook.core.specs import QueueState, Specs

__all__ = ["PendingQueues"]


class PendingQueues:
    """Which ClusterQueues may offer a head, the wake-ups that return parked workloads, the notices of a
    closed queue, and read access to the pending workloads."""

    def __init__(self, specs: Specs, notices: Notices) -> None:
        self.notices = notices
        self.ledger = specs.ledger
        #: the ClusterQueues (``Specs.queues``, the same dict)
        self.queues = specs.queues
        #: ClusterQueues that may have a head to offer
        self.ready: set[str] = set()
        #: where each pending workload's last flavor search stopped
        self.scans = ScanProgress()

    # == waking ========================================================================================
    def wake(self, names: Iterable[str], *, released: bool = False) -> None:
        """Return parked workloads to their queues; after a mere release of quota, only those whose
        needs are now available (anything else changed: all of them)."""
        queues = self.queues
        for name in names:
            queue = queues.get(name)
            if queue is None or not queue.open:
                continue
            if released and not queue.pending.waiting:
                continue  # nothing parked or stalled; anything in its heap is already scheduled
            queue.pending.wake(available=self._memo_available(name) if released else None)
            if len(queue.pending):
                self.ready.add(name)

    def wake_tree(self, name: str, *, released: bool = False) -> None:
        """``wake`` every ClusterQueue of ``name``'s cohort tree, if ``name`` still exists."""
        if name in self.ledger.queues:
            self.wake(self.ledger.tree_queues(name), released=released)

    def _memo_available(self, name: str) -> Callable[[FlavorResource], int]:
        """``available`` for one ClusterQueue while the ledger does not change (one wake-up)."""
        memo: dict[FlavorResource, int] = {}
        ledger_available = self.ledger.available

        def available(fr: FlavorResource) -> int:
            value = memo.get(fr)
            if value is None:
                value = memo[fr] = ledger_available(name, fr)
            return value

        return available

    def has_head(self) -> bool:
        """Whether some open ClusterQueue has a head to try now."""
        for name in list(self.ready):
            if self.queues[name].pending.peek() is not None:
                return True
            self.ready.discard(name)  # only parked or stalled work: it comes back with a wake-up
        return False

    # == opening and closing ===========================================================================
    def opened_or_closed(self, name: str, was_open: bool) -> None:
        """A ClusterQueue's flavors or stop policy changed: wake it if it opened, tell its workloads why
        they wait if it closed."""
        queue = self.queues[name]
        if queue.open and not was_open:
            queue.pending.wake()
            self.ready.add(name)
        elif not queue.open and was_open:
            self.ready.discard(name)
            self.notice_closed(name)

    def notice_closed(self, name: str) -> None:
        """Tell every workload queued in the closed ClusterQueue ``name`` why it waits."""
        queue = self.queues[name]
        for info in queue.pending:
            self.emit_closed(info, name, queue)

    def emit_closed(self, info: WorkloadInfo, name: str, queue: QueueState) -> None:
        """Tell a workload queued in a closed ClusterQueue why it waits."""
        if queue.spec.stop_policy != "None":
            self.notices.emit(info.key, name, REASON_SUSPENDED, f"ClusterQueue {name} is stopped")
        else:
            self.notices.emit(info.key, name, REASON_SUSPENDED, f"ClusterQueue {name} is inactive")

    # == read access for status and reports ============================================================
    def pending_in(self, name: str) -> list[WorkloadInfo]:
        """Pending workloads of a ClusterQueue in queue order (for status and reports; O(n log n))."""
        queue = self.queues.get(name)
        return list(queue.pending) if queue is not None else []

    def pending_workload(self, name: str, key: str) -> WorkloadInfo | None:
        """The workload ``key`` if it is pending in ClusterQueue ``name`` (O(1))."""
        queue = self.queues.get(name)
        return queue.pending.get(WorkloadKey(key)) if queue is not None else None

    def pending_unordered(self, name: str) -> Iterator[WorkloadInfo]:
        """Pending workloads of a ClusterQueue in no particular order (for counting: O(n), no sort)."""
        queue = self.queues.get(name)
        return queue.pending.unordered() if queue is not None else iter(())

    def pending_count(self, name: str) -> int:
        queue = self.queues.get(name)
        return len(queue.pending) if queue is not None else 0

    def pending_by_local_queue(self, name: str) -> dict[tuple[str, str], list[int]]:
        """Pending workloads of a ClusterQueue per LocalQueue (namespace, name): [active, inadmissible]."""
        queue = self.queues.get(name)
        return queue.pending.by_local_queue() if queue is not None else {}

    def inadmissible_count(self, name: str) -> int:
        """Pending workloads parked until something changes (Kueue's inadmissible ones, as
        ``kueue_pending_workloads{status="inadmissible"}`` counts them); the rest of ``pending_count`` are
        active."""
        queue = self.queues.get(name)
        return queue.pending.parked_count if queue is not None else 0
