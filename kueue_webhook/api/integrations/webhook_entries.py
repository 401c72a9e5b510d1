"""The webhook entries that make kube-apiserver send a declared kind's objects to us.

The API server calls a webhook only for the resources its configuration's rules list, and a kind declared in
the ConfigMap is not in the shipped manifests. So the leader keeps one extra entry in each of our two webhook
configurations, ``mdeclared``/``vdeclared``, listing every declared kind (and no entry when none is
declared). The entry is a copy of the shipped integrations entry (``mintegrations``/``vintegrations``: same
``clientConfig``, so the same Service or URL, caBundle, namespace selector and failure policy) with only the
name and rules replaced: whatever the admin set up for the built-in kinds holds for declared ones, and
``certs --patch-webhook-configurations`` keeps its caBundle current with the others. An entry of its own,
rather than rules added to the shipped one, leaves ``kubectl apply`` of the manifests and our writes apart.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kueue_webhook.api.integrations.model import Integration

__all__ = ["ENTRIES", "declared_rules", "with_declared_entry"]

JSON = dict[str, Any]

#: (configuration kind, the entry kept for declared kinds, the shipped entry it copies)
ENTRIES: tuple[tuple[str, str, str], ...] = (
    ("mutating", "mdeclared.kueue.x-k8s.io", "mintegrations.kueue.x-k8s.io"),
    ("validating", "vdeclared.kueue.x-k8s.io", "vintegrations.kueue.x-k8s.io"),
)


def declared_rules(integrations: Iterable[Integration]) -> list[JSON]:
    """One rule per declared kind (CREATE and UPDATE of its resource, as for the built-in kinds), sorted so
    the same declarations always give the same entry."""
    kinds = sorted({(i.group, i.version, i.plural) for i in integrations if i.declared})
    return [
        {
            "apiGroups": [group],
            "apiVersions": [version],
            "operations": ["CREATE", "UPDATE"],
            "resources": [plural],
            "scope": "Namespaced",
        }
        for group, version, plural in kinds
    ]


def with_declared_entry(
    webhooks: Sequence[Mapping[str, Any]], *, entry: str, template: str, rules: Sequence[Mapping[str, Any]]
) -> list[JSON] | str | None:
    """The configuration's ``webhooks`` with the ``entry`` for declared kinds as ``rules`` want it: None when
    they already are, or why it cannot be built (no ``template`` entry to copy)."""
    current = [dict(hook) for hook in webhooks]
    index = next((i for i, hook in enumerate(current) if hook.get("name") == entry), None)
    if not rules:
        if index is None:
            return None
        del current[index]
        return current
    base = next((hook for hook in current if hook.get("name") == template), None)
    if base is None:
        return f"no webhook entry {template} to copy the client configuration of {entry} from"
    wanted: JSON = copy.deepcopy(base)
    wanted["name"] = entry
    wanted["rules"] = [dict(rule) for rule in rules]
    if index is not None:
        if current[index] == wanted:
            return None
        current[index] = wanted
    else:
        current.insert(current.index(base) + 1, wanted)
    return current
