"""Kubernetes' wording for validation failures, so a denial reads like any other API error.

Kueue's webhooks return a ``field.ErrorList`` folded into one message by apimachinery's aggregate: a single
error prints as itself, several print as ``[first, second]`` with duplicates dropped. Users (and scripts)
grep those messages, so :func:`aggregate_message` reproduces that folding exactly, and
:func:`dns1123_subdomain_errors` the exact name-check wording of ``content.IsDNS1123Subdomain``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from webhook.api.errors import FieldError

__all__ = ["IMMUTABLE", "aggregate_message", "dns1123_subdomain_errors", "label_path"]

#: apimachinery's ``FieldImmutableErrorMsg``
IMMUTABLE = "field is immutable"
_SUBDOMAIN_MAX = 253
_SUBDOMAIN_FORMAT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_SUBDOMAIN = re.compile(f"^{_SUBDOMAIN_FORMAT}$")
_SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    f"start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    f"'{_SUBDOMAIN_FORMAT}')"
)


def label_path(key: str) -> str:
    return f"metadata.labels[{key}]"


def dns1123_subdomain_errors(value: str) -> list[str]:
    """Why ``value`` is not a DNS-1123 subdomain (empty when it is one)."""
    problems: list[str] = []
    if len(value.encode()) > _SUBDOMAIN_MAX:
        problems.append(f"must be no more than {_SUBDOMAIN_MAX} bytes")
    if not _SUBDOMAIN.match(value):
        problems.append(_SUBDOMAIN_MESSAGE)
    return problems


def aggregate_message(errors: Iterable[FieldError | str]) -> str:
    """apimachinery's ``Aggregate.Error()``: one error as is, several as ``[a, b]``, duplicates dropped."""
    seen: list[str] = []
    for error in errors:
        text = str(error)
        if text not in seen:
            seen.append(text)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"
