"""The HTTP face of the fake: kube-apiserver's URL layout, content negotiation, watch streaming.

Handlers are thin: they parse the path into (resource type, namespace, name, subresource), authenticate the
bearer token, decode the body, call `Api`, and render either the object, a list, a Table (when kubectl asks
with `as=Table`), or a Status for errors. Watches are cursors into the store's single event log: one JSON
event per line, flushed as written, filtered by namespace/label/field selectors (an object leaving a label
selector is seen as DELETED, entering it as ADDED, as the apiserver's watch cache does), ending with a 410
ERROR event when the requested resourceVersion has been compacted away.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
import yaml
from aiohttp import web

from tests.fakeapi import discovery, query, tables
from tests.fakeapi.api import PATCH_APPLY, PATCH_JSON, PATCH_MERGE, PATCH_STRATEGIC
from tests.fakeapi.errors import (
    ApiError,
    bad_request,
    expired,
    method_not_allowed,
    resource_not_found,
    unauthorized,
)
from tests.fakeapi.identity import UserInfo, self_subject_review, subject_access_review, token_review
from tests.fakeapi.protobuf import decode_object
from tests.fakeapi.resources import ResourceType
from tests.fakeapi.store import Event, Obj

if TYPE_CHECKING:
    from tests.fakeapi.server import FakeApiServer

JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
USER_KEY = web.RequestKey("user", UserInfo)
_UNAUTHENTICATED_PATHS = frozenset({"/version", "/healthz", "/readyz", "/livez"})


def json_response(body: Any, *, status: int = 200, content_type: str = JSON) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, headers={"Content-Type": content_type})


def error_response(error: ApiError) -> web.Response:
    return json_response(error.status(), status=error.code)


@dataclass(frozen=True)
class Target:
    rtype: ResourceType
    namespace: str  # "" for cluster-scoped or all-namespaces requests
    name: str
    subresource: str


class Handlers:
    def __init__(self, server: FakeApiServer) -> None:
        self.server = server

    # ---- plumbing ----------------------------------------------------------------------------------------
    @web.middleware
    async def middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        self.server.requests.append(f"{request.method} {request.path_qs}")
        if self.server.delay_seconds:
            await asyncio.sleep(self.server.delay_seconds)
        if request.path not in _UNAUTHENTICATED_PATHS:
            user = self._authenticate(request)
            if user is None:
                return error_response(unauthorized())
            request[USER_KEY] = user
        try:
            return await handler(request)
        except ApiError as error:
            return error_response(error)

    def _authenticate(self, request: web.Request) -> UserInfo | None:
        header = request.headers.get("Authorization", "")
        if not header.startswith("Bearer "):
            return None
        return self.server.tokens.lookup(header[len("Bearer ") :].strip())

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/version", self.version),
            web.get("/healthz", self.healthz),
            web.get("/readyz", self.healthz),
            web.get("/livez", self.healthz),
            web.get("/api", self.core_versions),
            web.get("/apis", self.groups),
            web.get("/openapi/v3", self.openapi_index),
            web.get("/openapi/v3/{path:.*}", self.openapi_doc),
            web.get("/openapi/v2", self.not_found),
            web.route("*", "/api/{version}", self.group_version_or_resource),
            web.route("*", "/api/{version}/{rest:.*}", self.resource),
            web.get("/apis/{group}", self.group),
            web.get("/apis/{group}/{version}", self.group_version),
            web.route("*", "/apis/{group}/{version}/{rest:.*}", self.resource),
        ]

    async def not_found(self, request: web.Request) -> web.Response:
        return error_response(resource_not_found())

    async def version(self, request: web.Request) -> web.Response:
        return json_response(discovery.VERSION_INFO)

    async def healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    # ---- discovery ---------------------------------------------------------------------------------------
    async def core_versions(self, request: web.Request) -> web.Response:
        if discovery.wants_aggregated(request.headers.get("Accept", "")):
            return json_response(
                discovery.aggregated(self.server.registry, legacy=True), content_type=discovery.AGGREGATED_V2
            )
        return json_response(discovery.api_versions(self.server.address))

    async def groups(self, request: web.Request) -> web.Response:
        if discovery.wants_aggregated(request.headers.get("Accept", "")):
            return json_response(
                discovery.aggregated(self.server.registry, legacy=False), content_type=discovery.AGGREGATED_V2
            )
        return json_response(discovery.api_group_list(self.server.registry))

    async def group(self, request: web.Request) -> web.Response:
        body = discovery.api_group(self.server.registry, request.match_info["group"])
        if body is None:
            return error_response(resource_not_found())
        return json_response({"kind": "APIGroup", "apiVersion": "v1", **body})

    async def group_version(self, request: web.Request) -> web.Response:
        proxied = await self.server.aggregator.forward(request, request[USER_KEY])
        if proxied is not None:
            return proxied
        body = discovery.resource_list(
            self.server.registry, request.match_info["group"], request.match_info["version"]
        )
        if body is None:
            return error_response(resource_not_found())
        return json_response(body)

    async def group_version_or_resource(self, request: web.Request) -> web.Response:
        body = discovery.resource_list(self.server.registry, "", request.match_info["version"])
        if body is None or request.method != "GET":
            return error_response(resource_not_found())
        return json_response(body)

    async def openapi_index(self, request: web.Request) -> web.Response:
        return json_response(self.server.openapi.index())

    async def openapi_doc(self, request: web.Request) -> web.Response:
        doc = self.server.openapi.document(request.match_info["path"])
        if doc is None:
            return error_response(resource_not_found())
        return web.Response(body=doc, content_type=JSON, headers={"Cache-Control": "public, immutable"})

    # ---- resources ---------------------------------------------------------------------------------------
    def _target(self, request: web.Request) -> Target:
        group = request.match_info.get("group", "")
        version = request.match_info["version"]
        parts = [p for p in request.match_info["rest"].split("/") if p]
        registry = self.server.registry
        namespace = ""
        if len(parts) >= 3 and parts[0] == "namespaces":
            candidate = registry.get(group, version, parts[2])
            if candidate is not None and candidate.namespaced:
                namespace = parts[1]
                parts = parts[2:]
        if not parts or len(parts) > 3:
            raise resource_not_found()
        rtype = registry.get(group, version, parts[0])
        if rtype is None:
            raise resource_not_found()
        name = parts[1] if len(parts) > 1 else ""
        sub = parts[2] if len(parts) > 2 else ""
        if sub and sub not in dict(rtype.subresources()):
            raise resource_not_found()
        return Target(rtype, namespace, name, sub)

    async def _body(self, request: web.Request) -> Any:
        raw = await request.read()
        if not raw:
            return None
        content_type = request.headers.get("Content-Type", JSON).split(";")[0].strip()
        if content_type == PROTOBUF:
            return decode_object(raw)
        if content_type in ("application/yaml", PATCH_APPLY):
            try:
                return yaml.safe_load(raw)
            except yaml.YAMLError as exc:
                raise bad_request(f"error converting YAML to JSON: {exc}") from exc
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from exc

    @staticmethod
    def _options(request: web.Request) -> dict[str, Any]:
        options: dict[str, Any] = {}
        for key in ("fieldManager", "fieldValidation"):
            if key in request.query:
                options[key] = request.query[key]
        if request.query.get("dryRun"):
            options["dryRun"] = [request.query["dryRun"]]
        return options

    async def resource(self, request: web.Request) -> web.StreamResponse:
        if request.path.startswith("/apis/"):
            proxied = await self.server.aggregator.forward(request, request[USER_KEY])
            if proxied is not None:
                return proxied
        target = self._target(request)
        method = request.method
        if not target.rtype.stored:
            return await self._review(request, target)
        if method == "GET":
            if target.name:
                return self._render_one(
                    request, target, await self.server.api.read(target.rtype, target.namespace, target.name)
                )
            if request.query.get("watch") in ("1", "true", "True"):
                return await self._watch(request, target)
            return await self._list(request, target)
        user: UserInfo = request[USER_KEY]
        dry_run = request.query.get("dryRun") == "All"
        api = self.server.api
        if method == "POST" and not target.name:
            if target.rtype.namespaced and not target.namespace:
                raise method_not_allowed()
            body = await self._body(request)
            created = await api.create(
                target.rtype,
                target.namespace,
                body,
                user=user,
                dry_run=dry_run,
                options=self._options(request),
            )
            return self._render_one(request, target, created, status=201)
        if method == "DELETE" and not target.name and not target.subresource:
            return await self._delete_collection(request, target, user, dry_run)
        if not target.name:
            raise method_not_allowed()
        if method == "PUT":
            body = await self._body(request)
            updated = await api.update(
                target.rtype,
                target.namespace,
                target.name,
                body,
                subresource=target.subresource,
                user=user,
                dry_run=dry_run,
                options=self._options(request),
            )
            return self._render_one(request, target, updated)
        if method == "PATCH":
            patch_type = request.headers.get("Content-Type", "").split(";")[0].strip()
            if patch_type not in (PATCH_JSON, PATCH_MERGE, PATCH_STRATEGIC, PATCH_APPLY):
                raise ApiError(
                    code=415,
                    reason="UnsupportedMediaType",
                    message="the body of the request was in an unknown format - accepted media types "
                    f"include: {PATCH_JSON}, {PATCH_MERGE}, {PATCH_APPLY}"
                    + (f", {PATCH_STRATEGIC}" if target.rtype.builtin else ""),
                )
            body = await self._body(request)
            patched = await api.patch(
                target.rtype,
                target.namespace,
                target.name,
                patch_type,
                body,
                subresource=target.subresource,
                user=user,
                dry_run=dry_run,
                options=self._options(request),
            )
            return self._render_one(request, target, patched)
        if method == "DELETE" and not target.subresource:
            body = await self._body(request) or {}
            propagation = body.get("propagationPolicy") or request.query.get("propagationPolicy")
            dry_run = dry_run or body.get("dryRun") == ["All"]
            gone = await api.delete(
                target.rtype,
                target.namespace,
                target.name,
                user=user,
                propagation=propagation,
                preconditions=body.get("preconditions"),
                dry_run=dry_run,
            )
            still_there = self.server.store.get(target.rtype.storage_key, target.namespace, target.name)
            if still_there is not None or not target.rtype.builtin or target.rtype.kind == "Namespace":
                return self._render_one(request, target, gone)
            return json_response(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": {
                        "name": target.name,
                        "group": target.rtype.group,
                        "kind": target.rtype.plural,
                        "uid": gone["metadata"].get("uid"),
                    },
                }
            )
        raise method_not_allowed()

    async def _review(self, request: web.Request, target: Target) -> web.Response:
        """A create-only review: answered from the caller's identity, never stored (golden
        selfsubjectreview-*.json: a name in the path is 404, any other method 405)."""
        if target.name:
            raise resource_not_found()
        if request.method != "POST":
            raise method_not_allowed()
        body = await self._body(request)
        if target.rtype.kind == "TokenReview":
            review = token_review(self.server.tokens, body)
        elif target.rtype.kind == "SubjectAccessReview":
            review = subject_access_review(self.server.grants, body)
        else:
            review = self_subject_review(request[USER_KEY], body)
        return json_response(review, status=201)

    async def _delete_collection(
        self, request: web.Request, target: Target, user: UserInfo, dry_run: bool
    ) -> web.Response:
        """deletecollection: every object matching the selectors; answers the list of deleted objects."""
        if "deletecollection" not in target.rtype.verbs:
            raise method_not_allowed()
        selected = self._selected(request, target)
        namespace = target.namespace if target.rtype.namespaced and target.namespace else None
        victims = [o for o in self.server.store.list(target.rtype.storage_key, namespace) if selected(o)]
        deleted = []
        for obj in victims:
            meta = obj["metadata"]
            deleted.append(
                await self.server.api.delete(
                    target.rtype, meta.get("namespace", ""), meta["name"], user=user, dry_run=dry_run
                )
            )
        return json_response(
            {
                "kind": target.rtype.list_kind,
                "apiVersion": target.rtype.api_version,
                "metadata": {"resourceVersion": str(self.server.store.rv)},
                "items": deleted,
            }
        )

    # ---- rendering ---------------------------------------------------------------------------------------
    def _render_one(
        self, request: web.Request, target: Target, obj: Obj, *, status: int = 200
    ) -> web.Response:
        accept = request.headers.get("Accept", "")
        if tables.wants_table(accept):
            body = tables.table(
                target.rtype,
                [obj],
                resource_version=obj["metadata"].get("resourceVersion", ""),
                include_object=request.query.get("includeObject", "Metadata"),
            )
            return json_response(body, status=status)
        return json_response(obj, status=status)

    def _selected(self, request: web.Request, target: Target) -> Callable[[Obj], bool]:
        labels = query.label_selector(request.query.get("labelSelector"))
        fields = query.field_selector(request.query.get("fieldSelector"))
        return lambda obj: labels(obj) and fields(obj)

    async def _list(self, request: web.Request, target: Target) -> web.Response:
        store = self.server.store
        rv_param = request.query.get("resourceVersion", "")
        if rv_param not in ("", "0"):
            try:
                rv = int(rv_param)
            except ValueError as exc:
                raise bad_request(f"invalid resource version: {rv_param}") from exc
            if rv < store.compacted_rv and request.query.get("resourceVersionMatch") == "Exact":
                raise expired("The resourceVersion for the provided list is too old.")
        selected = self._selected(request, target)
        namespace = target.namespace if target.rtype.namespaced and target.namespace else None
        items = [o for o in store.list(target.rtype.storage_key, namespace) if selected(o)]
        list_rv = store.rv
        token = request.query.get("continue")
        if token:
            list_rv, after = query.decode_continue(token)
            items = [o for o in items if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) > after]
        metadata: Obj = {"resourceVersion": str(list_rv)}
        limit = int(request.query.get("limit", "0") or 0)
        if limit and len(items) > limit:
            last = items[limit - 1]["metadata"]
            metadata["continue"] = query.encode_continue(
                rv=list_rv, after=(last.get("namespace", ""), last["name"])
            )
            metadata["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        api = self.server.api
        items = await api.converted(target.rtype, items)
        if tables.wants_table(request.headers.get("Accept", "")):
            body = tables.table(
                target.rtype,
                items,
                resource_version=str(list_rv),
                include_object=request.query.get("includeObject", "Metadata"),
            )
            if "continue" in metadata:
                body["metadata"]["continue"] = metadata["continue"]
            return json_response(body)
        if target.rtype.builtin:
            items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items]
        return json_response(
            {
                "kind": target.rtype.list_kind,
                "apiVersion": target.rtype.api_version,
                "metadata": metadata,
                "items": items,
            }
        )

    # ---- watch -------------------------------------------------------------------------------------------
    async def _encode_event(
        self, target: Target, event_type: str, obj: Obj, table: TableWatch | None = None
    ) -> bytes:
        obj = (await self.server.api.converted(target.rtype, [obj]))[0]
        if table is not None:
            return orjson.dumps({"type": event_type, "object": table.row(obj)}) + b"\n"
        return orjson.dumps({"type": event_type, "object": obj}) + b"\n"

    async def _watch(self, request: web.Request, target: Target) -> web.StreamResponse:
        store = self.server.store
        rtype = target.rtype
        selected = self._selected(request, target)
        namespace = target.namespace if rtype.namespaced else ""
        rv_param = request.query.get("resourceVersion", "")
        bookmarks = request.query.get("allowWatchBookmarks") in ("1", "true", "True")
        send_initial = request.query.get("sendInitialEvents") in ("1", "true", "True")
        timeout = float(request.query.get("timeoutSeconds") or self.server.watch_timeout)
        response = web.StreamResponse(headers={"Content-Type": JSON, "Cache-Control": "no-cache, private"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        generation = self.server.watch_generation
        table = (
            TableWatch(rtype, request.query.get("includeObject", "Metadata"))
            if tables.wants_table(request.headers.get("Accept", ""))
            else None
        )
        initial: list[Obj] = []
        if rv_param in ("", "0") or send_initial:
            start_rv = store.rv
            initial = [o for o in store.list(rtype.storage_key, namespace or None) if selected(o)]
        else:
            try:
                start_rv = int(rv_param)
                store.check_watch_rv(start_rv)
            except ValueError:
                await response.write(self._error_event(bad_request(f"invalid resource version: {rv_param}")))
                return response
            except ApiError as error:
                await response.write(self._error_event(error))
                return response
        for obj in initial:
            await response.write(await self._encode_event(target, "ADDED", obj, table))
        if send_initial and bookmarks:
            await response.write(self._bookmark(target, start_rv, initial_end=True))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        next_bookmark = loop.time() + self.server.bookmark_interval
        cursor = start_rv
        while True:
            if self.server.watch_generation != generation or self.server.closing:
                break
            if cursor < store.compacted_rv_of(rtype.storage_key):
                await response.write(
                    self._error_event(expired(f"too old resource version: {cursor} ({store.compacted_rv})"))
                )
                break
            # Only this kind's events, and every event that is ready in one write: a burst of commits
            # reaches the client as one chunk of lines (clients split on newlines, as with the apiserver).
            head = store.rv
            lines = []
            for event in store.events_after(cursor, rtype.storage_key):
                line = await self._filter_event(target, event, selected, namespace, table)
                if line is not None:
                    lines.append(line)
            cursor = head
            if lines:
                await response.write(b"".join(lines))
            now = loop.time()
            if bookmarks and now >= next_bookmark:
                await response.write(self._bookmark(target, cursor))
                next_bookmark = now + self.server.bookmark_interval
            remaining = min(deadline, next_bookmark if bookmarks else deadline) - now
            if now >= deadline:
                break
            await store.changed(max(remaining, 0.001), rtype.storage_key)
        return response

    async def _filter_event(
        self,
        target: Target,
        event: Event,
        selected: Callable[[Obj], bool],
        namespace: str,
        table: TableWatch | None,
    ) -> bytes | None:
        if event.key != target.rtype.storage_key or (namespace and event.namespace != namespace):
            return None
        now_matches = selected(event.obj)
        if event.type == "MODIFIED" and event.old is not None:
            was_matching = selected(event.old)
            if was_matching and not now_matches:
                return await self._encode_event(target, "DELETED", event.obj, table)
            if now_matches and not was_matching:
                return await self._encode_event(target, "ADDED", event.obj, table)
        if not now_matches:
            return None
        if table is not None:
            return await self._encode_event(target, event.type, event.obj, table)
        cache_key = target.rtype.api_version
        line = event.encoded.get(cache_key)
        if line is None:
            line = await self._encode_event(target, event.type, event.obj)
            event.encoded[cache_key] = line
        return line

    def _bookmark(self, target: Target, rv: int, *, initial_end: bool = False) -> bytes:
        metadata: Obj = {"resourceVersion": str(rv)}
        if initial_end:
            metadata["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": target.rtype.kind, "apiVersion": target.rtype.api_version, "metadata": metadata}
        return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"

    @staticmethod
    def _error_event(error: ApiError) -> bytes:
        status = error.status()
        status.pop("details", None)
        return orjson.dumps({"type": "ERROR", "object": status}) + b"\n"


class TableWatch:
    """`kubectl get -w`: each watch event carries a one-row Table; only the first has column definitions."""

    def __init__(self, rtype: ResourceType, include_object: str) -> None:
        self.rtype = rtype
        self.include_object = include_object
        self.first = True

    def row(self, obj: Obj) -> Obj:
        body = tables.table(
            self.rtype,
            [obj],
            resource_version=obj["metadata"].get("resourceVersion", ""),
            include_object=self.include_object,
        )
        if not self.first:
            body["columnDefinitions"] = None
        self.first = False
        return body


def build_app(server: FakeApiServer) -> web.Application:
    handlers = Handlers(server)
    app = web.Application(middlewares=[handlers.middleware], client_max_size=64 * 1024 * 1024)
    app.add_routes(handlers.routes())
    return app
