"""``metav1.LabelSelector``: parse once, match many times.

Used wherever a Kubernetes object selects by labels: a ClusterQueue's ``namespaceSelector``, the
enforced-namespace and managed-namespace selectors of our configuration. Semantics are those of
``metav1.LabelSelectorAsSelector``: ``matchLabels`` and every ``matchExpressions`` entry must all hold;
``In`` needs the key present with one of the values, ``NotIn`` holds when the key is absent or has another
value, ``Exists``/``DoesNotExist`` look at the key only. The empty selector ``{}`` matches everything; an
absent selector (``None``) is a different thing and each caller decides what it means (for a ClusterQueue
it matches no namespace, per Kueue's API).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["LabelSelector", "Requirement", "SelectorError", "parse_label_selector"]

_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


class SelectorError(ValueError):
    """An invalid selector; ``path`` names the offending field (relative to the selector)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.detail = message


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


def parse_label_selector(raw: Any, path: str = "") -> LabelSelector:
    """Parse a ``LabelSelector`` dict; raises SelectorError naming the field at fault."""
    if not isinstance(raw, Mapping):
        raise SelectorError(path, "must be an object with matchLabels and/or matchExpressions")
    requirements: list[Requirement] = []
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, Mapping):
        raise SelectorError(f"{path}.matchLabels", "must be a map of label keys to values")
    for key, value in match_labels.items():
        if not isinstance(value, str):
            raise SelectorError(f"{path}.matchLabels[{key}]", "label values must be strings")
        requirements.append(Requirement(str(key), "In", frozenset((value,))))
    expressions = raw.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise SelectorError(f"{path}.matchExpressions", "must be a list")
    for index, expr in enumerate(expressions):
        where = f"{path}.matchExpressions[{index}]"
        if not isinstance(expr, Mapping):
            raise SelectorError(where, "must be an object with key, operator and values")
        key, operator, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if not isinstance(key, str) or not key:
            raise SelectorError(f"{where}.key", "Required value")
        if operator not in _OPERATORS:
            raise SelectorError(
                f"{where}.operator",
                f'Unsupported value: "{operator}": supported values: "In", "NotIn", "Exists", "DoesNotExist"',
            )
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise SelectorError(f"{where}.values", "must be a list of strings")
        if operator in ("In", "NotIn") and not values:
            raise SelectorError(f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'")
        if operator in ("Exists", "DoesNotExist") and values:
            raise SelectorError(
                f"{where}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            )
        requirements.append(Requirement(key, str(operator), frozenset(values)))
    return LabelSelector(tuple(requirements))
