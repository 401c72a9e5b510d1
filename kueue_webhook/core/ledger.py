"""Quota ledger: usage per ClusterQueue x flavor x resource inside a tree of cohorts.

Each ClusterQueue and each cohort is a node holding, per ``(flavor, resource)``, its quotas, the quota of
its whole subtree and its usage. The model is Kueue's hierarchical one: a node's ``lendingLimit``
splits its subtree quota into a private part (``subtree - lendingLimit``, usable only inside) and a
lent part stored in the parent; usage climbs to the parent only for the amount above the private part;
``borrowingLimit`` caps how much more than its own subtree quota a node may take from above (unset =
no cap, unset ``lendingLimit`` = lend everything). Amounts are plain ``int`` nano-units.

Usage is updated incrementally on every admit/release (a walk up the tree, O(depth)); subtree quotas
are recomputed only for the tree that changed when a ClusterQueue or Cohort spec changes, which is rare.
Every change is stamped (``Ledger.stamp``: the structure's epoch and the version of the changed tree), so
what is derived from one tree's usage (preemption answers, ``available``) can be kept until that tree
changes; a simulated change that is undone exactly puts its tree's stamp back (``Ledger.rewind``).
A cohort named by a ClusterQueue but never created as an object exists implicitly with no quota of its
own, as in Kueue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kueue_webhook.api.objects import ResourceGroup
from kueue_webhook.core.model import FlavorResource

__all__ = ["Ledger", "Node", "Quota", "admitted_usage"]


@dataclass(frozen=True, slots=True)
class Quota:
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


def quotas_of(groups: Iterable[ResourceGroup]) -> dict[FlavorResource, Quota]:
    out: dict[FlavorResource, Quota] = {}
    for group in groups:
        for flavor in group.flavors:
            for quota in flavor.resources:
                out[(flavor.name, quota.name)] = Quota(
                    quota.nominal.nanos,
                    None if quota.borrowing_limit is None else quota.borrowing_limit.nanos,
                    None if quota.lending_limit is None else quota.lending_limit.nanos,
                )
    return out


@dataclass(eq=False, slots=True)
class Node:
    """A ClusterQueue (leaf) or a cohort in the quota tree."""

    name: str
    is_cohort: bool
    quotas: dict[FlavorResource, Quota] = field(default_factory=dict)
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)
    subtree: dict[FlavorResource, int] = field(default_factory=dict)
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    #: on a ClusterQueue: the part of ``usage`` that is room claimed for preemptors waiting for their
    #: targets to leave (``claims.Claim``), not held by anything admitted
    claimed: dict[FlavorResource, int] = field(default_factory=dict)
    #: how many claims are charged at or below this node (0: ``usage`` is all admitted workloads)
    claims_below: int = 0
    #: a cohort object exists for this node (implicit cohorts are dropped when they empty)
    explicit: bool = False
    #: ``height`` as of the last change to the tree below (-1: not known, counted when asked)
    known_height: int = -1
    #: on a root: the ledger's clock at the last change of usage in its tree (``Ledger.stamp``)
    version: int = 0
    #: ``available`` per flavor/resource, with the root and its version it was counted at
    known_available: dict[FlavorResource, tuple[Node, int, int]] = field(default_factory=dict)

    def local_quota(self, fr: FlavorResource) -> int:
        """The private part of the subtree quota (what is not lent to the parent)."""
        quota = self.quotas.get(fr)
        if quota is None or quota.lending_limit is None:
            return 0
        return max(0, self.subtree.get(fr, 0) - quota.lending_limit)

    def local_available(self, fr: FlavorResource) -> int:
        return max(0, self.local_quota(fr) - self.usage.get(fr, 0))

    def root(self) -> Node:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def queue_names(self) -> list[str]:
        """The ClusterQueues (leaves) at or below this node, in depth-first order, last child first."""
        out: list[str] = []
        stack = [self]
        while stack:
            current = stack.pop()
            if current.is_cohort:
                stack.extend(current.children)
            else:
                out.append(current.name)
        return out


def available(node: Node, fr: FlavorResource) -> int:
    """What ``node`` could still take of ``fr`` right now: its private part plus what the tree above lends.

    Walked from the root down (iteratively: this is the hottest function of a cycle): each level adds
    its private free part to what its parent offers, capped by its borrowing limit.
    """
    parent = node.parent
    if parent is None:
        return node.subtree.get(fr, 0) - node.usage.get(fr, 0)
    if parent.parent is None:  # the common shape: a ClusterQueue directly in a root cohort
        quota = node.quotas.get(fr)
        if quota is not None and quota.lending_limit is None and quota.borrowing_limit is None:
            # nothing private, no cap: exactly what the root has free
            return parent.subtree.get(fr, 0) - parent.usage.get(fr, 0)
        chain = [node]
        current = parent
    else:
        chain = []
        current = node
        while current.parent is not None:
            chain.append(current)
            current = current.parent
    # ``current`` is the root: the answer holds until its tree changes (every head of a queue asks)
    known = node.known_available.get(fr)
    if known is not None and known[0] is current and known[1] == current.version:
        return known[2]
    offered = current.subtree.get(fr, 0) - current.usage.get(fr, 0)
    for level in reversed(chain):
        usage = level.usage.get(fr, 0)
        quota = level.quotas.get(fr)
        if quota is None:
            continue  # quota-less level: whatever its parent offers
        subtree = level.subtree.get(fr, 0)
        local = 0 if quota.lending_limit is None else max(0, subtree - quota.lending_limit)
        if quota.borrowing_limit is not None:
            used_in_parent = max(0, usage - local)
            offered = min(subtree - local - used_in_parent + quota.borrowing_limit, offered)
        offered += max(0, local - usage)
    node.known_available[fr] = (current, current.version, offered)
    return offered


def admitted_usage(node: Node, fr: FlavorResource) -> int:
    """``node``'s usage of ``fr`` without the room claimed for waiting preemptors: what its admitted
    workloads hold, counted up the tree as the usage is (what a node's private part cannot hold climbs).
    Kueue has no claims: a ClusterQueue borrows by what it has admitted, and only that can be reclaimed."""
    if not node.claims_below:
        return node.usage.get(fr, 0)
    if not node.is_cohort:
        return node.usage.get(fr, 0) - node.claimed.get(fr, 0)
    return sum(max(0, admitted_usage(child, fr) - child.local_quota(fr)) for child in node.children)


def potential_available(node: Node, fr: FlavorResource) -> int:
    """The most ``node`` could ever hold of ``fr`` if nothing else in the tree used any."""
    if node.parent is None:
        return node.subtree.get(fr, 0)
    total = node.local_quota(fr) + potential_available(node.parent, fr)
    quota = node.quotas.get(fr)
    if quota is not None and quota.borrowing_limit is not None:
        total = min(node.subtree.get(fr, 0) + quota.borrowing_limit, total)
    return total


def add_usage(node: Node, fr: FlavorResource, amount: int) -> None:
    """Charge ``amount`` to ``node``; what its private part cannot hold climbs to the parent."""
    current: Node | None = node
    while current is not None:
        local_free = current.local_available(fr)
        current.usage[fr] = current.usage.get(fr, 0) + amount
        if amount <= local_free:
            return
        amount -= local_free
        current = current.parent


def remove_usage(node: Node, fr: FlavorResource, amount: int) -> None:
    """Release ``amount`` from ``node``; the part it had stored in its parent is released there too."""
    current: Node | None = node
    while current is not None:
        usage = current.usage.get(fr, 0)
        current.usage[fr] = usage - amount
        stored_in_parent = usage - current.local_quota(fr)
        if stored_in_parent <= 0:
            return
        amount = min(amount, stored_in_parent)
        current = current.parent


def borrowing_height(node: Node, fr: FlavorResource, amount: int) -> int:
    """Kueue's borrowing level (FindHeightOfLowestSubtreeThatFits): 0 when ``amount`` fits in the node's
    own quota, else the height of the nearest cohort whose subtree holds it (of the root if none does).
    A height counts levels down to the deepest ClusterQueue, not up from this one: borrowing from a cohort
    that has sub-cohorts ranks after borrowing from a cohort of ClusterQueues only."""
    if node.parent is None or node.usage.get(fr, 0) + amount <= node.subtree.get(fr, 0):
        return 0
    extra = max(0, amount - node.local_available(fr))
    current = node.parent
    while True:
        if current.usage.get(fr, 0) + extra <= current.subtree.get(fr, 0) or current.parent is None:
            return height(current)
        extra = max(0, extra - current.local_available(fr))
        current = current.parent


def height(node: Node) -> int:
    """Levels from ``node`` down to its deepest descendant (Kueue's getNodeHeight): 0 for a ClusterQueue,
    1 for a cohort of ClusterQueues."""
    if not node.is_cohort:
        return 0
    if node.known_height >= 0:  # kept by the ledger: asked for every head that would borrow
        return node.known_height
    return max((height(child) + 1 for child in node.children), default=0)


def may_reclaim_in_hierarchy(node: Node, fr: FlavorResource, amount: int) -> bool:
    """Whether ``amount`` fits within some subtree below the root (Kueue's mayReclaimInHierarchy): then
    workloads borrowing into that subtree could be reclaimed even beyond the nominal quota."""
    current: Node | None = node
    remaining = amount
    while current is not None:
        if current.usage.get(fr, 0) + remaining <= current.subtree.get(fr, 0):
            return current.parent is not None
        remaining -= current.local_available(fr)
        current = current.parent
    return False


class Ledger:
    """The quota tree of every ClusterQueue and cohort, with usage kept current."""

    def __init__(self) -> None:
        self.queues: dict[str, Node] = {}
        self.cohorts: dict[str, Node] = {}
        #: ClusterQueues per tree root, rebuilt lazily after any structural change
        self._trees: dict[int, list[str]] = {}
        #: bumped by every structural change (a spec, a ClusterQueue or cohort added or removed)
        self.epoch = 0
        #: a new value for every change of usage, never handed out twice (``Node.version``)
        self._clock = 0

    # -- structure ----------------------------------------------------------------------------------
    def _cohort(self, name: str) -> Node:
        node = self.cohorts.get(name)
        if node is None:
            node = self.cohorts[name] = Node(name, is_cohort=True)
        return node

    @staticmethod
    def _forget_heights(node: Node | None) -> None:
        """The tree above ``node`` changes shape: its heights are counted again."""
        while node is not None:
            node.known_height = -1
            node = node.parent

    def _detach(self, node: Node) -> Node | None:
        self.epoch += 1
        self._trees.clear()
        self._forget_heights(node)
        parent = node.parent
        if parent is not None:
            parent.children.remove(node)
            node.parent = None
        return parent

    def _attach(self, node: Node, parent_name: str) -> None:
        self.epoch += 1
        self._trees.clear()
        if not parent_name:
            return
        parent = self._cohort(parent_name)
        ancestor: Node | None = parent
        while ancestor is not None:  # a cycle would make every walk endless: refuse the link
            if ancestor is node:
                return
            ancestor = ancestor.parent
        node.parent = parent
        parent.children.append(node)
        self._forget_heights(parent)

    def _prune(self, node: Node | None) -> None:
        while node is not None and node.is_cohort and not node.explicit and not node.children:
            parent = self._detach(node)
            self.cohorts.pop(node.name, None)
            node = parent

    def _recompute_if_alive(self, root: Node) -> None:
        if root.is_cohort and self.cohorts.get(root.name) is root:
            self._recompute(root)

    def set_cluster_queue(self, name: str, *, cohort: str, groups: Iterable[ResourceGroup]) -> Node:
        node = self.queues.get(name)
        if node is None:
            node = self.queues[name] = Node(name, is_cohort=False)
        old_root = node.root()
        self._prune(self._detach(node))
        node.quotas = quotas_of(groups)
        self._attach(node, cohort)
        if old_root is not node.root():
            self._recompute_if_alive(old_root)
        self._recompute(node.root())
        return node

    def delete_cluster_queue(self, name: str) -> None:
        node = self.queues.pop(name, None)
        if node is None:
            return
        old_root = node.root()
        self._prune(self._detach(node))
        self._recompute_if_alive(old_root)

    def set_cohort(self, name: str, *, parent: str, groups: Iterable[ResourceGroup]) -> None:
        node = self._cohort(name)
        node.explicit = True
        old_root = node.root()
        old_parent = self._detach(node)
        node.quotas = quotas_of(groups)
        self._attach(node, parent)
        self._prune(old_parent)
        if old_root is not node.root():
            self._recompute_if_alive(old_root)
        self._recompute(node.root())

    def delete_cohort(self, name: str) -> None:
        """The object is gone; the cohort lives on implicitly while ClusterQueues still name it."""
        node = self.cohorts.get(name)
        if node is None:
            return
        node.explicit = False
        node.quotas = {}
        old_root = node.root()
        parent = self._detach(node)
        self._prune(node)
        self._prune(parent)
        self._recompute_if_alive(old_root)
        self._recompute_if_alive(node)

    def _recompute(self, node: Node) -> None:
        self.epoch += 1
        self._trees.clear()
        self._recompute_tree(node)
        self._clock += 1
        node.version = self._clock

    def _recompute_tree(self, node: Node) -> None:
        """Rebuild subtree quotas and cohort usage of the tree under ``node`` from its leaves."""
        node.known_available = {}
        if not node.is_cohort:
            node.subtree = {fr: quota.nominal for fr, quota in node.quotas.items()}
            return
        node.subtree = {fr: quota.nominal for fr, quota in node.quotas.items()}
        node.usage = {}
        node.claims_below = 0
        node.known_height = -1
        for child in node.children:
            self._recompute_tree(child)
            node.claims_below += child.claims_below
            for fr, child_quota in child.subtree.items():
                node.subtree[fr] = node.subtree.get(fr, 0) + child_quota - child.local_quota(fr)
            for fr, child_usage in child.usage.items():
                above = max(0, child_usage - child.local_quota(fr))
                if above:
                    node.usage[fr] = node.usage.get(fr, 0) + above
        node.known_height = height(node)

    # -- usage ----------------------------------------------------------------------------------------
    def charge(self, queue: str, usage: Mapping[FlavorResource, int]) -> None:
        node = self.queues[queue]
        self._touch(node)
        for fr, amount in usage.items():
            add_usage(node, fr, amount)

    def release(self, queue: str, usage: Mapping[FlavorResource, int]) -> None:
        node = self.queues.get(queue)
        if node is None:
            return
        self._touch(node)
        for fr, amount in usage.items():
            remove_usage(node, fr, amount)

    def charge_claim(self, queue: str, usage: Mapping[FlavorResource, int]) -> None:
        """``charge`` room claimed for a waiting preemptor: taken like usage, not admitted usage
        (``admitted_usage``)."""
        self.charge(queue, usage)
        self._count_claim(queue, usage, 1)

    def release_claim(self, queue: str, usage: Mapping[FlavorResource, int]) -> None:
        """``release`` what ``charge_claim`` charged."""
        self.release(queue, usage)
        self._count_claim(queue, usage, -1)

    def _count_claim(self, queue: str, usage: Mapping[FlavorResource, int], sign: int) -> None:
        node: Node | None = self.queues.get(queue)
        if node is None or not usage or (sign < 0 and node.claims_below <= 0):
            return  # (nothing counted here: a claim made before its ClusterQueue was deleted and made anew)
        claimed = node.claimed
        for fr, amount in usage.items():
            left = claimed.get(fr, 0) + sign * amount
            if left > 0:
                claimed[fr] = left
            else:
                claimed.pop(fr, None)
        while node is not None:
            node.claims_below += sign
            node = node.parent

    def _touch(self, node: Node) -> None:
        while node.parent is not None:
            node = node.parent
        self._clock += 1
        node.version = self._clock

    def stamp(self, node: Node) -> tuple[int, int]:
        """What the usage of ``node``'s tree is as of now: equal stamps, equal usage (and structure)."""
        while node.parent is not None:
            node = node.parent
        return self.epoch, node.version

    def rewind(self, node: Node, stamp: tuple[int, int]) -> None:
        """Changes made to ``node``'s tree since ``stamp`` were all undone (a simulated removal put
        back): the tree gets its stamp back, so what was derived from it before still holds."""
        if stamp[0] != self.epoch:
            return
        while node.parent is not None:
            node = node.parent
        node.version = stamp[1]

    def available(self, queue: str, fr: FlavorResource) -> int:
        return available(self.queues[queue], fr)

    def potential_available(self, queue: str, fr: FlavorResource) -> int:
        return potential_available(self.queues[queue], fr)

    def borrowing_height(self, queue: str, fr: FlavorResource, amount: int) -> int:
        return borrowing_height(self.queues[queue], fr, amount)

    def may_reclaim_in_hierarchy(self, queue: str, fr: FlavorResource, amount: int) -> bool:
        node = self.queues[queue]
        if node.parent is None or node.parent.parent is None:
            return False  # no subtree between the ClusterQueue and the root: nothing to reclaim into
        return may_reclaim_in_hierarchy(node, fr, amount)

    def usage(self, queue: str) -> Mapping[FlavorResource, int]:
        node = self.queues.get(queue)
        return node.usage if node is not None else {}

    def tree_queues(self, queue: str) -> list[str]:
        """Every ClusterQueue sharing ``queue``'s cohort tree (itself included)."""
        node = self.queues.get(queue)
        if node is None:
            return []
        root = node.root()
        cached = self._trees.get(id(root))
        if cached is not None:
            return cached
        out = self._trees[id(root)] = root.queue_names()
        return out
