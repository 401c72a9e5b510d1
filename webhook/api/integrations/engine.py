"""One pure engine for every integration: read a queued object's pod sets, build its Workload, and build the
JSON Patches that suspend, start and stop it, all from its ``Integration`` description.

This is Kueue's ``GenericJob`` contract turned into functions of (description, object): ``pod_sets`` is
``PodSets``, ``start_patch`` is ``RunWithPodSetsInfo`` (suspend cleared; each admitted flavor's ``nodeLabels``
merged into that pod set's ``nodeSelector``, its tolerations appended), ``stop_patches`` is ``Suspend`` plus
``RestorePodSetsInfo`` (the templates put back as the Workload recorded them before admission, matched by
position as Kueue does, and left alone when the pod set count no longer matches), ``finished``,
``has_active_pods`` and ``pods_ready`` are ``Finished``, ``IsActive`` and ``PodsReady``. Workload names are
Kueue's ``GetWorkloadNameForOwnerWithGVK``: ``<kind>-<name>`` cut to 247 characters, ``-``, then 5 hex of the
SHA-1 of kind, group, name and UID, so Kueue and this controller name the same object's Workload alike.

A kind held by a scheduling gate (a Pod) is the same contract with other writes
(``webhook.api.integrations.suspension``): it is suspended while the gate is in ``spec.schedulingGates``,
suspending adds the gate (only ever on create), starting removes it and injects the flavors into the pod's
own spec, and stopping is a deletion (``stops_by_deletion``).

Starting a patch with a ``test`` that the object is still suspended makes a start built from a stale view
fail (422) instead of starting an object twice.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from webhook.api.errors import FieldError
from webhook.api.finalizers import RESOURCE_IN_USE
from webhook.api.integrations.model import Integration, PodSetSource
from webhook.api.integrations.paths import FieldPath, pointer
from webhook.api.integrations.suspension import set_ops, suspension_of
from webhook.api.objects import API_VERSION, GROUP, PodSet, ResourceFlavor
from webhook.api.pods import pod_requests

__all__ = [
    "JOB_UID_LABEL",
    "PRIORITY_CLASS_LABEL",
    "QUEUE_NAME_LABEL",
    "Element",
    "FlavorConflict",
    "accepts_partial_admission",
    "element_count",
    "element_min_count",
    "elements",
    "finished",
    "has_active_pods",
    "is_stopping",
    "is_suspended",
    "min_count",
    "own_finalizer",
    "parse_go_bool",
    "parse_go_int",
    "pod_count",
    "pod_sets",
    "pods_ready",
    "priority",
    "queue_name",
    "restore_ops",
    "skipped",
    "start_patch",
    "start_time_blocks_restore",
    "stop_patches",
    "stops_by_deletion",
    "suspend_ops",
    "suspend_written",
    "workload_for",
    "workload_name",
    "written_min_count",
]

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"

_GO_INT = re.compile(r"[+-]?[0-9]+")
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_HASH_LENGTH = 5
#: Kueue's default (long) limit: 253 minus "-" and the hash
_MAX_PREFIX = 253 - 1 - _HASH_LENGTH

JSON = dict[str, Any]


class FlavorConflict(ValueError):
    """A flavor's node label contradicts a nodeSelector the object already sets; it cannot start there."""


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _annotation(obj: Mapping[str, Any], key: str) -> str | None:
    annotations = _metadata(obj).get("annotations")
    value = annotations.get(key) if isinstance(annotations, Mapping) else None
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_go_int(text: str) -> int | None:
    """Go's ``strconv.Atoi`` (decimal, optional sign, nothing else; 64-bit), None when it would fail."""
    if not _GO_INT.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def parse_go_bool(text: str) -> bool | None:
    """Go's ``strconv.ParseBool``, None when it would fail."""
    return True if text in _GO_TRUE else False if text in _GO_FALSE else None


# -- identity and routing ---------------------------------------------------------------------------


def queue_name(obj: Mapping[str, Any]) -> str | None:
    """The LocalQueue an object asks for (label first, then Kueue's legacy annotation), or None."""
    meta = _metadata(obj)
    for source in (meta.get("labels"), meta.get("annotations")):
        if isinstance(source, Mapping):
            value = source.get(QUEUE_NAME_LABEL)
            if isinstance(value, str) and value:
                return value
    return None


def skipped(integration: Integration, obj: Mapping[str, Any]) -> bool:
    """Objects Kueue leaves alone (Kueue's ``JobWithSkip``: a RayJob on an existing cluster)."""
    return any(path.get(obj) not in (None, "", {}, []) for path in integration.skip_when_set)


