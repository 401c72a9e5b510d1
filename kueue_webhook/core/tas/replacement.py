"""A new place for the pods of a failed node: Kueue's findReplacementAssignment
(pkg/cache/scheduler/tas_flavor_snapshot.go), on the capacity tree of :mod:`.capacity`.

An admitted Workload whose topology assignment names a node that failed (``status.unhealthyNodes``) keeps
its other pods where they run; only the pods assigned to the failed node move. As in Kueue:

- the failed node's domain is taken out of the assignment and its pod count is what must be placed again;
- an assignment naming a node the tree no longer has (another node gone or not Ready) cannot be repaired;
- a ``required`` pod set must stay in its domain of the required level: the replacement is searched only
  in the domain holding the rest of its pods (anywhere when the failed node held them all); ``preferred``
  and ``unconstrained`` pod sets search the whole flavor with their own request;
- the replacement's domains are merged into what is left, and the result replaces the topology assignment.

The tree already counts the Workload's remaining pods (its admission is charged) and no longer holds the
failed node, so the search sees exactly the room left. A pod set with slices is placed without its slice
constraint when the pods to move are not a whole number of slices; with multi-layer slices, with the
outermost layer whose slices they still make up (and the layers inside it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kueue_webhook.api.objects import PodSetAssignment, ResourceFlavor
from kueue_webhook.api.topology_assignment import Domain as AssignedDomain
from kueue_webhook.api.topology_assignment import TopologyAssignmentError, decode, encode
from kueue_webhook.core.model import PodSetInfo, WorkloadInfo
from kueue_webhook.core.tas.block import charge_placement
from kueue_webhook.core.tas.capacity import Domain, FlavorTree, TopologyCapacity
from kueue_webhook.core.tas.placement import Placement, PodSetNeeds, place

__all__ = ["NoReplacement", "find_replacement"]

JSON = dict[str, Any]
_NOT_FOUND = "cannot find replacement assignment for unhealthy node: {}"


@dataclass(frozen=True, slots=True)
class NoReplacement:
    """Why no node could take the failed node's pods (Kueue then evicts, TASFailedNodeReplacementFailFast)."""

    reason: str


def _required_domain(tree: FlavorTree, remaining: list[AssignedDomain], level_key: str) -> Domain | None:
    """The domain of level ``level_key`` holding the first remaining domain (Kueue's
    requiredReplacementDomain)."""
    if not remaining or level_key not in tree.levels:
        return None
    leaf = tree.leaf_by_values(remaining[0].values)
    if leaf is None:
        return None
    domain = leaf
    while len(domain.values) > tree.levels.index(level_key) + 1 and domain.parent is not None:
        domain = domain.parent
    return domain


def _replace_in_pod_set(
    tree: FlavorTree,
    pod_set: PodSetInfo,
    flavor: ResourceFlavor,
    topology: JSON,
    node: str,
    held: list[tuple[FlavorTree, Placement, Mapping[str, int]]],
) -> JSON | NoReplacement:
    try:
        domains = decode(dict(topology))
    except TopologyAssignmentError as exc:
        return NoReplacement(str(exc))
    levels = tuple(str(level) for level in topology.get("levels") or ())
    moving = sum(domain.count for domain in domains if domain.values[-1] == node)
    remaining = [domain for domain in domains if domain.values[-1] != node]
    stale = next((d for d in remaining if tree.leaf_by_values(d.values) is None), None)
    if stale is not None:
        return NoReplacement(
            "Cannot replace the node, because the existing topologyAssignment is invalid, as it contains "
            f"the stale domain {stale.values[0]}"
        )
    request = pod_set.topology
    within = None
    if request is not None and request.required and remaining:
        within = _required_domain(tree, remaining, request.required)
    if request is not None and request.slice_level and request.slice_size and moving % request.slice_size:
        # multi-layer slices: the outermost layer whose slices the moved pods still make up, with the
        # layers inside it; else no slice constraint
        layers = request.slice_layers
        kept = next(
            (index for index, (_, size) in enumerate(layers) if size > 0 and moving % size == 0), None
        )
        if kept is not None:
            request = replace(
                request, slice_level=layers[kept][0], slice_size=layers[kept][1], slice_layers=layers[kept:]
            )
        else:
            alone = not request.required and not request.preferred
            request = replace(
                request,
                slice_level=None,
                slice_size=None,
                slice_layers=(),
                unconstrained=request.unconstrained or alone,
            )
    needs = PodSetNeeds(
        moving,
        dict(pod_set.requests),
        request,
        tolerations=(*pod_set.tolerations, *flavor.tolerations),
        node_selector=pod_set.node_selector,
        affinity_terms=pod_set.affinity_terms,
    )
    placement = place(tree, needs, implied=pod_set.topology is None, within=within)
    if placement.failure or not placement.domains or placement.levels != levels:
        return NoReplacement(placement.failure or _NOT_FOUND.format(node))
    merged: dict[tuple[str, ...], int] = {}
    for domain in remaining:
        merged[domain.values] = merged.get(domain.values, 0) + domain.count
    for values, count in placement.domains:
        merged[values] = merged.get(values, 0) + count
    # held while the next pod set is searched, so two pod sets never take the same room
    charge_placement(tree, placement, needs.requests, 1)
    held.append((tree, placement, needs.requests))
    return encode(levels, [AssignedDomain(values, count) for values, count in sorted(merged.items())])


def find_replacement(
    info: WorkloadInfo, node: str, tas: TopologyCapacity, flavors: Mapping[str, ResourceFlavor]
) -> dict[str, JSON] | NoReplacement | None:
    """The new ``topologyAssignment`` of every pod set of ``info`` whose assignment names ``node``, by pod
    set name, or why there is none; None when its flavor's topology is not known here."""
    admission = info.admission
    if admission is None:
        return NoReplacement("the workload is not admitted")
    pod_sets = {pod_set.name: pod_set for pod_set in info.pod_sets}
    held: list[tuple[FlavorTree, Placement, Mapping[str, int]]] = []
    try:
        return _replace_all(admission.pod_set_assignments, pod_sets, node, tas, flavors, held)
    finally:
        for tree, placement, requests in held:
            charge_placement(tree, placement, requests, -1)


def _replace_all(
    assignments: Sequence[PodSetAssignment],
    pod_sets: Mapping[str, PodSetInfo],
    node: str,
    tas: TopologyCapacity,
    flavors: Mapping[str, ResourceFlavor],
    held: list[tuple[FlavorTree, Placement, Mapping[str, int]]],
) -> dict[str, JSON] | NoReplacement | None:
    out: dict[str, JSON] = {}
    for assignment in assignments:
        topology = assignment.topology_assignment
        if topology is None:
            continue
        try:
            named = any(domain.values[-1] == node and domain.count > 0 for domain in decode(dict(topology)))
        except TopologyAssignmentError:
            continue
        if not named:
            continue
        flavor_name = next((f for f in sorted(set(assignment.flavors.values())) if tas.topology_of(f)), None)
        tree = tas.tree(flavor_name) if flavor_name is not None else None
        pod_set = pod_sets.get(assignment.name)
        if flavor_name is None or tree is None or pod_set is None:
            # no capacity view of its flavor here (its Topology not there, TAS off): no answer, the
            # Workload waits for the node or a second failure rather than being evicted on no evidence
            return None
        found = _replace_in_pod_set(tree, pod_set, flavors[flavor_name], dict(topology), node, held)
        if isinstance(found, NoReplacement):
            return found
        out[assignment.name] = found
    if not out:
        return NoReplacement(_NOT_FOUND.format(node))
    return out
