"""ObjectMeta validation every kind gets from kube-apiserver: names and labels.

Names are DNS-1123 subdomains (namespaces: labels), label values at most 63 bytes of a restricted alphabet,
label keys qualified names with an optional DNS prefix. These rules bite controllers that derive names or
labels from user input (a Workload named after a long Job name), so the fake refuses what the apiserver
refuses, with its messages. kube-apiserver and Kueue call the same apimachinery functions, so the fake calls
the project's one restatement of them (``webhook.api.validation``, checked against a real kube-apiserver).
"""

from __future__ import annotations

from typing import Any

from webhook.api.errors import FieldError
from webhook.api.validation import dns1123_label_problems, dns1123_subdomain_problems
from webhook.api.validation import validate_labels as _validate_labels

Cause = dict[str, str]


def _cause(error: FieldError) -> Cause:
    return {"reason": error.reason, "message": error.message, "field": error.path}


def validate_name(name: str, *, label_rule: bool) -> list[Cause]:
    problems = dns1123_label_problems(name) if label_rule else dns1123_subdomain_problems(name)
    return [_cause(FieldError.invalid("metadata.name", name, problem)) for problem in problems]


def validate_labels(labels: Any, field: str = "metadata.labels") -> list[Cause]:
    if not isinstance(labels, dict):
        return []
    as_text = {str(key): value if isinstance(value, str) else str(value) for key, value in labels.items()}
    return [_cause(error) for error in _validate_labels(as_text, field)]


def validate_object_meta(obj: dict[str, Any], *, namespace_kind: bool) -> list[Cause]:
    meta = obj.get("metadata") or {}
    causes = validate_name(str(meta.get("name", "")), label_rule=namespace_kind)
    causes.extend(validate_labels(meta.get("labels")))
    return causes
