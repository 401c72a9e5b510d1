"""The topology step of flavor assignment: once quota has chosen the flavors, place every pod set that
landed on a TAS flavor, or turn the assignment into the wait Kueue reports.

It follows Kueue's flavor assigner: a pod set asks for TAS explicitly (its ``topologyRequest``) or
implicitly (no request, on a ClusterQueue whose flavors are all TAS flavors, placed as unconstrained at the
lowest level). A flavor without a topology is refused to an explicit request ("does not support
TopologyAwareScheduling") and a TAS flavor to a pod set that asks for none on a mixed ClusterQueue
("supports only TopologyAwareScheduling"). When quota fits but the topology does not, the pod set waits:
``WaitingForQuota`` if it would fit on the flavor's nodes with no TAS workload on them (Kueue's Preempt
mode), ``TopologyPlacementFailed`` (NoFit) if it would not fit even then. Pod sets of one workload on the
same flavor see each other's pods: each placement is charged to the tree until the step ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kueue_webhook.api.objects import ResourceFlavor
from kueue_webhook.api.topology_assignment import Domain as AssignedDomain
from kueue_webhook.api.topology_assignment import encode
from kueue_webhook.core.tas.capacity import ONE_POD, PODS, FlavorTree, TopologyCapacity
from kueue_webhook.core.tas.placement import Placement, PodSetNeeds, place

if TYPE_CHECKING:
    from kueue_webhook.core.flavors import Assignment, CompiledQueue
    from kueue_webhook.core.model import PodSetInfo, WorkloadInfo

__all__ = ["REASON_TOPOLOGY", "TopologyBlock", "place_topologies", "tas_only", "tas_problem"]

REASON_TOPOLOGY = "TopologyPlacementFailed"


@dataclass(frozen=True, slots=True)
class TopologyBlock:
    """A pod set that fits quota and would fit its flavor's nodes without some TAS workloads: what a
    preemption search must make room for (Kueue's Preempt mode for TAS)."""

    flavor: str
    needs: PodSetNeeds
    implied: bool


def tas_only(queue: CompiledQueue, flavors: Mapping[str, ResourceFlavor]) -> bool:
    """Whether every flavor of the ClusterQueue names a topology (Kueue's IsTASOnly)."""
    names = [name for _, group in queue.groups for name in group]
    return bool(names) and all(
        (flavor := flavors.get(name)) is not None and bool(flavor.topology_name) for name in names
    )


def tas_problem(
    pod_set: PodSetInfo, flavor: ResourceFlavor, queue: CompiledQueue, flavors: Mapping[str, ResourceFlavor]
) -> str:
    """Why ``flavor`` cannot serve ``pod_set`` for topology reasons ("" when it can)."""
    explicit = pod_set.topology is not None
    if not explicit and not flavor.topology_name:
        return ""
    if explicit:
        if not flavor.topology_name:
            return f'Flavor "{flavor.name}" does not support TopologyAwareScheduling'
        return ""
    if tas_only(queue, flavors):
        return ""  # implied TAS
    return f'Flavor "{flavor.name}" supports only TopologyAwareScheduling'


def _charge(tree: FlavorTree, placement: Placement, per_pod: Mapping[str, int], sign: int) -> None:
    for values, count in placement.domains:
        usage = {resource: amount * count for resource, amount in per_pod.items()}
        usage[PODS] = usage.get(PODS, 0) + ONE_POD * count
        tree.charge(values, usage, sign)


def place_topologies(
    assignment: Assignment,
    workload: WorkloadInfo,
    flavors: Mapping[str, ResourceFlavor],
    tas: TopologyCapacity,
) -> Assignment:
    """Give each TAS pod set of a quota assignment its topology assignment, or make the assignment wait."""
    from kueue_webhook.core.flavors import Mode

    if assignment.mode is Mode.NO_FIT:
        return assignment
    held: list[tuple[FlavorTree, Placement, Mapping[str, int]]] = []
    try:
        for pod_set, result in zip(workload.pod_sets, assignment.pod_sets, strict=False):
            if result.count == 0:
                continue
            named = sorted(
                {f for f in result.flavors.values() if (fl := flavors.get(f)) and fl.topology_name}
            )
            missing = [name for name in named if name not in tas.trees]
            if missing:
                # its Topology is not there (yet): Kueue's TAS cache has no information for the flavor
                result.mode = Mode.NO_FIT
                result.reasons = [f'Flavor "{missing[0]}" information missing in TAS cache']
                assignment.mode = Mode.NO_FIT
                assignment.no_fit_reason = REASON_TOPOLOGY
                assignment.shortfalls = None
                return assignment
            trees = {name: tas.trees[name] for name in named}
            if len(trees) != 1:
                continue
            flavor_name, tree = next(iter(trees.items()))
            flavor = flavors[flavor_name]
            per_pod = dict(pod_set.requests)
            needs = PodSetNeeds(
                result.count,
                per_pod,
                pod_set.topology,
                tolerations=(*pod_set.tolerations, *flavor.tolerations),
                node_selector=pod_set.node_selector,
            )
            implied = pod_set.topology is None
            if assignment.mode is Mode.FIT:
                placement = place(tree, needs, implied=implied)
                if not placement.failure:
                    result.topology = encode(
                        placement.levels, [AssignedDomain(v, c) for v, c in placement.domains]
                    )
                    _charge(tree, placement, per_pod, 1)
                    held.append((tree, placement, per_pod))
                    continue
                failure = placement.failure
            else:
                failure = ""
            empty = place(tree, needs, implied=implied, empty=True)
            if empty.failure:
                result.mode = Mode.NO_FIT
                result.reasons = [empty.failure if assignment.mode is not Mode.FIT else failure]
                assignment.mode = Mode.NO_FIT
                assignment.no_fit_reason = REASON_TOPOLOGY
                assignment.shortfalls = None
                return assignment
            if failure:
                # fits on the flavor's nodes once TAS workloads leave: Kueue's Preempt mode; the cycle
                # looks for those workloads in the ClusterQueue (``tas.preemption``), else it waits
                result.mode = min(result.mode, Mode.NO_CANDIDATES)
                result.reasons = [failure]
                assignment.mode = min(assignment.mode, Mode.NO_CANDIDATES)
                assignment.shortfalls = None
                if assignment.topology_block is None:
                    assignment.topology_block = TopologyBlock(flavor_name, needs, implied)
        return assignment
    finally:
        for held_tree, held_placement, held_requests in held:
            _charge(held_tree, held_placement, held_requests, -1)
