"""Kueue's validation of the topology annotations of a queued object's pod templates (jobframework
ValidateTASPodSetRequest, ValidateSliceSizeAnnotationUpperBound and ValidatePodSetGroupingTopology), with
its messages and field paths: what the job webhooks refuse before a Workload could ask for nonsense.

Per template: at most one of required/preferred/unconstrained; level names that are label names; a group
name that is not a number, only with required or preferred and without slices; a slice level only with a
slice size of at least 1 and at most the pod set's pods; multi-layer slices
(``podset-slice-required-topology-constraints``) not with the single slice annotations nor a group, a JSON
list of 1 to 3 layers of a label name and a size of at least 1, no level twice, each size dividing the one
before. Across templates: a group is exactly two pod sets, one of them of one pod, asking for the same
required or preferred level.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kueue_webhook.api.errors import ErrorType, FieldError, WordedError
from kueue_webhook.api.integrations import Integration, engine
from kueue_webhook.api.integrations.builtin import LEADERWORKERSET
from kueue_webhook.api.integrations.leaderworkersets import group_size
from kueue_webhook.api.topology_request import (
    GROUP_ANNOTATION,
    MAX_SLICE_LAYERS,
    PREFERRED_ANNOTATION,
    REQUIRED_ANNOTATION,
    SLICE_CONSTRAINTS_ANNOTATION,
    SLICE_REQUIRED_ANNOTATION,
    SLICE_SIZE_ANNOTATION,
    UNCONSTRAINED_ANNOTATION,
)
from kueue_webhook.api.validation import validate_label_name

__all__ = ["TemplateAnnotations", "object_topology_errors", "topology_annotation_errors"]

_GO_TYPE = "[]v1beta2.PodsetSliceRequiredTopologyConstraint"
_GO_FIELD = "PodsetSliceRequiredTopologyConstraint"
_LAYER_COUNT = f"topology constraints must contain between 1 and {MAX_SLICE_LAYERS} entries"
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class TemplateAnnotations:
    """One pod set's template annotations, where its metadata is (``spec.template.metadata``) and its
    pods (None when unknown)."""

    name: str
    annotations: Mapping[str, Any]
    metadata_path: str
    count: int | None


def _key(path: str, key: str) -> str:
    return f"{path}[{key}]"


def _omitted(path: str, detail: str) -> FieldError:
    """``field.Invalid`` with ``field.OmitValueType``: no value printed."""
    return WordedError(path, ErrorType.INVALID, detail, body=f"Invalid value: {detail}")


def _parse_go_int32(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 32)``: an optional sign and decimal digits, within int32."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    value = int(text)
    return value if -_INT32_MAX - 1 <= value <= _INT32_MAX else None


def _go_json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _decode_layers(text: str) -> tuple[list[Any] | None, str]:
    """The layers as Go's ``json.Unmarshal`` into Kueue's constraint list reads them, or its complaint
    (syntax errors are worded by Python's decoder, the type errors as Go's)."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        return None, str(exc)
    if value is None:
        return [], ""
    if not isinstance(value, list):
        return None, f"json: cannot unmarshal {_go_json_kind(value)} into Go value of type {_GO_TYPE}"
    for entry in value:
        if entry is None:
            continue
        if not isinstance(entry, dict):
            return None, (
                f"json: cannot unmarshal {_go_json_kind(entry)} into Go value of type v1beta2.{_GO_FIELD}"
            )
        topology, size = entry.get("topology"), entry.get("size")
        if topology is not None and not isinstance(topology, str):
            return None, (
                f"json: cannot unmarshal {_go_json_kind(topology)} into Go struct field "
                f"{_GO_FIELD}.topology of type string"
            )
        if size is not None and (
            isinstance(size, bool) or not isinstance(size, int) or not -_INT32_MAX - 1 <= size <= _INT32_MAX
        ):
            return None, (
                f"json: cannot unmarshal {_go_json_kind(size)} into Go struct field "
                f"{_GO_FIELD}.size of type int32"
            )
    return value, ""


