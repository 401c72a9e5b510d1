"""Preemption for topology: a preemptor placed by topology fits only where its pods fit a domain.

Kueue's preemptor checks, after every candidate it simulates removing, that the preemptor fits both its
quota and its topology (``workloadFits`` re-runs the TAS placement on the snapshot without the removed
workloads). :class:`TopologyFit` is that second check for the preemption searches
(:mod:`kueue_webhook.core.preemption`, classical, and :mod:`kueue_webhook.core.fair_preemption`): a
removed candidate's TAS usage is set aside on the capacity trees, the preemptor's TAS pod sets are placed
again, and everything is put back when the search is done. So the usual candidates (the ClusterQueue's
own under ``withinClusterQueue``, borrowers of the cohort under ``reclaimWithinCohort`` and
``borrowWithinCohort``) are tried in the usual order, and the victims are the fewest whose room makes the
preemptor fit one domain of its required level.
"""

from __future__ import annotations

from collections.abc import Sequence

from kueue_webhook.core.tas.assign import topology_fits
from kueue_webhook.core.tas.block import TopologyPodSet
from kueue_webhook.core.tas.capacity import TopologyCapacity, Usage

__all__ = ["TopologyFit"]


class TopologyFit:
    """Whether a preemptor's TAS pod sets place once some workloads' TAS usage is set aside (a
    ``preemption.TopologyCheck``). Only what ``remove`` took is put back by ``restore``."""

    __slots__ = ("_aside", "pod_sets", "tas")

    def __init__(self, tas: TopologyCapacity, pod_sets: Sequence[TopologyPodSet]) -> None:
        self.tas = tas
        self.pod_sets = tuple(pod_sets)
        self._aside: dict[str, list[tuple[str, tuple[str, ...], Usage]]] = {}

    def remove(self, key: str) -> None:
        if key not in self._aside:
            self._aside[key] = self.tas.set_aside(key)

    def restore(self, key: str) -> None:
        charges = self._aside.pop(key, None)
        if charges:
            self.tas.put_back(key, charges)

    def fits(self) -> bool:
        return topology_fits(self.tas, self.pod_sets)
