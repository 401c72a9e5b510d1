"""A thin JSON client for the Kubernetes API: plain dicts on the wire, no generated models.

Connection settings come from ``kueue_webhook.control.kube.connection`` (kubeconfig or service account, in
client-go's
order, with the cluster's ``proxy-url`` and ``tls-server-name`` applied to every request). Generated typed
models are not used: they drop fields they do not know, cost a deserialisation pass per object, and cannot
speak JSON merge patches on custom resources. Everything above this module works on plain ``dict`` objects
exactly as the API server sends them, so a Workload written back is what was read plus our change.

A client may be ``fenced``: a view on the same connections whose every write first asks a fence (the
leader elector's) and is not sent when it says no. The check runs after the credentials are in hand, and the
wait for a pooled connection is bounded by the time the fence grants, so nothing that may await stands
between the check and the request going out (``kueue_webhook.control.kube.leader``).

Errors surface as ``ApiError`` carrying the Status body's code, reason and message; callers branch on
``.status`` (409 conflict, 410 expired, 404 not found) rather than on exception types per code.
"""

from __future__ import annotations

import copy
import functools
import logging
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson
from yarl import URL

from kueue_webhook.control.kube.connection import describe, resolve
from kueue_webhook.control.kube.kinds import Kind
from kueue_webhook.control.kube.verbs import PatchType

JSON = dict[str, Any]
AuthHeaders = Callable[[], Awaitable[dict[str, str]]]
#: seconds a write may still be sent in, or an exception that refuses it
Fence = Callable[[], float]

PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
FIELD_MANAGER = "kueue-webhook"
log = logging.getLogger("kueue_webhook.kube")


class ApiError(Exception):
    """A non-2xx answer from the API server (or a watch ERROR event), with its Status fields."""

    def __init__(self, *, status: int, reason: str, message: str, body: JSON | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}

    @classmethod
    def from_status(cls, status_body: Mapping[str, Any], *, http_status: int = 0) -> ApiError:
        return cls(
            status=int(status_body.get("code") or http_status or 0),
            reason=str(status_body.get("reason", "")),
            message=str(status_body.get("message", "")),
            body=dict(status_body),
        )


@functools.lru_cache(maxsize=256)
def _query_string(items: tuple[tuple[str, str | int], ...]) -> str:
    """``items`` URL-encoded, without the empty ones, exactly as they went on the wire when each URL was
    parsed from a string (``/`` and ``,`` left as they are); the few queries every write repeats (the
    field manager) are encoded once."""
    clean = [(k, v) for k, v in items if v is not None and v != ""]
    return URL("?" + urlencode(clean)).raw_query_string if clean else ""


async def _no_auth() -> dict[str, str]:
    return {}


#: the longest watch event taken (an object is at most ~1.5 MiB in etcd; its JSON, a few times that)
WATCH_EVENT_LIMIT = 8 * 2**20


