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
from dataclasses import replace
from typing import TYPE_CHECKING

from kueue_webhook.api.objects import ResourceFlavor
from kueue_webhook.api.topology_assignment import Domain as AssignedDomain
from kueue_webhook.api.topology_assignment import TopologyAssignmentError, decode, encode
from kueue_webhook.core.assignment import Assignment, CompiledQueue, Mode, PodSetResult
from kueue_webhook.core.tas.block import TopologyBlock, TopologyPodSet
from kueue_webhook.core.tas.capacity import ONE_POD, PODS, FlavorTree, TopologyCapacity
from kueue_webhook.core.tas.placement import Placement, PodSetNeeds

if TYPE_CHECKING:
    from kueue_webhook.core.model import PodSetInfo, WorkloadInfo

__all__ = [
    "REASON_TOPOLOGY",
    "place_topologies",
    "placements_still_fit",
    "tas_only",
    "tas_problem",
    "topology_fits",
]

REASON_TOPOLOGY = "TopologyPlacementFailed"


def topology_fits(tas: TopologyCapacity, pod_sets: Sequence[TopologyPodSet]) -> bool:
    """Whether every pod set places on its flavor's tree as it is now, each seeing the ones before it
    (the trees are left as they were)."""
    held: list[tuple[TopologyPodSet, FlavorTree, tuple[Placement, Placement | None]]] = []
    try:
        for pod_set in pod_sets:
            tree = tas.trees.get(pod_set.flavor)
            if tree is None:
                return False
            placed = pod_set.place(tree)
            if placed[0].failure:
                return False
            if len(pod_sets) > 1:
                pod_set.charge(tree, placed, 1)
                held.append((pod_set, tree, placed))
        return True
    finally:
        for pod_set, tree, placed in held:
            pod_set.charge(tree, placed, -1)


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


def place_topologies(
    assignment: Assignment,
    workload: WorkloadInfo,
    flavors: Mapping[str, ResourceFlavor],
    tas: TopologyCapacity,
) -> Assignment:
    """Give each TAS pod set of a quota assignment its topology assignment, or make the assignment wait."""
    if assignment.mode is Mode.NO_FIT:
        return assignment
    singles: list[tuple[PodSetResult, TopologyPodSet, PodSetInfo]] = []
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
            affinity_terms=pod_set.affinity_terms,
        )
        singles.append((result, TopologyPodSet(flavor.name, needs, pod_set.topology is None), pod_set))
    if not singles:
        return assignment
    wanted = _grouped(singles)
    held: list[tuple[TopologyPodSet, FlavorTree, tuple[Placement, Placement | None]]] = []
    blocked: TopologyPodSet | None = None
    try:
        for results, tas_pod_set in wanted:
            tree = tas.trees[tas_pod_set.flavor]
            if assignment.mode is Mode.FIT:
                placed = tas_pod_set.place(tree)
                if not placed[0].failure:
                    for result, placement in zip(results, placed, strict=False):
                        if placement is not None:
                            result.topology = encode(
                                placement.levels, [AssignedDomain(v, c) for v, c in placement.domains]
                            )
                    tas_pod_set.charge(tree, placed, 1)
                    held.append((tas_pod_set, tree, placed))
                    continue
                failure = placed[0].failure
            else:
                failure = ""
            empty = tas_pod_set.place(tree, empty=True)[0]
            if empty.failure:
                for result in results:
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
                for result in results:
                    result.mode = min(result.mode, Mode.NO_CANDIDATES)
                    result.reasons = [failure]
                assignment.mode = min(assignment.mode, Mode.NO_CANDIDATES)
                assignment.shortfalls = None
                if blocked is None:
                    blocked = tas_pod_set
        if assignment.mode is not Mode.FIT:
            # a preemption search places every TAS pod set again after each simulated removal
            assignment.topology_block = TopologyBlock(
                blocked.flavor if blocked is not None else "",
                blocked.needs if blocked is not None else None,
                blocked.implied if blocked is not None else False,
                tuple(tas_pod_set for _, tas_pod_set in wanted),
                frozenset(
                    (tas_pod_set.flavor, resource)
                    for results, tas_pod_set in wanted
                    for result in results
                    for resource, flavor in result.flavors.items()
                    if flavor == tas_pod_set.flavor
                ),
            )
        return assignment
    finally:
        for held_pod_set, held_tree, held_placed in held:
            held_pod_set.charge(held_tree, held_placed, -1)


def _grouped(
    singles: list[tuple[PodSetResult, TopologyPodSet, PodSetInfo]],
) -> list[tuple[tuple[PodSetResult, ...], TopologyPodSet]]:
    """The TAS pod sets in order, the two pod sets of a group (``podSetGroupName``) on one flavor as one
    unit: the workers, and the leader of one pod (the second pod set unless it has more pods than the
    first, as Kueue's findLeaderAndWorkers picks them). A group Kueue's validation refuses (not two pod
    sets, slices, no one-pod member, two flavors) is placed pod set by pod set."""
    members: dict[str, list[int]] = {}
    for index, (_, _, pod_set) in enumerate(singles):
        group = pod_set.topology.group if pod_set.topology is not None else None
        if group:
            members.setdefault(group, []).append(index)
    if not members:
        return [((result,), tas_pod_set) for result, tas_pod_set, _ in singles]
    out: list[tuple[tuple[PodSetResult, ...], TopologyPodSet]] = []
    merged: set[int] = set()
    for index, (result, tas_pod_set, pod_set) in enumerate(singles):
        if index in merged:
            continue
        group = pod_set.topology.group if pod_set.topology is not None else None
        indexes = members.get(group or "", [])
        if len(indexes) == 2 and indexes[0] == index:
            first, second = singles[indexes[0]], singles[indexes[1]]
            workers, leader = (second, first) if second[0].count > first[0].count else (first, second)
            if (
                leader[0].count == 1
                and workers[1].flavor == leader[1].flavor
                and not any(m[1].needs.request and m[1].needs.request.slice_level for m in (first, second))
            ):
                unit = replace(workers[1], leader=leader[1].needs)
                out.append(((workers[0], leader[0]), unit))
                merged.add(indexes[1])
                continue
        out.append(((result,), tas_pod_set))
    return out


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
