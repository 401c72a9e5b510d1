"""The JSON Patches that suspend, start and stop an object (Kueue's ``Suspend``, ``RunWithPodSetsInfo`` and
``RestorePodSetsInfo``), through the kind's hold (``kueue_webhook.api.integrations.suspension``) and, for a
Job, its
staged stop."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from kueue_webhook.api.integrations.engine.pod_sets import Element, accepts_partial_admission, elements
from kueue_webhook.api.integrations.engine.reading import annotation, as_int, metadata_of, parse_go_bool
from kueue_webhook.api.integrations.model import Integration
from kueue_webhook.api.integrations.paths import FieldPath, pointer
from kueue_webhook.api.integrations.suspension import set_ops, suspension_of
from kueue_webhook.api.objects import ResourceFlavor

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


def start_patch(
    integration: Integration,
    obj: Mapping[str, Any],
    flavors: Mapping[str, Sequence[ResourceFlavor]],
    *,
    counts: Mapping[str, int] | None = None,
) -> list[JSON]:
    """JSON Patch starting an admitted object: suspend cleared, each pod set's template given the flavors
    assigned to it (``flavors`` by pod set name), and under partial admission the admitted ``counts`` (by
    pod set name: the Workload's ``podSetAssignments[].count``) written into the pod sets' count fields.

    The first op tests that the object is still suspended. Raises FlavorConflict when a flavor contradicts
    a template. A pod set without a template of its own (KubeRay's default submitter) gets nothing injected.
    """
    ops = suspension_of(integration).release_ops(obj)
    if not ops:
        return []  # not held (a pod's gate already removed): nothing to start
    ops.extend(_count_ops(integration, obj, counts or {}))
    if integration.pod_set_infos is not None:
        infos = [
            (e.segments, *_flavor_injection({}, flavors.get(e.name, ()))) for e in elements(integration, obj)
        ]
        return ops + integration.pod_set_infos.write(obj, infos)
    for element in elements(integration, obj):
        pod_spec = element.scheduling_spec()
        if pod_spec is None:
            continue
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
    ops.extend(_count_ops(integration, obj, original_counts or {}))
    staged = integration.staged_stop
    if staged is not None and staged.annotation in (metadata_of(obj).get("annotations") or {}):
        ops.append(_remove_annotation(staged.annotation))
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
