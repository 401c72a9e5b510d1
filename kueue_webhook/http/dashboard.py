"""The live dashboard, served where the visibility API is and guarded the same way.

``GET /apis/visibility.kueue.x-k8s.io/v1beta2/dashboards/queues`` is under the visibility API's
APIService, so kube-apiserver's aggregator forwards it like the ``pendingworkloads`` reads: a user opens it
through ``kubectl proxy`` (``http://127.0.0.1:8001/apis/visibility.kueue.x-k8s.io/v1beta2/dashboards/queues``)
with their own credentials, and no port of the controller needs to be exposed. kube-apiserver authorizes the
path as ``get`` on ``dashboards`` named ``queues`` in ``visibility.kueue.x-k8s.io`` before forwarding it;
this server believes the front proxy's user only on a connection with its client certificate and asks a
SubjectAccessReview for the same attributes (:meth:`kueue_webhook.http.auth.HttpsAuth.guard_visibility`), so
one
RBAC rule lets a user in, and a direct call to the Service without the certificate gets 401. The resource is
not in the group's discovery (it is no Kueue kind, and ``kubectl get`` has nothing to list).

A browser asking for HTML gets the page (:mod:`kueue_webhook.http.dashboard_page`) with the document embedded;
``?format=json``, or a client that does not ask for HTML (``kubectl get --raw``), gets the document alone.
The document is computed at most once per ``min_interval`` seconds and shared by every caller, so many open
tabs cost one computation a second; the page polls (every 5 s), which holds no connection open: each poll
is one short request through kube-apiserver, whose own limits and timeouts apply, rather than a stream the
aggregator would cut after its request timeout.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import orjson
from aiohttp import web

from kueue_webhook.core import visibility as vis
from kueue_webhook.core.dashboard import dashboard_model
from kueue_webhook.core.recent_decisions import RecentDecision
from kueue_webhook.core.view import SchedulerView
from kueue_webhook.http.dashboard_page import CONTENT_SECURITY_POLICY, render_page
from kueue_webhook.http.reviews import Resource
from kueue_webhook.http.visibility import Guard

__all__ = ["DASHBOARD", "DASHBOARD_PATH", "Dashboard", "add_dashboard_routes", "wants_json"]

RESOURCE, NAME = "dashboards", "queues"
DASHBOARD_PATH = f"/apis/{vis.GROUP_VERSION}/{RESOURCE}/{NAME}"
#: what kube-apiserver authorizes before forwarding the path, and what this server asks again
DASHBOARD = Resource(verb="get", group=vis.GROUP, version=vis.VERSION, resource=RESOURCE, name=NAME)
#: headers of every answer of the page and its document
_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Vary": "Accept",
}


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@dataclass(eq=False)
class Dashboard:
    """What the dashboard reads: this replica's queues (None before its caches are synced), Workloads from
    the store, its recent decisions (newest first), whether it leads, and its name."""

    scheduler: Callable[[], SchedulerView | None]
    workload: vis.WorkloadLookup
    recent: Callable[[], Sequence[RecentDecision]]
    leading: Callable[[], bool]
    identity: str = ""
    #: seconds a computed document is served before it is computed again
    min_interval: float = 1.0
    clock: Callable[[], float] = time.monotonic
    now: Callable[[], datetime.datetime] = _utcnow
    _cached: tuple[float, bytes] | None = field(default=None, init=False, repr=False)

    def document(self) -> bytes:
        """The dashboard's JSON (``kueue_webhook.core.dashboard``), at most ``min_interval`` seconds old."""
        moment = self.clock()
        if self._cached is not None and moment - self._cached[0] < self.min_interval:
            return self._cached[1]
        model = dashboard_model(
            self.scheduler(),
            workload=self.workload,
            recent=self.recent(),
            replica=self.identity,
            leading=self.leading(),
            generated_at=self.now().strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
        body = orjson.dumps(model)
        self._cached = (moment, body)
        return body


def wants_json(request: web.Request) -> bool:
    """``?format=json``, or an Accept header that does not ask for HTML (kubectl, curl, scripts)."""
    if request.query.get("format") == "json":
        return True
    return "text/html" not in request.headers.get("Accept", "")


def add_dashboard_routes(app: web.Application, dashboard: Dashboard, guard: Guard | None = None) -> None:
    """The page and its document at :data:`DASHBOARD_PATH`; without a ``guard`` answered to anyone (tests
    of the page alone)."""

    async def page(request: web.Request) -> web.Response:
        if guard is not None:
            refusal = await guard(request, DASHBOARD)
            if refusal is not None:
                return refusal
        document = dashboard.document()
        if wants_json(request):
            response = web.Response(body=document, content_type="application/json")
        else:
            response = web.Response(body=render_page(document.decode()), content_type="text/html")
            response.charset = "utf-8"
            response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        response.headers.update(_HEADERS)
        return response

    app.router.add_get(DASHBOARD_PATH, page)