def workload_name(name: str, uid: str, *, kind: str = "Job", group: str = "batch") -> str:
    """Kueue's Workload name for an owner: ``<kind>-<name>`` cut to 247 characters, ``-``, 5 hex of SHA-1."""
    digest = hashlib.sha1(f"{kind}\n{group}\n{name}\n{uid}".encode(), usedforsecurity=False)
    prefix = f"{kind.lower()}-{name}"[:_MAX_PREFIX]
    return f"{prefix}-{digest.hexdigest()[:_HASH_LENGTH]}"


# -- suspension ---------------------------------------------------------------------------------------


def is_stopping(integration: Integration, obj: Mapping[str, Any]) -> bool:
    """Suspended by the first half of a staged stop whose restore has not been written yet."""
    staged = integration.staged_stop
    return staged is not None and _annotation(obj, staged.annotation) == "true"


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


# -- pod sets -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Element:
    """One pod set's place in the object: its source, name, JSON Pointer segments and text path."""

    source: PodSetSource
    name: str
    segments: tuple[str | int, ...]
    where: str
    value: Mapping[str, Any]
    #: the whole object (for what a pod set reads from its metadata)
    obj: Mapping[str, Any] = field(compare=False, repr=False)

    def template(self) -> Mapping[str, Any] | None:
        """The pod template; for an element that is itself a pod (an empty template path), its spec alone."""
        if not self.source.template:
            spec = self.value.get("spec")
            return {"spec": spec} if isinstance(spec, Mapping) else None
        found = self.source.template.get(self.value)
        return found if isinstance(found, Mapping) else None

    def template_pointer(self, *rest: str) -> str:
        return pointer((*self.segments, *self.source.template, *rest))


def elements(integration: Integration, obj: Mapping[str, Any]) -> list[Element]:
    """Every pod set's element, in pod set order (Kueue's order: sources in turn, list order, map order)."""
    out: list[Element] = []
    for source in integration.pod_sets:
        if source.only_if is not None and not source.only_if.holds(obj):
            continue
        found = source.path.get(obj)
        base, where = tuple(source.path), str(source.path)
        if source.each == "one":
            if isinstance(found, Mapping):
                out.append(Element(source, source.name.lower(), base, where, found, obj))
        elif source.each == "list":
            for index, item in enumerate(found if isinstance(found, list) else ()):
                if isinstance(item, Mapping):
                    raw = source.name_field.get(item) if source.name_field is not None else None
                    name = str(raw).lower() if raw is not None else str(index)
                    out.append(Element(source, name, (*base, index), f"{where}[{index}]", item, obj))
        elif isinstance(found, Mapping):
            keys = [k for k in source.order if k in found] if source.order else sorted(found)
            for key in keys:
                item = found.get(key)
                if isinstance(item, Mapping):
                    out.append(Element(source, str(key).lower(), (*base, key), f"{where}[{key}]", item, obj))
    return out


def _factor(element: Mapping[str, Any], path: FieldPath, default: int, at_most: FieldPath | None) -> int:
    value = _int(path.get(element))
    count = default if value is None else value
    cap = _int(at_most.get(element)) if at_most is not None else None
    return cap if cap is not None and cap < count else count


def element_count(element: Element) -> int:
    count = 1
    for factor in element.source.count:
        count *= _factor(element.value, factor.path, factor.default, factor.at_most)
    return max(count, 0)


def pod_count(integration: Integration, obj: Mapping[str, Any]) -> int:
    """The pods of every pod set together."""
    return sum(element_count(e) for e in elements(integration, obj))


def written_min_count(element: Element) -> int | None:
    """The pod set's minCount as the object writes it (its field, or its annotation parsed as a Go
    integer), whatever its range; None when it writes none."""
    rule = element.source.min_count
    if rule is None:
        return None
    if rule.path is not None:
        return _int(rule.path.get(element.value))
    raw = _annotation(element.obj, rule.annotation)
    return None if raw is None else parse_go_int(raw)


def accepts_partial_admission(element: Element) -> bool:
    """Whether the pod set's count field follows its admission: its minCount reads as an integer (Kueue's
    Job tests ``minPodsCount() != nil`` whatever the count is then; a running one may run minCount pods)."""
    return len(element.source.count) == 1 and written_min_count(element) is not None


def element_min_count(element: Element) -> int | None:
    """The pod set's Workload ``minCount`` (its ``MinCount`` field or annotation), None when it is all or
    nothing: no such value, not an integer, or (unless ``as_written``) outside ``1..count-1``."""
    value = written_min_count(element)
    if value is None or element.source.min_count is None or element.source.min_count.as_written:
        return value
    return value if 1 <= value < element_count(element) else None


