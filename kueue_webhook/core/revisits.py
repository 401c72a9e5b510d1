"""The one timed retry of parked workloads: a revisit of a cohort tree a second after its usage moved.

Parked workloads return when something changes that could let them in (``pending_queues.py``), never on a
timer. What a parked workload is told must stay true, though: when others take room in its cohort tree,
it needs more than its message says. As Kueue retries the inadmissible workloads of a cohort tree one
batch period after a change there (its requeuer's one second), a change of usage in a tree
(``usage_moved``) schedules one ``revisit`` of the tree's parked workloads ``REVISIT_AFTER`` later,
however many changes follow in between: each is tried once more and told what holds then. Only
ClusterQueues that cannot preempt are revisited: there a retry can only re-word a message (fitting needs a
release, which wakes them anyway), while elsewhere it could find new victims after an admission, which
Kueue never retries on.

``Revisits`` holds the trees whose usage moved and when each tree is due. Time is an argument
(``schedule``, ``revisit``): the controller passes its clock, ``simulate`` its simulated one.
"""

from __future__ import annotations

from kueue_webhook.core.pending_queues import PendingQueues
from kueue_webhook.core.specs import Specs

__all__ = ["REVISIT_AFTER", "Revisits"]

#: seconds from a change of usage in a cohort tree to the retry of its parked workloads (Kueue's
#: requeueBatchPeriod: the delay its inadmissible-workload requeuer adds, batching the changes meanwhile)
REVISIT_AFTER = 1.0


class Revisits:
    """The cohort trees whose usage moved since the last cycle, and when each tree's revisit is due."""

    def __init__(self, specs: Specs, pending: PendingQueues) -> None:
        self.specs = specs
        self.pending = pending
        #: ClusterQueues whose cohort tree's usage moved since ``schedule``
        self._moved: set[str] = set()
        #: per cohort tree (its root), when its parked workloads are revisited and one ClusterQueue in it
        self._revisit_at: dict[tuple[str, bool], tuple[float, str]] = {}

    def usage_moved(self, name: str) -> None:
        """Quota was charged or released in ``name``: what its tree's parked workloads lack has moved."""
        self._moved.add(name)

    @property
    def usage_moved_since_scheduled(self) -> bool:
        return bool(self._moved)

    def schedule(self, now: float | None) -> None:
        """Plan a revisit ``REVISIT_AFTER`` from ``now`` for every tree whose usage moved, unless one is
        planned already (changes meanwhile are batched into it). No clock (``now`` None): none."""
        if not self._moved:
            return
        moved, self._moved = self._moved, set()
        if now is None:
            return
        queues, revisit_at = self.specs.ledger.queues, self._revisit_at
        for name in moved:
            node = queues.get(name)
            if node is None:
                continue
            root = node.root()
            key = (root.name, root.is_cohort)
            if key not in revisit_at:
                revisit_at[key] = (now + REVISIT_AFTER, name)

    def next_due(self) -> float | None:
        """When the next planned revisit is due (None: none planned)."""
        return min((at for at, _ in self._revisit_at.values()), default=None)

    def due(self, now: float) -> bool:
        return any(at <= now for at, _ in self._revisit_at.values())

    def revisit(self, now: float) -> None:
        """Retry the parked workloads of every tree whose revisit is due (the first of each shape for real;
        ``PendingQueue.revisited_alike`` tells the cycle who shares its outcome)."""
        for key, (at, name) in list(self._revisit_at.items()):
            if at <= now:
                del self._revisit_at[key]
                tree = self.specs.ledger.tree_queues(name)
                self.pending.wake([q for q in tree if not self._preempts(q)])

    def _preempts(self, name: str) -> bool:
        """Whether a retry in ``name`` could preempt: there a revisit could change who runs, not only what a
        parked workload is told, which Kueue's requeue after an admission (there is none) never does; such
        queues are retried on releases only (``WorkloadTracker._release``)."""
        queue = self.specs.queues.get(name)
        return queue is not None and self.specs.may_preempt(queue)
