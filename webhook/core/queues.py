"""Pending queues: one per ClusterQueue, ordered by priority, then age, then name.

Each queue is a binary heap with lazy deletion (a removed or re-prioritised workload leaves a stale
entry that is skipped when it surfaces), so adding, removing and popping the head are O(log n) and a
scheduling cycle never touches the rest of the queue.

``BestEffortFIFO``: a head that cannot be admitted is *parked* (Kueue's "inadmissible" list) and the
next one gets its turn. ``StrictFIFO``: the head that cannot be admitted stays the head and the queue is
*stalled*: it offers no head until something happens that could change the answer. In both modes that
"something" is an explicit wake-up from the scheduler state (quota released in the cohort tree, a
ClusterQueue, Cohort or ResourceFlavor changed, namespace labels changed), so parked workloads return
immediately when the world changes and never on a timer. A workload that sorts before a stalled head
(higher priority) un-stalls the queue by becoming the new head.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Iterator

from webhook.core.model import WorkloadInfo, WorkloadKey

__all__ = ["PendingQueue"]

_Key = tuple[int, float, str]


class PendingQueue:
    """The workloads waiting in one ClusterQueue."""

    __slots__ = ("_entries", "_heap", "_parked", "_parked_keys", "_stalled", "strict")

    def __init__(self, *, strict: bool = False) -> None:
        self.strict = strict
        self._heap: list[tuple[_Key, WorkloadKey]] = []
        #: workloads in the heap -> the key they were pushed with (stale heap entries differ)
        self._entries: dict[WorkloadKey, tuple[_Key, WorkloadInfo]] = {}
        self._parked: dict[WorkloadKey, WorkloadInfo] = {}
        self._parked_keys: list[_Key] = []
        self._stalled: _Key | None = None

    def __len__(self) -> int:
        return len(self._entries) + len(self._parked)

    def __contains__(self, key: object) -> bool:
        return key in self._entries or key in self._parked

    def push(self, info: WorkloadInfo) -> None:
        """Add (or re-add after an update) a workload to the active heap."""
        self.remove(info.key)
        sort_key = info.sort_key
        self._entries[info.key] = (sort_key, info)
        heapq.heappush(self._heap, (sort_key, info.key))
        if self._stalled is not None and sort_key < self._stalled:
            self._stalled = None

    def remove(self, key: WorkloadKey) -> WorkloadInfo | None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            if self._stalled == entry[0]:
                self._stalled = None
            return entry[1]
        info = self._parked.pop(key, None)
        if info is not None:
            index = bisect_left(self._parked_keys, info.sort_key)
            del self._parked_keys[index]
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
        if info is not None:
            heapq.heappop(self._heap)
            del self._entries[info.key]
        return info

    def requeue_failed(self, info: WorkloadInfo) -> None:
        """A popped head could not be admitted: park it (BestEffortFIFO) or stall on it (StrictFIFO)."""
        if self.strict:
            self.push(info)
            self._stalled = info.sort_key
            return
        self._parked[info.key] = info
        insort(self._parked_keys, info.sort_key)

    def requeue_retry(self, info: WorkloadInfo) -> None:
        """A popped head should be tried again in the next cycle (its failure was not about quota)."""
        self.push(info)

    def wake(self) -> bool:
        """Something changed that could make waiting workloads fit: return them all to the heap."""
        woke = bool(self._parked) or self._stalled is not None
        self._stalled = None
        if self._parked:
            for info in self._parked.values():
                self._entries[info.key] = (info.sort_key, info)
                self._heap.append((info.sort_key, info.key))
            heapq.heapify(self._heap)
            self._parked.clear()
            self._parked_keys.clear()
        return woke

    def position(self, info: WorkloadInfo) -> int:
        """1-based rank of a workload that just failed as head: parked workloads that sort before it,
        plus itself (everything still in the heap sorts after a head)."""
        return bisect_left(self._parked_keys, info.sort_key) + 1

    def __iter__(self) -> Iterator[WorkloadInfo]:
        """Every pending workload in queue order (O(n log n): for status and reports, not cycles)."""
        infos = [entry[1] for entry in self._entries.values()]
        infos.extend(self._parked.values())
        infos.sort(key=lambda i: i.sort_key)
        return iter(infos)

    def set_strict(self, strict: bool) -> None:
        if strict != self.strict:
            self.strict = strict
            self.wake()
