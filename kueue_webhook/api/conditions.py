"""An object's status conditions as the API serves them (JSON), read without parsing the object.

The scheduler's writers, the Workload rules (quota reservation, PodsReady, blockAdmission) and the
pending-condition writes all ask the same two questions of a Workload in the store: which condition of a
type it shows, and whether that condition is True. They read it here, so a malformed entry (not a mapping)
is skipped the same way everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["condition_of", "is_true"]


def condition_of(obj: Mapping[str, Any] | None, kind: str) -> Mapping[str, Any] | None:
    """The first condition of type ``kind`` in ``status.conditions``; None when there is none. (Asked of
    every Workload change: JSON from the API is dicts, told apart by type before the slower Mapping check.)"""
    status = (obj or {}).get("status")
    if type(status) is not dict and not isinstance(status, Mapping):
        return None
    for condition in status.get("conditions") or []:
        if (type(condition) is dict or isinstance(condition, Mapping)) and condition.get("type") == kind:
            return condition
    return None


def is_true(obj: Mapping[str, Any] | None, kind: str) -> bool:
    """Whether the object shows a condition of type ``kind`` with status True."""
    condition = condition_of(obj, kind)
    return condition is not None and condition.get("status") == "True"
