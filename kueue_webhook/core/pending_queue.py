"""The pending queue of one ClusterQueue, ordered by priority, then age, then name.

Each queue is a binary heap with lazy deletion (a removed or re-prioritised workload leaves a stale
entry that is skipped when it surfaces), so adding, removing and popping the head are O(log n) and a
scheduling cycle never touches the rest of the queue.

``BestEffortFIFO``: a head that cannot be admitted is *parked* (Kueue's "inadmissible" list) and the
next one gets its turn. ``StrictFIFO``: the head that cannot be admitted stays the head and the queue is
*stalled*: it offers no head until something happens that could change the answer. In both modes that
"something" is an explicit wake-up from the scheduler state (quota released in the cohort tree, a
ClusterQueue, Cohort or ResourceFlavor changed, namespace labels changed), so parked workloads return
immediately when the world changes; the one timed wake-up is the revisit a second after usage moved in
their cohort tree, so that what they were told stays true (``revisits.py``). A workload that
sorts before a stalled head (higher priority) un-stalls the queue by becoming the new head.

Waking does not throw every parked workload back at the scheduler. Parked workloads are grouped by
*shape* (namespace and pod sets: counts, requests, node constraints); two workloads of one shape fit or
fail together against the same quota, and usage only grows while a wake is being worked through. So a
wake returns the first parked workload of each shape, and the next one of a shape follows only when the
previous one was taken. The outcome is the one of retrying everything in queue order, at a cost that
grows with the number of shapes instead of the number of parked workloads. So that the workloads behind a
failed one of its shape do not keep an outdated pending message, a wake that retries for real (anything
but a mere release) marks the shape *revisited*: the first of it that fails again tells the cycle that the
parked workloads of its shape share its outcome (``revisited_alike``), and they are told the same, once
for the shape (``Notices.restate_parked``: the queue tells ``Notices`` who is parked in which shape, so
a restatement that repeats the last costs nothing per parked workload). A head that goes back
parked with an outcome its whole shape shares (it did not fit, or nobody could be preempted for it) takes
back with it the next of its shape that its pop released: tried in the next cycle, that one would only
fail the same way, and the cycle run for it would decide nothing. For the same reason a release finds
nothing to do for a shape whose released workload is still in the heap, untried: its pop releases the
next one anyway, and a second one in the heap would only be popped after it, in a cycle of its own.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Callable, Container, Hashable, Iterator, Mapping

from kueue_webhook.core.decisions import Notices
from kueue_webhook.core.model import FlavorResource, WorkloadInfo, WorkloadKey

__all__ = ["PendingQueue", "RetryCondition", "may_fit"]

#: queue order: ``WorkloadInfo.sort_key``, behind the LocalQueue's usage where admission fair sharing
#: orders the queue (``set_ranks``)
_Key = tuple[object, ...]

#: when a parked shape may fit again: every failing resource group needs one alternative (flavor)
#: where each listed ``(flavor, resource)`` has at least the listed amount available
RetryCondition = tuple[tuple[tuple[tuple[FlavorResource, int], ...], ...], ...]


def may_fit(condition: RetryCondition | None, available: Callable[[FlavorResource], int]) -> bool:
    """Whether a parked shape is worth retrying with what is ``available`` now (None: always)."""
    if condition is None:
        return True
    return all(
        any(all(available(fr) >= amount for fr, amount in alternative) for alternative in group)
        for group in condition
    )


class PendingQueue:
    """The workloads waiting in one ClusterQueue."""

    __slots__ = (
        "_awake",
        "_buckets",
        "_counts",
        "_entries",
        "_following",
        "_heap",
        "_last_pop",
        "_notices",
        "_parked",
        "_parked_keys",
        "_ranks",
        "_released",
        "_retry_when",
        "_revisited",
        "_stalled",
        "strict",
    )

    def __init__(self, *, strict: bool = False, notices: Notices | None = None) -> None:
        self.strict = strict
        #: told who is parked in which shape, so that a shape's restatement speaks for its members
        self._notices = notices
        self._heap: list[tuple[_Key, WorkloadKey]] = []
        #: workloads in the heap -> the key they were pushed with (stale heap entries differ)
        self._entries: dict[WorkloadKey, tuple[_Key, WorkloadInfo]] = {}
        self._parked: dict[WorkloadKey, WorkloadInfo] = {}
        self._parked_keys: list[_Key] = []
        #: per LocalQueue (namespace, name): how many are in the heap and how many parked, kept as they
        #: move (the queue status pass reads them every second for every ClusterQueue that changed)
        self._counts: dict[tuple[str, str], list[int]] = {}
        #: parked workloads by shape, each a heap in queue order (lazy deletion as above)
        self._buckets: dict[Hashable, list[tuple[_Key, WorkloadKey]]] = {}
        #: shapes being retried since the last wake (and not failed again)
        self._awake: set[Hashable] = set()
        #: per shape, the workload last released to the heap (``wake`` leaves an awake shape alone while
        #: it is still there)
        self._released: dict[Hashable, WorkloadKey] = {}
        #: per parked shape, the releases after which it may fit (see ``RetryCondition``)
        self._retry_when: dict[Hashable, RetryCondition | None] = {}
        #: shapes retried for real by a wake whose first failure has not been seen yet
        self._revisited: set[Hashable] = set()
        #: per revisited shape, the parked workload released behind its first (see ``pop``)
        self._following: dict[Hashable, WorkloadKey] = {}
        self._stalled: _Key | None = None
        #: the last head popped and the parked workload of its shape its pop released (see ``pop``)
        self._last_pop: tuple[WorkloadKey, WorkloadKey] | None = None
        #: per LocalQueue (namespace, name), the usage its workloads are ordered by first (admission fair
        #: sharing, ``admission_fairness``); None: queue order is the workloads' own
        self._ranks: Mapping[tuple[str, str], float] | None = None

    def _key(self, info: WorkloadInfo) -> _Key:
        ranks = self._ranks
        if ranks is None:
            return info.sort_key
        return (ranks.get((info.namespace, info.queue_name), 0.0), *info.sort_key)

    def _count(self, info: WorkloadInfo, where: int, by: int) -> None:
        """Move ``info``'s LocalQueue count ``where`` (0: in the heap, 1: parked) ``by`` one up or down."""
        lq = (info.namespace, info.queue_name)
        counts = self._counts.get(lq)
        if counts is None:
            counts = self._counts[lq] = [0, 0]
        counts[where] += by
        if counts[0] == 0 and counts[1] == 0:
            del self._counts[lq]

    @property
    def ranks(self) -> Mapping[tuple[str, str], float] | None:
        """The LocalQueue usage this queue is ordered by first (None: none; see ``set_ranks``)."""
        return self._ranks

    def set_ranks(self, ranks: Mapping[tuple[str, str], float] | None) -> None:
        """Order by LocalQueue usage first (``ranks``; a LocalQueue not in it counts 0) or, with None, by
        the workloads' own order alone; everything held is sorted again (Kueue rebuilds its heap the
        same way when LocalQueue usage moves)."""
        if ranks == self._ranks:
            return
        old_stalled = self._stalled
        stalled_key = None
        if old_stalled is not None:
            stalled_key = next((k for k, (sk, _) in self._entries.items() if sk == old_stalled), None)
        self._ranks = None if ranks is None else dict(ranks)
        self._entries = {key: (self._key(info), info) for key, (_, info) in self._entries.items()}
        self._heap = [(sort_key, key) for key, (sort_key, _) in self._entries.items()]
        heapq.heapify(self._heap)
        parked = self._parked
        self._parked_keys = sorted(self._key(info) for info in parked.values())
        for shape, bucket in self._buckets.items():
            members = {key for _, key in bucket if key in parked and parked[key].shape == shape}
            rebuilt = [(self._key(parked[key]), key) for key in members]
            heapq.heapify(rebuilt)
            self._buckets[shape] = rebuilt
        self._stalled = None
        if stalled_key is not None:
            new_key = self._entries[stalled_key][0]
            top = self._top()
            if top is not None and top[0] == new_key:
                self._stalled = new_key  # still the head: still stalled

    def __len__(self) -> int:
        return len(self._entries) + len(self._parked)

    @property
    def parked_count(self) -> int:
        """Workloads set aside until something changes (Kueue's inadmissible workloads)."""
        return len(self._parked)

    @property
    def waiting(self) -> bool:
        """Whether anything is parked or stalled (what a wake-up could return)."""
        return bool(self._buckets) or self._stalled is not None

    def __contains__(self, key: object) -> bool:
        return key in self._entries or key in self._parked

    def get(self, key: WorkloadKey) -> WorkloadInfo | None:
        """The pending workload ``key``, in the heap or parked; None when it is not in this queue."""
        entry = self._entries.get(key)
        return entry[1] if entry is not None else self._parked.get(key)

    def push(self, info: WorkloadInfo) -> None:
        """Add (or re-add after an update) a workload to the active heap."""
        self.remove(info.key)
        sort_key = self._key(info)
        self._entries[info.key] = (sort_key, info)
        self._count(info, 0, 1)
        heapq.heappush(self._heap, (sort_key, info.key))
        if self._stalled is not None and sort_key < self._stalled:
            self._stalled = None

    def remove(self, key: WorkloadKey) -> WorkloadInfo | None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._count(entry[1], 0, -1)
            if self._stalled == entry[0]:
                self._stalled = None
            return entry[1]
        info = self._parked.pop(key, None)
        if info is not None:
            self._count(info, 1, -1)
            del self._parked_keys[bisect_left(self._parked_keys, self._key(info))]
            if self._notices is not None:
                self._notices.unparked(key)
        return info

    def _top(self) -> tuple[_Key, WorkloadInfo] | None:
        heap = self._heap
        while heap:
            sort_key, key = heap[0]
            entry = self._entries.get(key)
            if entry is not None and entry[0] == sort_key:
                return entry
            heapq.heappop(heap)  # stale: removed or pushed again with another key
        return None

    def peek(self) -> WorkloadInfo | None:
        """The head the next cycle should try, or None when empty or stalled."""
        top = self._top()
        if top is None or (self._stalled is not None and top[0] == self._stalled):
            return None
        return top[1]

    def pop(self) -> WorkloadInfo | None:
        info = self.peek()
        self._last_pop = None
        if info is not None:
            heapq.heappop(self._heap)
            del self._entries[info.key]
            self._count(info, 0, -1)
            if info.shape in self._awake:
                following = self._release_next(info.shape)
                if following is not None:
                    self._last_pop = (info.key, following)
                    if info.shape in self._revisited:
                        self._following[info.shape] = following
        return info

    def park_unfit_head(
        self, available: Callable[[FlavorResource], int], *, claimed: Container[WorkloadKey] = ()
    ) -> bool:
        """Put the head back on the parked list, untried, if it was released parked and what it needs is
        not ``available`` any more (``may_fit`` of its retry condition): True when it did.

        The same as popping it and ``requeue_failed(alike=True)`` with its own condition, without the work
        of that round trip: the next of its shape stays parked instead of being released and parked again.
        A head in ``claimed`` (a preemptor holding a claim) is always tried: the room it lacks may be the
        room claimed for it, which ``available`` counts as taken until the cycle releases the claim to try
        it, so judged here it would be parked again for as long as it holds the claim.
        """
        head = self.peek()
        if head is None or self.strict or not head.parked or head.key in claimed:
            return False
        if may_fit(head.retry_when, available):
            return False
        heapq.heappop(self._heap)
        del self._entries[head.key]
        self._count(head, 0, -1)
        shape, retry_when = head.shape, head.retry_when
        if shape in self._awake:
            following = self._first_parked(shape)
            if following is None:  # as ``_release_next`` finding none: the shape's bookkeeping ends
                self._release_next(shape)
            else:  # as if released behind the head and parked again with it
                following.retry_when = retry_when
                if shape in self._revisited:
                    self._following[shape] = following.key
        self._awake.discard(shape)
        self._released.pop(shape, None)
        self._last_pop = None
        self._park(head, retry_when)
        return True

    def _first_parked(self, shape: Hashable) -> WorkloadInfo | None:
        """The first parked workload of ``shape`` (stale bucket entries on top are dropped)."""
        bucket = self._buckets.get(shape)
        parked = self._parked
        while bucket:
            sort_key, key = bucket[0]
            info = parked.get(key)
            if info is not None and self._key(info) == sort_key:
                return info
            heapq.heappop(bucket)
        return None

    def requeue_failed(
        self, info: WorkloadInfo, *, retry_when: RetryCondition | None = None, alike: bool = False
    ) -> None:
        """A popped head could not be admitted: park it (BestEffortFIFO) or stall on it (StrictFIFO).

        ``retry_when`` tells which releases of quota could make it fit (None: any release may). ``alike``:
        the rest of its shape would fail the same way now, so the next of its shape that its pop released,
        not tried yet, is parked again with it.
        """
        if self.strict:
            self.push(info)
            self._stalled = self._key(info)
            return
        self._awake.discard(info.shape)
        self._released.pop(info.shape, None)
        self._park(info, retry_when)
        last_pop, self._last_pop = self._last_pop, None
        if alike and last_pop is not None and last_pop[0] == info.key:
            entry = self._entries.get(last_pop[1])
            if entry is not None and entry[1].parked:  # released under a condition, still in the heap
                del self._entries[last_pop[1]]  # its heap entry is now stale
                self._count(entry[1], 0, -1)
                self._park(entry[1], retry_when)

    def _park(self, info: WorkloadInfo, retry_when: RetryCondition | None) -> None:
        self._retry_when[info.shape] = retry_when
        info.parked, info.retry_when = True, retry_when
        self._parked[info.key] = info
        self._count(info, 1, 1)
        sort_key = self._key(info)
        insort(self._parked_keys, sort_key)
        heapq.heappush(self._buckets.setdefault(info.shape, []), (sort_key, info.key))
        if self._notices is not None:
            self._notices.parked(info.key, (self, info.shape))

    def retry(self, key: WorkloadKey) -> bool:
        """Put one parked workload back in the heap to be tried for real, whatever its shape waits for
        (a preemptor whose targets are gone: the room it lacks is claimed for it, so ``wake`` would never
        see it available)."""
        info = self._parked.get(key)
        if info is None:
            return False
        self.remove(key)
        info.parked = False
        self.push(info)
        return True

    def requeue_retry(self, info: WorkloadInfo) -> None:
        """A popped head should be tried again in the next cycle (it failed only because of another
        admission in the same cycle). Tried for real, even when it was released parked and what it needs
        is gone again: it has been told that it no longer fits, and only a new attempt tells it why it
        waits now (``park_unfit_head`` would put it back with that message standing)."""
        info.parked = False
        self.push(info)

    def _release_next(self, shape: Hashable, *, forget_condition: bool = False) -> WorkloadKey | None:
        """Move the first parked workload of ``shape`` back to the heap (``forget_condition``: it is
        tried for real whatever it needed, because something other than usage changed)."""
        bucket = self._buckets.get(shape)
        while bucket:
            sort_key, key = heapq.heappop(bucket)
            info = self._parked.get(key)
            if info is None or self._key(info) != sort_key:
                continue  # stale
            self.remove(key)
            if forget_condition:
                info.parked = False
            self._entries[key] = (sort_key, info)
            self._count(info, 0, 1)
            heapq.heappush(self._heap, (sort_key, key))
            self._released[shape] = key
            if not bucket:
                del self._buckets[shape]
            return key
        self._buckets.pop(shape, None)
        self._released.pop(shape, None)
        self._retry_when.pop(shape, None)
        self._awake.discard(shape)
        self._revisited.discard(shape)
        self._following.pop(shape, None)
        if self._notices is not None:
            self._notices.group_emptied((self, shape))
        return None

    def wake(self, *, available: Callable[[FlavorResource], int] | None = None) -> bool:
        """Something changed that could make waiting workloads fit: retry the first of every shape.

        With ``available`` only quota was freed (nothing about flavors, quotas or namespaces changed),
        so a shape stays parked while what it needs is still not available: it could not fit.
        """
        woke = self._stalled is not None
        self._stalled = None
        for shape in list(self._buckets):
            if available is not None and shape in self._awake and self._released.get(shape) in self._entries:
                continue  # its released workload has not been tried yet; its pop releases the next
            if available is not None and not may_fit(self._retry_when.get(shape), available):
                continue
            if self._release_next(shape, forget_condition=available is None):
                self._awake.add(shape)
                if available is None:
                    self._revisited.add(shape)
                woke = True
        return woke

    def revisited_alike(
        self, info: WorkloadInfo, *, collect: bool = True
    ) -> tuple[Hashable | None, WorkloadKey | None]:
        """Who shares the outcome of ``info``, when it has just failed as the first of its shape retried by a
        wake for real (once per wake; else nobody): the group of the parked workloads of its shape (for
        ``Notices.restate_parked``), and the one released behind it that is back in the heap, untried
        (None when there is none). They would fail the same way. ``collect=False``: its outcome does not
        hold for them; the wake's first failure is seen all the same.
        """
        shape = info.shape
        if shape not in self._revisited:
            return None, None
        self._revisited.discard(shape)
        following = self._following.pop(shape, None)  # released behind it, to be put back untried
        if not collect:
            return None, None
        entry = self._entries.get(following) if following is not None else None
        return (self, shape), entry[1].key if entry is not None and entry[1].parked else None

    def parked_in(self, shape: Hashable) -> list[WorkloadKey]:
        """The parked workloads of ``shape``, in no particular order (O(parked of the shape))."""
        parked = self._parked
        return [
            key
            for sort_key, key in self._buckets.get(shape, ())
            if key in parked and self._key(parked[key]) == sort_key
        ]

    def position(self, info: WorkloadInfo) -> int:
        """1-based rank of a workload that just failed as head: parked workloads that sort before it,
        plus itself (everything still in the heap sorts after a head)."""
        return bisect_left(self._parked_keys, self._key(info)) + 1

    def __iter__(self) -> Iterator[WorkloadInfo]:
        """Every pending workload in queue order (O(n log n): for status and reports, not cycles)."""
        infos = [entry[1] for entry in self._entries.values()]
        infos.extend(self._parked.values())
        infos.sort(key=self._key)
        return iter(infos)

    def by_local_queue(self) -> dict[tuple[str, str], list[int]]:
        """Per LocalQueue (namespace, name): how many are active and how many parked (a copy)."""
        return {lq: list(counts) for lq, counts in self._counts.items()}

    def unordered(self) -> Iterator[WorkloadInfo]:
        """Every pending workload, in no particular order (O(n): for counts)."""
        yield from (entry[1] for entry in self._entries.values())
        yield from self._parked.values()

    def set_strict(self, strict: bool) -> None:
        if strict != self.strict:
            self.strict = strict
            while self._buckets:  # StrictFIFO parks nothing: every parked workload returns
                shape = next(iter(self._buckets))
                while self._release_next(shape, forget_condition=True):
                    pass
            self._awake.clear()
            self._released.clear()
            self._revisited.clear()
            self._following.clear()
            self._stalled = None
