"""The JSON Patches that suspend, start and stop an object (Kueue's ``Suspend``, ``RunWithPodSetsInfo`` and
``RestorePodSetsInfo``), through the kind's hold (``kueue_webhook.api.integrations.suspension``) and, for a
Job, its
staged stop."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from kueue_webhook.api.admitted_pods import CLUSTER_QUEUE_LABEL, LOCAL_QUEUE_LABEL, PodMarks
from kueue_webhook.api.integrations.engine.pod_sets import Element, accepts_partial_admission, elements
from kueue_webhook.api.integrations.engine.reading import annotation, as_int, metadata_of, parse_go_bool
from kueue_webhook.api.integrations.model import Integration, PodSetMarks
from kueue_webhook.api.integrations.paths import FieldPath, pointer
from kueue_webhook.api.integrations.suspension import set_ops, suspension_of
from kueue_webhook.api.multikueue import WORKER_POD_LABEL
from kueue_webhook.api.objects import ResourceFlavor
from kueue_webhook.api.topology_pods import (
    PODSET_LABEL,
    TOPOLOGY_GATE,
    UNCONSTRAINED_ANNOTATION,
    WORKLOAD_ANNOTATION,
    TopologyStart,
)

__all__ = [
    "FlavorConflict",
    "is_stopping",
    "is_suspended",
    "own_finalizer",
    "restore_ops",
    "start_patch",
    "start_time_blocks_restore",
    "stop_patches",
    "stops_by_deletion",
    "suspend_ops",
    "suspend_written",
]

JSON = dict[str, Any]


class FlavorConflict(ValueError):
    """A flavor's node label contradicts a nodeSelector the object already sets; it cannot start there."""


def is_stopping(integration: Integration, obj: Mapping[str, Any]) -> bool:
    """Suspended by the first half of a staged stop whose restore has not been written yet."""
    staged = integration.staged_stop
    return staged is not None and annotation(obj, staged.annotation) == "true"


def start_time_blocks_restore(integration: Integration, obj: Mapping[str, Any]) -> bool:
    """The object still records that it started, so kube-apiserver would refuse to restore its template:
    the start time must be cleared through the status subresource first (Kueue's ``Job.Stop``)."""
    staged = integration.staged_stop
    return staged is not None and staged.start_time.get(obj) is not None


def is_suspended(integration: Integration, obj: Mapping[str, Any]) -> bool:
    """Suspended, and not half-way through a stop (Kueue's ``IsSuspended``; an absent field is false); for a
    gated kind, whether its gate is still there."""
    return suspend_written(integration, obj) and not is_stopping(integration, obj)


def stops_by_deletion(integration: Integration) -> bool:
    """A started object of this kind cannot be suspended again, only deleted (Kueue's ``Pod.Stop``)."""
    return suspension_of(integration).stops_by_deletion


def own_finalizer(integration: Integration) -> str:
    """The finalizer the kind's queued objects carry until their end is seen (a pod's), "" for none."""
    return suspension_of(integration).finalizer


def suspend_written(integration: Integration, obj: Mapping[str, Any]) -> bool:
    """What the object's suspend field (or gate) says, whatever a staged stop's mark says: what its writer
    sees, and what admission compares between an object's old and new versions."""
    return suspension_of(integration).is_set(obj)


def suspend_ops(integration: Integration, obj: Mapping[str, Any], *, op: str = "replace") -> list[JSON]:
    """JSON Patch that suspends the object (``op``, ``replace`` unless told, when the field is there, else
    created); for a gated kind, adds its gate (which the API server accepts on create only)."""
    return suspension_of(integration).set_ops(obj, op=op)


def _flavor_injection(
    pod_spec: Mapping[str, Any], flavors: Sequence[ResourceFlavor]
) -> tuple[dict[str, str], list[Any]]:
    selector = dict(pod_spec.get("nodeSelector") or {})
    tolerations = list(pod_spec.get("tolerations") or [])
    for flavor in flavors:
        for key, value in flavor.node_labels.items():
            if key in selector and selector[key] != value:
                raise FlavorConflict(
                    f"nodeSelector {key}={selector[key]} conflicts with ResourceFlavor {flavor.name} "
                    f"node label {key}={value}"
                )
            selector[key] = value
        for toleration in flavor.tolerations:
            if dict(toleration) not in tolerations:
                tolerations.append(dict(toleration))
    return selector, tolerations


