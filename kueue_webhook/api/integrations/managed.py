"""Whether an object is queued here: the one rule the webhook (suspend on create, anti-bypass) and the
controller (a Workload per object) share, so the two can never disagree.

An object controlled by a queued owner is queued through it, not on its own; whether its owner is real and
queued is ``kueue_webhook.api.integrations.owners``'s walk, which reads the cluster, so callers compute the
:class:`Ancestry` (``ancestry_of``) with what they can read and pass it in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_webhook.api.config import Configuration
from kueue_webhook.api.integrations.engine import queue_name, skipped
from kueue_webhook.api.integrations.model import Integration
from kueue_webhook.api.integrations.owners import Ancestry, OwnerLookup, queued_ancestor
from kueue_webhook.api.integrations.statefulsets import SUSPENDING_PARENT_ANNOTATION

__all__ = ["ON_ITS_OWN", "ancestry_of", "is_managed"]

#: the ancestry of an object with no queued owner
ON_ITS_OWN = Ancestry()


def ancestry_of(
    obj: Mapping[str, Any],
    integration: Integration,
    *,
    config: Configuration,
    lookup: OwnerLookup,
    namespace: str | None = None,
) -> Ancestry:
    """``queued_ancestor`` for an object of ``integration`` under ``config``; a pod made from the template of
    a queued Deployment or StatefulSet is queued itself, with no walk (Kueue's pod webhook:
    ``SuspendedByParentAnnotation``)."""
    if integration.gate is not None:
        annotations = (obj.get("metadata") or {}).get("annotations")
        if isinstance(annotations, Mapping) and SUSPENDING_PARENT_ANNOTATION in annotations:
            return ON_ITS_OWN
    return queued_ancestor(
        obj,
        api_version=integration.api_version,
        kind=integration.kind,
        integrations=config.integrations,
        lookup=lookup,
        manage_jobs_without_queue_name=config.manage_jobs_without_queue_name,
        namespace=namespace,
    )


def is_managed(
    obj: Mapping[str, Any],
    integration: Integration,
    *,
    ancestry: Ancestry,
    config: Configuration | None = None,
    namespace_labels: Mapping[str, str] | None = None,
) -> bool:
    """Not when a real queued owner controls it (``ancestry``, Kueue's ``FindAncestorJobManagedByKueue``) or
    the kind skips it; yes when it names a queue; otherwise only with ``manageJobsWithoutQueueName`` in a
    managed namespace (without a ``config``, Kueue's default: false)."""
    if ancestry.through_owner or skipped(integration, obj):
        return False
    if queue_name(obj) is not None:
        return True
    return (
        config is not None
        and config.manage_jobs_without_queue_name
        and config.manages_namespace(namespace_labels or {})
    )
