"""Where one pod set fits in a flavor's topology: Kueue's TAS placement algorithm, on the tree of
:mod:`.capacity`.

Three phases, as in Kueue's TASFlavorSnapshot.findTopologyAssignment (KEP 2724):

1. count how many pods (and slices) each domain can take: a leaf by its free capacity divided by the
   per-pod requests (plus one ``pods``), leaving out nodes whose taints the pods do not tolerate or whose
   labels their ``nodeSelector`` contradicts; an inner domain by the sum of its children;
2. find the level and the domains: at the requested level, the domain that holds every pod (or slice) with
   the least room to spare (BestFit). ``required`` fails there with Kueue's message; ``preferred`` moves up
   one level at a time and, at the top, spreads over as few domains as possible, largest first;
   ``unconstrained`` (and a pod set without a request on a TAS-only ClusterQueue) spreads at the lowest
   level straight away;
3. walk down to the leaves, at each level filling the largest children first and the last one BestFit, so
   the pods land on as few domains as possible at every level.

The result is the list of leaf domains with their pod counts, which the caller encodes as the Workload's
``topologyAssignment``. Multi-layer slices (``podsetSliceRequiredTopologyConstraints``) add inner layers:
below the outermost slice level every domain counts and takes whole inner slices of its children's pods,
down to the innermost layer's level. A pod-set group (a leader pod set placed with its workers) is placed
by :mod:`.group_placement`. Kueue's balanced placement and the LeastFreeCapacity profile (both behind Kueue
feature gates that are off by default) are not implemented.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kueue_webhook.api.nodes import NodeView
from kueue_webhook.api.objects.flavors import Taint
from kueue_webhook.api.topology_request import TopologyRequest
from kueue_webhook.core.node_affinity import Term, node_matches
from kueue_webhook.core.tas.capacity import ONE_POD, PODS, Domain, FlavorTree

__all__ = ["Placement", "PodSetNeeds", "place"]


@dataclass(frozen=True, slots=True)
class PodSetNeeds:
    """What one pod set asks of a flavor's topology."""

    count: int
    #: per-pod requests, nano-units (``pods`` is added here)
    requests: Mapping[str, int]
    request: TopologyRequest | None
    #: tolerations of the pod template and of the flavor
    tolerations: Sequence[Mapping[str, Any]] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    #: the pod template's required node affinity (``node_affinity``): nodes it rules out take no pod
    affinity_terms: tuple[Term, ...] = ()

    @property
    def filters_nodes(self) -> bool:
        """Whether anything of the pod set rules nodes out before their free resources are counted
        (taints are the nodes' own, checked besides)."""
        return bool(self.node_selector or self.affinity_terms)


@dataclass(frozen=True, slots=True)
class Placement:
    """A pod set's place: the levels named and, per domain, its values at those levels and its pods.
    ``failure`` is Kueue's message when the pod set does not fit (then ``domains`` is empty)."""

    levels: tuple[str, ...] = ()
    domains: tuple[tuple[tuple[str, ...], int], ...] = ()
    failure: str = ""


@dataclass(slots=True)
class _Exclusions:
    """Why leaves took no pod (Kueue's tasExclusionStats), for the failure message."""

    total: int = 0
    node_selector: int = 0
    affinity: int = 0
    taints: dict[str, int] = field(default_factory=dict)
    resources: dict[str, int] = field(default_factory=dict)

    def text(self) -> str:
        reasons = []
        if self.node_selector:
            reasons.append(f"nodeSelector: {self.node_selector}")
        if self.affinity:
            reasons.append(f"affinity: {self.affinity}")
        reasons += [f'taint "{taint}": {n}' for taint, n in sorted(self.taints.items())]
        reasons += [f'resource "{resource}": {n}' for resource, n in sorted(self.resources.items())]
        if not reasons:
            return ""
        return f". Total nodes: {self.total}; excluded: {', '.join(sorted(reasons))}"


def _tolerated(taint: Taint, tolerations: Sequence[Mapping[str, Any]]) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect") or ""
        if effect and effect != taint.effect:
            continue
        key = toleration.get("key") or ""
        if key and key != taint.key:
            continue
        if (toleration.get("operator") or "Equal") == "Exists":
            return True
        if key and (toleration.get("value") or "") == taint.value:
            return True
    return False