def _follows(integration: Integration, obj: Mapping[str, Any]) -> bool:
    partial = integration.partial_admission
    raw = annotation(obj, partial.follow_annotation) if partial is not None else None
    return raw is not None and parse_go_bool(raw) is True


def _admitted_counts(
    integration: Integration, obj: Mapping[str, Any], counts: Mapping[str, int]
) -> list[tuple[Element, int]]:
    """The partially admittable pod sets named in ``counts``, with their count. As Kueue's Job, a pod set
    counts only while it accepts partial admission (its minCount reads), so an object that never did keeps
    its fields."""
    out = []
    for element in elements(integration, obj):
        count = counts.get(element.name)
        if count is not None and accepts_partial_admission(element):
            out.append((element, count))
    return out


def _count_ops(integration: Integration, obj: Mapping[str, Any], counts: Mapping[str, int]) -> list[JSON]:
    """Set the count field of each partially admittable pod set named in ``counts`` (by pod set name) to
    its count, and a Job's followers with it."""
    ops: list[JSON] = []
    partial = integration.partial_admission
    follow = partial.follow_fields if partial is not None and _follows(integration, obj) else ()
    for element, count in _admitted_counts(integration, obj, counts):
        for path in (element.source.count[0].path, *(FieldPath((name,)) for name in follow)):
            if as_int(path.get(element.value)) != count:
                ops.extend(_set_ops_at(element, path, count))
    return ops


def _set_ops_at(element: Element, path: FieldPath, value: int) -> list[JSON]:
    """``set_ops`` for a path inside a pod set's element (``add`` creates or replaces a field)."""
    return [
        {**op, "op": "add", "path": pointer(element.segments) + op["path"]}
        for op in set_ops(element.value, path, value)
    ]


def _topology_gate_index(gates: Any) -> int | None:
    if not isinstance(gates, list):
        return None
    for index, gate in enumerate(gates):
        if isinstance(gate, Mapping) and gate.get("name") == TOPOLOGY_GATE:
            return index
    return None


def _marked_map(current: Any, marks: Mapping[str, str]) -> dict[str, Any] | None:
    """``current`` (a labels or annotations map) with ``marks`` set; None when it already has them."""
    merged = dict(current) if isinstance(current, Mapping) else {}
    if all(merged.get(key) == value for key, value in marks.items()):
        return None
    merged.update(marks)
    return merged


def _labels_of(marks: PodMarks | None, element: Element) -> dict[str, str]:
    return marks.labels_of(element.name) if marks is not None else {}


def _mark_ops(
    integration: Integration,
    element: Element,
    start: TopologyStart | None,
    marks: PodMarks | None,
) -> list[JSON]:
    """The labels and annotations of an admitted pod set (``marks``: the pod set label, the queues', the
    Workload's) on its pods; placed by topology, also what its placement puts there, and its pods wait at the
    topology gate (Kueue's podset.Merge of the PodSetInfo). A pod got its gate when it was created (a gate
    cannot be added later); a template gets it here."""
    root = element.value if integration.gate is not None else element.template() or {}
    meta = root.get("metadata") if isinstance(root.get("metadata"), Mapping) else None
    labels = {**_labels_of(marks, element), **(start.labels() if start is not None else {})}
    annotations = {
        **(marks.annotations if marks else {}),
        **(start.annotations() if start is not None else {}),
    }
    ops: list[JSON] = []
    if meta is None:
        ops.append(
            {
                "op": "add",
                "path": element.template_pointer("metadata"),
                "value": {"labels": labels, **({"annotations": annotations} if annotations else {})},
            }
        )
    else:
        for field, wanted in (("labels", labels), ("annotations", annotations)):
            if not wanted:
                continue
            merged = _marked_map(meta.get(field), wanted)
            if merged is not None:
                ops.append(
                    {"op": "add", "path": element.template_pointer("metadata", field), "value": merged}
                )
    if integration.gate is None and start is not None:
        gates = _mapping(root.get("spec")).get("schedulingGates")
        if _topology_gate_index(gates) is None:
            ops.append(
                {
                    "op": "add",
                    "path": element.template_pointer("spec", "schedulingGates"),
                    "value": [*(gates if isinstance(gates, list) else []), {"name": TOPOLOGY_GATE}],
                }
            )
    return ops


