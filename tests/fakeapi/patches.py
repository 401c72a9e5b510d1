"""The patch formats kube-apiserver accepts for our kinds: JSON Patch, JSON merge patch, strategic merge,
and the merge half of a server-side apply.

Each function takes the current object and the decoded patch and returns a new object, never mutating the
input, so a failed patch leaves the stored object untouched. Strategic merge is implemented for the list merge
keys of the built-in fields our clients patch (containers and env by name, conditions by type, ownerReferences
by uid, ...); custom resources reject it with 415 exactly like the apiserver, which is why kubectl falls back
to a merge patch for them.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from tests.fakeapi.errors import ApiError, bad_request, unprocessable_patch

# Field name -> merge key, for lists kube's Go types mark with patchStrategy=merge (subset we serve).
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "conditions": "type",
    "ownerReferences": "uid",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
}
# Primitive lists merged as sets.
SET_LISTS = frozenset({"finalizers"})


def copy_json(value: Any) -> Any:
    """A deep copy of decoded JSON, through orjson: several times faster than ``copy.deepcopy``, which
    dominated the cost of a status patch. Anything orjson cannot encode exactly (integers beyond 64 bits,
    non-string keys) takes the slow path."""
    try:
        return orjson.loads(orjson.dumps(value))
    except (orjson.JSONEncodeError, TypeError):
        return copy.deepcopy(value)


def json_patch(obj: dict[str, Any], operations: Any) -> dict[str, Any]:
    if not isinstance(operations, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc: Any = copy_json(obj)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request("the server rejected our request due to an error in our request")
        doc = _apply_op(doc, op)
    if not isinstance(doc, dict):
        raise unprocessable_patch()
    return doc


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise unprocessable_patch()
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str]) -> Any:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise unprocessable_patch()
    return node


def _get(doc: Any, parts: list[str]) -> Any:
    if not parts:
        return doc
    parent = _parent(doc, parts)
    key = parts[-1]
    if isinstance(parent, dict) and key in parent:
        return parent[key]
    if isinstance(parent, list) and key.isdigit() and int(key) < len(parent):
        return parent[int(key)]
    raise unprocessable_patch()


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent = _parent(doc, parts)
    key = parts[-1]
    if isinstance(parent, dict):
        parent[key] = value
    elif isinstance(parent, list):
        if key == "-":
            parent.append(value)
        elif key.isdigit() and int(key) <= len(parent):
            parent.insert(int(key), value)
        else:
            raise unprocessable_patch()
    else:
        raise unprocessable_patch()
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    parent = _parent(doc, parts)
    key = parts[-1]
    if isinstance(parent, dict) and key in parent:
        del parent[key]
    elif isinstance(parent, list) and key.isdigit() and int(key) < len(parent):
        del parent[int(key)]
    else:
        raise unprocessable_patch()
    return doc


def _apply_op(doc: Any, op: dict[str, Any]) -> Any:
    kind = op["op"]
    parts = _pointer(op["path"])
    if kind == "add":
        return _add(doc, parts, copy.deepcopy(op.get("value")))
    if kind == "remove":
        return _remove(doc, parts)
    if kind == "replace":
        _get(doc, parts)
        if not parts:
            return copy.deepcopy(op.get("value"))
        doc = _remove(doc, parts)
        return _add(doc, parts, copy.deepcopy(op.get("value")))
    if kind == "test":
        if _get(doc, parts) != op.get("value"):
            raise unprocessable_patch()
        return doc
    if kind in ("move", "copy"):
        source = _pointer(op.get("from", ""))
        value = copy.deepcopy(_get(doc, source))
        if kind == "move":
            doc = _remove(doc, source)
        return _add(doc, parts, value)
    raise unprocessable_patch()


def merge_patch(obj: dict[str, Any], patch: Any) -> dict[str, Any]:
    if not isinstance(patch, dict):
        raise bad_request("the body of the request was not a JSON object")
    result = _merge(copy_json(obj), patch)
    assert isinstance(result, dict)
    return result


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = _merge(target.get(key), value)
    return target


def apply_patch(obj: dict[str, Any], patch: Any, schema: dict[str, Any] | None) -> dict[str, Any]:
    """The merge a server-side apply makes, without field ownership: maps merge field by field, a list the
    schema marks ``x-kubernetes-list-type: map`` merges item by item on its keys (a Workload's conditions
    by type: applying Finished leaves QuotaReserved alone), other lists and scalars are replaced, and a
    null or absent field is left as it is (an apply never deletes what another manager set; removing
    fields the same manager applied before is not modelled)."""
    if not isinstance(patch, dict):
        raise bad_request("the body of the request was not a JSON object")
    result = _apply(copy_json(obj), patch, schema or {})
    assert isinstance(result, dict)
    return result


def _apply(target: Any, patch: Any, schema: dict[str, Any]) -> Any:
    if isinstance(patch, dict):
        if not isinstance(target, dict):
            target = {}
        properties = schema.get("properties") or {}
        for key, value in patch.items():
            if value is not None:
                child = properties.get(key) or schema.get("additionalProperties") or {}
                target[key] = _apply(target.get(key), value, child if isinstance(child, dict) else {})
        return target
    if isinstance(patch, list) and schema.get("x-kubernetes-list-type") == "map":
        keys = list(schema.get("x-kubernetes-list-map-keys") or [])
        items = schema.get("items") or {}
        merged = [copy.deepcopy(item) for item in target] if isinstance(target, list) else []
        for value in patch:
            at = next(
                (
                    i
                    for i, item in enumerate(merged)
                    if isinstance(item, dict)
                    and isinstance(value, dict)
                    and all(item.get(k) == value.get(k) for k in keys)
                ),
                None,
            )
            if at is None:
                merged.append(_apply(None, value, items))
            else:
                merged[at] = _apply(merged[at], value, items)
        return merged
    return copy.deepcopy(patch)


def strategic_merge_patch(obj: dict[str, Any], patch: Any) -> dict[str, Any]:
    if not isinstance(patch, dict):
        raise bad_request("the body of the request was not a JSON object")
    result = _strategic(copy_json(obj), patch)
    assert isinstance(result, dict)
    return result


def _strategic(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    if not isinstance(target, dict):
        target = {}
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            current = target.get(field) or []
            target[field] = [v for v in current if v not in value]
            continue
        if value is None:
            target.pop(key, None)
        elif isinstance(value, list) and key in MERGE_KEYS and isinstance(target.get(key), list):
            target[key] = _merge_list(target[key], value, MERGE_KEYS[key])
        elif isinstance(value, list) and key in SET_LISTS and isinstance(target.get(key), list):
            target[key] = list(target[key]) + [v for v in value if v not in target[key]]
        else:
            target[key] = _strategic(target.get(key), value)
    if isinstance(retain, list):
        for key in list(target):
            if key not in retain:
                del target[key]
    return target


def _merge_list(current: list[Any], patch: list[Any], merge_key: str) -> list[Any]:
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [copy.deepcopy(p) for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    result = list(current)
    for item in patch:
        if not isinstance(item, dict):
            raise ApiError(
                code=400, reason="BadRequest", message="strategic merge patch list items must be objects"
            )
        key = item.get(merge_key)
        index = next(
            (
                i
                for i, existing in enumerate(result)
                if isinstance(existing, dict) and existing.get(merge_key) == key
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                del result[index]
            continue
        if index is None:
            result.append(_strategic({}, item))
        else:
            result[index] = _strategic(result[index], item)
    return result