def _layer_errors(
    path: str, annotations: Mapping[str, Any], slice_found: bool, size_found: bool
) -> list[FieldError]:
    """Kueue's validateSliceRequiredTopologyConstraintsAnnotation."""
    text = annotations.get(SLICE_CONSTRAINTS_ANNOTATION)
    if not isinstance(text, str):
        return []
    where = _key(path, SLICE_CONSTRAINTS_ANNOTATION)
    errors: list[FieldError] = []
    if slice_found:
        errors.append(
            FieldError.forbidden(where, f"may not be set when '{SLICE_REQUIRED_ANNOTATION}' is specified")
        )
    if size_found:
        errors.append(
            FieldError.forbidden(where, f"may not be set when '{SLICE_SIZE_ANNOTATION}' is specified")
        )
    if GROUP_ANNOTATION in annotations:
        errors.append(
            FieldError.forbidden(
                _key(path, GROUP_ANNOTATION),
                f"may not be set when '{SLICE_CONSTRAINTS_ANNOTATION}' is specified",
            )
        )
    layers, problem = _decode_layers(text)
    if layers is None:
        return [*errors, FieldError.invalid(where, text, f"must be a valid JSON array: {problem}")]
    if not 0 < len(layers) <= MAX_SLICE_LAYERS:
        return [*errors, FieldError.invalid(where, text, _LAYER_COUNT)]
    sizes: list[int] = []
    for index, layer in enumerate(layers):
        entry = layer if isinstance(layer, dict) else {}
        topology, size = entry.get("topology") or "", entry.get("size") or 0
        errors += validate_label_name(topology, f"{where}[{index}].topology")
        if size < 1:
            errors.append(
                FieldError.invalid(f"{where}[{index}].size", size, "must be greater than or equal to 1")
            )
        sizes.append(size)
    seen: dict[str, int] = {}
    for index, layer in enumerate(layers):
        topology = (layer if isinstance(layer, dict) else {}).get("topology") or ""
        if topology in seen:
            errors.append(
                FieldError.duplicate(
                    f"{where}[{index}].topology", f"{topology} (also at index {seen[topology]})"
                )
            )
        else:
            seen[topology] = index
    for index in range(len(sizes) - 1):
        if sizes[index + 1] > 0 and sizes[index] % sizes[index + 1]:
            errors.append(
                FieldError.invalid(
                    f"{where}[{index + 1}].size",
                    sizes[index + 1],
                    f"must evenly divide the parent layer size {sizes[index]}",
                )
            )
    return errors