def _drop_topology_gate(integration: Integration, obj: Mapping[str, Any]) -> list[JSON]:
    """A queued pod of a pod set not placed by topology loses the topology gate its webhook gave it, with
    the admission gate (Kueue's pod ``prepare``); its index is counted after the admission gate's removal."""
    gates = integration.suspend.get(obj)
    index = _topology_gate_index(gates)
    if index is None or not isinstance(gates, list) or integration.gate is None:
        return []
    admission = integration.gate.name
    released = any(isinstance(g, Mapping) and g.get("name") == admission for g in gates[:index])
    where = pointer((*integration.suspend, index - 1 if released else index))
    return [{"op": "test", "path": where, "value": dict(gates[index])}, {"op": "remove", "path": where}]


def _marks(
    element: Element,
    flavors: Sequence[ResourceFlavor],
    start: TopologyStart | None,
    marks: PodMarks | None,
) -> PodSetMarks:
    """One pod set's flavors and marks, for a kind that takes them in fields of its own."""
    selector, tolerations = _flavor_injection({}, flavors)
    return PodSetMarks(
        element.segments,
        selector,
        tolerations,
        labels={**_labels_of(marks, element), **(start.labels() if start is not None else {})},
        annotations={
            **(marks.annotations if marks else {}),
            **(start.annotations() if start is not None else {}),
        },
        scheduling_gates=(TOPOLOGY_GATE,) if start is not None else (),
    )


def start_patch(
    integration: Integration,
    obj: Mapping[str, Any],
    flavors: Mapping[str, Sequence[ResourceFlavor]],
    *,
    counts: Mapping[str, int] | None = None,
    topology: Mapping[str, TopologyStart] | None = None,
    marks: PodMarks | None = None,
) -> list[JSON]:
    """JSON Patch starting an admitted object: suspend cleared, each pod set's template given the flavors
    assigned to it (``flavors`` by pod set name), and under partial admission the admitted ``counts`` (by
    pod set name: the Workload's ``podSetAssignments[].count``) written into the pod sets' count fields.
    The pod sets placed by topology (``topology`` by pod set name) get their marks and gate
    (``kueue_webhook.api.topology_pods``); a pod of any other pod set loses its topology gate. Every pod
    template gets ``marks`` (``kueue_webhook.api.admitted_pods``), taken off again when it is suspended.

    The first op tests that the object is still suspended. Raises FlavorConflict when a flavor contradicts
    a template. A pod set without a template of its own (KubeRay's default submitter) gets nothing injected.
    """
    ops = suspension_of(integration).release_ops(obj)
    if not ops:
        return []  # not held (a pod's gate already removed): nothing to start
    ops.extend(_count_ops(integration, obj, counts or {}))
    topology = topology or {}
    if integration.pod_set_infos is not None:
        if integration.pod_set_infos.write_marked is not None:
            marked = [
                _marks(e, flavors.get(e.name, ()), topology.get(e.name), marks)
                for e in elements(integration, obj)
            ]
            return ops + integration.pod_set_infos.write_marked(obj, marked)
        infos = [
            (e.segments, *_flavor_injection({}, flavors.get(e.name, ()))) for e in elements(integration, obj)
        ]
        return ops + integration.pod_set_infos.write(obj, infos)
    for element in elements(integration, obj):
        pod_spec = element.scheduling_spec()
        if pod_spec is None:
            continue
        start = topology.get(element.name)
        # a pod set described by fields of its own (a SparkApplication's roles) has no template metadata
        # to mark: its labels are the role's, which the marks leave alone
        own = marks if element.source.build_template is None else None
        if start is not None or own is not None:
            ops.extend(_mark_ops(integration, element, start, own))
        if start is None and integration.gate is not None:
            ops.extend(_drop_topology_gate(integration, element.value))
        selector, tolerations = _flavor_injection(pod_spec, flavors.get(element.name, ()))
        if selector != (pod_spec.get("nodeSelector") or {}):
            ops.append({"op": "add", "path": element.scheduling_pointer("nodeSelector"), "value": selector})
        if tolerations != list(pod_spec.get("tolerations") or []):
            ops.append({"op": "add", "path": element.scheduling_pointer("tolerations"), "value": tolerations})
    return ops


