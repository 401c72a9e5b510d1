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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kueue_webhook.api.objects import ResourceFlavor
from kueue_webhook.api.topology_assignment import Domain as AssignedDomain
from kueue_webhook.api.topology_assignment import TopologyAssignmentError, decode, encode
from kueue_webhook.core.tas.capacity import ONE_POD, PODS, FlavorTree, TopologyCapacity
from kueue_webhook.core.tas.placement import Placement, PodSetNeeds, place

if TYPE_CHECKING:
    from kueue_webhook.core.flavors import Assignment, CompiledQueue, PodSetResult
    from kueue_webhook.core.model import PodSetInfo, WorkloadInfo

__all__ = [
    "REASON_TOPOLOGY",
    "TopologyBlock",
    "TopologyPodSet",
    "place_topologies",
    "placements_still_fit",
    "tas_only",
    "tas_problem",
    "topology_fits",
]

REASON_TOPOLOGY = "TopologyPlacementFailed"


@dataclass(frozen=True, slots=True)
class TopologyPodSet:
    """One pod set of a workload as its flavor's topology sees it: what a preemption search places again
    after each simulated removal."""

    flavor: str
    needs: PodSetNeeds
    implied: bool


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


def topology_fits(tas: TopologyCapacity, pod_sets: Sequence[TopologyPodSet]) -> bool:
    """Whether every pod set places on its flavor's tree as it is now, each seeing the ones before it
    (the trees are left as they were)."""
    held: list[tuple[FlavorTree, Placement, Mapping[str, int]]] = []
    try:
        for pod_set in pod_sets:
            tree = tas.trees.get(pod_set.flavor)
            if tree is None:
                return False
            placement = place(tree, pod_set.needs, implied=pod_set.implied)
            if placement.failure:
                return False
            if len(pod_sets) > 1:
                _charge(tree, placement, pod_set.needs.requests, 1)
                held.append((tree, placement, pod_set.needs.requests))
        return True
    finally:
        for tree, placement, requests in held:
            _charge(tree, placement, requests, -1)


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
    wanted: list[tuple[PodSetResult, TopologyPodSet]] = []
    for pod_set, result in zip(workload.pod_sets, assignment.pod_sets, strict=False):
        if result.count == 0:
            continue
        named = sorted({f for f in result.flavors.values() if (fl := flavors.get(f)) and fl.topology_name})
        missing = [name for name in named if name not in tas.trees]
        if missing:
            # its Topology is not there (yet): Kueue's TAS cache has no information for the flavor
            result.mode = Mode.NO_FIT
            result.reasons = [f'Flavor "{missing[0]}" information missing in TAS cache']
            assignment.mode = Mode.NO_FIT
            assignment.no_fit_reason = REASON_TOPOLOGY
            assignment.shortfalls = None
            return assignment
        if len(named) != 1:
            continue
        flavor = flavors[named[0]]
        needs = PodSetNeeds(
            result.count,
            dict(pod_set.requests),
            pod_set.topology,
            tolerations=(*pod_set.tolerations, *flavor.tolerations),
            node_selector=pod_set.node_selector,
        )
        wanted.append((result, TopologyPodSet(flavor.name, needs, pod_set.topology is None)))
    if not wanted:
        return assignment
    held: list[tuple[FlavorTree, Placement, Mapping[str, int]]] = []
    blocked: TopologyPodSet | None = None
    try:
        for result, tas_pod_set in wanted:
            tree, needs, implied = tas.trees[tas_pod_set.flavor], tas_pod_set.needs, tas_pod_set.implied
            if assignment.mode is Mode.FIT:
                placement = place(tree, needs, implied=implied)
                if not placement.failure:
                    result.topology = encode(
                        placement.levels, [AssignedDomain(v, c) for v, c in placement.domains]
                    )
                    _charge(tree, placement, needs.requests, 1)
                    held.append((tree, placement, needs.requests))
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
                assignment.topology_block = None
                return assignment
            if failure:
                # fits on the flavor's nodes once TAS workloads leave: Kueue's Preempt mode; the cycle
                # looks for those workloads (``tas.preemption``), else it waits
                result.mode = min(result.mode, Mode.NO_CANDIDATES)
                result.reasons = [failure]
                assignment.mode = min(assignment.mode, Mode.NO_CANDIDATES)
                assignment.shortfalls = None
                if blocked is None:
                    blocked = tas_pod_set
        if assignment.mode is not Mode.FIT:
            # a preemption search places every TAS pod set again after each simulated removal
            pod_sets = tuple(tas_pod_set for _, tas_pod_set in wanted)
            assignment.topology_block = TopologyBlock(
                blocked.flavor if blocked is not None else "",
                blocked.needs if blocked is not None else None,
                blocked.implied if blocked is not None else False,
                pod_sets,
                frozenset(
                    (tas_pod_set.flavor, resource)
                    for result, tas_pod_set in wanted
                    for resource, flavor in result.flavors.items()
                    if flavor == tas_pod_set.flavor
                ),
            )
        return assignment
    finally:
        for held_tree, held_placement, held_requests in held:
            _charge(held_tree, held_placement, held_requests, -1)


def placements_still_fit(assignment: Assignment, workload: WorkloadInfo, tas: TopologyCapacity) -> bool:
    """Whether the domains an assignment's pod sets were placed in still have the room for them (Kueue's
    TAS check in ``Fits``): an admission earlier in the same cycle may have taken it since."""
    wanted: dict[tuple[str, tuple[str, ...]], dict[str, int]] = {}
    for pod_set, result in zip(workload.pod_sets, assignment.pod_sets, strict=False):
        if result.topology is None:
            continue
        flavor = next((f for f in sorted(set(result.flavors.values())) if f in tas.trees), None)
        if flavor is None:
            return False
        try:
            domains = decode(result.topology)
        except TopologyAssignmentError:
            return False
        for domain in domains:
            usage = wanted.setdefault((flavor, domain.values), {})
            for resource, amount in pod_set.requests:
                usage[resource] = usage.get(resource, 0) + amount * domain.count
            usage[PODS] = usage.get(PODS, 0) + ONE_POD * domain.count
    for (flavor, values), usage in wanted.items():
        leaf = tas.trees[flavor].leaf_by_values(values)
        if leaf is None or any(leaf.free.get(resource, 0) < amount for resource, amount in usage.items()):
            return False
    return True
