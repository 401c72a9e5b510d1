"""The integrations a configuration turns on, and the questions every caller asks of them.

``Integrations`` is what ``Configuration.integrations`` holds: the enabled entries (built-in ones named in
``integrations.frameworks`` and every declared one) plus Kueue's ``externalFrameworks``. The webhook asks it
which entry an admission request is for, the controller which kinds to watch, and both which owners count
(Kueue's ``isKnownOwner`` and ``getJobTypeForOwner``; the walk itself is
``kueue_webhook.api.integrations.owners``),
so that they never disagree.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kueue_webhook.api.integrations.builtin import BUILTIN, DEFAULT_FRAMEWORKS, KUEUE_OWNER_TYPES
from kueue_webhook.api.integrations.model import Integration

__all__ = ["Integrations"]


@dataclass(frozen=True, slots=True)
class Integrations:
    """Enabled integrations, in the order they were listed; ``external`` are Kueue's externalFrameworks
    (``Kind.version.group``: objects their controllers queue, whose children are therefore not queued)."""

    enabled: tuple[Integration, ...] = field(
        default_factory=lambda: tuple(BUILTIN[n] for n in DEFAULT_FRAMEWORKS)
    )
    external: tuple[str, ...] = ()
    #: Kueue's ``labelKeysToCopy``: the labels of a queued object copied to its Workload when it is made
    label_keys_to_copy: tuple[str, ...] = ()

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

    def _external_types(self) -> frozenset[tuple[str, str]]:
        """``(apiVersion, kind)`` of the external frameworks (``Kind.version.group``)."""
        out = set()
        for entry in self.external:
            kind, version, group = (*entry.split(".", 2), "", "")[:3]
            out.add((f"{group}/{version}", kind))
        return frozenset(out)

    def managing_owner(self, api_version: str, kind: str) -> bool:
        """Whether an owner of ``api_version``/``kind`` is queued instead of the objects it controls (Kueue's
        ``getJobTypeForOwner``): an enabled integration, the version included as Kueue compares it, or an
        external framework. A Deployment or StatefulSet is not: its pods are queued themselves."""
        if (api_version, kind) in self._external_types():
            return True
        return any(
            i.api_version == api_version and i.kind == kind and not i.through_pods for i in self.enabled
        )

    def known_owner(self, api_version: str, kind: str) -> bool:
        """Whether the walk up to a queued owner goes on through an owner of ``api_version``/``kind``
        (Kueue's ``isKnownOwner``): every kind Kueue integrates, enabled or not, the external frameworks,
        the declared kinds and ReplicaSets (between a Deployment and its pods)."""
        if (api_version, kind) in KUEUE_OWNER_TYPES or self.managing_owner(api_version, kind):
            return True
        return any(
            i.api_version == api_version and i.kind == kind for i in (*BUILTIN.values(), *self.enabled)
        )
