"""Owners of kinds the store does not watch, looked up on the API server before the pure walk runs.

``kueue_webhook.api.integrations.owners`` walks up an object's controller references through a synchronous
lookup. The store answers for every kind it mirrors (each enabled integration's); an owner of another kind
Kueue knows (a ReplicaSet, a disabled JobSet, an external framework's AppWrapper) is fetched here with one
GET, its resource name found through discovery, under a short timeout. The walk is run, the owner it could
not resolve fetched, and the walk run again, until it needs nothing more (at most Kueue's depth limit of
fetches). A fetch that fails stays :class:`Unresolved`, and the walk then queues the object on its own.

The controller resolves this way before deciding whether an object gets a Workload; the webhook does at its
edge (``AdmissionOwners``), before the pure admission rules run on a view that answers with what was
fetched.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp

from kueue_webhook.admission.review import AdmissionRequest
from kueue_webhook.admission.view import ClusterView, namespace_labels_or_default
from kueue_webhook.api.config import Configuration
from kueue_webhook.api.integrations.engine import queue_name
from kueue_webhook.api.integrations.managed import ancestry_of
from kueue_webhook.api.integrations.model import Integration
from kueue_webhook.api.integrations.owners import (
    MAX_OWNER_DEPTH,
    Ancestry,
    OwnerAnswer,
    OwnerLookup,
    Unresolved,
    controller_reference,
)
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import Kind

__all__ = ["ADMISSION_BUDGET", "FETCH_TIMEOUT", "AdmissionOwners", "OwnerFetcher", "ResolvedOwners"]

log = logging.getLogger("kueue_webhook.owners")

#: seconds one owner GET (or the discovery of its resource name) may take
FETCH_TIMEOUT = 2.0
#: seconds the webhook may spend on owner lookups for one admission request
ADMISSION_BUDGET = 3.0

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
                if exc.status == 404:
                    return None  # not served (yet: not remembered, a CRD may be installed later)
                raise
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

    async def resolve(
        self,
        obj: Mapping[str, Any],
        integration: Integration,
        *,
        config: Configuration,
        owners: ResolvedOwners,
        namespace: str | None = None,
    ) -> Ancestry:
        """The object's ancestry, the owners ``owners`` cannot answer for fetched into it."""
        ancestry = ancestry_of(obj, integration, config=config, lookup=owners, namespace=namespace)
        for _ in range(MAX_OWNER_DEPTH + 1):
            if not owners.missing:
                break
            key = owners.missing[0]
            owners.fetched[key] = await self.fetch(key)
            owners.missing.clear()
            ancestry = ancestry_of(obj, integration, config=config, lookup=owners, namespace=namespace)
        owners.missing.clear()
        return ancestry

    async def ancestry(
        self, obj: Mapping[str, Any], integration: Integration, *, config: Configuration, store: OwnerLookup
    ) -> Ancestry:
        """The object's ancestry, owners the store does not hold fetched."""
        return await self.resolve(obj, integration, config=config, owners=ResolvedOwners(store))


class _ViewWithOwners:
    """A ClusterView answering owners from ``owners`` (the base view, then what was fetched)."""

    def __init__(self, base: ClusterView, owners: ResolvedOwners) -> None:
        self.base = base
        self.owners = owners

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self.base.namespace_labels(namespace)

    def local_queue_names(self, namespace: str) -> Sequence[str]:
        return self.base.local_queue_names(namespace)

    def workload(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.base.workload(namespace, name)

    def owner(self, namespace: str, api_version: str, kind: str, name: str) -> OwnerAnswer:
        return self.owners.owner(namespace, api_version, kind, name)

    def dispatches_to_workers(self, namespace: str, local_queue: str) -> bool:
        return self.base.dispatches_to_workers(namespace, local_queue)

    def has_workload_priority_class(self, name: str) -> bool:
        return self.base.has_workload_priority_class(name)


def _may_be_queued(
    objects: Sequence[Mapping[str, Any]], request: AdmissionRequest, config: Configuration, view: ClusterView
) -> bool:
    """Whether any rule's answer can depend on the owners: an object with a queue name, or one that may get
    (the default queue) or need (the label policy) one, or every object queued. For any other (a pod of a
    Deployment nobody queues) no API server round trip is spent."""
    if config.manage_jobs_without_queue_name or any(queue_name(obj) is not None for obj in objects):
        return True
    labels = namespace_labels_or_default(view, request.namespace)
    default_queue = config.label_policy.default_queue_for(request.namespace)
    enforced = config.label_policy.is_enforced(labels)
    return enforced or default_queue in view.local_queue_names(request.namespace)


class AdmissionOwners:
    """The webhook's edge: before the pure rules run on a request for a queued kind whose object (or old
    object) claims a controller, the owners the view does not hold are fetched, within ``budget`` seconds
    for the whole request (kube-apiserver waits 10 s by default for the answer). What could not be fetched
    in time stays unresolved, and the object is queued on its own."""

    def __init__(self, fetcher: OwnerFetcher, *, budget: float = ADMISSION_BUDGET) -> None:
        self.fetcher = fetcher
        self.budget = budget

    async def view_for(
        self, request: AdmissionRequest, config: Configuration, view: ClusterView
    ) -> ClusterView:
        integration = config.integrations.for_kind(request.kind.group, request.kind.kind)
        claiming = [
            obj
            for obj in (request.object, request.old_object)
            if obj is not None and controller_reference(obj) is not None
        ]
        if integration is None or not claiming or not _may_be_queued(claiming, request, config, view):
            return view
        owners = ResolvedOwners(view)
        try:
            async with asyncio.timeout(self.budget):
                for obj in claiming:
                    await self.fetcher.resolve(
                        obj, integration, config=config, owners=owners, namespace=request.namespace
                    )
        except TimeoutError:
            log.warning(
                "owner lookup took too long: unresolved owners queue the object on its own",
                extra={"kind": request.kind.kind, "namespace": request.namespace, "object": request.name},
            )
        except Exception:  # whatever failed, the owners not fetched stay unresolved: queued on its own
            log.exception(
                "owner lookup failed: unresolved owners queue the object on its own",
                extra={"kind": request.kind.kind, "namespace": request.namespace, "object": request.name},
            )
        return _ViewWithOwners(view, owners)
