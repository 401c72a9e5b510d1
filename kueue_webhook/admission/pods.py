"""What the webhook adds to a queued Pod, and to the pod template of a Deployment or StatefulSet, so that
their pods queue through the pod integration (Kueue's pod, deployment and statefulset webhooks).

A queued pod gets Kueue's ``kueue.x-k8s.io/admission`` scheduling gate (the pod's "suspend": the scheduler
leaves it alone until the gate is removed) and its ``kueue.x-k8s.io/topology`` gate, the
``kueue.x-k8s.io/managed=true`` label, the ``kueue.x-k8s.io/managed`` finalizer (so the controller sees
how it ended before it disappears; not on a pod made from a marked template, whose parent makes it again,
as in Kueue) and, in a group, its role hash. A Deployment's template gets the queue label, so each of its
pods is a Workload of its own; a StatefulSet's pods are given their group by the controller once they
exist, since the group is named after the StatefulSet's UID (``kueue_webhook.api.integrations.statefulsets``).
Everything is computed on a copy and sent as whole-map ``add`` ops, so the order of the edits never matters.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kueue_webhook.api.integrations import Integration
from kueue_webhook.api.integrations.builtin import MANAGED_LABEL
from kueue_webhook.api.integrations.engine import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from kueue_webhook.api.integrations.paths import pointer
from kueue_webhook.api.integrations.pod_groups import (
    ROLE_HASH_ANNOTATION,
    SERVING_ANNOTATION,
    group_name,
    spec_role_hash,
)
from kueue_webhook.api.integrations.statefulsets import SUSPENDING_PARENT_ANNOTATION
from kueue_webhook.api.topology_pods import TOPOLOGY_GATE

__all__ = ["SUSPENDING_PARENT_ANNOTATION", "mark_pod", "mark_template"]

JSON = dict[str, Any]


def _diff_maps(before: Mapping[str, Any], after: Mapping[str, Any], base: tuple[str, ...]) -> list[JSON]:
    """``add`` ops setting each of metadata's labels/annotations/finalizers that changed, whole."""
    ops: list[JSON] = []
    old_meta = before.get("metadata") if isinstance(before.get("metadata"), Mapping) else None
    new_meta = after["metadata"]
    if old_meta is None:
        return [{"op": "add", "path": pointer((*base, "metadata")), "value": new_meta}]
    for field in ("labels", "annotations", "finalizers"):
        if old_meta.get(field) != new_meta.get(field):
            ops.append({"op": "add", "path": pointer((*base, "metadata", field)), "value": new_meta[field]})
    return ops


def mark_pod(pod: Mapping[str, Any], gate_ops: list[JSON], integration: Integration) -> list[JSON]:
    """The ops that queue a pod: its gate (``gate_ops``), the managed label, the finalizer and, in a group,
    the role hash."""
    after: JSON = copy.deepcopy(dict(pod))
    meta = after.setdefault("metadata", {})
    gate = integration.gate
    if gate is not None and gate.managed_label:
        meta.setdefault("labels", {})[gate.managed_label] = "true"
    by_parent = SUSPENDING_PARENT_ANNOTATION in ((pod.get("metadata") or {}).get("annotations") or {})
    if (
        gate is not None
        and gate.finalizer
        and not by_parent
        and gate.finalizer not in (meta.get("finalizers") or [])
    ):
        meta["finalizers"] = [*(meta.get("finalizers") or []), gate.finalizer]
    if group_name(pod) is not None:
        annotations = meta.setdefault("annotations", {})
        if ROLE_HASH_ANNOTATION not in annotations:
            spec = pod.get("spec")
            annotations[ROLE_HASH_ANNOTATION] = spec_role_hash(spec if isinstance(spec, Mapping) else {})
    return [*gate_ops, *_topology_gate_ops(pod, gate_ops), *_diff_maps(pod, after, ())]


def _topology_gate_ops(pod: Mapping[str, Any], gate_ops: list[JSON]) -> list[JSON]:
    """Kueue's pod webhook gates every queued pod for topology too (``kueue.x-k8s.io/topology``): whether
    its pod set is placed by topology is known only once it is admitted, and a gate can be added only on
    create. Starting a pod not placed by topology removes it with the admission gate."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    gates = spec.get("schedulingGates") if isinstance(spec, Mapping) else None
    if isinstance(gates, list) and any(
        isinstance(g, Mapping) and g.get("name") == TOPOLOGY_GATE for g in gates
    ):
        return []
    if not gate_ops and not isinstance(gates, list):
        return []
    return [{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": TOPOLOGY_GATE}}]


def mark_template(obj: Mapping[str, Any], integration: Integration, queue: str | None) -> list[JSON]:
    """The ops that queue the pods of a Deployment, a StatefulSet or a LeaderWorkerSet (each of its pod
    templates) through the pod integration; a LeaderWorkerSet's groups are also marked as serving ones, as
    Kueue's LeaderWorkerSet webhook marks them."""
    ops: list[JSON] = []
    for path in integration.pod_templates:
        template = path.get(obj)
        if not isinstance(template, Mapping):
            continue
        after: JSON = copy.deepcopy(dict(template))
        meta = after.setdefault("metadata", {})
        labels = meta.setdefault("labels", {})
        annotations = meta.setdefault("annotations", {})
        annotations[SUSPENDING_PARENT_ANNOTATION] = integration.name
        if integration.through_pods == "groups":
            annotations[SERVING_ANNOTATION] = "true"
        labels[MANAGED_LABEL] = "true"
        if queue:
            labels[QUEUE_NAME_LABEL] = queue
        obj_labels = (obj.get("metadata") or {}).get("labels") or {}
        if isinstance(obj_labels.get(PRIORITY_CLASS_LABEL), str):
            labels[PRIORITY_CLASS_LABEL] = obj_labels[PRIORITY_CLASS_LABEL]
        if after != template:
            ops.extend(_diff_maps(template, after, tuple(path)))
    return ops
