"""Whom an admitted object is queued through, as every admission rule reads it.

``kueue_webhook.api.integrations.owners`` walks up the object's controller references through the view. On
top,
an object that already has a Workload of its own is queued on its own whatever its ownerReferences say now,
as the controller keeps it (``kueue_webhook.control.jobs.own_objects``): a Job queued on its own whose owner
became queued later (it got a queue label) is not left to that owner by the webhook either, so the
anti-bypass rules keep guarding it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_webhook.admission.review import AdmissionRequest
from kueue_webhook.admission.view import ClusterView
from kueue_webhook.api.config import Configuration
from kueue_webhook.api.integrations import Integration, engine
from kueue_webhook.api.integrations.managed import ON_ITS_OWN, ancestry_of
from kueue_webhook.api.integrations.owners import Ancestry, controller_reference

__all__ = ["ancestry", "reparented"]


def ancestry(
    obj: Mapping[str, Any] | None,
    integration: Integration,
    request: AdmissionRequest,
    config: Configuration,
    view: ClusterView,
    *,
    sticky: bool = True,
) -> Ancestry:
    """The object's ancestry under ``config``, read through ``view``, in the request's namespace;
    ``sticky=False``: what its ownerReferences claim alone, even if it has a Workload of its own."""
    obj = obj or {}
    if controller_reference(obj) is None:
        return ON_ITS_OWN
    meta = obj.get("metadata")
    if sticky and isinstance(meta, Mapping) and meta.get("uid"):
        own = engine.workload_name(
            str(meta.get("name") or ""), str(meta["uid"]), kind=integration.kind, group=integration.group
        )
        if view.workload(request.namespace, own) is not None:
            return ON_ITS_OWN
    return ancestry_of(obj, integration, config=config, lookup=view, namespace=request.namespace)


def reparented(
    request: AdmissionRequest, integration: Integration, config: Configuration, view: ClusterView
) -> bool:
    """Whether an UPDATE changes the object's controller reference to a real queued owner (an edit that
    would leave a queued object to somebody else, had it no Workload of its own yet)."""
    new, old = request.object or {}, request.old_object or {}
    if controller_reference(new) == controller_reference(old):
        return False
    return ancestry(new, integration, request, config, view, sticky=False).through_owner
