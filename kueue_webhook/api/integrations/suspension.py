"""How a kind is held back until admitted and let go once admitted: a suspend field, or a scheduling gate.

Kueue asks each kind ``IsSuspended``, ``Suspend`` and (in ``RunWithPodSetsInfo``) to resume. Almost every kind
has a boolean suspend field (``spec.suspend``, ``spec.runPolicy.suspend``): set on create, cleared to
start, set again to stop. A pod has none: it is created with Kueue's scheduling gate, started by removing
the gate, and, as a gate can never be added back to a pod that exists, stopped by deletion, its own
finalizer keeping it until its end has been seen (Kueue's pod integration). ``suspension_of`` says which
an integration has; the engine (``kueue_webhook.api.integrations.engine``) builds every patch through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kueue_webhook.api.integrations.model import Integration, SchedulingGate
from kueue_webhook.api.integrations.paths import FieldPath, pointer

__all__ = ["FieldSuspension", "GateSuspension", "Suspension", "set_ops", "suspension_of"]

JSON = dict[str, Any]


def set_ops(obj: Mapping[str, Any], path: FieldPath, value: Any, *, op: str = "add") -> list[JSON]:
    """JSON Patch setting ``path`` to ``value`` (``op`` when the field is there), creating the missing
    parents as one nested object."""
    current: Any = obj
    for depth, segment in enumerate(path[:-1]):
        child = current.get(segment) if isinstance(current, Mapping) else None
        if not isinstance(child, Mapping):
            nested: Any = value
            for inner in reversed(path[depth + 1 :]):
                nested = {inner: nested}
            return [{"op": "add", "path": pointer(path[: depth + 1]), "value": nested}]
        current = child
    exists = isinstance(current, Mapping) and path[-1] in current
    return [{"op": op if exists else "add", "path": path.pointer(), "value": value}]


class Suspension(Protocol):
    """What a kind's hold on its objects can do."""

    @property
    def stops_by_deletion(self) -> bool:
        """A started object cannot be held again, only deleted (Kueue's ``Pod.Stop``)."""

    @property
    def finalizer(self) -> str:
        """The finalizer a queued object carries until its end is seen, "" for none."""

    def is_set(self, obj: Mapping[str, Any]) -> bool:
        """The object is held, as written (a staged stop's mark aside)."""

    def set_ops(self, obj: Mapping[str, Any], *, op: str) -> list[JSON]:
        """JSON Patch holding the object (``op`` for a field already there)."""

    def release_ops(self, obj: Mapping[str, Any]) -> list[JSON]:
        """JSON Patch letting the object go, first testing that it is still held; [] when it is not."""


@dataclass(frozen=True, slots=True)
class FieldSuspension:
    """A boolean suspend field."""

    path: FieldPath

    @property
    def stops_by_deletion(self) -> bool:
        return False

    @property
    def finalizer(self) -> str:
        return ""

    def is_set(self, obj: Mapping[str, Any]) -> bool:
        return self.path.get(obj) is True

    def set_ops(self, obj: Mapping[str, Any], *, op: str) -> list[JSON]:
        return set_ops(obj, self.path, True, op=op)

    def release_ops(self, obj: Mapping[str, Any]) -> list[JSON]:
        where = self.path.pointer()
        return [
            {"op": "test", "path": where, "value": True},
            {"op": "replace", "path": where, "value": False},
        ]


@dataclass(frozen=True, slots=True)
class GateSuspension:
    """A scheduling gate in the list at ``path`` (the API server accepts a new gate on create only)."""

    path: FieldPath
    gate: SchedulingGate

    @property
    def stops_by_deletion(self) -> bool:
        return True

    @property
    def finalizer(self) -> str:
        return self.gate.finalizer

    def _index(self, obj: Mapping[str, Any]) -> int | None:
        gates = self.path.get(obj)
        if not isinstance(gates, list):
            return None
        for index, gate in enumerate(gates):
            if isinstance(gate, Mapping) and gate.get("name") == self.gate.name:
                return index
        return None

    def is_set(self, obj: Mapping[str, Any]) -> bool:
        return self._index(obj) is not None

    def set_ops(self, obj: Mapping[str, Any], *, op: str) -> list[JSON]:
        del op  # a gate is added to the list, never replaced
        if self.is_set(obj):
            return []
        entry = {"name": self.gate.name}
        if isinstance(self.path.get(obj), list):
            return [{"op": "add", "path": self.path.pointer() + "/-", "value": entry}]
        return set_ops(obj, self.path, [entry])

    def release_ops(self, obj: Mapping[str, Any]) -> list[JSON]:
        index = self._index(obj)
        if index is None:
            return []
        where = pointer((*self.path, index))
        return [
            {"op": "test", "path": where, "value": {"name": self.gate.name}},
            {"op": "remove", "path": where},
        ]


def suspension_of(integration: Integration) -> Suspension:
    """The integration's hold: its scheduling gate (``suspend`` then names the gates' list), or its
    suspend field."""
    if integration.gate is not None:
        return GateSuspension(integration.suspend, integration.gate)
    return FieldSuspension(integration.suspend)
