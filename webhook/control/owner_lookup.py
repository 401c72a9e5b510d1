"""Owners of kinds the store does not watch, looked up on the API server before the pure walk runs.

``webhook.api.integrations.owners`` walks up an object's controller references through a synchronous
lookup. The store answers for every kind it mirrors (each enabled integration's); an owner of another kind
Kueue knows (a ReplicaSet, a disabled JobSet, an external framework's AppWrapper) is fetched here with one
GET, its resource name found through discovery, under a short timeout. The walk is run, the owner it could
not resolve fetched, and the walk run again, until it needs nothing more (at most Kueue's depth limit of
fetches). A fetch that fails stays :class:`Unresolved`, and the walk then queues the object on its own.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import aiohttp

from webhook.api.config import Configuration
from webhook.api.integrations.managed import ancestry_of
from webhook.api.integrations.model import Integration
from webhook.api.integrations.owners import MAX_OWNER_DEPTH, Ancestry, OwnerAnswer, OwnerLookup, Unresolved
from webhook.control.kinds import Kind
from webhook.control.kube import ApiError, KubeClient

__all__ = ["FETCH_TIMEOUT", "OwnerFetcher", "ResolvedOwners"]

log = logging.getLogger("kueue_webhook.owners")

#: seconds one owner GET (or the discovery of its resource name) may take
FETCH_TIMEOUT = 2.0

OwnerKey = tuple[str, str, str, str]  # namespace, apiVersion, kind, name


class ResolvedOwners:
    """A lookup answering from what was fetched, then from ``base`` (the store)."""

    def __init__(self, base: OwnerLookup) -> None:
        self.base = base
        self.fetched: dict[OwnerKey, OwnerAnswer] = {}
        self.missing: list[OwnerKey] = []

    def owner(self, namespace: str, api_version: str, kind: str, name: str) -> OwnerAnswer:
        key = (namespace, api_version, kind, name)
        if key in self.fetched:
            return self.fetched[key]
        answer = self.base.owner(namespace, api_version, kind, name)
        if isinstance(answer, Unresolved):
            self.missing.append(key)
        return answer


class OwnerFetcher:
    """Fetches owners from the API server, remembering each apiVersion's resource names (discovery)."""

    def __init__(self, client: KubeClient, *, timeout: float = FETCH_TIMEOUT) -> None:
        self.client = client
        self.timeout = timeout
        self._resources: dict[str, dict[str, str]] = {}  # apiVersion -> kind -> plural

    async def _plural(self, api_version: str, kind: str) -> str | None:
        """The resource name of ``kind`` in ``api_version``; None when the server does not serve it."""
        if api_version not in self._resources:
            path = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
            try:
                listing = await self.client.request("GET", path, timeout=self.timeout)
            except ApiError as exc:
                if exc.status != 404:
                    raise
                listing = {}
            self._resources[api_version] = {
                str(r.get("kind")): str(r.get("name"))
                for r in listing.get("resources") or []
                if isinstance(r, Mapping) and "/" not in str(r.get("name")) and r.get("namespaced")
            }
        return self._resources[api_version].get(kind)

    async def fetch(self, key: OwnerKey) -> OwnerAnswer:
        namespace, api_version, kind, name = key
        try:
            plural = await self._plural(api_version, kind)
            if plural is None:
                return None  # not served: no such object
            group, _, version = api_version.rpartition("/")
            resource = Kind(kind, group, version, plural, namespaced=True)
            obj: Mapping[str, Any] = await self.client.get(resource, name=name, namespace=namespace)
            return obj
        except ApiError as exc:
            if exc.status == 404:
                return None
            return Unresolved(f"the API server answered {exc.status} {exc.reason}: {exc.message}")
        except (TimeoutError, OSError, aiohttp.ClientError) as exc:
            return Unresolved(f"no answer from the API server ({type(exc).__name__})")

    async def ancestry(
        self,
        obj: Mapping[str, Any],
        integration: Integration,
        *,
        config: Configuration,
        store: OwnerLookup,
        namespace: str | None = None,
    ) -> tuple[Ancestry, ResolvedOwners]:
        """The object's ancestry, owners the store does not hold fetched; and the lookup it was read from
        (so that a rule run afterwards reads the same owners)."""
        lookup = ResolvedOwners(store)
        ancestry = ancestry_of(obj, integration, config=config, lookup=lookup, namespace=namespace)
        for _ in range(MAX_OWNER_DEPTH + 1):
            if not lookup.missing:
                break
            key = lookup.missing[0]
            lookup.fetched[key] = await self.fetch(key)
            lookup.missing.clear()
            ancestry = ancestry_of(obj, integration, config=config, lookup=lookup, namespace=namespace)
        return ancestry, lookup
