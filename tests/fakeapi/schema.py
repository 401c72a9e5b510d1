"""Structural-schema processing for custom resources: prune, default, validate, in kube-apiserver's order.

The apiserver treats a CRD's openAPIV3Schema as the contract of stored data: fields the schema does not know
are dropped (unless `x-kubernetes-preserve-unknown-fields`), `null` in a non-nullable field is dropped,
defaults fill missing fields (recursing into a defaulted `{}`, which is how `preemption: {}` grows its nested
defaults), and only then is the object validated, every error collected rather than the first one. A
controller that writes a field the CRD lacks must see it vanish here exactly as it would on a real cluster.

CEL rules (`x-kubernetes-validations`) are not evaluated; when a schema has them and the object already failed
schema validation, the apiserver adds its "some validation rules were not checked" cause, and so do we.
"""

from __future__ import annotations

import copy
import re
from functools import lru_cache
from typing import Any

import orjson

Cause = dict[str, str]
_RULES_NOT_CHECKED: Cause = {
    "reason": "FieldValueInvalid",
    "message": (
        "Invalid value: null: some validation rules were not checked because the object was invalid; "
        "correct the existing errors to complete validation"
    ),
    "field": "<nil>",
}
_ROOT_KEEP = frozenset({"apiVersion", "kind", "metadata"})


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str]:
    """RE2 (kube-apiserver's) takes flags after the anchor, ``^(?i)...`` (Kueue's AdmissionCheck
    ``parameters.kind``); Python only at the very start, where they mean the same."""
    flags = re.match(r"\^(\(\?[a-z]+\))", pattern)
    if flags is not None:
        pattern = flags.group(1) + "^" + pattern[flags.end() :]
    return re.compile(pattern)


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


class _Settled:
    """Objects already found clean under a schema node (pruned, defaulted or valid), by their JSON bytes.

    Each of those steps is a pure, idempotent function of (value, schema node), and a status write sends
    back mostly what is stored: its unchanged conditions and admission need not be walked again. The
    schema node is held, not only its id, so that an id is never reused for another node while cached.
    """

    def __init__(self, *, limit: int = 50_000) -> None:
        self.limit = limit
        self._by_node: dict[int, tuple[dict[str, Any], set[bytes]]] = {}
        self._size = 0

    def seen(self, schema: dict[str, Any], data: bytes | None) -> bool:
        entry = self._by_node.get(id(schema))
        return entry is not None and data is not None and data in entry[1]

    def add(self, schema: dict[str, Any], data: bytes | None) -> None:
        if data is None:
            return
        if self._size >= self.limit:
            self._by_node.clear()
            self._size = 0
        entry = self._by_node.get(id(schema))
        if entry is None:
            entry = self._by_node[id(schema)] = (schema, set())
        entry[1].add(data)
        self._size += 1


def _encoded(value: dict[str, Any]) -> bytes | None:
    """The cache key of an object; None (never cached) for what JSON cannot carry exactly."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return None


_PRUNED = _Settled()
_DEFAULTED = _Settled()
_VALID = _Settled()


def prune(obj: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Drop unknown fields and non-nullable nulls in place; returns the paths of the unknown fields dropped.

    apiVersion, kind and metadata are the apiserver's own and left alone. The returned paths are what
    `fieldValidation=Strict` reports as "unknown field" instead of silently pruning.
    """
    unknown: list[str] = []
    for key in list(obj):
        if key in _ROOT_KEEP:
            continue
        sub = (schema.get("properties") or {}).get(key)
        if sub is None and not schema.get("x-kubernetes-preserve-unknown-fields"):
            unknown.append(key)
            del obj[key]
        elif obj[key] is None and not (sub or {}).get("nullable"):
            del obj[key]
        elif sub is not None:
            obj[key] = _prune_value(obj[key], sub, key, unknown)
    return unknown


