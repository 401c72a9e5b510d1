"""Kubernetes' wording for validation failures, so a denial reads like any other API error.

Kueue's webhooks return a ``field.ErrorList`` folded into one message by apimachinery's aggregate: a single
error prints as itself, several print as ``[first, second]`` with duplicates dropped. Users (and scripts)
grep those messages, so :func:`aggregate_message` reproduces that folding exactly. The name, label and
selector rules themselves, with apimachinery's wording, are :mod:`kueue_webhook.api.validation`'s.
"""

from __future__ import annotations

from collections.abc import Iterable

from kueue_webhook.api.errors import FieldError

__all__ = ["IMMUTABLE", "aggregate_message", "label_path"]

#: apimachinery's ``FieldImmutableErrorMsg``
IMMUTABLE = "field is immutable"


def label_path(key: str) -> str:
    return f"metadata.labels[{key}]"


def aggregate_message(errors: Iterable[FieldError | str]) -> str:
    """apimachinery's ``Aggregate.Error()``: one error as is, several as ``[a, b]``, duplicates dropped."""
    seen = list(dict.fromkeys(str(error) for error in errors))  # first occurrence order, in linear time
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"
