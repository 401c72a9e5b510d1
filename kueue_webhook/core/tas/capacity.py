"""The free capacity of every node and topology domain of each TAS flavor, kept current event by event.

Each ResourceFlavor with a ``topologyName`` owns a tree: its nodes (those carrying the flavor's
``nodeLabels`` and a value for every level of the Topology, Ready and not cordoned) grouped by their value
at each level, widest first. Every domain holds the sum of the free capacity below it: what the nodes
allocate, less the requests of the pods bound to them (pods placed by TAS excepted) and less what admitted
TAS workloads were assigned there. An event (a node changed, a pod bound or finished, a workload admitted
or released) applies the difference along the path from its leaf to the root and nowhere else, so its
cost is the depth of the tree, not its size; a pod on a node no TAS flavor uses costs a dictionary lookup.

When the lowest level is ``kubernetes.io/hostname`` a leaf is one node; otherwise a leaf is the domain of
the lowest level and pools its nodes, as Kueue's does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from kueue_webhook.api.nodes import NodeView, PodOnNode
from kueue_webhook.api.objects import ResourceFlavor, Topology
from kueue_webhook.api.quantity import NANO

__all__ = ["ONE_POD", "PODS", "Domain", "FlavorTree", "TopologyCapacity"]

PODS = "pods"
#: every pod takes one of its node's ``pods`` (Kueue adds one to each pod's requests)
ONE_POD = NANO

Usage = dict[str, int]


def _add(into: Usage, other: Mapping[str, int], sign: int = 1) -> None:
    for resource, amount in other.items():
        into[resource] = into.get(resource, 0) + sign * amount


class Domain:
    """A node of the tree: its level values (the path from the root), children and summed free capacity.

    ``pod_count`` and ``slice_count`` (and, for a pod-set group, ``leader_count`` and ``pods_with_leader``)
    are scratch space for one placement (:mod:`.placement`, :mod:`.group_placement`): the core is
    single-threaded and a placement fills them before it reads them.
    """

    __slots__ = (
        "children",
        "free",
        "leader_count",
        "node",
        "parent",
        "pod_count",
        "pods_with_leader",
        "slice_count",
        "values",
    )

    def __init__(self, values: tuple[str, ...], parent: Domain | None) -> None:
        self.values = values
        self.parent = parent
        self.children: dict[str, Domain] = {}
        self.free: Usage = {}
        #: the node of a hostname leaf (None for pooled leaves and inner domains)
        self.node: NodeView | None = None
        self.pod_count = 0
        self.slice_count = 0
        self.leader_count = 0
        self.pods_with_leader = 0

    def __repr__(self) -> str:
        return f"Domain({'/'.join(self.values) or '<root>'})"


@dataclass(slots=True)
class FlavorTree:
    """The domains of one TAS flavor."""

    flavor: str
    topology: str
    levels: tuple[str, ...]
    node_labels: Mapping[str, str]
    root: Domain = field(default_factory=lambda: Domain((), None))
    #: the node's leaf, for every node in the tree
    leaf_of: dict[str, Domain] = field(default_factory=dict)
    #: what each node adds to its leaf (allocatable less its pods' usage), as last applied
    contribution: dict[str, Usage] = field(default_factory=dict)
    #: TAS usage per leaf (by hostname in a hostname topology, else by level values), applied or not
    tas_usage: dict[tuple[str, ...], Usage] = field(default_factory=dict)
    #: how many nodes each leaf holds, by its level values
    nodes_in: dict[tuple[str, ...], int] = field(default_factory=dict)

    @property
    def hostname_leaves(self) -> bool:
        return bool(self.levels) and self.levels[-1] == "kubernetes.io/hostname"

    def matches(self, node: NodeView) -> bool:
        labels = node.labels
        return (
            node.schedulable
            and all(labels.get(k) == v for k, v in self.node_labels.items())
            and all(level in labels for level in self.levels)
        )

    def leaves(self) -> Iterator[Domain]:
        stack = [self.root]
        while stack:
            domain = stack.pop()
            if domain.children:
                stack.extend(domain.children.values())
            elif domain is not self.root:
                yield domain

    def domains_at(self, level: int) -> list[Domain]:
        """Every domain of ``level`` (0: the widest)."""
        current = [self.root]
        for _ in range(level + 1):
            current = [child for domain in current for child in domain.children.values()]
        return current

    def leaf_by_values(self, values: tuple[str, ...]) -> Domain | None:
        """The leaf an assignment names: by hostname alone in a hostname topology, else by every level."""
        if self.hostname_leaves:
            return self.leaf_of.get(values[-1]) if values else None
        domain = self.root
        for value in values:
            found = domain.children.get(value)
            if found is None:
                return None
            domain = found
        return domain if not domain.children else None

    # -- changes along one path --------------------------------------------------------------------------

    def _apply(self, leaf: Domain, delta: Mapping[str, int], sign: int) -> None:
        domain: Domain | None = leaf
        while domain is not None:
            _add(domain.free, delta, sign)
            domain = domain.parent

    def tas_at(self, leaf: Domain) -> Mapping[str, int] | None:
        """The TAS usage charged to ``leaf``."""
        return self.tas_usage.get(self._usage_key(leaf.values))

    def _usage_key(self, values: tuple[str, ...]) -> tuple[str, ...]:
        """TAS usage is kept by hostname in a hostname topology (what assignments name), else by path."""
        return values[-1:] if self.hostname_leaves else values

    def put_node(self, node: NodeView, contribution: Usage) -> None:
        values = tuple(node.labels[level] for level in self.levels)
        leaf = self.leaf_of.get(node.name)
        if leaf is not None and leaf.values == values:
            self._apply(leaf, self.contribution[node.name], -1)
        else:
            if leaf is not None:
                self._drop_node(node.name, leaf)
            leaf, created = self._leaf_for(values)
            tas = self.tas_usage.get(self._usage_key(values))
            if created and tas:
                self._apply(leaf, tas, -1)
            self.nodes_in[values] = self.nodes_in.get(values, 0) + 1
        if self.hostname_leaves:
            leaf.node = node
        self.leaf_of[node.name] = leaf
        self.contribution[node.name] = contribution
        self._apply(leaf, contribution, 1)

    def remove_node(self, name: str) -> None:
        leaf = self.leaf_of.get(name)
        if leaf is not None:
            self._drop_node(name, leaf)

    def _drop_node(self, name: str, leaf: Domain) -> None:
        self._apply(leaf, self.contribution.pop(name, {}), -1)
        del self.leaf_of[name]
        left = self.nodes_in[leaf.values] - 1
        if left:
            self.nodes_in[leaf.values] = left
            return  # a pooled leaf keeps its other nodes
        del self.nodes_in[leaf.values]
        self._apply(leaf, dict(leaf.free), -1)  # what is left is its TAS usage: it goes with the leaf
        domain: Domain | None = leaf
        while domain is not None and domain.parent is not None and not domain.children:
            del domain.parent.children[domain.values[-1]]
            domain = domain.parent

    def _leaf_for(self, values: tuple[str, ...]) -> tuple[Domain, bool]:
        domain, created = self.root, False
        for index, value in enumerate(values):
            child = domain.children.get(value)
            if child is None:
                child = domain.children[value] = Domain(values[: index + 1], domain)
                created = True
            domain = child
        return domain, created

    def charge(self, values: tuple[str, ...], usage: Mapping[str, int], sign: int) -> None:
        """Add (``sign`` 1) or remove (-1) TAS usage at the leaf an assignment names; usage on a leaf
        that is not (or no longer) in the tree is kept, and applied if the leaf comes back."""
        key = self._usage_key(values)
        held = self.tas_usage.setdefault(key, {})
        _add(held, usage, sign)
        if not any(held.values()):
            del self.tas_usage[key]
        leaf = self.leaf_by_values(values)
        if leaf is not None:
            self._apply(leaf, usage, -sign)


class TopologyCapacity:
    """Nodes, bound pods and admitted TAS workloads, and the trees of the TAS flavors built from them."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeView] = {}
        self.topologies: dict[str, Topology] = {}
        self.flavors: dict[str, ResourceFlavor] = {}
        self.trees: dict[str, FlavorTree] = {}
        self._pods: dict[str, PodOnNode] = {}
        #: summed usage of the pods bound to each node (nodes with none are absent)
        self._node_usage: dict[str, Usage] = {}
        #: the TAS charges of each admitted workload: (flavor, leaf values, usage)
        self._charges: dict[str, list[tuple[str, tuple[str, ...], Usage]]] = {}
        #: bumped whenever capacity may have grown (a waiting TAS workload may fit again)
        self.grew = 0

    # -- specs -------------------------------------------------------------------------------------------

    def upsert_topology(self, topology: Topology) -> None:
        self.topologies[topology.name] = topology
        self._rebuild_trees()

    def delete_topology(self, name: str) -> None:
        if self.topologies.pop(name, None) is not None:
            self._rebuild_trees()

    def upsert_flavor(self, flavor: ResourceFlavor) -> None:
        old = self.flavors.get(flavor.name)
        if not flavor.topology_name and old is None:
            return
        self.flavors[flavor.name] = flavor
        if old is None or old.topology_name != flavor.topology_name or old.node_labels != flavor.node_labels:
            self._rebuild_trees()

    def delete_flavor(self, name: str) -> None:
        if self.flavors.pop(name, None) is not None:
            self._rebuild_trees()

    def tree(self, flavor: str) -> FlavorTree | None:
        return self.trees.get(flavor)

    def topology_of(self, flavor: str) -> str:
        """The Topology a flavor names ("" for a flavor without one)."""
        found = self.flavors.get(flavor)
        return found.topology_name if found is not None else ""

    def _rebuild_trees(self) -> None:
        """A spec change (rare) rebuilds every tree; node and usage events never do."""
        self.trees = {}
        for flavor in self.flavors.values():
            topology = self.topologies.get(flavor.topology_name)
            if not flavor.topology_name or topology is None or not topology.levels:
                continue
            self.trees[flavor.name] = FlavorTree(
                flavor.name, topology.name, topology.levels, dict(flavor.node_labels)
            )
        for node in self.nodes.values():
            self._place_node(node)
        for charges in self._charges.values():
            for flavor_name, values, usage in charges:
                tree = self.trees.get(flavor_name)
                if tree is not None:
                    tree.charge(values, usage, 1)
        self.grew += 1

    # -- nodes and pods ----------------------------------------------------------------------------------

    def _contribution(self, node: NodeView) -> Usage:
        free = dict(node.allocatable)
        used = self._node_usage.get(node.name)
        if used:
            _add(free, used, -1)
        return free

    def _place_node(self, node: NodeView) -> bool:
        """Put the node in the trees of the flavors it belongs to (and out of the others); whether it is
        in any tree now."""
        contribution: Usage | None = None
        placed = False
        for tree in self.trees.values():
            if tree.matches(node):
                if contribution is None:
                    contribution = self._contribution(node)
                tree.put_node(node, contribution)
                placed = True
            else:
                tree.remove_node(node.name)
        return placed

    def upsert_node(self, node: NodeView) -> None:
        old = self.nodes.get(node.name)
        self.nodes[node.name] = node
        if old == node:
            return
        if self._place_node(node):  # a node no TAS flavor uses makes no room for anyone
            self.grew += 1

    def delete_node(self, name: str) -> None:
        if self.nodes.pop(name, None) is None:
            return
        for tree in self.trees.values():
            tree.remove_node(name)

    def upsert_pod(self, key: str, pod: PodOnNode | None) -> None:
        """A pod's usage of its node (None: it no longer uses one: unbound, terminated or gone)."""
        old = self._pods.get(key)
        if old == pod:
            return
        if old is not None:
            del self._pods[key]
            self._use(old.node, old.requests, -1)
        if pod is not None:
            self._pods[key] = pod
            self._use(pod.node, pod.requests, 1)

    def _use(self, node_name: str, requests: Mapping[str, int], sign: int) -> None:
        usage = self._node_usage.setdefault(node_name, {})
        _add(usage, requests, sign)
        usage[PODS] = usage.get(PODS, 0) + sign * ONE_POD
        if usage[PODS] <= 0:
            del self._node_usage[node_name]
        node = self.nodes.get(node_name)
        if node is None:
            return
        contribution: Usage | None = None
        for tree in self.trees.values():
            if node_name in tree.leaf_of:
                if contribution is None:
                    contribution = self._contribution(node)
                tree.put_node(node, contribution)
        if sign < 0 and contribution is not None:  # room freed on a node of some TAS flavor
            self.grew += 1

    # -- admitted TAS workloads --------------------------------------------------------------------------

    def charge_workload(self, key: str, charges: Iterable[tuple[str, tuple[str, ...], Usage]]) -> None:
        """Record what an admitted workload's topology assignments use (replacing what it had)."""
        self.release_workload(key)
        kept = list(charges)
        if not kept:
            return
        self._charges[key] = kept
        for flavor, values, usage in kept:
            tree = self.trees.get(flavor)
            if tree is not None:
                tree.charge(values, usage, 1)

    def release_workload(self, key: str) -> None:
        charges = self._charges.pop(key, None)
        if not charges:
            return
        for flavor, values, usage in charges:
            tree = self.trees.get(flavor)
            if tree is not None:
                tree.charge(values, usage, -1)
        self.grew += 1

    def charged(self, key: str) -> bool:
        return key in self._charges

    def uses_flavor(self, key: str, flavor: str) -> bool:
        return any(charged_flavor == flavor for charged_flavor, _, _ in self._charges.get(key, ()))

    def set_aside(self, key: str) -> list[tuple[str, tuple[str, ...], Usage]]:
        """Take a workload's TAS usage off the trees for a what-if (``put_back`` restores it); unlike a
        release, nothing is woken."""
        charges = self._charges.pop(key, [])
        for flavor, values, usage in charges:
            tree = self.trees.get(flavor)
            if tree is not None:
                tree.charge(values, usage, -1)
        return charges

    def put_back(self, key: str, charges: list[tuple[str, tuple[str, ...], Usage]]) -> None:
        if not charges:
            return
        self._charges[key] = charges
        for flavor, values, usage in charges:
            tree = self.trees.get(flavor)
            if tree is not None:
                tree.charge(values, usage, 1)