def _prune_value(value: Any, schema: dict[str, Any], path: str, unknown: list[str]) -> Any:
    if isinstance(value, dict):
        if _PRUNED.seen(schema, _encoded(value)):
            return value
        props = schema.get("properties")
        additional = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields")
        for key in list(value):
            if props is not None and key in props:
                sub: dict[str, Any] = props[key]
            elif isinstance(additional, dict):
                sub = additional
            elif preserve:
                continue
            else:
                unknown.append(f"{path}.{key}")
                del value[key]
                continue
            if value[key] is None and not sub.get("nullable"):
                del value[key]
            else:
                value[key] = _prune_value(value[key], sub, f"{path}.{key}", unknown)
        _PRUNED.add(schema, _encoded(value))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        items = schema["items"]
        return [_prune_value(v, items, f"{path}[{i}]", unknown) for i, v in enumerate(value)]
    return value


def apply_defaults(obj: dict[str, Any], schema: dict[str, Any]) -> None:
    """Fill schema defaults in place, recursing into defaulted objects and every array item."""
    _default_value(obj, schema)


def _default_value(value: Any, schema: dict[str, Any]) -> None:
    if isinstance(value, dict):
        if _DEFAULTED.seen(schema, _encoded(value)):
            return
        for key, sub in (schema.get("properties") or {}).items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                _default_value(value[key], sub)
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for item in value.values():
                _default_value(item, additional)
        _DEFAULTED.add(schema, _encoded(value))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default_value(item, schema["items"])


def validate(obj: dict[str, Any], schema: dict[str, Any]) -> list[Cause]:
    """Every schema violation as an apimachinery field error (reason, message, field)."""
    causes: list[Cause] = []
    for key, sub in (schema.get("properties") or {}).items():
        if key in obj and key not in _ROOT_KEEP:
            _validate_value(obj[key], sub, key, causes)
    for key in schema.get("required") or ():
        if key not in obj:
            causes.append({"reason": "FieldValueRequired", "message": "Required value", "field": key})
    if causes and _has_cel_rules(schema):
        causes.append(dict(_RULES_NOT_CHECKED))
    return causes


def validate_fields(obj: dict[str, Any], schema: dict[str, Any], fields: tuple[str, ...]) -> list[Cause]:
    """``validate`` restricted to some top-level fields (the rest of ``obj`` known to be valid)."""
    causes: list[Cause] = []
    properties = schema.get("properties") or {}
    for key in fields:
        if key in obj and key in properties:
            _validate_value(obj[key], properties[key], key, causes)
    if causes and _has_cel_rules(schema):
        causes.append(dict(_RULES_NOT_CHECKED))
    return causes


def _has_cel_rules(schema: Any) -> bool:
    return "x-kubernetes-validations" in _json(schema)


def _type_ok(value: Any, schema: dict[str, Any]) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
    expected = schema.get("type")
    if expected is None:
        return True
    checks = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
    }
    return bool(checks.get(expected, lambda v: True)(value))


def _validate_value(value: Any, schema: dict[str, Any], path: str, causes: list[Cause]) -> None:
    if value is None:
        if not schema.get("nullable"):
            causes.append(_type_error(value, schema, path))
        return
    if not _type_ok(value, schema):
        causes.append(_type_error(value, schema, path))
        return
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(_json(v) for v in schema["enum"])
        causes.append(
            {
                "reason": "FieldValueNotSupported",
                "message": f"Unsupported value: {_json(value)}: supported values: {supported}",
                "field": path,
            }
        )
    if isinstance(value, str):
        _validate_string(value, schema, path, causes)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _validate_number(value, schema, path, causes)
    elif isinstance(value, list):
        _validate_array(value, schema, path, causes)
    elif isinstance(value, dict):
        data = _encoded(value)
        if _VALID.seen(schema, data):
            return
        before = len(causes)
        _validate_object(value, schema, path, causes)
        if len(causes) == before:
            _VALID.add(schema, data)


