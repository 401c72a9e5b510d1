"""Kueue's admission gates (AdmissionGatedBy, on by default since v0.19): the annotation
``kueue.x-k8s.io/admission-gated-by`` on a queued object names, comma-separated, the controllers that must
each remove their name before its Workload may be admitted. The object's value is copied to its Workload,
which is not queued while it holds one; the Workload says so in QuotaReserved=False ``AdmissionGated``.

Gates are set when the object is created and may then only be removed, never added (Kueue's webhook rules
and messages, ``pkg/util/webhook/validation_admissiongatedby.go``): each name is a domain-prefixed path of
at most 63 characters, as a Job's ``spec.managedBy``, with no empty or repeated name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.validation import dns1123_subdomain_problems

__all__ = ["ANNOTATION", "create_errors", "gates_of", "parse_gates", "update_errors"]

ANNOTATION = "kueue.x-k8s.io/admission-gated-by"
PATH = f"metadata.annotations[{ANNOTATION}]"
#: Kueue's MaxGateNameLengthForAdmissionGatedBy (a Job's spec.managedBy limit)
MAX_GATE_LENGTH = 63
#: apimachinery's httpPathFmt, which the path part of a domain-prefixed path must match
_HTTP_PATH = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+"
_HTTP_PATH_RE = re.compile(_HTTP_PATH)


def gates_of(metadata: Mapping[str, Any] | None) -> str:
    """The annotation's value on an object's (or Workload's) ``metadata``; "" when it has none."""
    annotations = (metadata or {}).get("annotations")
    value = annotations.get(ANNOTATION) if isinstance(annotations, Mapping) else None
    return value if isinstance(value, str) else ""


def parse_gates(value: str) -> list[str]:
    """Kueue's csv.Parse: comma-separated names, spaces around each trimmed; none for a blank value."""
    if not value.strip():
        return []
    return [part.strip() for part in value.split(",")]


def create_errors(metadata: Mapping[str, Any] | None) -> list[FieldError]:
    """The gates an object is created with, checked (ValidateAdmissionGatedByAnnotationOnCreate)."""
    return _format_errors(gates_of(metadata))


def update_errors(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[FieldError]:
    """An update may only remove gates (ValidateAdmissionGatedByAnnotationOnUpdate)."""
    old_value, new_value = gates_of(old), gates_of(new)
    errors: list[FieldError] = []
    if not old_value and new_value:
        errors.append(FieldError.forbidden(PATH, "cannot add admission gate after creation"))
    if old_value and new_value:
        kept = parse_gates(old_value)
        if any(gate not in kept for gate in parse_gates(new_value)):
            errors.append(FieldError.forbidden(PATH, "can only remove gates, not add new ones"))
    return errors + _format_errors(new_value)


def _format_errors(value: str) -> list[FieldError]:
    if not value:
        return []
    errors: list[FieldError] = []
    seen: set[str] = set()
    for gate in parse_gates(value):
        if not gate:
            errors.append(FieldError.invalid(PATH, value, "cannot contain empty gate names"))
            continue
        if gate in seen:
            errors.append(FieldError.invalid(PATH, value, f"duplicate gate name: {gate}"))
            continue
        seen.add(gate)
        errors += _domain_prefixed_path_errors(gate)
        if len(gate) > MAX_GATE_LENGTH:
            errors.append(FieldError.too_long(PATH, MAX_GATE_LENGTH))
    return errors


def _domain_prefixed_path_errors(gate: str) -> list[FieldError]:
    """apimachinery's IsDomainPrefixedPath: ``host/path``, the host a DNS-1123 subdomain."""
    host, slash, path = gate.partition("/")
    if not slash or not host or not path:
        return [FieldError.invalid(PATH, gate, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errors = [FieldError.invalid(PATH, host, problem) for problem in dns1123_subdomain_problems(host)]
    if not _HTTP_PATH_RE.fullmatch(path):
        errors.append(
            FieldError.invalid(PATH, path, f"Invalid path (regex used for validation is '{_HTTP_PATH}')")
        )
    return errors
