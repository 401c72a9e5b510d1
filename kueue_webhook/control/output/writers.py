"""Writes to the API server: optimistic, preconditioned, retried on conflict, written through to the store.

Every status write is a JSON merge patch on the ``/status`` subresource that carries
``metadata.resourceVersion``: the API server applies it only to the version we decided from, and answers 409
otherwise. On 409 we fetch the current object and ask the caller's ``build`` function again, which may decide
that nothing is left to do (another replica or a user already wrote it) — so a conflict storm can delay a
write but never duplicate or lose one. The server's answer is put into the store at once, so the next
decision sees our own write even before its watch event arrives (the store ignores the echo); a write that
landed counts as landed even if that fails.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from kueue_webhook.api.finalizers import finalizer_removal_patch
from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.kube.client import ApiError
from kueue_webhook.control.kube.kinds import Kind
from kueue_webhook.control.kube.verbs import Creates, Deletes, Gets, Patches, PatchType
from kueue_webhook.control.output.metrics import Metrics

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.writers")
StatusBuilder = Callable[[JSON], JSON | None]


class WriteClient(Gets, Creates, Patches, Deletes, Protocol):
    """The verbs the Writer sends."""


def refused_fields(exc: ApiError) -> list[Any]:
    """The causes of a 422 Invalid (field errors); empty for a JSON Patch whose ``test`` failed."""
    causes = (exc.body.get("details") or {}).get("causes")
    return causes if isinstance(causes, list) else []


def denied_by_webhook(exc: ApiError) -> bool:
    """An admission webhook said no: kube-apiserver prefixes the webhook's message with this, whatever code
    the webhook chose (golden webhook-create-job-denied-response.json)."""
    return exc.message.startswith("admission webhook ")


def failed_test(exc: ApiError) -> bool:
    """A JSON Patch whose ``test`` op failed (422 without causes): the object changed under us."""
    return exc.status == 422 and not refused_fields(exc) and not denied_by_webhook(exc)


def _ident(obj: JSON) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("name", "")), str(meta.get("namespace") or "")


class Writer:
    """The controller's only path to mutate the cluster; every write is counted in a metric."""

    def __init__(self, *, client: WriteClient, store: Store, metrics: Metrics, attempts: int = 8) -> None:
        self.client = client
        self.store = store
        self.metrics = metrics
        self.attempts = attempts
        self.writes = 0

    def _count(self, kind: Kind, verb: str) -> None:
        self.writes += 1
        self.metrics.series(self.metrics.api_writes, kind.kind, verb).inc()

    def _remember(self, kind: Kind, obj: JSON) -> JSON:
        """The server's answer, made self-describing and put into the store at once.

        The write has landed whatever happens here: if the store cannot take the answer, that is logged
        and the answer still returned, so the caller counts what the API server accepted (an admission
        is not rolled back and decided again); the watch event brings the object into the store later.
        """
        obj.setdefault("kind", kind.kind)
        obj.setdefault("apiVersion", kind.api_version)
        try:
            self.store.upsert(kind, obj)
        except Exception as exc:
            name, namespace = _ident(obj)
            log.error(
                "write landed but its answer could not be stored; the watch will bring it",
                exc_info=exc,
                extra={"kind": kind.kind, "object": f"{namespace}/{name}".strip("/"), "error": repr(exc)},
            )
        return obj

    async def create(self, kind: Kind, body: JSON) -> JSON | None:
        """Create; an existing object of that name (409 AlreadyExists) is success, answered with None."""
        _, namespace = _ident(body)
        self._count(kind, "create")
        try:
            created = await self.client.create(kind, body, namespace=namespace or None)
        except ApiError as exc:
            if exc.status == 409 and exc.reason == "AlreadyExists":
                return None
            raise
        return self._remember(kind, created)

    async def patch_status(self, kind: Kind, obj: JSON, build: StatusBuilder) -> JSON | None:
        """Merge-patch ``status`` as ``build(current)`` says, preconditioned on resourceVersion.

        Returns the updated object, or None when ``build`` found nothing to do or the object is gone.
        """

        def status_patch(current: JSON) -> JSON | None:
            status = build(current)
            if status is None:
                return None
            version = (current.get("metadata") or {}).get("resourceVersion")
            return {"metadata": {"resourceVersion": version}, "status": status}

        return await self._patch_fresh(
            kind,
            obj,
            status_patch,
            verb="patch-status",
            patch_type="merge",
            subresource="status",
            stale=lambda exc: exc.status == 409,
        )

    async def patch(
        self, kind: Kind, obj: JSON, patch: Any, *, patch_type: PatchType = "json"
    ) -> JSON | None:
        """Patch the main resource; a failed JSON Patch ``test`` (422) or a missing object answers None.

        A conflict (409) is raised: the caller's retry decides again from the current state. So is a 422
        that names the fields at fault (``details.causes``) or comes from an admission webhook: the API
        server refused the patched object itself, and the caller must say so.
        """
        name, namespace = _ident(obj)
        self._count(kind, "patch")
        try:
            updated = await self.client.patch(
                kind, name=name, namespace=namespace or None, patch=patch, patch_type=patch_type
            )
        except ApiError as exc:
            if exc.status == 404 or failed_test(exc):
                log.info("patch skipped", extra={"kind": kind.kind, "object": name, "error": exc.message})
                return None
            raise
        return self._remember(kind, updated)

    async def remove_finalizer(self, kind: Kind, obj: JSON, name: str) -> JSON | None:
        """Take finalizer ``name`` off ``obj`` and nothing else (a JSON Patch that ``test``s our entry).

        A failed ``test`` (someone changed the list meanwhile) or a conflict fetches the object and tries
        again on what it shows now. Returns the API server's answer (for the last finalizer of an object
        being deleted, the object as it was just before it went), or None when the finalizer or the object
        is already gone.
        """
        return await self._patch_fresh(
            kind,
            obj,
            lambda current: finalizer_removal_patch(current, name),
            verb="patch",
            patch_type="json",
            subresource="",
            stale=lambda exc: exc.status == 409 or (exc.status == 422 and not refused_fields(exc)),
        )

    async def _patch_fresh(
        self,
        kind: Kind,
        obj: JSON,
        make_patch: Callable[[JSON], Any],
        *,
        verb: str,
        patch_type: PatchType,
        subresource: str,
        stale: Callable[[ApiError], bool],
    ) -> JSON | None:
        """Send ``make_patch(current)``; when the server says ``current`` was ``stale``, fetch the object
        and ask again, up to ``attempts`` times. None when there is nothing to patch or the object is gone."""
        current = obj
        for _ in range(self.attempts):
            patch = make_patch(current)
            if patch is None:
                return None
            name, namespace = _ident(current)
            self._count(kind, verb)
            try:
                updated = await self.client.patch(
                    kind,
                    name=name,
                    namespace=namespace or None,
                    patch=patch,
                    patch_type=patch_type,
                    subresource=subresource,
                )
            except ApiError as exc:
                if exc.status == 404:
                    return None
                if not stale(exc):
                    raise
                fetched = await self._get(kind, name, namespace)
                if fetched is None:
                    return None
                current = fetched
                continue
            return self._remember(kind, updated)
        raise ApiError(status=409, reason="Conflict", message=f"gave up after {self.attempts} conflicts")

    async def _get(self, kind: Kind, name: str, namespace: str) -> JSON | None:
        """The object as the server has it now (into the store too), or None when it is gone."""
        try:
            fetched = await self.client.get(kind, name=name, namespace=namespace or None)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        return self._remember(kind, fetched)

    async def delete(self, kind: Kind, obj: JSON, *, propagation: str | None = None) -> bool:
        name, namespace = _ident(obj)
        self._count(kind, "delete")
        try:
            await self.client.delete(kind, name=name, namespace=namespace or None, propagation=propagation)
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True