def _template_errors(template: TemplateAnnotations) -> list[FieldError]:
    """Kueue's ValidateTASPodSetRequest and ValidateSliceSizeAnnotationUpperBound for one template."""
    annotations, path = template.annotations, f"{template.metadata_path}.annotations"
    required, preferred = annotations.get(REQUIRED_ANNOTATION), annotations.get(PREFERRED_ANNOTATION)
    required_found, preferred_found = REQUIRED_ANNOTATION in annotations, PREFERRED_ANNOTATION in annotations
    unconstrained_found = UNCONSTRAINED_ANNOTATION in annotations
    slice_found, size_found = SLICE_REQUIRED_ANNOTATION in annotations, SLICE_SIZE_ANNOTATION in annotations
    errors: list[FieldError] = []
    if required_found + preferred_found + unconstrained_found > 1:
        errors.append(
            _omitted(
                path,
                "must not contain more than one topology annotation: "
                f'["{REQUIRED_ANNOTATION}", "{PREFERRED_ANNOTATION}", "{UNCONSTRAINED_ANNOTATION}"]',
            )
        )
    for key, found in ((REQUIRED_ANNOTATION, required), (PREFERRED_ANNOTATION, preferred)):
        if key in annotations:
            errors += validate_label_name(str(found), _key(path, key))
    if slice_found:
        errors += validate_label_name(
            str(annotations[SLICE_REQUIRED_ANNOTATION]), _key(path, SLICE_REQUIRED_ANNOTATION)
        )
    if GROUP_ANNOTATION in annotations:
        group, where = str(annotations[GROUP_ANNOTATION]), _key(path, GROUP_ANNOTATION)
        if group.isascii() and group.isdigit() and int(group) < 2**64:
            errors.append(FieldError.invalid(where, group, "must not be a number"))
        if size_found:
            errors.append(
                FieldError.forbidden(where, f"may not be set when '{SLICE_SIZE_ANNOTATION}' is specified")
            )
        if slice_found:
            errors.append(
                FieldError.forbidden(where, f"may not be set when '{SLICE_REQUIRED_ANNOTATION}' is specified")
            )
        if not preferred_found and not required_found:
            errors.append(
                FieldError.forbidden(
                    where,
                    f"may not be set when neither '{PREFERRED_ANNOTATION}' nor '{REQUIRED_ANNOTATION}' "
                    "is specified",
                )
            )
    if unconstrained_found:
        value = str(annotations[UNCONSTRAINED_ANNOTATION])
        if value not in ("1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False"):
            errors.append(
                FieldError.invalid(_key(path, UNCONSTRAINED_ANNOTATION), value, "must be a boolean value")
            )
    size: int | None = None
    if size_found:
        text = str(annotations[SLICE_SIZE_ANNOTATION])
        size = _parse_go_int32(text)
        where = _key(path, SLICE_SIZE_ANNOTATION)
        if size is None:
            errors.append(FieldError.invalid(where, text, "must be a numeric value"))
        elif size < 1:
            errors.append(FieldError.invalid(where, text, "must be greater than or equal to 1"))
    if slice_found and not size_found:
        errors.append(
            FieldError.required(
                _key(path, SLICE_SIZE_ANNOTATION),
                f"must be set when '{SLICE_REQUIRED_ANNOTATION}' is specified",
            )
        )
    if size_found and not slice_found:
        errors.append(
            FieldError.forbidden(
                _key(path, SLICE_SIZE_ANNOTATION),
                f"may not be set when '{SLICE_REQUIRED_ANNOTATION}' is not specified",
            )
        )
    errors += _layer_errors(path, annotations, slice_found, size_found)
    if errors or template.count is None:
        return errors
    # the upper bound, checked by Kueue's webhooks once the rest holds
    if size is not None and size > template.count:
        errors.append(
            FieldError.invalid(
                _key(path, SLICE_SIZE_ANNOTATION),
                str(annotations[SLICE_SIZE_ANNOTATION]),
                f"must not be greater than pod set count {template.count}",
            )
        )
    written = annotations.get(SLICE_CONSTRAINTS_ANNOTATION)
    if isinstance(written, str):
        layers, _ = _decode_layers(written)
        first = layers[0] if layers and isinstance(layers[0], dict) else {}
        outer = first.get("size") or 0
        if outer > template.count:
            errors.append(
                FieldError.invalid(
                    _key(path, SLICE_CONSTRAINTS_ANNOTATION),
                    outer,
                    f"must not be greater than pod set count {template.count}",
                )
            )
    return errors


