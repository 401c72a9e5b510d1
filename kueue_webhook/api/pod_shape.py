"""Kueue's ``SpecShape`` of a pod spec: what makes two pods interchangeable for admission.

Two places need it and must agree: a pod group's roles (pods of one shape are one pod set, named by the
shape's hash, Kueue's role hash) and the update rules of a queued StatefulSet (its template's shape may not
change while it is queued, Kueue's ``ValidateImmutablePodGroupPodSpec``). The shape keeps each container's
requests and ports, the node selector, affinity, tolerations, runtime class, priority, topology spread,
overhead, resource claims and, only when set, the pod-level requests. Quantities are compared by value and
an empty list or map equals an absent one, as apimachinery's semantic equality.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from kueue_webhook.api.quantity import QuantityError, parse_quantity

__all__ = ["ShapeList", "ShapeMap", "shape_hash", "spec_shape"]


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    found: Any = obj
    for key in path:
        found = found.get(key) if isinstance(found, Mapping) else None
    return found


def _quantities(raw: Any) -> Any:
    """A ResourceList compared as apimachinery's semantic equality does: "1" equals "1000m"."""
    if not isinstance(raw, Mapping) or not raw:
        return None
    out: dict[str, Any] = {}
    for name, value in raw.items():
        try:
            out[str(name)] = parse_quantity(value).nanos
        except (QuantityError, TypeError, ValueError):
            out[str(name)] = value
    return out


def _empty_is_none(value: Any) -> Any:
    """Semantic equality: an empty list or map equals an absent one."""
    return None if value in ({}, [], "") else value


class ShapeMap(dict[str, Any]):
    """A map of Kueue's shape compared key by key (Go's ``map[string]any``); any other map is one value."""


class ShapeList(list[ShapeMap]):
    """A list of Kueue's shape compared item by item when the lengths agree (Go's ``[]map[string]any``)."""


def spec_shape(spec: Mapping[str, Any]) -> ShapeMap:
    """Kueue's ``SpecShape`` of a pod spec: what makes two pods interchangeable for admission."""

    def containers(key: str) -> ShapeList:
        found = spec.get(key)
        return ShapeList(
            ShapeMap(
                resources=ShapeMap(requests=_quantities(_get(c, "resources", "requests"))),
                ports=_empty_is_none(c.get("ports")),
            )
            for c in (found if isinstance(found, list) else [])
            if isinstance(c, Mapping)
        )

    shape = ShapeMap(
        initContainers=containers("initContainers"),
        containers=containers("containers"),
        overhead=_quantities(spec.get("overhead")),
    )
    for key in (
        "nodeSelector",
        "affinity",
        "tolerations",
        "runtimeClassName",
        "priority",
        "topologySpreadConstraints",
        "resourceClaims",
    ):
        shape[key] = _empty_is_none(spec.get(key))
    if isinstance(spec.get("resources"), Mapping):  # pod-level resources count only when set
        shape["resources"] = _quantities(_get(spec, "resources", "requests"))
    return shape


def shape_hash(spec: Mapping[str, Any]) -> str:
    """8 hex of SHA-256 over the shape (Kueue's ``GenerateRoleHash``; the bytes hashed are not Go's JSON, so
    the value is not Kueue's, while the pods it groups are the same)."""
    text = json.dumps({"spec": spec_shape(spec)}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:8]
