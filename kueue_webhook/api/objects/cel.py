"""Kueue's CRD validation rules (CEL, ``x-kubernetes-validations``), restated in Python.

kube-apiserver evaluates these rules before any webhook runs, and our CRDs carry the same rules; they are
restated here because the test API server does not evaluate CEL and ``simulate`` reads manifests with no API
server at all. The rules themselves stay next to the fields they guard (in each kind's module); this module
holds only how CEL evaluates and how kube-apiserver words a failure (``<path>: Invalid value: "object":
<message>``, or ``no such key: <field> evaluating rule: ...`` when a rule selects a missing field), so every
restated rule fails with the API server's exact sentence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kueue_webhook.api.errors import FieldError

__all__ = ["NoSuchKey", "cel_all", "cel_check", "cel_eval", "cel_failure", "select"]

#: a rule's body on one object: may raise :class:`NoSuchKey` through :func:`select`
Predicate = Callable[[Mapping[str, Any]], Any]


class NoSuchKey(Exception):
    """A CEL rule selected a field the object does not have (CEL's ``no such key`` evaluation error)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def select(obj: Mapping[str, Any], key: str) -> Any:
    """CEL field selection on an object: a missing field is an evaluation error, not a null."""
    if key not in obj:
        raise NoSuchKey(key)
    return obj[key]


def cel_eval(predicate: Predicate, obj: Mapping[str, Any]) -> bool | NoSuchKey:
    """A rule's outcome on one object: true, false, or the evaluation error that stopped it."""
    try:
        return bool(predicate(obj))
    except NoSuchKey as exc:
        return exc


def cel_all(items: list[Mapping[str, Any]], predicate: Predicate) -> bool | NoSuchKey:
    """CEL's ``self.all(x, p)``: false as soon as one item is false, else the first evaluation error, else
    true (CEL's logical operators absorb errors when the outcome is already decided)."""
    error: NoSuchKey | None = None
    for item in items:
        outcome = cel_eval(predicate, item)
        if outcome is False:
            return False
        if isinstance(outcome, NoSuchKey):
            error = error or outcome
    return error if error is not None else True


def cel_failure(path: str, node_type: str, message: str, error: NoSuchKey | None = None) -> FieldError:
    """How kube-apiserver reports a failed ``x-kubernetes-validations`` rule: ``Invalid value: "<type>"``
    and the rule's message, prefixed by the evaluation error when the rule could not be evaluated."""
    body = message if error is None else f"no such key: {error.key} evaluating rule: {message}"
    return FieldError.invalid(path, node_type, body)


def cel_check(
    outcome: bool | NoSuchKey, path: str, node_type: str, message: str, errors: list[FieldError]
) -> None:
    """Append the rule's failure to ``errors`` unless ``outcome`` is true."""
    if outcome is True:
        return
    errors.append(cel_failure(path, node_type, message, outcome if isinstance(outcome, NoSuchKey) else None))
