"""The integrations a configuration turns on, and the questions every caller asks of them.

``Integrations`` is what ``Configuration.integrations`` holds: the enabled entries (built-in ones named in
``integrations.frameworks`` and every declared one) plus Kueue's ``externalFrameworks``. The webhook asks it
which entry an admission request is for, the controller which kinds to watch, and both whether an object is
queued through its owner (Kueue's ``IsOwnerManagedByKueue``), so that they never disagree.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from webhook.api.integrations.builtin import BUILTIN, DEFAULT_FRAMEWORKS, QUEUED_OWNER_KINDS
from webhook.api.integrations.engine import controller_kind
from webhook.api.integrations.model import Integration

__all__ = ["Integrations"]


@dataclass(frozen=True, slots=True)
class Integrations:
    """Enabled integrations, in the order they were listed; ``external`` are Kueue's externalFrameworks
    (``Kind.version.group``: objects their controllers queue, whose children are therefore not queued)."""

    enabled: tuple[Integration, ...] = field(
        default_factory=lambda: tuple(BUILTIN[n] for n in DEFAULT_FRAMEWORKS)
    )
    external: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[Integration]:
        return iter(self.enabled)

    def names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.enabled)

    def for_kind(self, group: str, kind: str) -> Integration | None:
        """The enabled integration of ``group``/``kind``, None when that kind is not queued here."""
        for integration in self.enabled:
            if integration.group == group and integration.kind == kind:
                return integration
        return None

    def for_object(self, obj: Mapping[str, Any]) -> Integration | None:
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        for integration in self.enabled:
            if integration.matches(api_version, kind):
                return integration
        return None

    def owner_kinds(self) -> frozenset[str]:
        """Kinds whose children are queued through them: Kueue's integrated kinds, every enabled one and the
        external frameworks."""
        external = {entry.split(".", 1)[0] for entry in self.external}
        queued = {i.kind for i in self.enabled if not i.through_pods}
        return QUEUED_OWNER_KINDS | queued | external

    def queued_through_owner(self, obj: Mapping[str, Any]) -> bool:
        """Whether the object's controller is a kind that is queued instead of it (a Job of a JobSet, the
        RayCluster of a RayJob): such an object is neither suspended nor given a Workload of its own."""
        kind = controller_kind(obj)
        return kind is not None and kind in self.owner_kinds()
