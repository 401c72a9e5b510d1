"""A TAS pod set as its flavor's tree sees it, and the block a workload meets when its quota fits but its
topology does not: what flavor assignment hands on to a preemption search. Apart from the topology step so
that an ``Assignment`` (``core.assignment``) can carry a block without importing the step that fills it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kueue_webhook.core.tas.capacity import ONE_POD, PODS, FlavorTree
from kueue_webhook.core.tas.group_placement import place_group
from kueue_webhook.core.tas.placement import Placement, PodSetNeeds, place

__all__ = ["TopologyBlock", "TopologyPodSet", "charge_placement"]


@dataclass(frozen=True, slots=True)
class TopologyPodSet:
    """One pod set of a workload as its flavor's topology sees it, or a pod-set group (workers in ``needs``
    and their one-pod ``leader``, placed together: :mod:`.group_placement`): what the topology step places
    and a preemption search places again after each simulated removal."""

    flavor: str
    needs: PodSetNeeds
    implied: bool
    leader: PodSetNeeds | None = None

    def place(self, tree: FlavorTree, *, empty: bool = False) -> tuple[Placement, Placement | None]:
        """The placement of the pod set (of the workers and of the leader for a group)."""
        if self.leader is None:
            return place(tree, self.needs, implied=self.implied, empty=empty), None
        return place_group(tree, self.needs, self.leader, implied=self.implied, empty=empty)

    def charge(self, tree: FlavorTree, placed: tuple[Placement, Placement | None], sign: int) -> None:
        charge_placement(tree, placed[0], self.needs.requests, sign)
        if self.leader is not None and placed[1] is not None:
            charge_placement(tree, placed[1], self.leader.requests, sign)


@dataclass(frozen=True, slots=True)
class TopologyBlock:
    """A workload whose quota fits (or would, with preemption) and whose TAS pod sets would fit their
    flavors' nodes without some TAS workloads: what a preemption search must make room for (Kueue's
    Preempt mode for TAS). ``flavor``/``needs``/``implied`` name the first pod set that does not fit now
    (none when quota is what is short); ``pod_sets`` are every TAS pod set of the workload, in order;
    ``frs`` the flavor/resources of those pod sets (Kueue's frsNeedPreemption when TAS is what is short)."""

    flavor: str
    needs: PodSetNeeds | None
    implied: bool
    pod_sets: tuple[TopologyPodSet, ...] = ()
    frs: frozenset[tuple[str, str]] = frozenset()


def charge_placement(tree: FlavorTree, placement: Placement, per_pod: Mapping[str, int], sign: int) -> None:
    """Add (``sign`` 1) or take back (-1) a placement's pods on the tree, each domain by its pod count."""
    for values, count in placement.domains:
        usage = {resource: amount * count for resource, amount in per_pod.items()}
        usage[PODS] = usage.get(PODS, 0) + ONE_POD * count
        tree.charge(values, usage, sign)