def min_count(integration: Integration, obj: Mapping[str, Any]) -> int | None:
    """The ``minCount`` of the object's partially admittable pod set (a Workload has at most one), None
    when it has none."""
    found = (element_min_count(e) for e in elements(integration, obj))
    return next((value for value in found if value is not None), None)


def _template_for_quota(element: Element) -> Mapping[str, Any]:
    template = element.template()
    if template is None and element.source.default_template is not None:
        return element.source.default_template
    return template or {}


def pod_sets(integration: Integration, obj: Mapping[str, Any]) -> tuple[PodSet, ...] | list[FieldError]:
    """The object's pod sets, or the errors in its pod templates (every one of them at once)."""
    found = elements(integration, obj)
    if not found:
        return [FieldError.required(str(integration.pod_sets[0].path), "no pod set found")]
    errors: list[FieldError] = []
    out: list[PodSet] = []
    for element in found:
        template = _template_for_quota(element)
        where = f"{element.where}.{element.source.template}.spec"
        pod_spec = template.get("spec")
        if not isinstance(pod_spec, Mapping) or not pod_spec.get("containers"):
            errors.append(FieldError.required(f"{where}.containers"))
            continue
        requests, problems = pod_requests(pod_spec, where)
        errors.extend(problems)
        out.append(
            PodSet(element.name, element_count(element), requests, template, element_min_count(element))
        )
    return errors if errors else tuple(out)


def priority(
    integration: Integration,
    obj: Mapping[str, Any],
    *,
    workload_priority_classes: Mapping[str, int],
    pod_priority_classes: Mapping[str, int] | None = None,
) -> tuple[int, str, str]:
    """(priority, class name, class group) as Kueue fills a Workload's priority.

    The ``kueue.x-k8s.io/priority-class`` label names a WorkloadPriorityClass and wins; then the kind's own
    priority class field (a Kubeflow job's ``runPolicy.schedulingPolicy.priorityClass``), then the first pod
    template's ``priorityClassName`` (a scheduling.k8s.io PriorityClass), then the first template's
    ``priority``, otherwise 0. An unknown class counts as 0, like a missing default class.
    """
    labels = _metadata(obj).get("labels")
    wpc = labels.get(PRIORITY_CLASS_LABEL) if isinstance(labels, Mapping) else None
    if isinstance(wpc, str) and wpc:
        return workload_priority_classes.get(wpc, 0), wpc, GROUP
    names = [path.get(obj) for path in integration.priority_class]
    specs = [(_template_for_quota(e).get("spec") or {}) for e in elements(integration, obj)]
    names += [spec.get("priorityClassName") for spec in specs if isinstance(spec, Mapping)]
    for name in names:
        if isinstance(name, str) and name:
            return (pod_priority_classes or {}).get(name, 0), name, "scheduling.k8s.io"
    first = specs[0] if specs else {}
    value = first.get("priority") if isinstance(first, Mapping) else None
    return (value if isinstance(value, int) else 0), "", ""