async def _lines(content: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """The non-blank lines of a watch stream: each read takes whatever has arrived and every complete line
    in it is handed on at once, rather than a read per line. A line longer than ``WATCH_EVENT_LIMIT`` ends
    the watch with ``ValueError``; a last line without its newline is kept."""
    pending = bytearray()
    while True:
        chunk = await content.readany()
        if not chunk:
            if pending.strip():
                yield bytes(pending)
            return
        end = chunk.rfind(b"\n")
        if end < 0:
            pending += chunk
            if len(pending) > WATCH_EVENT_LIMIT:
                raise ValueError(f"watch event longer than {WATCH_EVENT_LIMIT} bytes")
            continue
        if pending:
            pending += chunk[: end + 1]
            complete = bytes(pending)
            pending.clear()
        else:
            complete = chunk[: end + 1]
        pending += chunk[end + 1 :]
        for line in complete.split(b"\n"):
            if line.strip():
                yield line


class KubeClient:
    """JSON verbs against one API server: a connection pool for requests, another for watches."""

    def __init__(
        self,
        *,
        host: str,
        ssl_context: ssl.SSLContext | None = None,
        auth: AuthHeaders = _no_auth,
        session: aiohttp.ClientSession | None = None,
        user_agent: str = "kueue-webhook",
        connections: int = 16,
        proxy: str | None = None,
        server_hostname: str | None = None,
    ) -> None:
        self.host = host.rstrip("/")
        self._base = URL(self.host)
        #: a path the server is reached under (a proxy's, ``https://host/k8s/clusters/c-1``), or ""
        self._base_path = self._base.raw_path.rstrip("/")
        self._auth = auth
        #: told the latency (seconds) and HTTP status of every write answered, or 0 for a write that got no
        #: answer: how busy the API server is (``kueue_webhook.control.kube.api_health``)
        self.observe_write: Callable[[float, int], None] | None = None
        #: per-request options: the cluster's proxy-url and tls-server-name
        self._via: dict[str, Any] = {}
        if proxy:
            self._via["proxy"] = proxy
        if server_hostname:
            self._via["server_hostname"] = server_hostname
        self._owns_session = session is None
        #: the request pool of a view made by ``with_own_connections``, closed with the view
        self._own_pool: aiohttp.ClientSession | None = None
        #: every such pool of this client's views, closed with this client too (shared by the views)
        self._view_pools: list[aiohttp.ClientSession] = []
        #: asked before every write (see ``fenced``); None: writes go out unchecked
        self._fence: Fence | None = None

        def new_session(limit: int) -> aiohttp.ClientSession:
            return aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    ssl=ssl_context if ssl_context is not None else False, limit=limit
                ),
                read_bufsize=2**21,
                headers={"User-Agent": user_agent},
            )

        # Requests (reads and writes) share a pool of ``connections``; each watch holds a connection of a
        # second pool for as long as it streams (limit 0: one per watch, however many kinds are watched),
        # so watches never take connections from the writes that admit. Each TLS connection holds a 128 KiB
        # read buffer: the request pool is sized for the writes in flight, no more.
        self._session = session or new_session(connections)
        self._watch_session = session or new_session(0)
        self._new_session = new_session if session is None else None

    @classmethod
    async def connect(
        cls, *, kubeconfig: str | None = None, context: str | None = None, connections: int = 16
    ) -> KubeClient:
        """As kubectl would connect: ``kubeconfig``, else ``$KUBECONFIG``, else the pod's service account,
        else ``~/.kube/config`` (``kueue_webhook.control.kube.connection.resolve``)."""
        connection = await resolve(kubeconfig, context=context)
        log.info("API server", extra=describe(connection))
        return cls(
            host=connection.host,
            ssl_context=connection.ssl_context,
            auth=connection.auth,
            proxy=connection.proxy,
            server_hostname=connection.server_hostname,
            connections=connections,
        )

    def fenced(self, fence: Fence) -> KubeClient:
        """This client's connections, with every write (any verb but GET) sent only if ``fence()`` allows
        it at that moment; its exception otherwise, the write unsent. ``close`` on the view is a no-op."""
        view = copy.copy(self)
        view._owns_session = False
        view._fence = fence
        return view

    def shares_connections(self, other: KubeClient) -> bool:
        """Whether ``other`` is this client or a view of it (``fenced``): the same connections."""
        return self._watch_session is other._watch_session

    def with_own_connections(self, connections: int) -> KubeClient:
        """This client with a request pool of its own, ``connections`` wide, for requests that must not wait
        behind everyone else's: the Lease's renewals, which a few hundred status writes queued for the shared
        pool (each allowed 30 s) would otherwise hold up past the renew deadline. client-go reaches the same
        end differently (HTTP/2 streams on one connection, no queue of its own in front of them). A client
        given its session by the caller (a test's) has only that one: the view shares it."""
        view = copy.copy(self)
        view._owns_session = False
        if self._new_session is not None:
            view._own_pool = view._session = self._new_session(connections)
            self._view_pools.append(view._own_pool)
        return view

    @property
    def connections(self) -> int:
        """The most HTTP connections requests other than watches use at once."""
        connector = self._session.connector
        return connector.limit if connector is not None else 0

    async def close(self) -> None:
        if self._own_pool is not None:
            await self._own_pool.close()
        if self._owns_session:
            for pool in self._view_pools:
                await pool.close()
            await self._session.close()
            await self._watch_session.close()

    def _url(self, path: str, query: Mapping[str, str | int] | None) -> URL:
        """The request's URL, built already encoded (paths come quoted from ``Kind.path``, queries through
        ``urlencode``) on the server's address parsed once: neither this client nor aiohttp parses or
        re-encodes a URL string on every request."""
        base = self._base
        return URL.build(
            scheme=base.scheme,
            authority=base.raw_authority,
            path=self._base_path + path,
            query_string=_query_string(tuple((query or {}).items())),
            encoded=True,
        )

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = 30.0,
        accept: str = "application/json",
    ) -> JSON:
        """One request, its answer parsed; ``timeout`` bounds the whole exchange (None: the API server's
        own limit, as client-go's default ``rest.Config`` leaves it)."""
        headers = {"Accept": accept, **(await self._auth())}
        data: bytes | None = None
        if body is not None:
            data = orjson.dumps(body)
            headers["Content-Type"] = content_type
        limits = aiohttp.ClientTimeout(total=timeout)
        if self._fence is not None and method != "GET":
            # the last await before this write goes out is the wait for a connection: bounded by the fence
            limits = aiohttp.ClientTimeout(total=timeout, connect=self._fence())
            try:
                return await self._observed(method, path, query, data, headers, limits)
            except aiohttp.ConnectionTimeoutError:
                self._fence()  # refuses if the fence's time ran out while waiting for a connection
                raise
        return await self._observed(method, path, query, data, headers, limits)

    async def _observed(
        self,
        method: str,
        path: str,
        query: Mapping[str, str | int] | None,
        data: bytes | None,
        headers: dict[str, str],
        limits: aiohttp.ClientTimeout,
    ) -> JSON:
        """``_send``, its latency and status told to ``observe_write`` for a write."""
        if self.observe_write is None or method == "GET":
            return await self._send(method, path, query, data, headers, limits)
        started = time.monotonic()
        try:
            answer = await self._send(method, path, query, data, headers, limits)
        except ApiError as exc:
            self.observe_write(time.monotonic() - started, exc.status)
            raise
        except Exception:  # no answer (a timeout, a dropped connection); a cancellation says nothing
            self.observe_write(time.monotonic() - started, 0)
            raise
        self.observe_write(time.monotonic() - started, 200)
        return answer

    async def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, str | int] | None,
        data: bytes | None,
        headers: dict[str, str],
        limits: aiohttp.ClientTimeout,
    ) -> JSON:
        async with self._session.request(
            method,
            self._url(path, query),
            data=data,
            headers=headers,
            timeout=limits,
            **self._via,
        ) as response:
            raw = await response.read()
            try:
                parsed: Any = orjson.loads(raw) if raw else {}
            except orjson.JSONDecodeError:
                if response.status < 400:
                    raise
                parsed = None  # kube-apiserver answers "404 page not found" as text for an unserved group
            if response.status >= 400:
                if isinstance(parsed, dict) and parsed.get("kind") == "Status":
                    raise ApiError.from_status(parsed, http_status=response.status)
                raise ApiError(
                    status=response.status,
                    reason=response.reason or "",
                    message=raw[:500].decode(errors="replace"),
                )
            return parsed if isinstance(parsed, dict) else {"items": parsed}

    async def list_all(self, kind: Kind, *, namespace: str | None = None) -> tuple[list[JSON], str]:
        """Every object (all of ``list_pages``) and the list's resourceVersion to watch from."""
        items: list[JSON] = []
        version = ""
        async for page, page_version in self.list_pages(kind, namespace=namespace):
            items.extend(page)
            version = page_version
        return items, version

    async def list_pages(
        self,
        kind: Kind,
        *,
        namespace: str | None = None,
        field_selector: str = "",
        label_selector: str = "",
        page_size: int = 500,
    ) -> AsyncIterator[tuple[list[JSON], str]]:
        """One page at a time, so a large list never has to sit in memory whole; with its resourceVersion."""
        token = ""
        while True:
            page = await self.request(
                "GET",
                kind.path(namespace=namespace),
                query={
                    "fieldSelector": field_selector,
                    "labelSelector": label_selector,
                    "limit": page_size,
                    "continue": token,
                },
                timeout=120.0,
            )
            items = page.get("items") or []
            for item in items:  # list items omit kind/apiVersion; restore them so objects are self-describing
                item.setdefault("kind", kind.kind)
                item.setdefault("apiVersion", kind.api_version)
            meta = page.get("metadata") or {}
            token = meta.get("continue") or ""
            yield items, str(meta.get("resourceVersion", ""))
            if not token:
                return

    async def watch(
        self,
        kind: Kind,
        *,
        resource_version: str,
        namespace: str | None = None,
        field_selector: str = "",
        label_selector: str = "",
        timeout_seconds: int = 290,
    ) -> AsyncIterator[JSON]:
        """Watch events (``{"type", "object"}``) one JSON line each; ERROR events raise ``ApiError``."""
        query: dict[str, str | int] = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": resource_version,
            "timeoutSeconds": timeout_seconds,
            "fieldSelector": field_selector,
        }
        if label_selector:
            query["labelSelector"] = label_selector
        headers = {"Accept": "application/json", **(await self._auth())}
        async with self._watch_session.get(
            self._url(kind.path(namespace=namespace), query),
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=timeout_seconds + 30),
            **self._via,
        ) as response:
            if response.status >= 400:
                raw = await response.read()
                parsed = orjson.loads(raw) if raw else {}
                raise ApiError.from_status(
                    parsed if isinstance(parsed, dict) else {}, http_status=response.status
                )
            async for line in _lines(response.content):
                event = orjson.loads(line)
                if event.get("type") == "ERROR":
                    raise ApiError.from_status(event.get("object") or {}, http_status=500)
                yield event

    async def get(self, kind: Kind, *, name: str, namespace: str | None = None) -> JSON:
        return await self.request("GET", kind.path(namespace=namespace, name=name))

    async def create(
        self, kind: Kind, body: JSON, *, namespace: str | None = None, timeout: float | None = 30.0
    ) -> JSON:
        return await self.request(
            "POST",
            kind.path(namespace=namespace),
            body=body,
            query={"fieldManager": FIELD_MANAGER},
            timeout=timeout,
        )

    async def replace(self, kind: Kind, body: JSON, *, subresource: str = "") -> JSON:
        meta = body.get("metadata") or {}
        path = kind.path(namespace=meta.get("namespace"), name=meta["name"], subresource=subresource)
        return await self.request("PUT", path, body=body, query={"fieldManager": FIELD_MANAGER})

    async def patch(
        self,
        kind: Kind,
        *,
        name: str,
        patch: Any,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str = "",
    ) -> JSON:
        return await self.request(
            "PATCH",
            kind.path(namespace=namespace, name=name, subresource=subresource),
            body=patch,
            content_type=PATCH_CONTENT_TYPES[patch_type],
            query={"fieldManager": FIELD_MANAGER},
        )

    async def delete(
        self, kind: Kind, *, name: str, namespace: str | None = None, propagation: str | None = None
    ) -> JSON:
        """``propagation``: the API's ``propagationPolicy`` (Background, Foreground, Orphan); None leaves
        the kind's default (for a batch/v1 Job: its pods are orphaned)."""
        query = {"propagationPolicy": propagation} if propagation else None
        return await self.request("DELETE", kind.path(namespace=namespace, name=name), query=query)