def _node_excluded(node: NodeView, needs: PodSetNeeds, stats: _Exclusions) -> bool:
    for taint in node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not _tolerated(taint, needs.tolerations):
            stats.taints[str(taint)] = stats.taints.get(str(taint), 0) + 1
            return True
    labels = node.labels
    if any(labels.get(key) != value for key, value in needs.node_selector.items()):
        stats.node_selector += 1
        return True
    if needs.affinity_terms and not node_matches(labels, node.name, needs.affinity_terms):
        stats.affinity += 1
        return True
    return False


def _fill_counts(
    tree: FlavorTree,
    levels: list[list[Domain]],
    needs: PodSetNeeds,
    requests: Mapping[str, int],
    slice_level: int,
    slice_size: int,
    stats: _Exclusions,
    empty: bool,
    skipped: set[int],
    inner: Mapping[int, int] | None = None,
) -> None:
    """Phase 1: pods and slices per domain, leaves first. A leaf holds as many pods as its scarcest
    resource allows; the resource that allows none is noted for the message (ties: the first by name).
    ``inner``: the inner slice size at each level of multi-layer slices, where a domain counts only whole
    inner slices of its children's pods."""
    items = tuple(sorted((resource, amount) for resource, amount in requests.items() if amount > 0))
    check_nodes = tree.hostname_leaves
    filters = needs.filters_nodes
    leaves = levels[-1]
    leaf_is_slice_level = len(levels) - 1 == slice_level
    stats.total += len(leaves)
    for leaf in leaves:
        node = leaf.node
        count = -1
        if (
            check_nodes
            and node is not None
            and (node.taints or filters)
            and _node_excluded(node, needs, stats)
        ):
            count = 0
        else:
            free = leaf.free
            if empty and (held := tree.tas_at(leaf)):
                free = dict(free)
                for resource, amount in held.items():
                    free[resource] = free.get(resource, 0) + amount
            limiting = ""
            for resource, amount in items:
                fits = free.get(resource, 0) // amount
                if count < 0 or fits < count:
                    count, limiting = fits, resource
            if count <= 0:
                count = 0
                if limiting:
                    stats.resources[limiting] = stats.resources.get(limiting, 0) + 1
        leaf.pod_count = count
        leaf.slice_count = count // slice_size if leaf_is_slice_level else count
    for index in range(len(levels) - 2, -1, -1):
        whole = inner.get(index + 1, 0) if inner else 0
        for domain in levels[index]:
            if skipped and id(domain) in skipped:
                continue  # ruled out whole: its counts are already zero
            pods = slices = 0
            for child in domain.children.values():
                pods += child.pod_count // whole * whole if whole else child.pod_count
                slices += child.slice_count
            domain.pod_count = pods
            if index == slice_level:
                domain.slice_count = pods // slice_size
            elif index < slice_level:
                domain.slice_count = slices
            else:
                domain.slice_count = pods


def _sorted(domains: Sequence[Domain]) -> list[Domain]:
    """BestFit order: most slices first, then least pods (least left over), then by values."""
    return sorted(domains, key=lambda d: (-d.slice_count, d.pod_count, d.values))


def _best_fit(domains: Sequence[Domain], needed: int, slices: bool) -> Domain:
    """The first domain with the smallest count that still holds ``needed`` (the first when none does)."""
    best, best_count = domains[0], None
    for domain in domains:
        have = domain.slice_count if slices else domain.pod_count
        if have >= needed and (best_count is None or have < best_count):
            best, best_count = domain, have
    return best


def _take_minimum(domains: list[Domain], count: int, slice_size: int, slices: bool) -> list[Domain]:
    """Fill ``domains`` (sorted) in order until ``count`` pods are placed, the last one BestFit; each
    chosen domain's ``pod_count`` becomes what it takes (Kueue's updateCountsToMinimum)."""
    remaining = count // slice_size if slices else count
    chosen: list[Domain] = []
    for index, domain in enumerate(domains):
        if remaining <= 0:
            break
        have = domain.slice_count if slices else domain.pod_count
        if have >= remaining:
            domain = _best_fit(domains[index:], remaining, slices)
            domain.pod_count = remaining * slice_size if slices else remaining
            domain.slice_count = remaining if slices else domain.slice_count
            chosen.append(domain)
            return chosen
        if slices:
            domain.pod_count = have * slice_size
        remaining -= have
        if have:
            chosen.append(domain)
    return chosen