def restore_ops(
    integration: Integration,
    obj: Mapping[str, Any],
    originals: Sequence[Mapping[str, Any]],
    original_counts: Mapping[str, int] | None = None,
) -> list[JSON]:
    """Suspend, and put back the nodeSelector/tolerations of each pod set's ``originals`` template (by
    position; nothing restored when the pod set count differs, as Kueue's RestorePodSetsInfo), the counts
    a partial admission reduced (``original_counts`` by pod set name: the Workload's ``count``), and drop
    a half-done stop's annotation."""
    ops: list[JSON] = suspend_ops(integration, obj)
    found = elements(integration, obj)
    if integration.pod_set_infos is not None:
        ops.extend(integration.pod_set_infos.clear(obj))
    elif len(found) == len(originals):
        for element, original_template in zip(found, originals, strict=True):
            current = element.scheduling_spec()
            if current is None:
                continue
            original = original_template.get("spec") or {}
            for name in ("nodeSelector", "tolerations"):
                path = element.scheduling_pointer(name)
                if name in original:
                    if current.get(name) != original[name]:
                        ops.append({"op": "add", "path": path, "value": copy.deepcopy(original[name])})
                elif name in current:
                    ops.append({"op": "remove", "path": path})
            ops.extend(_unmark_ops(element, element.template() or {}, original_template))
    ops.extend(_count_ops(integration, obj, original_counts or {}))
    staged = integration.staged_stop
    if staged is not None and staged.annotation in (metadata_of(obj).get("annotations") or {}):
        ops.append(_remove_annotation(staged.annotation))
    return ops


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _unmark_ops(element: Element, template: Mapping[str, Any], original: Mapping[str, Any]) -> list[JSON]:
    """Take off a template what starting it put there and its original (the Workload's) lacks: the pod set,
    queue and worker labels, the Workload and unconstrained annotations, the topology gate."""
    ops: list[JSON] = []
    meta, original_meta = _mapping(template.get("metadata")), _mapping(original.get("metadata"))
    for field, keys in (
        ("labels", (PODSET_LABEL, WORKER_POD_LABEL, LOCAL_QUEUE_LABEL, CLUSTER_QUEUE_LABEL)),
        ("annotations", (WORKLOAD_ANNOTATION, UNCONSTRAINED_ANNOTATION)),
    ):
        current, kept = _mapping(meta.get(field)), _mapping(original_meta.get(field))
        stale = [key for key in keys if key in current and key not in kept]
        if stale:
            remaining = {k: v for k, v in current.items() if k not in stale}
            path = element.template_pointer("metadata", field)
            if remaining or field in original_meta:
                ops.append({"op": "add", "path": path, "value": remaining})
            else:
                ops.append({"op": "remove", "path": path})
    spec, original_spec = _mapping(template.get("spec")), _mapping(original.get("spec"))
    gates = spec.get("schedulingGates")
    if (
        isinstance(gates, list)
        and _topology_gate_index(gates) is not None
        and _topology_gate_index(original_spec.get("schedulingGates")) is None
    ):
        remaining_gates = [
            g for g in gates if not (isinstance(g, Mapping) and g.get("name") == TOPOLOGY_GATE)
        ]
        path = element.template_pointer("spec", "schedulingGates")
        ops.append(
            {"op": "add", "path": path, "value": remaining_gates}
            if remaining_gates
            else {"op": "remove", "path": path}
        )
    return ops


def _remove_annotation(key: str) -> JSON:
    return {"op": "remove", "path": pointer(("metadata", "annotations", key))}


def stop_patches(
    integration: Integration,
    obj: Mapping[str, Any],
    originals: Sequence[Mapping[str, Any]],
    original_counts: Mapping[str, int] | None = None,
) -> list[list[JSON]]:
    """The JSON Patches that stop an object and restore its templates (``originals``: the Workload's pod
    set templates) and counts, in order.

    One, except for a running object of a kind with a staged stop (a Job) that has something to restore:
    then it is first suspended and marked, and restored and unmarked by the second patch, which the
    caller sends once ``start_time_blocks_restore`` no longer holds (see ``StagedStop``). A kind without
    that rule (a declared one) is suspended and restored in one patch.
    """
    restore = restore_ops(integration, obj, originals, original_counts)
    staged = integration.staged_stop
    running = integration.suspend.get(obj) is not True
    suspend = suspend_ops(integration, obj)
    if staged is None or not running or restore == suspend:
        return [restore]
    annotations = metadata_of(obj).get("annotations")
    mark: JSON = (
        {"op": "add", "path": pointer(("metadata", "annotations", staged.annotation)), "value": "true"}
        if isinstance(annotations, Mapping)
        else {"op": "add", "path": "/metadata/annotations", "value": {staged.annotation: "true"}}
    )
    if _remove_annotation(staged.annotation) not in restore:
        restore.append(_remove_annotation(staged.annotation))
    return [[*suspend, mark], restore]
