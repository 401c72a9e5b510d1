"""Nodes and the pods bound to them, reduced to what topology-aware scheduling reads.

A Node matters for its labels (which flavor and which domains it belongs to), its allocatable resources,
its taints and whether pods may be scheduled on it now (Ready and not cordoned: Kueue's TAS leaves other
nodes out). A pod matters only while it is bound to a node and not terminated: its requests use that
node's capacity. Everything else on these objects, often most of their bytes, is dropped at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kueue_webhook.api.objects.flavors import Taint
from kueue_webhook.api.pods import Requests, pod_requests
from kueue_webhook.api.quantity import QuantityError, parse_quantity

__all__ = ["NodeView", "PodOnNode", "is_tas_pod", "node_view", "pod_on_node"]

#: annotations marking a pod placed by topology-aware scheduling (Kueue's utiltas.IsTAS): its usage is
#: counted from its Workload's topology assignment, not from the pod
_TAS_POD_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
    "kueue.x-k8s.io/podset-slice-required-topology",
)


@dataclass(frozen=True, slots=True)
class NodeView:
    name: str
    labels: Mapping[str, str]
    #: allocatable resources in nano-units (``pods`` included when the node reports it)
    allocatable: Mapping[str, int]
    taints: tuple[Taint, ...] = ()
    #: Ready=True and not ``spec.unschedulable``
    schedulable: bool = True


def node_view(obj: Mapping[str, Any]) -> NodeView | None:
    """The view of a Node object (None without a name)."""
    meta = obj.get("metadata") or {}
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        return None
    raw_labels = meta.get("labels") or {}
    labels = {str(k): str(v) for k, v in raw_labels.items()} if isinstance(raw_labels, Mapping) else {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    if not isinstance(spec, Mapping):
        spec = {}
    if not isinstance(status, Mapping):
        status = {}
    allocatable: dict[str, int] = {}
    raw_allocatable = status.get("allocatable") or {}
    if isinstance(raw_allocatable, Mapping):
        for resource, value in raw_allocatable.items():
            try:
                allocatable[str(resource)] = parse_quantity(value).nanos
            except (QuantityError, TypeError, ValueError):
                continue
    taints = tuple(
        Taint(str(t.get("key") or ""), str(t.get("value") or ""), str(t.get("effect") or ""))
        for t in (spec.get("taints") or [])
        if isinstance(t, Mapping)
    )
    ready = any(
        isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in (status.get("conditions") or [])
    )
    schedulable = ready and not spec.get("unschedulable")
    return NodeView(name, labels, allocatable, taints, schedulable)


@dataclass(frozen=True, slots=True)
class PodOnNode:
    node: str
    requests: Requests


def is_tas_pod(annotations: Mapping[str, Any]) -> bool:
    return any(key in annotations for key in _TAS_POD_ANNOTATIONS)


def pod_on_node(obj: Mapping[str, Any]) -> PodOnNode | None:
    """What a pod uses of its node: None unless bound, not terminated and not placed by TAS (Kueue's
    non-TAS usage cache)."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return None
    node = spec.get("nodeName")
    if not isinstance(node, str) or not node:
        return None
    status = obj.get("status")
    if isinstance(status, Mapping) and status.get("phase") in ("Succeeded", "Failed"):
        return None
    meta = obj.get("metadata") or {}
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    if isinstance(annotations, Mapping) and is_tas_pod(annotations):
        return None
    requests, _ = pod_requests(spec)
    return PodOnNode(node, requests)