def _level_index(tree: FlavorTree, label: str) -> int:
    try:
        return tree.levels.index(label)
    except ValueError:
        return -1


def _inner_layers(
    tree: FlavorTree, layers: Sequence[tuple[str, int]], slice_level: int, slice_size: int
) -> dict[int, int] | str:
    """The inner slice size at every level below the outermost slice layer (Kueue's
    buildSliceSizeAtLevel), or why the layers do not fit the topology."""
    inner: dict[int, int] = {}
    previous_size, previous_level = slice_size, slice_level
    for topology, size in layers[1:]:
        level = _level_index(tree, topology)
        if level < 0:
            return f"no requested topology level for additional slice layer: {topology}"
        if level <= previous_level:
            return (
                f"additional slice layer topology {topology} must be at a lower level than "
                f"{tree.levels[previous_level]}"
            )
        if size <= 0 or previous_size % size:
            return f"additional slice layer size {size} must evenly divide parent layer size {previous_size}"
        for between in range(previous_level + 1, level + 1):
            inner[between] = size
        previous_size, previous_level = size, level
    return inner


def _layers_no_fit(
    tree: FlavorTree,
    per_level: list[list[Domain]],
    level: int,
    count: int,
    layers: Sequence[tuple[str, int]],
    stats: _Exclusions,
) -> str:
    """Kueue's message for multi-layer slices that do not fit: for the domain of the searched level with
    the most slices, how many slices of each layer it holds."""
    text = f'topology "{tree.topology}" doesn\'t allow to fit'
    domains = per_level[level]
    if not domains:
        return text
    best = min(domains, key=lambda d: (-d.slice_count, d.values))
    for topology, size in layers:
        target = _level_index(tree, topology)
        if target < 0 or size <= 0:
            continue
        below = [best]
        for _ in range(level, target):
            below = [child for domain in below for child in domain.children.values()]
        fitting = sum(domain.pod_count // size for domain in below)
        text += f"; {fitting}/{count // size} slice(s) fit on level {topology}"
    return text + stats.text()


def place(
    tree: FlavorTree,
    needs: PodSetNeeds,
    *,
    implied: bool = False,
    empty: bool = False,
    within: Domain | None = None,
) -> Placement:
    """Where ``needs`` fits in ``tree`` now (``empty``: were no TAS workload admitted there, Kueue's
    simulateEmpty), or Kueue's message saying why it does not. ``within``: only in that domain, as if it
    were the only one of its level (a failed node's replacement, :mod:`.replacement`)."""
    request = needs.request or TopologyRequest()
    levels_count = len(tree.levels)
    lowest = tree.levels[-1]
    slice_only = bool(request.slice_level) and not request.required and not request.preferred
    if request.required:
        level_key = request.required
    elif request.preferred:
        level_key = request.preferred
    elif slice_only:
        level_key = tree.levels[0]
    elif request.unconstrained or implied:
        level_key = lowest
    else:
        return Placement(failure="topology level not specified")
    required = bool(request.required)
    unconstrained = request.unconstrained or implied or slice_only
    slice_size = 1
    if request.slice_level:
        if not request.slice_size or request.slice_size <= 0:
            return Placement(failure="slice topology requested, but slice size not provided")
        slice_size = request.slice_size
    level = _level_index(tree, level_key)
    if level < 0:
        return Placement(failure=f"no requested topology level: {level_key}")
    slice_key = request.slice_level or lowest
    slice_level = _level_index(tree, slice_key)
    if slice_level < 0:
        return Placement(failure=f"no requested topology level for slices: {slice_key}")
    if level > slice_level:
        return Placement(
            failure=f"podset slice topology {slice_key} is above the podset topology {level_key}"
        )
    inner: dict[int, int] = {}
    if len(request.slice_layers) > 1:
        found = _inner_layers(tree, request.slice_layers, slice_level, slice_size)
        if isinstance(found, str):
            return Placement(failure=found)
        inner = found
    count = needs.count
    requests = dict(needs.requests)
    requests[PODS] = requests.get(PODS, 0) + ONE_POD

    # the tree's summed free capacity rules whole subtrees out: a domain short of one pod's worth of any
    # resource holds no pod, and nothing below it is read (with ``empty`` the sums do not apply)
    # (not with multi-layer slices: a domain's count there is not the sum of its children's)
    items = () if inner else tuple((resource, amount) for resource, amount in requests.items() if amount > 0)
    skipped: set[int] = set()
    per_level: list[list[Domain]] = []
    #: with ``within``: its path from the root, each level of it holding that one domain
    path: list[Domain] = []
    domain_on_path = within
    while domain_on_path is not None and domain_on_path is not tree.root:
        path.insert(0, domain_on_path)
        domain_on_path = domain_on_path.parent
    current = path[:1] or list(tree.root.children.values())
    for depth in range(levels_count):
        per_level.append(current)
        if depth == levels_count - 1:
            break
        below: list[Domain] = []
        for domain in current:
            free = domain.free
            if not empty and any(free.get(resource, 0) < amount for resource, amount in items):
                domain.pod_count = domain.slice_count = 0
                skipped.add(id(domain))
            elif depth + 1 < len(path):
                below.append(path[depth + 1])
            else:
                below.extend(domain.children.values())
        current = below
    stats = _Exclusions()
    _fill_counts(tree, per_level, needs, requests, slice_level, slice_size, stats, empty, skipped, inner)
    for ancestor in reversed(path[:-1]):  # their other children are not part of the search
        child = path[len(ancestor.values)]
        ancestor.pod_count, ancestor.slice_count = child.pod_count, child.slice_count

    unit = "pod" if slice_size == 1 else "slice"

    def no_fit(fitting: int, needed: int) -> Placement:
        if inner:
            return Placement(
                failure=_layers_no_fit(tree, per_level, search, count, request.slice_layers, stats)
            )
        reasons = stats
        if skipped:  # the message counts every node: the ones ruled out with their subtree too
            reasons = _Exclusions()
            everything = [list(tree.root.children.values())]
            for _ in range(levels_count - 1):
                everything.append([c for d in everything[-1] for c in d.children.values()])
            _fill_counts(tree, everything, needs, requests, slice_level, slice_size, reasons, empty, set())
        head = (
            f'topology "{tree.topology}" doesn\'t allow to fit any of {needed} {unit}(s)'
            if fitting == 0
            else f'topology "{tree.topology}" allows to fit only {fitting} out of {needed} {unit}(s)'
        )
        return Placement(failure=head + reasons.text())

    needed = count // slice_size
    # phase 2: the level and the domains holding every slice
    search = level
    while True:
        domains = per_level[search]
        if not domains:
            if skipped:  # every domain above was ruled out
                return no_fit(0, needed)
            return Placement(failure=f"no topology domains at level: {tree.levels[search]}")
        ordered = _sorted(domains)
        top = ordered[0]
        if top.slice_count >= needed:
            fit_level, fit = search, [_best_fit(ordered, needed, True)]
            break
        if required:
            return no_fit(top.slice_count, needed)
        if search > 0 and not unconstrained:
            search -= 1
            continue
        fit, remaining = [], needed
        for position, domain in enumerate(ordered):
            if remaining <= 0:
                break
            if domain.slice_count >= remaining:
                domain = _best_fit(ordered[position:], remaining, True)
            fit.append(domain)
            remaining -= domain.slice_count
        if remaining > 0:
            return no_fit(needed - remaining, needed)
        fit_level = search
        break
    fit = _take_minimum(fit, count, slice_size, True)
    # phase 3: down to the leaves, as few domains as possible at every level
    current = fit
    index = fit_level
    while index < min(levels_count - 1, slice_level):
        lower = _sorted([child for domain in current for child in domain.children.values()])
        current = _take_minimum(lower, count, slice_size, True)
        index += 1
    while index < levels_count - 1:
        chosen: list[Domain] = []
        size = inner.get(index + 1, 1) if inner else 1
        for domain in current:
            if size > 1:  # an inner slice layer: whole inner slices in each child
                for child in domain.children.values():
                    child.slice_count = child.pod_count // size
                children = _sorted(list(domain.children.values()))
                chosen += _take_minimum(children, domain.pod_count, size, True)
                continue
            children = _sorted(list(domain.children.values()))
            chosen += _take_minimum(children, domain.pod_count, 1, False)
        current = chosen
        index += 1
    start = levels_count - 1 if tree.hostname_leaves else 0
    placed_domains = sorted((d.values[start:], d.pod_count) for d in current if d.pod_count > 0)
    return Placement(tree.levels[start:], tuple(placed_domains))
