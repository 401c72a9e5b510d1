"""One aiohttp application for the whole HTTPS port: the admission and conversion paths, the visibility API,
the probes, ``/metrics`` and the live dashboard (``kueue_webhook.http.dashboard``).

Any other path or method is answered with a Kubernetes ``Status`` (:mod:`kueue_webhook.http.fallback`).
``/healthz`` is always 200 while the loop runs; ``/readyz`` is 200 once the certificate is loaded and the
``ready`` callable (the controller's cache sync) says so; ``/metrics`` serves the registry it was given, to
which the admission transport adds its own request counter and latency histogram and the server the
serving certificate's expiry (:mod:`kueue_webhook.http.certificate_metrics`). With ``auth``
(:class:`kueue_webhook.http.auth.HttpsAuth`) ``/metrics``, the visibility reads and the dashboard ask who the
caller is and whether it may; without it (the webhook alone, ``python -m kueue_webhook.http.server``) they
are open.
:func:`create_metrics_app` is ``/metrics`` alone, open, for a plain-HTTP port of its own.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from kueue_webhook.admission.view import ClusterView
from kueue_webhook.api.config import Configuration
from kueue_webhook.http.admission import MAX_BODY_BYTES, AdmissionMetrics, OwnerResolver, add_admission_routes
from kueue_webhook.http.auth import HttpsAuth
from kueue_webhook.http.certificate_metrics import CertificateExpiry
from kueue_webhook.http.dashboard import Dashboard, add_dashboard_routes
from kueue_webhook.http.fallback import add_fallback_route
from kueue_webhook.http.visibility import Visibility, add_visibility_routes

__all__ = ["CERTIFICATE_EXPIRY", "CERTIFICATE_LOADED", "create_app", "create_metrics_app"]

#: set by the server once its certificate is loaded and it listens; /readyz says 503 before
CERTIFICATE_LOADED = web.AppKey("certificate_loaded", list[bool])
#: the serving certificate's expiry gauge on ``registry``; the server points it at its reloader
CERTIFICATE_EXPIRY = web.AppKey("certificate_expiry", CertificateExpiry)


def create_app(
    *,
    view: ClusterView,
    config: Callable[[], Configuration],
    registry: CollectorRegistry,
    ready: Callable[[], bool] = lambda: True,
    visibility: Visibility | None = None,
    auth: HttpsAuth | None = None,
    owners: OwnerResolver | None = None,
    dashboard: Dashboard | None = None,
) -> web.Application:
    """The aiohttp application; serve it with :class:`kueue_webhook.http.server.WebhookServer` (or any aiohttp
    runner, for tests). ``owners`` looks up, before a rule runs, the owners a request's object claims that
    ``view`` cannot answer for (``kueue_webhook.control.jobs.owner_lookup``)."""
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app[CERTIFICATE_LOADED] = [False]
    app[CERTIFICATE_EXPIRY] = CertificateExpiry()
    registry.register(app[CERTIFICATE_EXPIRY])

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        if not app[CERTIFICATE_LOADED][0]:
            return web.Response(status=503, text="serving certificate not loaded yet")
        if not ready():
            return web.Response(status=503, text="caches not synced yet")
        return web.Response(text="ok")

    async def metrics_endpoint(request: web.Request) -> web.Response:
        if auth is not None:
            refusal = await auth.guard_metrics(request)
            if refusal is not None:
                return refusal
        return _metrics_response(registry)

    add_admission_routes(app, view=view, config=config, metrics=AdmissionMetrics(registry), owners=owners)
    if visibility is not None:
        add_visibility_routes(app, visibility, auth.guard_visibility if auth is not None else None)
    if dashboard is not None:
        add_dashboard_routes(app, dashboard, auth.guard_visibility if auth is not None else None)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics_endpoint)
    add_fallback_route(app)
    return app


def _metrics_response(registry: CollectorRegistry) -> web.Response:
    response = web.Response(body=generate_latest(registry))
    response.headers["Content-Type"] = CONTENT_TYPE_LATEST
    return response


def create_metrics_app(registry: CollectorRegistry) -> web.Application:
    """``/metrics`` answered to anyone (``serve --metrics-bind-address``: scrapers without credentials)."""
    app = web.Application()

    async def metrics_endpoint(_: web.Request) -> web.Response:
        return _metrics_response(registry)

    app.router.add_get("/metrics", metrics_endpoint)
    return app
