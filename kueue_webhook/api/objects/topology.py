"""Topology: the ordered node labels (block, rack, host...) that topology-aware scheduling groups nodes by.

A Topology is cluster-scoped and has one field, ``spec.levels``: node labels from the widest domain to the
narrowest. A ResourceFlavor names it in ``spec.topologyName``; the nodes of that flavor are then arranged in a
tree of domains by their values of these labels, and a pod set asking for a level is admitted only where a
domain of that level holds it. Kueue checks a Topology with its CRD's rules alone (no webhook): 1 to 16
levels, each a qualified label name, no label twice, ``kubernetes.io/hostname`` only as the lowest level, and
the levels immutable unless the hostname is the lowest level before and after the change. The same rules are
checked here, so the test API server (which evaluates no CEL) refuses what kube-apiserver refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.objects.cel import cel_failure
from kueue_webhook.api.objects.common import (
    Meta,
    NamedByMeta,
    Parsed,
    finish,
    list_field,
    object_items,
    parse_meta,
    parse_spec,
)
from kueue_webhook.api.validation import label_key_problems

__all__ = ["HOSTNAME_LABEL", "MAX_LEVELS", "Topology", "levels_update_errors", "parse_topology"]

HOSTNAME_LABEL = "kubernetes.io/hostname"
#: Kueue's CRD maxItems on ``spec.levels``
MAX_LEVELS = 16
#: Kueue's CRD maxLength on a level's ``nodeLabel``
_MAX_LABEL_LENGTH = 316


@dataclass(frozen=True, slots=True)
class Topology(NamedByMeta):
    """A named list of node labels, widest domain first."""

    meta: Meta
    levels: tuple[str, ...]

    @property
    def lowest_is_hostname(self) -> bool:
        """Whether the narrowest domain is one node (assignments then name hosts only, as Kueue's do)."""
        return bool(self.levels) and self.levels[-1] == HOSTNAME_LABEL


def parse_topology(obj: Mapping[str, Any]) -> Parsed[Topology]:
    errors: list[FieldError] = []
    meta = parse_meta(obj, errors, namespaced=False)
    spec = parse_spec(obj, errors)
    path = "spec.levels"
    raw = list_field(spec.get("levels"), path, errors)
    if "levels" in spec and not raw:
        errors.append(FieldError.invalid(path, 0, "spec.levels in body should have at least 1 items"))
    elif len(raw) > MAX_LEVELS:
        errors.append(FieldError.too_many(path, len(raw), MAX_LEVELS))
    levels: list[str] = []
    for _, item_path, level in object_items(raw, path, errors):
        label = level.get("nodeLabel")
        if not isinstance(label, str) or not label:
            errors.append(FieldError.required(f"{item_path}.nodeLabel"))
            continue
        if len(label) > _MAX_LABEL_LENGTH:
            errors.append(FieldError.too_long(f"{item_path}.nodeLabel", _MAX_LABEL_LENGTH))
        elif label_key_problems(label):
            errors.append(
                FieldError.invalid(f"{item_path}.nodeLabel", label, "; ".join(label_key_problems(label)))
            )
        levels.append(label)
    if len(set(levels)) != len(levels):
        errors.append(cel_failure(path, "array", "must be unique"))
    if HOSTNAME_LABEL in levels and levels[-1] != HOSTNAME_LABEL:
        errors.append(
            cel_failure(
                path,
                "array",
                "the kubernetes.io/hostname label can only be used at the lowest level of topology",
            )
        )
    return finish(Topology(meta, tuple(levels)), errors)


def _levels_of(obj: Mapping[str, Any]) -> list[Any]:
    spec = obj.get("spec")
    levels = spec.get("levels") if isinstance(spec, Mapping) else None
    return levels if isinstance(levels, list) else []


def levels_update_errors(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[FieldError]:
    """Kueue v1beta2's transition rule on ``spec.levels``: unchanged, unless the hostname is the lowest level
    both before and after (a node-level topology may gain or lose the levels above its hosts)."""
    before, after = _levels_of(old), _levels_of(new)
    if before == after:
        return []

    def hostname_lowest(levels: list[Any]) -> bool:
        return (
            bool(levels) and isinstance(levels[-1], Mapping) and levels[-1].get("nodeLabel") == HOSTNAME_LABEL
        )

    if hostname_lowest(before) and hostname_lowest(after):
        return []
    return [
        cel_failure(
            "spec.levels",
            "array",
            "levels are mutable only when kubernetes.io/hostname is the lowest level both before and after "
            "the change",
        )
    ]
