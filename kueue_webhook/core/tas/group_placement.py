"""Where a pod-set group fits: a leader pod set of one pod placed together with its workers, in one domain
of the workers' required (or preferred) level, as Kueue's TAS places a group (``podSetGroupName``: a
LeaderWorkerSet's leader and workers, a JobSet's driver and its workers).

Kueue's findTopologyAssignment with a leader (pkg/cache/scheduler/tas_flavor_snapshot.go), on the tree of
:mod:`.capacity`; the workers' request decides the level, and their selector and tolerations the nodes:

1. every leaf counts the workers it holds alone (``pod_count``), whether the leader fits there
   (``leader_count``) and the workers it holds beside the leader (``pods_with_leader``); an inner domain
   sums its children's workers, can host the leader when a child can, and holds beside the leader its
   workers less the smallest loss a leader-hosting child takes for it;
2. at the requested level, among the domains that can host the leader, the one holding every worker
   beside it with the least room to spare (BestFit); ``required`` fails there with Kueue's message,
   ``preferred`` climbs a level at a time and at the top spreads: the leader's domain first (one whose
   loss the others can make up), then the rest, largest first;
3. down to the leaves, at every level the leader's domain first and then as few domains as possible.

The leader's domain and the workers' domains are the two pod sets' assignments. Only pod sets without
slices are grouped (Kueue's validation forbids slices in a group), and a leader of exactly one pod.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kueue_webhook.api.topology_request import TopologyRequest
from kueue_webhook.core.tas.capacity import ONE_POD, PODS, Domain, FlavorTree
from kueue_webhook.core.tas.placement import (
    Placement,
    PodSetNeeds,
    _Exclusions,
    _level_index,
    _node_excluded,
)

__all__ = ["place_group"]


def _fit(free: Mapping[str, int], items: Sequence[tuple[str, int]]) -> tuple[int, str]:
    """How many pods of ``items`` fit in ``free``, and the resource that limits them."""
    count, limiting = -1, ""
    for resource, amount in items:
        fits = free.get(resource, 0) // amount
        if count < 0 or fits < count:
            count, limiting = fits, resource
    return max(count, 0), limiting


def _fill_counts(
    tree: FlavorTree,
    levels: list[list[Domain]],
    workers: PodSetNeeds,
    worker_items: Sequence[tuple[str, int]],
    leader_items: Sequence[tuple[str, int]],
    stats: _Exclusions,
    empty: bool,
) -> None:
    check_nodes = tree.hostname_leaves
    stats.total += len(levels[-1])
    for leaf in levels[-1]:
        node = leaf.node
        if (
            check_nodes
            and node is not None
            and (node.taints or workers.filters_nodes)
            and _node_excluded(node, workers, stats)
        ):
            leaf.pod_count = leaf.slice_count = leaf.leader_count = leaf.pods_with_leader = 0
            continue
        free: Mapping[str, int] = leaf.free
        if empty and (held := tree.tas_at(leaf)):
            free = {r: free.get(r, 0) + held.get(r, 0) for r in {*free, *held}}
        pods, limiting = _fit(free, worker_items)
        if pods == 0 and limiting:
            stats.resources[limiting] = stats.resources.get(limiting, 0) + 1
        leaf.pod_count = leaf.slice_count = pods
        if all(free.get(resource, 0) >= amount for resource, amount in leader_items):
            beside = dict(free)
            for resource, amount in leader_items:
                beside[resource] -= amount
            leaf.leader_count = 1
            leaf.pods_with_leader = _fit(beside, worker_items)[0]
        else:
            leaf.leader_count = 0
            leaf.pods_with_leader = pods
    for index in range(len(levels) - 2, -1, -1):
        for domain in levels[index]:
            pods = leader = 0
            loss = -1
            for child in domain.children.values():
                pods += child.pod_count
                if child.leader_count > 0:
                    leader = 1
                    child_loss = child.pod_count - child.pods_with_leader
                    if loss < 0 or child_loss < loss:
                        loss = child_loss
            domain.pod_count = domain.slice_count = pods
            domain.leader_count = leader
            domain.pods_with_leader = pods - loss if loss >= 0 else 0


def _by_room(domains: Sequence[Domain]) -> list[Domain]:
    """Most workers first, then by values (BestFit's order without a leader)."""
    return sorted(domains, key=lambda d: (-d.pod_count, d.values))


def _by_leader(domains: Sequence[Domain]) -> list[Domain]:
    """Leader-hosting domains first, then the most workers beside the leader (Kueue's
    sortedDomainsWithLeader)."""
    return sorted(domains, key=lambda d: (-d.leader_count, -d.pods_with_leader, d.values))


def _best_fit(domains: Sequence[Domain], needed: int, *, leader: bool) -> Domain:
    """The first domain with the smallest count still holding ``needed`` (with ``leader``: among those
    hosting the leader, counting the workers beside it); the first domain when none does."""
    best, best_count = None, 0
    for domain in domains:
        if leader and domain.leader_count < 1:
            continue
        have = domain.pods_with_leader if leader else domain.pod_count
        if have >= needed and (best is None or have < best_count):
            best, best_count = domain, have
    return best if best is not None else domains[0]


def _leader_first(domains: list[Domain], count: int) -> list[Domain]:
    """Move to the front the first domain that can host the leader while the domains together still hold
    ``count`` workers (Kueue's prioritizeLeaderDomain)."""
    if len(domains) < 2:
        return domains
    available = sum(domain.pod_count for domain in domains)
    for index, domain in enumerate(domains):
        if domain.leader_count < 1 or available - (domain.pod_count - domain.pods_with_leader) < count:
            continue
        if index == 0:
            return domains
        return [domain, *domains[:index], *domains[index + 1 :]]
    return domains


def _take_minimum(domains: list[Domain], count: int) -> list[Domain]:
    """Fill ``domains`` until ``count`` workers and the leader are placed: the leader's domain first (BestFit
    when it holds the rest), then in order, the last one BestFit (Kueue's updateCountsToMinimumGeneric).
    Each chosen domain's ``pod_count`` and ``leader_count`` become what it takes."""
    domains = _leader_first(domains, count)
    chosen: list[Domain] = []
    remaining, leader = count, 1
    for index, domain in enumerate(domains):
        if leader:
            if domain.pods_with_leader >= remaining and domain.leader_count >= leader:
                domain = _best_fit(domains[index:], remaining, leader=True)
                domain.pod_count, domain.leader_count = remaining, leader
                chosen.append(domain)
                return chosen
            taken = min(domain.pods_with_leader, remaining)
            domain.leader_count = min(domain.leader_count, leader)
            domain.pod_count = domain.pods_with_leader = taken
            leader -= domain.leader_count
            remaining -= taken
            chosen.append(domain)
            continue
        if domain.pod_count >= remaining:
            domain = _best_fit(domains[index:], remaining, leader=False)
        domain.leader_count = 0
        if domain.pod_count >= remaining:
            domain.pod_count = remaining
            chosen.append(domain)
            return chosen
        remaining -= domain.pod_count
        chosen.append(domain)
    return chosen


def place_group(
    tree: FlavorTree,
    workers: PodSetNeeds,
    leader: PodSetNeeds,
    *,
    implied: bool = False,
    empty: bool = False,
) -> tuple[Placement, Placement]:
    """Where the workers and their one-pod leader fit together in ``tree`` (``empty``: were no TAS workload
    admitted there), as the two pod sets' placements; both carry Kueue's message when they do not."""
    request = workers.request or TopologyRequest()
    levels_count = len(tree.levels)
    if request.required:
        level_key = request.required
    elif request.preferred:
        level_key = request.preferred
    elif request.unconstrained or implied:
        level_key = tree.levels[-1]
    else:
        failed = Placement(failure="topology level not specified")
        return failed, failed
    level = _level_index(tree, level_key)
    if level < 0:
        failed = Placement(failure=f"no requested topology level: {level_key}")
        return failed, failed
    required = bool(request.required)
    unconstrained = request.unconstrained or implied
    worker_requests = dict(workers.requests)
    worker_requests[PODS] = worker_requests.get(PODS, 0) + ONE_POD
    leader_requests = dict(leader.requests)
    leader_requests[PODS] = leader_requests.get(PODS, 0) + ONE_POD
    worker_items = tuple(sorted((r, a) for r, a in worker_requests.items() if a > 0))
    leader_items = tuple(sorted((r, a) for r, a in leader_requests.items() if a > 0))

    per_level: list[list[Domain]] = [list(tree.root.children.values())]
    for _ in range(levels_count - 1):
        per_level.append([child for domain in per_level[-1] for child in domain.children.values()])
    stats = _Exclusions()
    _fill_counts(tree, per_level, workers, worker_items, leader_items, stats, empty)

    count = workers.count

    def no_fit(fitting: int) -> tuple[Placement, Placement]:
        head = (
            f'topology "{tree.topology}" doesn\'t allow to fit any of {count} pod(s)'
            if fitting == 0
            else f'topology "{tree.topology}" allows to fit only {fitting} out of {count} pod(s)'
        )
        failed = Placement(failure=head + stats.text())
        return failed, failed

    search = level
    while True:
        domains = per_level[search]
        if not domains:
            failed = Placement(failure=f"no topology domains at level: {tree.levels[search]}")
            return failed, failed
        ordered = _by_leader(domains)
        top = ordered[0]
        if top.pods_with_leader >= count and top.leader_count >= 1:
            fit_level, fit = search, [_best_fit(ordered, count, leader=True)]
            break
        if required:
            return no_fit(top.pod_count)
        if search > 0 and not unconstrained:
            search -= 1
            continue
        # at the top: the leader's domain first, then the largest others
        ordered = _leader_first(ordered, count)
        fit, remaining, index = [], count, 0
        while index < len(ordered) and ordered[index].leader_count > 0 and not fit:
            domain = ordered[index]
            if domain.pods_with_leader >= remaining:
                domain = _best_fit(ordered[index:], remaining, leader=True)
            fit.append(domain)
            remaining -= domain.pods_with_leader
            index += 1
        if not fit:
            return no_fit(0)
        rest = _by_room([d for d in ordered[index:] if d is not fit[0]])
        for position, domain in enumerate(rest):
            if remaining <= 0:
                break
            if domain.pod_count >= remaining:
                domain = _best_fit(rest[position:], remaining, leader=False)
            fit.append(domain)
            remaining -= domain.pod_count
        if remaining > 0:
            return no_fit(count - remaining)
        fit_level = search
        break
    current = _take_minimum(fit, count)
    for _ in range(fit_level, levels_count - 1):
        current = _take_minimum(_by_room([c for d in current for c in d.children.values()]), count)
    start = levels_count - 1 if tree.hostname_leaves else 0
    placed_levels = tree.levels[start:]
    worker_domains = sorted((d.values[start:], d.pod_count) for d in current if d.pod_count > 0)
    leader_domains = sorted((d.values[start:], d.leader_count) for d in current if d.leader_count > 0)
    return Placement(placed_levels, tuple(worker_domains)), Placement(placed_levels, tuple(leader_domains))
