"""ObjectMeta validation every kind gets from kube-apiserver: names and labels.

Names are DNS-1123 subdomains (namespaces: labels), label values at most 63 bytes of a restricted alphabet,
label keys qualified names with an optional DNS prefix. These rules bite controllers that derive names or
labels from user input (a Workload named after a long Job name), so the fake refuses what the apiserver
refuses, with its messages. kube-apiserver and Kueue call the same apimachinery functions, so the fake calls
the project's one restatement of them (``kueue_webhook.api.validation``, checked against a real
kube-apiserver).
On update, an object being deleted accepts no new finalizer: a controller that re-adds its finalizer to a
deleting object must see the refusal it gets on a cluster.
"""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.errors import FieldError, render_value
from kueue_webhook.api.validation import dns1123_label_problems, dns1123_subdomain_problems
from kueue_webhook.api.validation import validate_labels as _validate_labels

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


def validate_object_meta_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """Once ``deletionTimestamp`` is set no finalizer may be added. kube-apiserver v1.36 runs this check twice
    (the strategy's update validation and its own), so the 422 lists the same cause twice, as here."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    if not old_meta.get("deletionTimestamp"):
        return []
    extra = sorted(set(new_meta.get("finalizers") or []) - set(old_meta.get("finalizers") or []))
    if not extra:
        return []
    listed = ", ".join(render_value(str(name)) for name in extra)
    cause = {
        "reason": "FieldValueForbidden",
        "message": (
            "Forbidden: no new finalizers can be added if the object is being deleted, "
            f"found new finalizers []string{{{listed}}}"
        ),
        "field": "metadata.finalizers",
    }
    return [cause, dict(cause)]