def _group_errors(templates: Sequence[TemplateAnnotations]) -> list[FieldError]:
    """Kueue's ValidatePodSetGroupingTopology."""
    groups: dict[str, list[TemplateAnnotations]] = {}
    for template in templates:
        group = template.annotations.get(GROUP_ANNOTATION)
        required_or_preferred = REQUIRED_ANNOTATION in template.annotations or PREFERRED_ANNOTATION in (
            template.annotations
        )
        if isinstance(group, str) and required_or_preferred:
            groups.setdefault(group, []).append(template)
    errors: list[FieldError] = []
    for group, members in groups.items():
        where = [_key(f"{m.metadata_path}.annotations", GROUP_ANNOTATION) for m in members]
        if len(members) != 2:
            message = f"can only define groups of exactly 2 pod sets, got: {len(members)} pod set(s)"
            errors += [FieldError.invalid(path, group, message) for path in where]
            continue
        first, second = members
        if first.count is not None and second.count is not None and first.count != 1 and second.count != 1:
            message = (
                "can only define groups where at least one pod set has only 1 replica, got: "
                f"{first.count} replica(s) and {second.count} replica(s) in the group"
            )
            errors += [FieldError.invalid(path, group, message) for path in where]
        levels = [
            (m.annotations.get(REQUIRED_ANNOTATION), m.annotations.get(PREFERRED_ANNOTATION)) for m in members
        ]
        if levels[0] != levels[1]:
            paths = [f"{m.metadata_path}.annotations" for m in members]
            wording = (
                f"must specify '{REQUIRED_ANNOTATION}' or '{PREFERRED_ANNOTATION}' topology consistent with "
                "'{}' in group '" + group + "'"
            )
            errors += [
                _omitted(paths[0], wording.format(paths[1])),
                _omitted(paths[1], wording.format(paths[0])),
            ]
    return errors


def topology_annotation_errors(
    templates: Sequence[TemplateAnnotations], *, groups: bool = True
) -> list[FieldError]:
    """Every topology-annotation error of an object's pod templates, in Kueue's order: each template's
    own, then (``groups``: for kinds of several pod sets) the groups'."""
    errors: list[FieldError] = []
    for template in templates:
        errors += _template_errors(template)
    return errors + _group_errors(templates) if groups else errors


def object_topology_errors(integration: Integration, obj: Mapping[str, Any]) -> list[FieldError]:
    """The topology-annotation errors of every pod template of a queued object (a pod's own metadata for
    a plain Pod); nothing to read when no template carries a ``kueue.x-k8s.io/podset-`` annotation."""
    if (integration.group, integration.kind) == (LEADERWORKERSET.group, LEADERWORKERSET.kind):
        return _leaderworkerset_errors(obj)
    templates: list[TemplateAnnotations] = []
    found = engine.elements(integration, obj)
    for element in found:
        if element.source.template:
            template = element.template()
            meta = template.get("metadata") if template is not None else None
            inner = str(element.source.template)
            path = f"{element.where}.{inner}.metadata" if element.where else f"{inner}.metadata"
        else:
            meta = element.value.get("metadata")
            path = f"{element.where}.metadata" if element.where else "metadata"
        annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
        if not isinstance(annotations, Mapping) or not any(
            isinstance(key, str) and key.startswith("kueue.x-k8s.io/podset-") for key in annotations
        ):
            continue
        templates.append(TemplateAnnotations(element.name, annotations, path, engine.element_count(element)))
    # a kind of one pod set (a Job, a Pod) has no group to check, as in Kueue's webhooks
    return topology_annotation_errors(templates, groups=len(found) > 1) if templates else []


def _leaderworkerset_errors(lws: Mapping[str, Any]) -> list[FieldError]:
    """A LeaderWorkerSet's leader and worker templates, as its group Workload's pod sets (Kueue's
    leaderworkerset webhook): the leader of one pod, the workers of the rest of the group."""
    spec = lws.get("spec")
    lwt = spec.get("leaderWorkerTemplate") if isinstance(spec, Mapping) else None
    if not isinstance(lwt, Mapping):
        return []
    size = group_size(lws)
    path = "spec.leaderWorkerTemplate"
    templates: list[TemplateAnnotations] = []
    leader = lwt.get("leaderTemplate")
    workers = lwt.get("workerTemplate")
    for name, template, count in (
        ("leader", leader, 1),
        ("worker", workers, size - 1 if isinstance(leader, Mapping) else size),
    ):
        meta = template.get("metadata") if isinstance(template, Mapping) else None
        annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
        if isinstance(annotations, Mapping):
            where = f"{path}.{name}Template.metadata"
            templates.append(TemplateAnnotations(name, annotations, where, count))
    return topology_annotation_errors(templates, groups=isinstance(leader, Mapping)) if templates else []
