"""``metav1.LabelSelector``: parse once, match many times.

Used wherever a Kubernetes object selects by labels: a ClusterQueue's ``namespaceSelector``, the
enforced-namespace and managed-namespace selectors of our configuration. Semantics are those of
``metav1.LabelSelectorAsSelector``: ``matchLabels`` and every ``matchExpressions`` entry must all hold;
``In`` needs the key present with one of the values, ``NotIn`` holds when the key is absent or has another
value, ``Exists``/``DoesNotExist`` look at the key only. The empty selector ``{}`` matches everything; an
absent selector (``None``) is a different thing and each caller decides what it means (for a ClusterQueue
it matches no namespace, per Kueue's API).

A selector is accepted as Kueue's webhooks accept one: the shape its CRD schema enforces (``key`` and
``operator`` required, strings where strings belong), then apimachinery's ``ValidateLabelSelector``
(:mod:`kueue_webhook.api.validation`), with every problem listed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.validation import validate_label_selector

__all__ = ["LabelSelector", "Requirement", "SelectorError", "label_selector", "parse_label_selector"]


class SelectorError(ValueError):
    """An invalid selector where one must be valid; ``errors`` are all the problems, the first one shown."""

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__(str(errors[0]))
        self.errors = errors


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        return not present  # DoesNotExist


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed label selector; ``LabelSelector()`` (no requirements) matches every label set."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(req.matches(labels) for req in self.requirements)

    def is_empty(self) -> bool:
        return not self.requirements


def _shape_errors(raw: Any, path: str) -> list[FieldError]:
    """What the ``LabelSelector`` schema refuses before any webhook sees the object."""
    if not isinstance(raw, Mapping):
        return [FieldError.invalid(path, None, "must be an object with matchLabels and/or matchExpressions")]
    errors: list[FieldError] = []
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        errors.append(
            FieldError.invalid(f"{path}.matchLabels", None, "must be a map of label keys to values")
        )
    else:
        errors += [
            FieldError.invalid(f"{path}.matchLabels[{key}]", None, "label values must be strings")
            for key, value in match_labels.items()
            if not isinstance(value, str)
        ]
    expressions = raw.get("matchExpressions") or []
    if not isinstance(expressions, list):
        return [*errors, FieldError.invalid(f"{path}.matchExpressions", None, "must be a list")]
    for index, expr in enumerate(expressions):
        where = f"{path}.matchExpressions[{index}]"
        if not isinstance(expr, Mapping):
            errors.append(FieldError.invalid(where, None, "must be an object with key, operator and values"))
            continue
        for name in ("key", "operator"):
            if expr.get(name) is None:
                errors.append(FieldError.required(f"{where}.{name}"))
            elif not isinstance(expr[name], str):
                errors.append(FieldError.invalid(f"{where}.{name}", None, "must be a string"))
        values = expr.get("values") or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            errors.append(FieldError.invalid(f"{where}.values", None, "must be a list of strings"))
    return errors


def label_selector(raw: Any, path: str) -> LabelSelector | list[FieldError]:
    """Parse a ``LabelSelector`` dict; every problem, each naming its field, if it is not a valid one."""
    errors = _shape_errors(raw, path) or validate_label_selector(raw, path)
    if errors:
        return errors
    requirements = [
        Requirement(str(key), "In", frozenset((value,)))
        for key, value in (raw.get("matchLabels") or {}).items()
    ]
    requirements += [
        Requirement(expr["key"], expr["operator"], frozenset(expr.get("values") or []))
        for expr in raw.get("matchExpressions") or []
    ]
    return LabelSelector(tuple(requirements))


def parse_label_selector(raw: Any, path: str = "") -> LabelSelector:
    """``label_selector`` for a selector that must be valid: raises SelectorError otherwise."""
    parsed = label_selector(raw, path)
    if isinstance(parsed, list):
        raise SelectorError(parsed)
    return parsed
