"""Admission and conversion transport: a bounded body in, the pure rule, a review out.

The server does only transport. It reads at most :data:`MAX_BODY_BYTES`, hands the body to
:func:`webhook.admission.review.parse_review`, runs the rule that :data:`webhook.admission.routes.ROUTES`
names for the path, and writes the AdmissionReview back. The rules are synchronous and take microseconds,
so they run inline on the event loop: no thread hop, no lock, and the configuration and cluster view are
read once per request through the callables the controller passes in (a live ConfigMap reload or informer
update is seen by the next request).

``/convert`` answers CRD ConversionReviews (kueue.x-k8s.io v1beta1 <-> v1beta2, see
:mod:`webhook.api.conversion_review`) with the same transport rules.

Answers, in order of preference: a review response (allowed or denied, with a status kube-apiserver shows to
the user); HTTP 400 with a ``Status`` body when the body is not an AdmissionReview; 413 above the size bound;
404/405 for unknown paths and methods. A bug in a rule is answered as a denial with code 500 and logged with
its traceback; the client never sees one. Every denial is logged once with its reason.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Histogram

from webhook.admission.review import AdmissionRequest, ReviewError, Verdict, parse_review, render_response
from webhook.admission.routes import ROUTES, Handler
from webhook.admission.view import ClusterView
from webhook.api.config import Configuration
from webhook.api.conversion_review import ConversionReviewError, answer_review
from webhook.http.responses import JSON_CONTENT_TYPE, status_response

__all__ = ["MAX_BODY_BYTES", "AdmissionMetrics", "OwnerResolver", "add_admission_routes"]

MAX_BODY_BYTES = 3 * 1024 * 1024
log = logging.getLogger("kueue_webhook.admission")

#: the request, the configuration in force and the view in; a view that also answers the request's owners out
OwnerResolver = Callable[[AdmissionRequest, Configuration, ClusterView], Awaitable[ClusterView]]

_LATENCY_BUCKETS = (0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5)


class AdmissionMetrics:
    """``kueue_webhook_admission_requests_total`` and ``kueue_webhook_admission_duration_seconds``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "kueue_webhook_admission_requests_total",
            "Admission reviews answered, by webhook path, verdict and status code.",
            ("path", "allowed", "code"),
            registry=registry,
        )
        self.duration = Histogram(
            "kueue_webhook_admission_duration_seconds",
            "Time from request received to response ready, by webhook path.",
            ("path",),
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )


def add_admission_routes(
    app: web.Application,
    *,
    view: ClusterView,
    config: Callable[[], Configuration],
    metrics: AdmissionMetrics,
    owners: OwnerResolver | None = None,
) -> None:
    """Every path of :data:`ROUTES` and ``/convert``, as POST; ``owners``, when given, is awaited before a
    rule runs (the owner lookups at the edge, ``webhook.control.owner_lookup``)."""

    def endpoint(path: str, handler: Handler) -> Callable[[web.Request], Any]:
        async def admit(request: web.Request) -> web.Response:
            started = time.perf_counter()
            response = await _admit(request, path, handler)
            metrics.duration.labels(path).observe(time.perf_counter() - started)
            return response

        return admit

    async def _admit(request: web.Request, path: str, handler: Handler) -> web.Response:
        body = await _json_body(request, path)
        if isinstance(body, web.Response):
            return body
        try:
            review = parse_review(body)
        except ReviewError as exc:
            return _http_error(path, 400, "BadRequest", str(exc))
        configuration = config()
        cluster = view if owners is None else await owners(review, configuration, view)
        try:
            verdict = handler(review, config=configuration, view=cluster)
        except Exception:
            log.exception(
                "admission rule failed",
                extra={
                    "path": path,
                    "uid": review.uid,
                    "kind": str(review.kind),
                    "operation": review.operation,
                },
            )
            verdict = Verdict.deny(
                f"internal error evaluating the admission rules for {review.kind}; see the webhook logs "
                f"(uid {review.uid})",
                code=500,
                reason="InternalError",
            )
        if not verdict.allowed:
            log.info(
                "admission denied",
                extra={
                    "path": path,
                    "uid": review.uid,
                    "kind": review.kind.kind,
                    "namespace": review.namespace,
                    "object": review.name,
                    "operation": review.operation,
                    "user": review.username,
                    "code": verdict.code,
                    "reason": verdict.message,
                },
            )
        metrics.requests.labels(path, "true" if verdict.allowed else "false", str(verdict.code)).inc()
        return web.Response(body=render_response(review.uid, verdict), content_type=JSON_CONTENT_TYPE)

    async def _json_body(request: web.Request, path: str) -> bytes | web.Response:
        """The body of a review POST, or the error answer when it is not JSON or too large."""
        if request.content_type != JSON_CONTENT_TYPE:
            return _http_error(
                path,
                400,
                "BadRequest",
                f"Content-Type must be {JSON_CONTENT_TYPE}, got {request.content_type!r}",
            )
        try:
            return await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _http_error(
                path, 413, "RequestEntityTooLarge", f"request body exceeds {MAX_BODY_BYTES} bytes"
            )

    def _http_error(path: str, code: int, reason: str, message: str) -> web.Response:
        metrics.requests.labels(path, "false", str(code)).inc()
        log.info("admission request refused", extra={"path": path, "code": code, "reason": message})
        return status_response(code, reason, message)

    async def convert(request: web.Request) -> web.Response:
        # CRD conversion (ConversionReview v1): the same transport rules as the admission paths.
        path = "/convert"
        started = time.perf_counter()
        try:
            body = await _json_body(request, path)
            if isinstance(body, web.Response):
                return body
            try:
                answer = answer_review(body)
            except ConversionReviewError as exc:
                return _http_error(path, 400, "BadRequest", str(exc))
            metrics.requests.labels(path, "true", "200").inc()
            return web.Response(body=answer, content_type=JSON_CONTENT_TYPE)
        finally:
            metrics.duration.labels(path).observe(time.perf_counter() - started)

    for path, handler in ROUTES.items():
        app.router.add_post(path, endpoint(path, handler))
    app.router.add_post("/convert", convert)
