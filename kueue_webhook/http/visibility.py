"""Kueue's visibility API (``visibility.kueue.x-k8s.io/v1beta2``, see :mod:`kueue_webhook.core.visibility`):
discovery and the two ``pendingworkloads`` reads, served under ``/apis/`` for kube-apiserver's aggregator (an
APIService pointing at this Service).

Every replica answers from queues of its own: the leader from the scheduler's, a replica that does not lead
from a copy of them fed from the same store without running cycles (``kueue_webhook.control.queue_mirror``),
so
whichever replica the Service picks gives the same ranks for the same store contents. ``scheduler`` answers
None only while a replica has no queues at all yet (503 ``ServiceUnavailable``, with ``Retry-After``).

The reads are guarded (``guard``, :class:`kueue_webhook.http.auth.HttpsAuth`): the user is the one the front
proxy names on a verified connection, and a SubjectAccessReview decides, as for any aggregated API.
Discovery is answered to anyone: it is the same public list for every caller and kube-apiserver reads it to
keep the APIService Available.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from kueue_webhook.core import visibility as vis
from kueue_webhook.core.view import SchedulerView
from kueue_webhook.http.responses import json_response, status_body
from kueue_webhook.http.reviews import Resource

__all__ = ["Guard", "Visibility", "add_visibility_routes", "pending_workloads"]

#: decides a read before it is made: None to answer it, else the response to give instead (401, 403)
Guard = Callable[[web.Request, Resource], Awaitable[web.Response | None]]


def pending_workloads(cluster_queue: str = "", *, namespace: str = "", local_queue: str = "") -> Resource:
    """What a read asks for, as a SubjectAccessReview names it (Kueue's ClusterRoles grant ``get``)."""
    if cluster_queue:
        return Resource(
            verb="get",
            group=vis.GROUP,
            version=vis.VERSION,
            resource="clusterqueues",
            subresource="pendingworkloads",
            name=cluster_queue,
        )
    return Resource(
        verb="get",
        group=vis.GROUP,
        version=vis.VERSION,
        resource="localqueues",
        subresource="pendingworkloads",
        name=local_queue,
        namespace=namespace,
    )


log = logging.getLogger("kueue_webhook.visibility")


@dataclass(frozen=True, slots=True)
class Visibility:
    """What the visibility API reads: this replica's queues (None while it has none yet), the Workloads'
    metadata from the store, and this replica's name for the no-queues answer."""

    scheduler: Callable[[], SchedulerView | None]
    workload: vis.WorkloadLookup
    identity: str = ""


def add_visibility_routes(app: web.Application, visibility: Visibility, guard: Guard | None = None) -> None:
    """Discovery and the two pendingworkloads reads of ``visibility.kueue.x-k8s.io/v1beta2``; without a
    ``guard`` the reads are answered to anyone (tests of the reads alone)."""
    base = f"/apis/{vis.GROUP_VERSION}"

    async def answer(
        request: web.Request, read: Callable[[SchedulerView, vis.Page], Any], kind: str, asked: Resource
    ) -> web.Response:
        if guard is not None:
            refusal = await guard(request, asked)
            if refusal is not None:
                return refusal
        try:
            page = vis.parse_page(request.query)
        except vis.VisibilityError as exc:
            return json_response(orjson.loads(status_body(400, "BadRequest", str(exc))), 400)
        scheduler = visibility.scheduler()
        if scheduler is None:
            message = (
                f"kueue-webhook replica {visibility.identity or '(unnamed)'} holds no queues yet (its "
                "caches are not synced); retry"
            )
            response = json_response(orjson.loads(status_body(503, "ServiceUnavailable", message)), 503)
            response.headers["Retry-After"] = "1"
            return response
        summary = read(scheduler, page)
        if summary is None:
            return json_response(vis.not_found(kind, request.match_info["name"]), 404)
        return json_response(summary)

    async def cluster_queue(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        return await answer(
            request,
            lambda view, page: vis.cluster_queue_pending(view, name, page, visibility.workload),
            "clusterqueue",
            pending_workloads(name),
        )

    async def local_queue(request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]

        def read(view: SchedulerView, page: vis.Page) -> Any:
            return vis.local_queue_pending(view, namespace, name, page, visibility.workload)

        asked = pending_workloads(namespace=namespace, local_queue=name)
        return await answer(request, read, "localqueue", asked)

    async def group_list(_: web.Request) -> web.Response:
        return json_response(vis.api_group_list())

    async def group(_: web.Request) -> web.Response:
        return json_response(vis.api_group())

    async def resources(_: web.Request) -> web.Response:
        return json_response(vis.api_resource_list())

    app.router.add_get("/apis", group_list)
    app.router.add_get(f"/apis/{vis.GROUP}", group)
    app.router.add_get(base, resources)
    app.router.add_get(f"{base}/clusterqueues/{{name}}/pendingworkloads", cluster_queue)
    app.router.add_get(f"{base}/namespaces/{{namespace}}/localqueues/{{name}}/pendingworkloads", local_queue)
