"""What Kueue's pod webhook refuses in a pod's metadata, on CREATE and UPDATE (``pkg/controller/jobs/pod``
``pod_webhook.go``: ``validateCommon`` and the update rules).

A group is declared by its name and its size, and the controller can only build a Workload when both are
there and readable, so a pod carrying one without the other, a group name that cannot name a Workload, or a
size that is not a positive integer is refused at the door instead of waiting forever. The group name (the
annotation ``kueue.x-k8s.io/pod-group-name`` when set, else the label, as Kueue reads it with its
WorkloadIdentifierAnnotations gate on by default) cannot change once set, a prebuilt Workload named on a
grouped pod must be the group's, and an unretriable group stays unretriable. The total count may change (Kueue
does not fix it), and the queue label follows the rules every queued kind has
(``kueue_webhook.admission.integrations``). Errors use Kueue's field paths and apimachinery's field-error
format.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kueue_webhook.admission.fields import IMMUTABLE, label_path
from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.integrations.builtin import MANAGED_LABEL
from kueue_webhook.api.integrations.engine import parse_go_int
from kueue_webhook.api.integrations.pod_groups import GROUP_NAME_LABEL, TOTAL_COUNT_ANNOTATION
from kueue_webhook.api.validation import dns1123_subdomain_problems

__all__ = ["pod_metadata_errors"]

PREBUILT_WORKLOAD_KEY = "kueue.x-k8s.io/prebuilt-workload-name"
RETRIABLE_IN_GROUP_ANNOTATION = "kueue.x-k8s.io/retriable-in-group"
_DECIMAL = re.compile(r"[+-]?[0-9]+")


def _annotation_path(key: str) -> str:
    return f"metadata.annotations[{key}]"


def _map(pod: Mapping[str, Any], field: str) -> Mapping[str, Any]:
    meta = pod.get("metadata")
    found = meta.get(field) if isinstance(meta, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def _identifier(pod: Mapping[str, Any], key: str) -> tuple[str, str]:
    """(value, field path) of an identifier Kueue reads from the annotation first, then the label."""
    annotation = _map(pod, "annotations").get(key)
    if isinstance(annotation, str) and annotation:
        return annotation, _annotation_path(key)
    label = _map(pod, "labels").get(key)
    return (label if isinstance(label, str) else ""), label_path(key)


def _group_name_problems(pod: Mapping[str, Any]) -> list[FieldError]:
    """The group name names the Workload, so it must be a DNS-1123 subdomain (Kueue's
    ``ValidateAnnotationAsCRDName`` / ``ValidateLabelAsCRDName``)."""
    name, path = _identifier(pod, GROUP_NAME_LABEL)
    if problems := dns1123_subdomain_problems(name):
        return [FieldError.invalid(path, name, ",".join(problems))]
    return []


def _total_count_problem(raw: str) -> str | None:
    """Why the total count is not a positive integer, with Go's ``strconv.Atoi`` wording for a bad number."""
    value = parse_go_int(raw)
    if value is None:
        why = "value out of range" if _DECIMAL.fullmatch(raw) else "invalid syntax"
        return f'strconv.Atoi: parsing "{raw}": {why}'
    if value < 1:
        return "the group's total count must be a positive integer"
    return None


def _group_metadata_errors(pod: Mapping[str, Any]) -> list[FieldError]:
    """Kueue's ``validatePodGroupMetadata``: name and total count together, each readable."""
    annotations = _map(pod, "annotations")
    raw_total = annotations.get(TOTAL_COUNT_ANNOTATION)
    has_total = isinstance(raw_total, str)
    name, name_path = _identifier(pod, GROUP_NAME_LABEL)
    name_source = "annotation" if name_path.startswith("metadata.annotations") else "label"
    both = (
        f"a pod group is declared by the annotation {TOTAL_COUNT_ANNOTATION} together with the "
        f"{name_source} {GROUP_NAME_LABEL}; set both or neither"
    )
    errors: list[FieldError] = []
    if not name:
        if has_total:
            return [FieldError.required(name_path, both)]
        return []
    errors += _group_name_problems(pod)
    if not has_total:
        return [*errors, FieldError.required(_annotation_path(TOTAL_COUNT_ANNOTATION), both)]
    assert isinstance(raw_total, str)
    if (problem := _total_count_problem(raw_total)) is not None:
        errors.append(FieldError.invalid(_annotation_path(TOTAL_COUNT_ANNOTATION), raw_total, problem))
    return errors


def _managed_label_errors(pod: Mapping[str, Any]) -> list[FieldError]:
    """Kueue's ``validateManagedLabel``: the managed label, when present, says ``true``."""
    value = _map(pod, "labels").get(MANAGED_LABEL)
    if value is not None and value != "true":
        return [FieldError.forbidden(label_path(MANAGED_LABEL), "the only value it takes is 'true'")]
    return []


def _prebuilt_workload_errors(pod: Mapping[str, Any]) -> list[FieldError]:
    """A grouped pod naming a prebuilt Workload must name the group's own (Kueue's
    ``validatePrebuiltWorkloadName``)."""
    prebuilt, path = _identifier(pod, PREBUILT_WORKLOAD_KEY)
    group, _ = _identifier(pod, GROUP_NAME_LABEL)
    if group and prebuilt and prebuilt != group:
        return [FieldError.invalid(path, prebuilt, f'must be the pod group\'s name "{group}"')]
    return []


def _unretriable(pod: Mapping[str, Any]) -> bool:
    return _map(pod, "annotations").get(RETRIABLE_IN_GROUP_ANNOTATION) == "false"


def pod_metadata_errors(new: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
    """Kueue's pod webhook checks of ``new`` (``old``: the pod before an UPDATE), in Kueue's order."""
    errors = [*_managed_label_errors(new), *_group_metadata_errors(new), *_prebuilt_workload_errors(new)]
    if old is None:
        return errors
    group, _ = _identifier(new, GROUP_NAME_LABEL)
    if group and _unretriable(old) and not _unretriable(new):
        errors.append(
            FieldError.forbidden(
                _annotation_path(RETRIABLE_IN_GROUP_ANNOTATION),
                "an unretriable pod group cannot be made retriable",
            )
        )
    old_group, _ = _identifier(old, GROUP_NAME_LABEL)
    if old_group and group != old_group:
        _, path = _identifier(new, GROUP_NAME_LABEL)
        errors.append(FieldError.invalid(path, group, IMMUTABLE))
    return errors
