"""The leader keeps our webhook configurations listing the kinds declared in the ConfigMap
(``kueue_webhook.api.integrations.webhook_entries``), so a newly declared kind is suspended on create without
anyone editing a webhook configuration, and a removed one is no longer sent to us.

It writes when leadership starts, after every configuration change, and every few minutes (to repair an
entry someone removed, say by replacing the configuration); each write is a JSON Patch guarded by the
resourceVersion it was computed from, retried on a conflict. The RBAC it needs is narrow: get and patch of
our two configurations by name. A missing configuration or permission is logged, never fatal: the admin
may prefer to add the rule by hand.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import aiohttp

from kueue_webhook.api.integrations.registry import Integrations
from kueue_webhook.api.integrations.webhook_entries import ENTRIES, declared_rules, with_declared_entry
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import MUTATING_WEBHOOKS, VALIDATING_WEBHOOKS, Kind
from kueue_webhook.control.kube.leader import NotLeader
from kueue_webhook.runtime import wait_until_set

__all__ = ["DEFAULT_NAMES", "DeclaredWebhooks"]

log = logging.getLogger("kueue_webhook.declared_webhooks")

#: the shipped configurations' names (``manifests/controller``)
DEFAULT_NAMES = {"mutating": "kueue-webhook-mutating", "validating": "kueue-webhook-validating"}
_KINDS = {"mutating": MUTATING_WEBHOOKS, "validating": VALIDATING_WEBHOOKS}
_ATTEMPTS = 5
RESYNC_SECONDS = 300.0


class DeclaredWebhooks:
    """Keeps the declared kinds' webhook entries current while this replica leads."""

    def __init__(
        self,
        client: KubeClient,
        integrations: Callable[[], Integrations],
        *,
        names: dict[str, str] | None = None,
        resync_seconds: float = RESYNC_SECONDS,
    ) -> None:
        self.client = client
        self.integrations = integrations
        self.names = names or DEFAULT_NAMES
        self.resync_seconds = resync_seconds
        self._wanted = asyncio.Event()

    def request(self) -> None:
        """Ask for a sync (the configuration changed, or leadership started)."""
        self._wanted.set()

    async def run(self) -> None:
        while True:
            self._wanted.clear()
            try:
                await self.sync()
            except NotLeader:
                pass  # said once by the elector; a new term syncs again
            except (ApiError, aiohttp.ClientError, OSError, TimeoutError) as exc:  # unreachable: try later
                log.warning("declared kinds' webhook entries not synced", extra={"error": str(exc)})
            await wait_until_set(self._wanted, self.resync_seconds)

    async def sync(self) -> None:
        rules = declared_rules(self.integrations())
        for which, entry, template in ENTRIES:
            await self._sync_one(_KINDS[which], self.names[which], entry, template, rules)

    async def _sync_one(
        self, kind: Kind, name: str, entry: str, template: str, rules: list[dict[str, Any]]
    ) -> None:
        where = {"configuration": f"{kind.kind}/{name}", "entry": entry}
        for _ in range(_ATTEMPTS):
            try:
                current = await self.client.get(kind, name=name)
            except ApiError as exc:
                if rules or exc.status not in (403, 404):
                    log.warning(
                        "cannot read the webhook configuration: declared kinds are not sent to the webhook "
                        "until it exists and this controller may get and patch it",
                        extra={**where, "status": exc.status, "error": exc.message},
                    )
                return
            webhooks = current.get("webhooks") or []
            wanted = with_declared_entry(webhooks, entry=entry, template=template, rules=rules)
            if wanted is None:
                return
            if isinstance(wanted, str):
                log.warning("declared kinds are not sent to the webhook: " + wanted, extra=where)
                return
            patch = [
                {
                    "op": "test",
                    "path": "/metadata/resourceVersion",
                    "value": (current.get("metadata") or {}).get("resourceVersion"),
                },
                {"op": "add", "path": "/webhooks", "value": wanted},
            ]
            try:
                await self.client.patch(kind, name=name, patch=patch, patch_type="json")
            except ApiError as exc:
                if exc.status in (409, 422):
                    continue  # changed under us: compute again from the new version
                log.warning(
                    "cannot update the webhook configuration for declared kinds",
                    extra={**where, "status": exc.status, "error": exc.message},
                )
                return
            resources = [f"{r['resources'][0]}.{r['apiGroups'][0]}" for r in rules]
            log.info("webhook entry for declared kinds updated", extra={**where, "resources": resources})
            return
        log.warning("webhook configuration kept changing: declared kinds sync retried later", extra=where)
