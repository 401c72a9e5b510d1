"""Whether an object is queued here: the one rule the webhook (suspend on create, anti-bypass) and the
controller (a Workload per object) share, so the two can never disagree."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.api.config import Configuration
from webhook.api.integrations.engine import queue_name, skipped
from webhook.api.integrations.model import Integration
from webhook.api.integrations.registry import Integrations

__all__ = ["is_managed"]

_DEFAULT = Integrations()


def is_managed(
    obj: Mapping[str, Any],
    integration: Integration,
    *,
    config: Configuration | None = None,
    namespace_labels: Mapping[str, str] | None = None,
) -> bool:
    """Not when a queued kind controls it (Kueue's ``IsOwnerManagedByKueue``) or the kind skips it; yes when
    it names a queue; otherwise only with ``manageJobsWithoutQueueName`` in a managed namespace (without a
    ``config``, Kueue's default: false)."""
    integrations = config.integrations if config is not None else _DEFAULT
    if integrations.queued_through_owner(obj) or skipped(integration, obj):
        return False
    if queue_name(obj) is not None:
        return True
    return (
        config is not None
        and config.manage_jobs_without_queue_name
        and config.manages_namespace(namespace_labels or {})
    )