def workload_for(
    integration: Integration,
    obj: Mapping[str, Any],
    *,
    workload_priority_classes: Mapping[str, int] | None = None,
    pod_priority_classes: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The Workload manifest for a queued object: owned by it (so it is garbage-collected) and holding
    Kueue's resource-in-use finalizer (so deleting it cannot free quota the object's pods still use)."""
    meta = _metadata(obj)
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    class_priority, class_name, class_group = priority(
        integration,
        obj,
        workload_priority_classes=workload_priority_classes or {},
        pod_priority_classes=pod_priority_classes,
    )
    sets: list[JSON] = []
    for element in elements(integration, obj):
        minimum = element_min_count(element)
        pod_set: JSON = {
            "name": element.name,
            "count": element_count(element),
            "template": copy.deepcopy(dict(_template_for_quota(element))),
        }
        if minimum is not None:
            pod_set["minCount"] = minimum
        sets.append(pod_set)
    spec: JSON = {"active": True, "podSets": sets, "queueName": queue_name(obj) or ""}
    if class_name:
        kind = "WorkloadPriorityClass" if class_group == GROUP else "PriorityClass"
        spec["priorityClassRef"] = {"group": class_group, "kind": kind, "name": class_name}
    spec["priority"] = class_priority
    metadata: JSON = {
        "name": workload_name(name, uid, kind=integration.kind, group=integration.group),
        "namespace": meta.get("namespace") or "default",
        "labels": {JOB_UID_LABEL: uid} if uid and len(uid) <= 63 else {},
        "finalizers": [RESOURCE_IN_USE],
        "ownerReferences": [
            {
                "apiVersion": str(obj.get("apiVersion") or integration.api_version),
                "kind": integration.kind,
                "name": name,
                "uid": uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    return {"apiVersion": API_VERSION, "kind": "Workload", "metadata": metadata, "spec": spec}


# -- start and stop -----------------------------------------------------------------------------------


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
    raw = _annotation(obj, partial.follow_annotation) if partial is not None else None
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
            if _int(path.get(element.value)) != count:
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
    for element in elements(integration, obj):
        template = element.template()
        if template is None:
            continue
        pod_spec = template.get("spec") or {}
        selector, tolerations = _flavor_injection(pod_spec, flavors.get(element.name, ()))
        if selector != (pod_spec.get("nodeSelector") or {}):
            ops.append(
                {"op": "add", "path": element.template_pointer("spec", "nodeSelector"), "value": selector}
            )
        if tolerations != list(pod_spec.get("tolerations") or []):
            ops.append(
                {"op": "add", "path": element.template_pointer("spec", "tolerations"), "value": tolerations}
            )
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
    if len(found) == len(originals):
        for element, original_template in zip(found, originals, strict=True):
            template = element.template()
            if template is None:
                continue
            current = template.get("spec") or {}
            original = original_template.get("spec") or {}
            for name in ("nodeSelector", "tolerations"):
                path = element.template_pointer("spec", name)
                if name in original:
                    if current.get(name) != original[name]:
                        ops.append({"op": "add", "path": path, "value": copy.deepcopy(original[name])})
                elif name in current:
                    ops.append({"op": "remove", "path": path})
    ops.extend(_count_ops(integration, obj, original_counts or {}))
    staged = integration.staged_stop
    if staged is not None and staged.annotation in (_metadata(obj).get("annotations") or {}):
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
    annotations = _metadata(obj).get("annotations")
    mark: JSON = (
        {"op": "add", "path": pointer(("metadata", "annotations", staged.annotation)), "value": "true"}
        if isinstance(annotations, Mapping)
        else {"op": "add", "path": "/metadata/annotations", "value": {staged.annotation: "true"}}
    )
    if _remove_annotation(staged.annotation) not in restore:
        restore.append(_remove_annotation(staged.annotation))
    return [[*suspend, mark], restore]


# -- status -------------------------------------------------------------------------------------------


def _conditions(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = obj.get("status")
    found = status.get("conditions") if isinstance(status, Mapping) else None
    return [c for c in found if isinstance(c, Mapping)] if isinstance(found, list) else []


def finished(integration: Integration, obj: Mapping[str, Any]) -> tuple[bool, bool, str]:
    """(finished, succeeded, message): Kueue's ``Finished`` from the kind's conditions or phase field."""
    rule = integration.finished
    for condition in _conditions(obj):
        kind = condition.get("type")
        if condition.get("status") == "True" and (kind in rule.succeeded or kind in rule.failed):
            succeeded = kind in rule.succeeded
            if rule.success is not None:
                succeeded = rule.success.holds(obj)
            message = rule.message.get(obj) if rule.message is not None else condition.get("message")
            return True, succeeded, str(message or "")
    if rule.phase is not None:
        phase = rule.phase.get(obj)
        if phase in rule.succeeded_phases or phase in rule.failed_phases:
            succeeded = (
                rule.success.holds(obj) if rule.success is not None else phase in rule.succeeded_phases
            )
            message = rule.message.get(obj) if rule.message is not None else ""
            return True, succeeded, str(message or "")
    return False, True, ""


def _sum(obj: Mapping[str, Any], paths: Collection[FieldPath]) -> int:
    total = 0
    for path in paths:
        for value in path.values(obj):
            if isinstance(value, list):
                total += len(value)
            elif (number := _int(value)) is not None:
                total += number
    return total


def has_active_pods(integration: Integration, obj: Mapping[str, Any]) -> bool:
    """Pods may still run or terminate: the quota they use is not free yet (Kueue's ``IsActive``)."""
    rule = integration.active
    if rule.when is not None and rule.when.holds(obj):
        return True
    return _sum(obj, rule.counts) > 0


def pods_ready(integration: Integration, obj: Mapping[str, Any]) -> bool:
    """Kueue's ``PodsReady`` for the kind (False for a kind that declares no rule)."""
    rule = integration.pods_ready
    if rule is None:
        return False
    if rule.conditions:
        return any(c.get("type") in rule.conditions and c.get("status") == "True" for c in _conditions(obj))
    if rule.when is not None:
        return rule.when.holds(obj)
    wanted = _sum(obj, rule.total) if rule.total else pod_count(integration, obj)
    return _sum(obj, rule.ready) >= wanted
