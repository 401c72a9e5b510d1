"""Where each pending Workload's flavor search stopped, so that its next attempt resumes at the flavor after
that one instead of the first (Kueue's LastTriedFlavorIdx, kept across cycles by
FlavorFungibilityPreserveScanProgress, on by default since v0.20).

A search that stops early (``flavorFungibility`` let it stop at a flavor that fits, borrows or must
preempt) records, per pod set and resource, the index of that flavor; a search that went through the last
flavor, or found nothing, records that the next one starts over (-1, or nothing). The record is dropped
once it no longer describes the state: the Workload's shape changed, or it is more than one cycle old and
its ClusterQueue's allocatable resources moved since (a Workload of it released its quota, or its quotas
changed: Kueue's AllocatableResourceGeneration). A Workload whose record still points at flavors to try is
tried again in the next cycle rather than parked (Kueue's ``PendingFlavors`` requeue).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from kueue_webhook.core.model import WorkloadKey

__all__ = ["Scan", "ScanProgress", "next_flavor", "tried_index"]

#: per pod set (in the Workload's order), per resource: the index of the last flavor tried in its resource
#: group, -1 when the search went through the group's last flavor
Scan = tuple[Mapping[str, int], ...]


def next_flavor(scan: Scan | None, pod_set: int, resource: str, flavors: int) -> int:
    """The index at which the search for ``resource`` of pod set ``pod_set`` starts (0: the first flavor);
    ``flavors``: how many flavors its group has now."""
    if scan is None or pod_set >= len(scan):
        return 0
    start = scan[pod_set].get(resource, -1) + 1
    return start if start < flavors else 0


def tried_index(last_tried: int, flavors: int) -> int:
    """What a search that stopped at ``last_tried`` records: -1 when that was the last flavor."""
    return -1 if last_tried >= flavors - 1 else last_tried


@dataclass(frozen=True, slots=True)
class _Record:
    scan: Scan
    cluster_queue: str
    generation: int
    cycle: int
    shape: Hashable


class ScanProgress:
    """The records of the pending Workloads, the cycle count and each ClusterQueue's generation."""

    def __init__(self) -> None:
        self._records: dict[WorkloadKey, _Record] = {}
        self._generations: dict[str, int] = {}
        #: scheduling cycles that tried heads so far
        self.cycle = 0

    def __len__(self) -> int:
        return len(self._records)

    def moved(self, cluster_queue: str) -> None:
        """``cluster_queue`` can offer more than before (a Workload released its quota, or its quotas were
        set anew): searches recorded before now are outdated after a cycle."""
        self._generations[cluster_queue] = self._generations.get(cluster_queue, 0) + 1

    def resume(self, key: WorkloadKey, cluster_queue: str, shape: Hashable) -> Scan | None:
        """Where the search for ``key`` resumes in this cycle (None: at the first flavors); an outdated
        record is dropped (Kueue's lastAssignmentOutdated with the gate on)."""
        record = self._records.get(key)
        if record is None:
            return None
        outdated = (
            record.shape != shape
            or record.cluster_queue != cluster_queue
            or (self.cycle - record.cycle > 1 and self._generations.get(cluster_queue, 0) > record.generation)
        )
        if outdated:
            del self._records[key]
            return None
        return record.scan

    def record(self, key: WorkloadKey, cluster_queue: str, shape: Hashable, scan: Scan) -> None:
        """The search just done for ``key`` in this cycle; one that left no flavor untried is not kept."""
        if any(index != -1 for tried in scan for index in tried.values()):
            self._records[key] = _Record(
                scan, cluster_queue, self._generations.get(cluster_queue, 0), self.cycle, shape
            )
        else:
            self._records.pop(key, None)

    def drop(self, key: WorkloadKey) -> None:
        """Start over next time: it preempted, waits for others' preemptions, was admitted or is gone."""
        self._records.pop(key, None)

    def pending_flavors(self, key: WorkloadKey) -> bool:
        """Whether ``key``'s last search left flavors it has not tried (Kueue's ``PendingFlavors``)."""
        return key in self._records
