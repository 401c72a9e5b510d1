"""ObjectMeta validation every kind gets from kube-apiserver: names and labels.

Names are DNS-1123 subdomains (namespaces: labels), label values at most 63 characters of a restricted
alphabet, label keys qualified names with an optional DNS prefix. These rules bite controllers that derive
names or labels from user input (a Workload named after a long Job name), so the fake refuses what the
apiserver refuses, with its messages. On update, an object being deleted accepts no new finalizer: a
controller that re-adds its finalizer to a deleting object must see the refusal it gets on a cluster.
"""

from __future__ import annotations

import re
from typing import Any

Cause = dict[str, str]
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")

SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
LABEL_VALUE_MESSAGE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
QUALIFIED_NAME_MESSAGE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def validate_name(name: str, *, label_rule: bool) -> list[Cause]:
    limit, pattern, message = (
        (63, _LABEL, LABEL_MESSAGE) if label_rule else (253, _SUBDOMAIN, SUBDOMAIN_MESSAGE)
    )
    causes = []
    if len(name) > limit:
        causes.append(
            {
                "reason": "FieldValueInvalid",
                "message": f"Invalid value: {_quote(name)}: must be no more than {limit} characters",
                "field": "metadata.name",
            }
        )
    if not pattern.match(name):
        causes.append(
            {
                "reason": "FieldValueInvalid",
                "message": f"Invalid value: {_quote(name)}: {message}",
                "field": "metadata.name",
            }
        )
    return causes


def _validate_label_key(key: str, field: str) -> list[Cause]:
    prefix, _, name = key.rpartition("/")
    problems = []
    if prefix and (len(prefix) > 253 or not _SUBDOMAIN.match(prefix)):
        problems.append(f"prefix part {SUBDOMAIN_MESSAGE}")
    if not name:
        problems.append("name part must be non-empty")
    else:
        if len(name) > 63:
            problems.append("name part must be no more than 63 characters")
        if not _QUALIFIED_NAME.match(name):
            problems.append(QUALIFIED_NAME_MESSAGE)
    return [
        {"reason": "FieldValueInvalid", "message": f"Invalid value: {_quote(key)}: {p}", "field": field}
        for p in problems
    ]


def validate_labels(labels: Any, field: str = "metadata.labels") -> list[Cause]:
    if not isinstance(labels, dict):
        return []
    causes: list[Cause] = []
    for key, value in labels.items():
        causes.extend(_validate_label_key(str(key), field))
        text = value if isinstance(value, str) else str(value)
        if len(text) > 63:
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {_quote(text)}: must be no more than 63 characters",
                    "field": field,
                }
            )
        if not _LABEL_VALUE.match(text):
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {_quote(text)}: {LABEL_VALUE_MESSAGE}",
                    "field": field,
                }
            )
    return causes


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
    listed = ", ".join(_quote(str(name)) for name in extra)
    cause = {
        "reason": "FieldValueForbidden",
        "message": (
            "Forbidden: no new finalizers can be added if the object is being deleted, "
            f"found new finalizers []string{{{listed}}}"
        ),
        "field": "metadata.finalizers",
    }
    return [cause, dict(cause)]
