"""Kueue's visibility API (``visibility.kueue.x-k8s.io/v1beta2``, see :mod:`webhook.core.visibility`):
discovery and the two ``pendingworkloads`` reads, served under ``/apis/`` for kube-apiserver's aggregator (an
APIService pointing at this Service).

The leader answers from the scheduler's queues; a replica that does not lead holds no queues and answers 503
``ServiceUnavailable`` saying so (with ``Retry-After``), while discovery is answered by every replica so the
APIService stays Available. No client certificate is asked for: authentication and RBAC (Kueue's
ClusterRoles on ``clusterqueues/pendingworkloads`` and ``localqueues/pendingworkloads``) are enforced by
kube-apiserver before it proxies; the aggregator's ``X-Remote-User`` header is logged, not trusted, and anyone
reaching the pod directly can read pending Workloads' names and ranks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from webhook.core import visibility as vis
from webhook.core.view import SchedulerView
from webhook.http.responses import json_response, status_body

__all__ = ["Visibility", "add_visibility_routes"]

log = logging.getLogger("kueue_webhook.visibility")


@dataclass(frozen=True, slots=True)
class Visibility:
    """What the visibility API reads: the scheduler's queues while this replica leads (None while it does
    not), the Workloads' metadata from the store, and this replica's name for the not-leader answer."""

    scheduler: Callable[[], SchedulerView | None]
    workload: vis.WorkloadLookup
    identity: str = ""


def add_visibility_routes(app: web.Application, visibility: Visibility) -> None:
    """Discovery and the two pendingworkloads reads of ``visibility.kueue.x-k8s.io/v1beta2``."""
    base = f"/apis/{vis.GROUP_VERSION}"

    def answer(
        request: web.Request, read: Callable[[SchedulerView, vis.Page], Any], kind: str
    ) -> web.Response:
        try:
            page = vis.parse_page(request.query)
        except vis.VisibilityError as exc:
            return json_response(orjson.loads(status_body(400, "BadRequest", str(exc))), 400)
        scheduler = visibility.scheduler()
        log.debug(
            "visibility request", extra={"path": request.path, "user": request.headers.get("X-Remote-User")}
        )
        if scheduler is None:
            message = (
                f"kueue-webhook replica {visibility.identity or '(unnamed)'} is not the leader: only the "
                "leader holds the queues; retry (the Service may send the next request to the leader)"
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
        return answer(
            request,
            lambda view, page: vis.cluster_queue_pending(view, name, page, visibility.workload),
            "clusterqueue",
        )

    async def local_queue(request: web.Request) -> web.Response:
        namespace, name = request.match_info["namespace"], request.match_info["name"]

        def read(view: SchedulerView, page: vis.Page) -> Any:
            return vis.local_queue_pending(view, namespace, name, page, visibility.workload)

        return answer(request, read, "localqueue")

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
