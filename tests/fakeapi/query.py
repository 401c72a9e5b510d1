"""List filtering as the apiserver does it from query strings: label selectors, field selectors, pagination.

Selectors arrive as strings (`a=b,c!=d,e in (x,y),!f`); the label form follows `labels.Parse`, the field form
`fields.ParseSelector` (`=`, `==`, `!=` on dotted paths such as `metadata.name` or `involvedObject.uid`, which
is what `kubectl describe` sends for Events). A malformed selector is a 400 naming what could not be parsed.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any

import orjson

from tests.fakeapi.errors import ApiError, bad_request

Obj = dict[str, Any]
Predicate = Callable[[Obj], bool]
_SET_EXPR = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_.\-/]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQ_EXPR = re.compile(r"^\s*([A-Za-z0-9_.\-/]+)\s*(==|=|!=)\s*([A-Za-z0-9_.\-]*)\s*$")
_CMP_EXPR = re.compile(r"^\s*([A-Za-z0-9_.\-/]+)\s*(<|>)\s*(-?\d+)\s*$")


LabelCheck = Callable[[dict[str, str]], bool]


def _split_top(text: str) -> list[str]:
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p for p in parts if p.strip()]


def _equals(key: str, value: str, *, negate: bool) -> LabelCheck:
    def check(labels: dict[str, str]) -> bool:
        return (labels.get(key) == value) != negate

    return check


def _exists(key: str, *, negate: bool) -> LabelCheck:
    def check(labels: dict[str, str]) -> bool:
        return (key in labels) != negate

    return check


def _within(key: str, values: frozenset[str], *, negate: bool) -> LabelCheck:
    def check(labels: dict[str, str]) -> bool:
        return (labels.get(key) in values) != negate

    return check


def _compare(key: str, op: str, bound: int) -> LabelCheck:
    def check(labels: dict[str, str]) -> bool:
        value = labels.get(key)
        if value is None or not value.lstrip("-").isdigit():
            return False
        return int(value) < bound if op == "<" else int(value) > bound

    return check


def _requirement(part: str) -> LabelCheck:
    eq = _EQ_EXPR.match(part)
    if eq:
        key, op, value = eq.groups()
        return _equals(key, value, negate=op == "!=")
    cmp_match = _CMP_EXPR.match(part)
    if cmp_match:
        key, op, number = cmp_match.groups()
        return _compare(key, op, int(number))
    expr = _SET_EXPR.match(part)
    if expr is None:
        raise bad_request(f"unable to parse requirement: {part.strip()!r}")
    negated, key, op, values_text = expr.groups()
    if op is None:
        return _exists(key, negate=bool(negated))
    if negated:
        raise bad_request(f"unable to parse requirement: {part.strip()!r}")
    values = frozenset(v.strip() for v in values_text.split(",") if v.strip())
    return _within(key, values, negate=op == "notin")


def label_selector(text: str | None) -> Predicate:
    """`labels.Parse` semantics; every requirement must hold."""
    checks = [_requirement(part) for part in _split_top(text or "")]

    def predicate(obj: Obj) -> bool:
        labels = obj["metadata"].get("labels") or {}
        return all(check(labels) for check in checks)

    return predicate


def _field_value(obj: Obj, path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _field_check(path: str, value: str, *, negate: bool) -> Predicate:
    def check(obj: Obj) -> bool:
        return (_field_value(obj, path) == value) != negate

    return check


def field_selector(text: str | None) -> Predicate:
    """`fields.ParseSelector` semantics on any dotted path of the object."""
    checks: list[Predicate] = []
    for part in (text or "").split(","):
        if not part.strip():
            continue
        match = re.match(r"^\s*([A-Za-z0-9_.\-/]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if match is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        path, op, value = match.groups()
        checks.append(_field_check(path, value, negate=op == "!="))
    return lambda obj: all(check(obj) for check in checks)


def encode_continue(*, rv: int, after: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps({"rv": rv, "ns": after[0], "name": after[1]})).decode()


def decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), (str(data["ns"]), str(data["name"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise ApiError(
            code=400, reason="BadRequest", message="continue key is not valid: invalid format"
        ) from exc
