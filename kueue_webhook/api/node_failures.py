"""What a failed node means for the topology-aware Workloads placed on it: the decision half of Kueue's TAS
node controller (pkg/controller/tas/node_controller.go) with Kueue's default feature gates, pure.

A node fails for an admitted Workload whose topology assignment names it (lowest level
``kubernetes.io/hostname``, a pod count above 0) when it is deleted, has no Ready condition, or is not Ready
and none of the Workload's pods still run on it (TASReplaceNodeOnPodTermination, on by default: while a pod
bound to it has not terminated, the Workload waits; the fixed 30-second NotReady delay is off by default).
The Workload then records the node in ``status.unhealthyNodes`` and Kueue's scheduler looks for a
replacement domain. A second node failing while one is recorded evicts the Workload (reason
``NodeFailures``). A node Ready again is taken out of ``unhealthyNodes``.

Pods of such a Workload that were ungated onto the failed node but never bound to it (Pending, no
``nodeName``) can never run there: they are marked Failed (condition ``TerminatedByKueue``, reason
``UnschedulableOnAssignedNode``), so their owner makes new ones, which wait behind the topology gate for the
replacement domain.

Finding the replacement needs the nodes' free capacity; :class:`ReplacementSearch` is the seam for it: given
the Workload and the failed node, a new ``podSetAssignments`` list (the failed node swapped for another),
:data:`NO_REPLACEMENT` (Kueue's TASFailedNodeReplacementFailFast, on by default: the Workload is evicted) or
None (no answer yet: the Workload stays marked and its pods for that node stay gated).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from kueue_webhook.api.topology_assignment import TopologyAssignmentError, decode
from kueue_webhook.api.topology_pods import HOSTNAME_LABEL, TOPOLOGY_GATE

__all__ = [
    "MULTIPLE_FAILURES_MESSAGE",
    "NODE_FAILURES",
    "NO_REPLACEMENT",
    "NO_REPLACEMENT_MESSAGE",
    "TERMINATED_CONDITION",
    "AddUnhealthyNode",
    "Evict",
    "NoReplacementMarker",
    "NodeState",
    "RemoveUnhealthyNode",
    "ReplacementSearch",
    "assigned_nodes",
    "decide",
    "node_state",
    "stranded_pods",
    "unhealthy_nodes",
]

JSON = dict[str, Any]

#: Kueue's WorkloadEvictedDueToNodeFailures
NODE_FAILURES = "NodeFailures"
MULTIPLE_FAILURES_MESSAGE = (
    "Workload eviction triggered due to multiple TAS assigned node failures, including: {}"
)
NO_REPLACEMENT_MESSAGE = "Workload was evicted as there was no replacement for unhealthy node(s): {}"
#: the pod condition Kueue's node controller sets on a pod it fails (type, reason, message)
TERMINATED_CONDITION = (
    "TerminatedByKueue",
    "UnschedulableOnAssignedNode",
    "Pod terminated by Kueue NodeController due to node taint",
)


class _NoReplacement:
    def __repr__(self) -> str:
        return "NO_REPLACEMENT"


NO_REPLACEMENT: Final = _NoReplacement()
#: the type of :data:`NO_REPLACEMENT`, for a search's signature
NoReplacementMarker = _NoReplacement


class ReplacementSearch(Protocol):
    """Finds a domain to take the place of a failed node in a Workload's topology assignment."""

    def __call__(self, workload: Mapping[str, Any], node: str) -> list[JSON] | _NoReplacement | None: ...


@dataclass(frozen=True, slots=True)
class NodeState:
    """A node as failure detection sees it: gone, without a Ready condition, Ready or not."""

    exists: bool
    ready: bool | None  # None: no Ready condition


def node_state(node: Mapping[str, Any] | None) -> NodeState:
    if node is None:
        return NodeState(exists=False, ready=None)
    status = node.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for condition in conditions if isinstance(conditions, list) else []:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return NodeState(exists=True, ready=condition.get("status") == "True")
    return NodeState(exists=True, ready=None)


def assigned_nodes(workload: Mapping[str, Any]) -> set[str]:
    """The nodes with pods of ``workload`` in its topology assignments (hostname lowest level, count > 0;
    Kueue's HasNodeInPodSetAssignment). A malformed assignment names none."""
    admission = (workload.get("status") or {}).get("admission")
    if not isinstance(admission, Mapping):
        return set()
    nodes: set[str] = set()
    for assignment in admission.get("podSetAssignments") or []:
        topology = assignment.get("topologyAssignment") if isinstance(assignment, Mapping) else None
        if not isinstance(topology, dict):
            continue
        levels = topology.get("levels")
        if not isinstance(levels, list) or not levels or levels[-1] != HOSTNAME_LABEL:
            continue
        try:
            nodes.update(domain.values[-1] for domain in decode(topology) if domain.count > 0)
        except TopologyAssignmentError:
            continue
    return nodes


def unhealthy_nodes(workload: Mapping[str, Any]) -> list[str]:
    """``status.unhealthyNodes[].name``, in order."""
    listed = (workload.get("status") or {}).get("unhealthyNodes")
    if not isinstance(listed, list):
        return []
    return [str(entry["name"]) for entry in listed if isinstance(entry, Mapping) and "name" in entry]


@dataclass(frozen=True, slots=True)
class AddUnhealthyNode:
    node: str


@dataclass(frozen=True, slots=True)
class RemoveUnhealthyNode:
    node: str


@dataclass(frozen=True, slots=True)
class Evict:
    reason: str
    message: str


Action = AddUnhealthyNode | RemoveUnhealthyNode | Evict


def decide(
    workload: Mapping[str, Any], node: str, state: NodeState, *, progressing_pods: bool, evicted: bool
) -> Action | None:
    """What ``node``'s state means for ``workload`` (admitted, its assignment naming ``node``).

    ``progressing_pods``: a pod of the Workload bound to the node has neither terminated nor is being
    deleted; ``evicted``: the Workload already carries Evicted=True.
    """
    listed = unhealthy_nodes(workload)
    failed = not state.exists or state.ready is None or (state.ready is False and not progressing_pods)
    if not failed:
        return RemoveUnhealthyNode(node) if node in listed else None
    if evicted or node in listed:
        return None
    if listed:
        return Evict(NODE_FAILURES, MULTIPLE_FAILURES_MESSAGE.format(", ".join([*listed, node])))
    return AddUnhealthyNode(node)


def stranded_pods(pods: Iterable[Mapping[str, Any]], node: str) -> list[Mapping[str, Any]]:
    """Pods ungated onto ``node`` by their node selector that were never bound to it and are still Pending:
    they cannot run while the node has failed (Kueue's getPodsToTerminate)."""
    out = []
    for pod in pods:
        spec = pod.get("spec") or {}
        if (spec.get("nodeSelector") or {}).get(HOSTNAME_LABEL) != node or spec.get("nodeName"):
            continue
        if (pod.get("status") or {}).get("phase", "Pending") != "Pending":
            continue
        if any(gate.get("name") == TOPOLOGY_GATE for gate in spec.get("schedulingGates") or []):
            continue
        out.append(pod)
    return out