def _type_error(value: Any, schema: dict[str, Any], path: str) -> Cause:
    expected = (
        "integer or string" if schema.get("x-kubernetes-int-or-string") else schema.get("type", "object")
    )
    shown = _json(value)
    return {
        "reason": "FieldValueTypeInvalid",
        "message": (
            f"Invalid value: {shown}: {path} in body must be of type {expected}: {_json(_go_type(value))}"
        ),
        "field": path,
    }


def _go_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _validate_string(value: str, schema: dict[str, Any], path: str, causes: list[Cause]) -> None:
    pattern = schema.get("pattern")
    if pattern and not _compiled(pattern).search(value):
        causes.append(
            {
                "reason": "FieldValueInvalid",
                "message": f"Invalid value: {_json(value)}: {path} in body should match '{pattern}'",
                "field": path,
            }
        )
    max_length = schema.get("maxLength")
    if max_length is not None and len(value) > max_length:
        causes.append(
            {
                "reason": "FieldValueTooLong",
                "message": f"Too long: may not be more than {max_length} bytes",
                "field": path,
            }
        )
    min_length = schema.get("minLength")
    if min_length is not None and len(value) < min_length:
        causes.append(
            {
                "reason": "FieldValueInvalid",
                "message": (
                    f"Invalid value: {_json(value)}: {path} in body "
                    f"should be at least {min_length} chars long"
                ),
                "field": path,
            }
        )


def _validate_number(value: float, schema: dict[str, Any], path: str, causes: list[Cause]) -> None:
    minimum = schema.get("minimum")
    if minimum is not None and value < minimum:
        causes.append(
            {
                "reason": "FieldValueInvalid",
                "message": (
                    f"Invalid value: {_json(value)}: {path} in body "
                    f"should be greater than or equal to {minimum}"
                ),
                "field": path,
            }
        )
    maximum = schema.get("maximum")
    if maximum is not None and value > maximum:
        causes.append(
            {
                "reason": "FieldValueInvalid",
                "message": (
                    f"Invalid value: {_json(value)}: {path} in body should be less than or equal to {maximum}"
                ),
                "field": path,
            }
        )


def _validate_array(value: list[Any], schema: dict[str, Any], path: str, causes: list[Cause]) -> None:
    max_items = schema.get("maxItems")
    if max_items is not None and len(value) > max_items:
        causes.append(
            {
                "reason": "FieldValueTooMany",
                "message": f"Too many: {len(value)}: must have at most {max_items} items",
                "field": path,
            }
        )
    min_items = schema.get("minItems")
    if min_items is not None and len(value) < min_items:
        causes.append(
            {
                "reason": "FieldValueInvalid",
                "message": (
                    f"Invalid value: {len(value)}: {path} in body should have at least {min_items} items"
                ),
                "field": path,
            }
        )
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            _validate_value(item, items, f"{path}[{index}]", causes)
    if schema.get("x-kubernetes-list-type") == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen: set[str] = set()
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            ident = _json([item.get(k) for k in keys])
            if ident in seen:
                shown = "{" + ", ".join(f'"{k}":{_json(item.get(k))}' for k in keys) + "}"
                causes.append(
                    {
                        "reason": "FieldValueDuplicate",
                        "message": f"Duplicate value: {shown}",
                        "field": f"{path}[{index}]",
                    }
                )
            seen.add(ident)


def _validate_object(value: dict[str, Any], schema: dict[str, Any], path: str, causes: list[Cause]) -> None:
    props = schema.get("properties") or {}
    for key, sub in props.items():
        if key in value:
            _validate_value(value[key], sub, f"{path}.{key}", causes)
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        for key, item in value.items():
            if key not in props:
                _validate_value(item, additional, f"{path}.{key}", causes)
    for key in schema.get("required") or ():
        if key not in value:
            causes.append(
                {"reason": "FieldValueRequired", "message": "Required value", "field": f"{path}.{key}"}
            )
    max_props = schema.get("maxProperties")
    if max_props is not None and len(value) > max_props:
        causes.append(
            {
                "reason": "FieldValueTooMany",
                "message": f"Too many: {len(value)}: must have at most {max_props} items",
                "field": path,
            }
        )


