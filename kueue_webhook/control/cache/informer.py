"""List+watch informers: keep the store equal to the cluster through disconnects and compaction.

The protocol is client-go's reflector in miniature. List once (the store is replaced, so objects deleted
while we were away disappear), then watch from the list's resourceVersion with bookmarks on. Every event and
bookmark advances the remembered resourceVersion, so a watch that ends (server timeout, dropped connection)
resumes where it stopped without a relist. Only a 410 Expired (our version fell out of the watch cache) forces
a relist. Errors back off exponentially with jitter; a successful event resets the backoff.
``synced`` is set after the first complete list so the scheduling task can wait for a full view.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any, Protocol

from kueue_webhook.control.kube.backoff import Backoff
from kueue_webhook.control.kube.client import ApiError
from kueue_webhook.control.kube.kinds import Kind

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.informer")


class ListWatchClient(Protocol):
    """The two verbs an informer needs (``KubeClient`` provides them; tests may fake them)."""

    def list_pages(
        self, kind: Kind, *, namespace: str | None = ..., field_selector: str = ..., label_selector: str = ...
    ) -> AsyncIterator[tuple[list[JSON], str]]: ...

    def watch(
        self,
        kind: Kind,
        *,
        resource_version: str,
        namespace: str | None = ...,
        field_selector: str = ...,
        timeout_seconds: int = ...,
        label_selector: str = ...,
    ) -> AsyncIterator[JSON]: ...


class Sink(Protocol):
    """Where an informer delivers objects (the ``Store``)."""

    def retain_only(self, kind: Kind, keys: set[tuple[str, str]]) -> None: ...

    def upsert(self, kind: Kind, obj: JSON) -> bool: ...

    def remove(self, kind: Kind, obj: JSON) -> bool: ...

    def mark_synced(self, kind: Kind) -> None: ...


class Informer:
    """Mirror one kind (optionally one namespace / field or label selector) into a sink until cancelled."""

    def __init__(
        self,
        *,
        client: ListWatchClient,
        kind: Kind,
        sink: Sink,
        namespace: str | None = None,
        field_selector: str = "",
        label_selector: str = "",
        backoff: Backoff | None = None,
        watch_timeout_seconds: int = 290,
        cluster: str = "",
    ) -> None:
        self.client = client
        #: logged with every message when set: which cluster's API server this informer reads (a worker's)
        self._where = {"cluster": cluster} if cluster else {}
        self.kind = kind
        self.sink = sink
        self.namespace = namespace
        self.field_selector = field_selector
        self.label_selector = label_selector
        self.backoff = backoff or Backoff()
        self.watch_timeout_seconds = watch_timeout_seconds
        self.synced = asyncio.Event()
        self.resource_version = ""
        self.relists = 0
        self.watches = 0
        self._said_missing = False

    async def run(self) -> None:
        while True:
            try:
                if not self.resource_version:
                    await self._list()
                await self._watch()
            except asyncio.CancelledError:
                raise
            except ApiError as exc:
                if exc.status == 410:
                    log.info(
                        "watch expired, relisting",
                        extra={"kind": self.kind.kind, "error": exc.message, **self._where},
                    )
                    self.resource_version = ""
                    continue  # relist at once: nothing is wrong with the server
                await self._pause(exc)
            except Exception as exc:  # connection resets, timeouts, malformed lines: retry with backoff
                await self._pause(exc)

    async def _pause(self, exc: BaseException) -> None:
        delay = self.backoff.next_delay()
        if isinstance(exc, ApiError) and exc.status == 404:
            # a kind whose CRD is not installed (yet): said once, looked for again with the backoff (30 s
            # at most), so installing the CRD later is picked up without a restart
            if not self._said_missing:
                self._said_missing = True
                log.info(
                    "kind not served by the API server (is its CRD installed?); looking again later",
                    extra={"kind": self.kind.kind, "resource": self.kind.path(), **self._where},
                )
            await asyncio.sleep(delay)
            return
        log.warning(
            "informer error, retrying",
            extra={
                "kind": self.kind.kind,
                "error": repr(exc),
                "retry_in_seconds": round(delay, 3),
                **self._where,
            },
        )
        await asyncio.sleep(delay)

    async def _list(self) -> None:
        """Upsert page by page (memory stays flat however large the list), then drop what was not listed."""
        seen: set[tuple[str, str]] = set()
        version = ""
        async for page, page_version in self.client.list_pages(
            self.kind,
            namespace=self.namespace,
            field_selector=self.field_selector,
            label_selector=self.label_selector,
        ):
            version = page_version
            for obj in page:
                meta = obj.get("metadata") or {}
                seen.add((meta.get("namespace") or "", meta.get("name") or ""))
                self.sink.upsert(self.kind, obj)
        self.relists += 1
        if self._said_missing:
            log.info("kind now served: watching it", extra={"kind": self.kind.kind, **self._where})
            self._said_missing = False
        self.sink.retain_only(self.kind, seen)
        self.resource_version = version
        self.sink.mark_synced(self.kind)
        self.synced.set()
        self.backoff.reset()

    async def _watch(self) -> None:
        self.watches += 1
        stream = self.client.watch(
            self.kind,
            resource_version=self.resource_version,
            namespace=self.namespace,
            field_selector=self.field_selector,
            timeout_seconds=self.watch_timeout_seconds,
            **({"label_selector": self.label_selector} if self.label_selector else {}),
        )
        async for event in stream:
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind in ("ADDED", "MODIFIED"):
                obj.setdefault("kind", self.kind.kind)
                obj.setdefault("apiVersion", self.kind.api_version)
                self.sink.upsert(self.kind, obj)
            elif kind == "DELETED":
                self.sink.remove(self.kind, obj)
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if version:
                self.resource_version = str(version)
            self.backoff.reset()
