"""The ownerReference that makes an object the controller of a Workload, written one way everywhere.

Kueue writes it on every Workload it makes or adopts (``controller: true``, ``blockOwnerDeletion: true``):
the garbage collector then deletes the Workload with its job, and a foreground deletion of the job waits for
the Workload's finalizer, so its quota stays counted until the pods are gone.
"""

from __future__ import annotations

from typing import Any


def controller_owner_reference(api_version: str, kind: str, name: Any, uid: Any) -> dict[str, Any]:
    """The ownerReference making ``name`` (of that kind) an object's controller, blocking its owner's
    foreground deletion, as Kueue writes it on the Workloads it makes or adopts."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