_IMMUTABLE: dict[int, tuple[dict[str, Any], list[tuple[str, ...]]]] = {}


def immutable_paths(schema: dict[str, Any]) -> list[tuple[str, ...]]:
    """Field paths (outside arrays) under the CEL transition rule `self == oldSelf`, memoised per schema."""
    cached = _IMMUTABLE.get(id(schema))
    if cached is None or cached[0] is not schema:
        cached = (schema, _immutable_paths(schema, ()))
        _IMMUTABLE[id(schema)] = cached
    return cached[1]


def _immutable_paths(schema: dict[str, Any], prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for key, sub in (schema.get("properties") or {}).items():
        path = (*prefix, key)
        rules = [r.get("rule", "").replace(" ", "") for r in sub.get("x-kubernetes-validations") or []]
        if "self==oldSelf" in rules:
            found.append(path)
        found.extend(_immutable_paths(sub, path))
    return found


def _at(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(obj, dict) or part not in obj:
            return _MISSING
        obj = obj[part]
    return obj


_MISSING = object()


def validate_transitions(new: dict[str, Any], old: dict[str, Any], schema: dict[str, Any]) -> list[Cause]:
    """The one CEL rule evaluated: `self == oldSelf` (immutability), in the apiserver's CEL message shape."""
    causes: list[Cause] = []
    for path in immutable_paths(schema):
        before, after = _at(old, path), _at(new, path)
        if before is _MISSING or after is _MISSING or before == after:
            continue
        rule = next(
            r
            for r in _at_schema(schema, path).get("x-kubernetes-validations") or []
            if r.get("rule", "").replace(" ", "") == "self==oldSelf"
        )
        causes.append(
            {
                "reason": "FieldValueInvalid",
                "message": f"Invalid value: {_json(_go_type(after))}: {rule.get('message') or rule['rule']}",
                "field": ".".join(path),
            }
        )
    return causes


def _at_schema(schema: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for part in path:
        schema = (schema.get("properties") or {})[part]
    return schema


def structural_errors(node: dict[str, Any], path: str) -> list[Cause]:
    """The structural-schema rules the apiserver checks when a CRD is written (the subset that bites).

    Every node states a `type` (unless int-or-string or preserve-unknown-fields), and the keys of a
    `x-kubernetes-list-type: map` list are required or defaulted in its items.
    """
    causes: list[Cause] = []
    open_node = node.get("x-kubernetes-int-or-string") or node.get("x-kubernetes-preserve-unknown-fields")
    if "type" not in node and not open_node:
        causes.append(
            {
                "reason": "FieldValueRequired",
                "message": "Required value: must not be empty for specified object fields",
                "field": f"{path}.type",
            }
        )
    if node.get("x-kubernetes-list-type") == "map":
        items = node.get("items") or {}
        for key in node.get("x-kubernetes-list-map-keys") or []:
            item = (items.get("properties") or {}).get(key)
            if item is None or (key not in (items.get("required") or []) and "default" not in item):
                causes.append(
                    {
                        "reason": "FieldValueRequired",
                        "message": f"Required value: all map keys must be required or have a default: {key}",
                        "field": f"{path}.items.properties[{key}]",
                    }
                )
    for key, sub in (node.get("properties") or {}).items():
        causes.extend(structural_errors(sub, f"{path}.properties[{key}]"))
    if isinstance(node.get("items"), dict):
        causes.extend(structural_errors(node["items"], f"{path}.items"))
    if isinstance(node.get("additionalProperties"), dict):
        causes.extend(structural_errors(node["additionalProperties"], f"{path}.additionalProperties"))
    return causes
