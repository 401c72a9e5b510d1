"""Kueue's ``MaxItems`` on the lists of its kinds, checked before any rule walks them.

kube-apiserver refuses an object whose list is longer than its CRD allows before any webhook runs, so
Kueue's rules only ever see at most 18 pod sets, 16 conditions, 64 flavors... Our validating webhook can be
called by anyone who reaches its port, and its rules compare lists with lists (each pod set assignment named
among the pod sets, each reclaimable pod set listed in the message of a mismatch): a 700 KB review of a
Workload with 3,000 pod sets, assignments and reclaimable pods took 13 seconds and wrote a 78 MB denial. So
the rules run only on objects within these bounds; beyond them the denial is kube-apiserver's own ``Too
many`` error and nothing else (the API server leaves its other rules unchecked then too).

The bounds are Kueue's ``+kubebuilder:validation:MaxItems`` markers (apis/kueue/v1beta2/*_types.go) for the
lists our rules read; ``[]`` in a path means every item of the list before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_webhook.api.errors import FieldError

__all__ = ["LIST_BOUNDS", "list_bound_errors"]

_RESOURCE_GROUPS = (
    ("spec.resourceGroups", 16),
    ("spec.resourceGroups[].coveredResources", 64),
    ("spec.resourceGroups[].flavors", 64),
    ("spec.resourceGroups[].flavors[].resources", 64),
)
_USAGE = (
    ("status.conditions", 16),
    ("status.flavorsReservation", 64),
    ("status.flavorsReservation[].resources", 64),
    ("status.flavorsUsage", 64),
    ("status.flavorsUsage[].resources", 64),
)
_ASSIGNMENTS = "status.admission.podSetAssignments"
_TOPOLOGY = f"{_ASSIGNMENTS}[].topologyAssignment"
LIST_BOUNDS: Mapping[str, tuple[tuple[str, int], ...]] = {
    "Workload": (
        ("spec.podSets", 18),
        ("spec.preemptionGates", 8),
        ("spec.podSets[].topologyRequest.podsetSliceRequiredTopologyConstraints", 3),
        (_ASSIGNMENTS, 18),
        (f"{_TOPOLOGY}.levels", 16),
        (f"{_TOPOLOGY}.slices", 1000),
        (f"{_TOPOLOGY}.slices[].valuesPerLevel", 16),
        (f"{_TOPOLOGY}.slices[].valuesPerLevel[].individual.roots", 100_000),
        (f"{_TOPOLOGY}.slices[].podCounts.individual", 100_000),
        ("status.conditions", 16),
        ("status.reclaimablePods", 18),
        ("status.admissionChecks", 8),
        ("status.admissionChecks[].podSetUpdates", 18),
        ("status.admissionChecks[].podSetUpdates[].tolerations", 8),
        ("status.resourceRequests", 18),
        ("status.nominatedClusterNames", 20),
        ("status.unhealthyNodes", 8),
        ("status.preemptionGates", 8),
        ("status.schedulingStats.evictions", 256),
    ),
    "ClusterQueue": (
        *_RESOURCE_GROUPS,
        ("spec.admissionChecksStrategy.admissionChecks", 64),
        ("spec.admissionChecksStrategy.admissionChecks[].onFlavors", 64),
        *_USAGE,
    ),
    "Cohort": _RESOURCE_GROUPS,
    "LocalQueue": _USAGE,
    "ResourceFlavor": (("spec.nodeTaints", 8), ("spec.tolerations", 8)),
}


def list_bound_errors(kind: str, obj: Mapping[str, Any]) -> list[FieldError]:
    """kube-apiserver's ``Too many`` error for each list of ``obj`` longer than its CRD allows."""
    errors: list[FieldError] = []
    for path, limit in LIST_BOUNDS.get(kind, ()):
        for where, value in _at(obj, path.split("."), ""):
            if isinstance(value, list) and len(value) > limit:
                errors.append(FieldError.too_many(where, len(value), limit))
    return errors


def _at(node: Any, steps: list[str], where: str) -> list[tuple[str, Any]]:
    """The values at ``steps`` below ``node`` with their paths (every item, where a step ends in ``[]``)."""
    if not steps:
        return [(where, node)]
    step, rest = steps[0], steps[1:]
    each = step.endswith("[]")
    key = step[:-2] if each else step
    value = node.get(key) if isinstance(node, Mapping) else None
    here = f"{where}.{key}" if where else key
    if not each:
        return [] if value is None else _at(value, rest, here)
    if not isinstance(value, list) or len(value) > _LIMIT_OF_ANY_LIST:
        return []  # not a list, or one that is refused by its own bound before its items are read
    found: list[tuple[str, Any]] = []
    for index, item in enumerate(value):
        found.extend(_at(item, rest, f"{here}[{index}]"))
    return found


#: lists longer than the longest bound are refused as a whole; their items are not walked
_LIMIT_OF_ANY_LIST = 1000
