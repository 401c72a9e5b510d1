"""Kueue's ``kueue.x-k8s.io/resource-in-use`` finalizer: a deleted Workload keeps its quota until let go.

Without it, deleting the Workload of a running Job frees its quota at once, and the next Workload in line
is admitted while the first Job's pods still run. Kueue therefore creates every Job's Workload with this
finalizer (``jobframework.NewWorkload``): a DELETE only sets ``deletionTimestamp``, the Workload stays and
its reservation stays counted, and the controller removes the finalizer once nothing uses the quota any
more (``workload.RemoveFinalizer``). These helpers are pure; the controller decides when.

The removal is a JSON Patch whose ``test`` op pins our entry at its index, so a concurrent change to the
list (another controller adding or dropping its own finalizer) fails the patch instead of being clobbered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["RESOURCE_IN_USE", "finalizer_removal_patch", "has_finalizer", "is_deleting"]

#: apis/kueue/v1beta2/constants.go ``ResourceInUseFinalizerName``
RESOURCE_IN_USE = "kueue.x-k8s.io/resource-in-use"


def _metadata(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    meta = (obj or {}).get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def is_deleting(obj: Mapping[str, Any] | None) -> bool:
    """A DELETE was accepted and the object stays until its finalizers are removed
    (``metadata.deletionTimestamp`` is set)."""
    return bool(_metadata(obj).get("deletionTimestamp"))


def has_finalizer(obj: Mapping[str, Any] | None, name: str = RESOURCE_IN_USE) -> bool:
    finalizers = _metadata(obj).get("finalizers")
    return isinstance(finalizers, list) and name in finalizers


def finalizer_removal_patch(
    obj: Mapping[str, Any], name: str = RESOURCE_IN_USE
) -> list[dict[str, Any]] | None:
    """The JSON Patch taking ``name`` off ``obj``'s finalizers as this copy shows them; None if absent."""
    finalizers = _metadata(obj).get("finalizers")
    if not isinstance(finalizers, list) or name not in finalizers:
        return None
    path = f"/metadata/finalizers/{finalizers.index(name)}"
    return [{"op": "test", "path": path, "value": name}, {"op": "remove", "path": path}]
