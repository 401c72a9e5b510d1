"""Admission and conversion transport: a bounded body in, the pure rule, a review out.

The server does only transport. It reads at most :data:`MAX_BODY_BYTES` (kube-apiserver's own limit), hands
the body to :func:`kueue_webhook.admission.review.parse_review` (which measures it before decoding it, see
:mod:`kueue_webhook.api.bounds`), runs the rule that :data:`kueue_webhook.admission.routes.ROUTES` names for
the path,
and writes the AdmissionReview back. The configuration and cluster view are read once per request through
the callables the controller passes in (a live ConfigMap reload or informer update is seen by the next
request).

Where the work runs is :mod:`kueue_webhook.http.limits`' decision: an ordinary review (a few KiB) is answered
on
the event loop in microseconds; a review with a large body is answered on the worker thread, whose reads of
the cluster view are run on the loop (the view is the informers' store, which only the loop may touch); a
``/convert`` with a large body or a large topology expansion is answered in the worker process
(:func:`conversion_answer`). So a request can neither stall the loop (the probes, the other reviews, the
controller) nor, through the bounds, take unbounded time or memory off it.

``/convert`` answers CRD ConversionReviews (kueue.x-k8s.io v1beta1 <-> v1beta2, see
:mod:`kueue_webhook.api.conversion_review`) with the same transport rules; a conversion that would expand
beyond
its budget is answered with a ``Failure`` result saying so, which kube-apiserver shows to the client.

Answers, in order of preference: a review response (allowed or denied, with a status kube-apiserver shows to
the user); an HTTP ``Status`` body: 400 when the body is not a review or is beyond the bounds, 413 above the
size bound, 429 (with ``Retry-After``) when too many large requests are already being answered; 404/405 for
unknown paths and methods. A bug in a rule is answered as a denial with code 500 and logged with its
traceback; the client never sees one. Every denial is logged once with its reason.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import orjson
from aiohttp import hdrs, web
from prometheus_client import CollectorRegistry, Counter, Histogram

from kueue_webhook.admission.review import (
    AdmissionRequest,
    ReviewError,
    Verdict,
    parse_review,
    render_response,
)
from kueue_webhook.admission.routes import ROUTES, Handler
from kueue_webhook.admission.view import ClusterView
from kueue_webhook.api.bounds import MAX_BODY_BYTES, shown
from kueue_webhook.api.config import Configuration
from kueue_webhook.api.conversion_review import ConversionReviewError, answer_review, expands_at_most
from kueue_webhook.api.integrations.owners import OwnerAnswer
from kueue_webhook.http.limits import (
    BODY_READ_SECONDS,
    INLINE_BODY_BYTES,
    INLINE_DOMAINS,
    Busy,
    OffLoop,
    runs_inline,
)
from kueue_webhook.http.responses import JSON_CONTENT_TYPE, send_json, status_response

__all__ = ["MAX_BODY_BYTES", "AdmissionMetrics", "OwnerResolver", "add_admission_routes"]
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


#: a read of the cluster view from the worker waits at most this long for the loop (it takes microseconds)
_VIEW_READ_SECONDS = 5.0


class _Refusal(Exception):
    """An HTTP ``Status`` answer decided while reading or parsing the body."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message


class _LoopView:
    """The cluster view for a rule running on the worker thread: each read runs on the event loop (the
    informers' store is only consistent there) and the worker waits for its answer."""

    def __init__(self, view: ClusterView, loop: asyncio.AbstractEventLoop) -> None:
        self._view = view
        self._loop = loop

    def _on_loop(self, read: Callable[[], Any]) -> Any:
        async def call() -> Any:
            return read()

        return asyncio.run_coroutine_threadsafe(call(), self._loop).result(timeout=_VIEW_READ_SECONDS)

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        labels = self._on_loop(lambda: self._view.namespace_labels(namespace))
        return None if labels is None else dict(labels)

    def local_queue_names(self, namespace: str) -> Sequence[str]:
        return list(self._on_loop(lambda: self._view.local_queue_names(namespace)))

    def dispatches_to_workers(self, namespace: str, local_queue: str) -> bool:
        return bool(self._on_loop(lambda: self._view.dispatches_to_workers(namespace, local_queue)))

    def has_workload_priority_class(self, name: str) -> bool:
        return bool(self._on_loop(lambda: self._view.has_workload_priority_class(name)))

    def workload(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        found: Mapping[str, Any] | None = self._on_loop(lambda: self._view.workload(namespace, name))
        return found

    def owner(self, namespace: str, api_version: str, kind: str, name: str) -> OwnerAnswer:
        found: OwnerAnswer = self._on_loop(lambda: self._view.owner(namespace, api_version, kind, name))
        return found


#: how :func:`conversion_answer` marks a refusal (an HTTP Status) apart from a ConversionReview
_REFUSED = b"refused:"


def conversion_answer(body: bytes) -> bytes:
    """The answer to a ``/convert`` body, computed in the worker process: the ConversionReview, or
    :data:`_REFUSED` and ``[code, reason, message]`` for an HTTP Status."""
    try:
        return answer_review(body)
    except ConversionReviewError as exc:
        return _REFUSED + orjson.dumps([exc.code, exc.reason, str(exc)])


def add_admission_routes(
    app: web.Application,
    *,
    view: ClusterView,
    config: Callable[[], Configuration],
    metrics: AdmissionMetrics,
    owners: OwnerResolver | None = None,
) -> None:
    """Every path of :data:`ROUTES` and ``/convert``, as POST; ``owners``, when given, is awaited on the
    loop between parsing a review and running its rule (the owner lookups at the edge,
    ``kueue_webhook.control.jobs.owner_lookup``)."""
    off_loop = OffLoop()

    async def close_off_loop(_: web.Application) -> None:
        off_loop.close()

    app.on_cleanup.append(close_off_loop)

    def endpoint(path: str, handler: Handler) -> Callable[[web.Request], Any]:
        async def admit(request: web.Request) -> web.Response:
            started = time.perf_counter()
            try:
                response = await _admit(request, path, handler)
            finally:
                metrics.duration.labels(path).observe(time.perf_counter() - started)
            return response

        return admit

    async def _admit(request: web.Request, path: str, handler: Handler) -> web.Response:
        """Read the body, parse it, look up the owners it claims (on the loop), and run the rule: inline
        when the body is cheap, else parse and rule each on the worker thread."""
        try:
            _check_content_type(request)
            length = request.content_length
            if length is not None and length > MAX_BODY_BYTES:
                raise _Refusal(413, "RequestEntityTooLarge", f"request body exceeds {MAX_BODY_BYTES} bytes")
            body = b""
            if length is not None and length <= INLINE_BODY_BYTES:
                body = await _read(request)
                if runs_inline(body):
                    configuration = config()
                    parsed = _parse(path, body)
                    if isinstance(parsed, _Refusal):
                        return _http_error(path, parsed.code, parsed.reason, parsed.message)
                    if isinstance(parsed, web.Response):
                        return parsed
                    cluster = view if owners is None else await owners(parsed, configuration, view)
                    return _verdict(path, handler, parsed, cluster, configuration)
            async with off_loop.slot():  # a large body is read only once it has a place in line
                if not body:
                    async with asyncio.timeout(BODY_READ_SECONDS):
                        body = await _read(request)
                configuration = config()
                large = body
                parsed = await off_loop.run(lambda: _parse(path, large))
                if isinstance(parsed, _Refusal):
                    return _http_error(path, parsed.code, parsed.reason, parsed.message)
                if isinstance(parsed, web.Response):
                    return parsed
                review = parsed
                cluster = view if owners is None else await owners(review, configuration, view)
                worker_view = _LoopView(cluster, asyncio.get_running_loop())
                return await off_loop.run(lambda: _verdict(path, handler, review, worker_view, configuration))
        except _Refusal as refusal:
            return _http_error(path, refusal.code, refusal.reason, refusal.message)
        except Busy as exc:
            return _busy(path, exc)
        except TimeoutError:
            return _timeout(path)

    def _parse(path: str, body: bytes) -> AdmissionRequest | web.Response | _Refusal:
        """The review in ``body``; a denial when it is no review but says its uid; a refusal otherwise.

        The refusal is returned, not raised: an exception carried back from the worker thread holds, through
        its traceback, the frames that decoded the body, in a reference cycle only a full garbage collection
        frees, and freeing a large decoded body there blocks the event loop for tens of milliseconds."""
        try:
            return parse_review(body)
        except ReviewError as exc:
            if exc.uid is None:
                return _Refusal(exc.code, exc.reason, str(exc))
            denial = Verdict(allowed=False, message=str(exc), code=exc.code, reason=exc.reason)
            metrics.requests.labels(path, "false", str(exc.code)).inc()
            log.info("admission request refused", extra={"path": path, "uid": exc.uid, "reason": str(exc)})
            return web.Response(body=render_response(exc.uid, denial), content_type=JSON_CONTENT_TYPE)

    def _busy(path: str, exc: Busy) -> web.Response:
        response = _http_error(path, 429, "TooManyRequests", str(exc))
        response.headers["Retry-After"] = "1"
        return response

    def _timeout(path: str) -> web.Response:
        return _http_error(
            path, 408, "Timeout", f"request body not received within {BODY_READ_SECONDS:g} seconds"
        )

    def _verdict(
        path: str, handler: Handler, review: Any, rule_view: ClusterView, configuration: Configuration
    ) -> web.Response:
        try:
            verdict = handler(review, config=configuration, view=rule_view)
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

    def _check_content_type(request: web.Request) -> None:
        # the media type read from the header directly: aiohttp's parser (``request.content_type``)
        # builds a class for each value it has not seen lately, garbage for the cyclic collector
        raw = request.headers.get(hdrs.CONTENT_TYPE, "")
        if raw.partition(";")[0].strip().lower() != JSON_CONTENT_TYPE:
            raise _Refusal(400, "BadRequest", f"Content-Type must be {JSON_CONTENT_TYPE}, got {shown(raw)}")

    async def _read(request: web.Request) -> bytes:
        """The body of a review POST, refused above the size bound."""
        try:
            return await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise _Refusal(
                413, "RequestEntityTooLarge", f"request body exceeds {MAX_BODY_BYTES} bytes"
            ) from None

    def _http_error(path: str, code: int, reason: str, message: str) -> web.Response:
        metrics.requests.labels(path, "false", str(code)).inc()
        log.info("admission request refused", extra={"path": path, "code": code, "reason": message})
        return status_response(code, reason, message)

    async def convert(request: web.Request) -> web.StreamResponse:
        # CRD conversion (ConversionReview v1): the same transport rules as the admission paths; inline when
        # small, else in the worker process (a compressed topology assignment expands; no view is needed)
        path = "/convert"
        started = time.perf_counter()
        try:
            _check_content_type(request)
            if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
                raise _Refusal(413, "RequestEntityTooLarge", f"request body exceeds {MAX_BODY_BYTES} bytes")
            body = b""
            if request.content_length is not None and request.content_length <= INLINE_BODY_BYTES:
                body = await _read(request)
            if body and runs_inline(body) and expands_at_most(body, INLINE_DOMAINS):
                answer = conversion_answer(body)  # an ordinary object: microseconds
            else:
                async with off_loop.slot():
                    if not body:
                        async with asyncio.timeout(BODY_READ_SECONDS):
                            body = await _read(request)
                    answer = await off_loop.run_in_process(conversion_answer, body)
            if answer.startswith(_REFUSED):
                code, reason, message = orjson.loads(answer[len(_REFUSED) :])
                raise _Refusal(code, reason, message)
            metrics.requests.labels(path, "true", "200").inc()
            return await send_json(request, answer)
        except _Refusal as refusal:
            return _http_error(path, refusal.code, refusal.reason, refusal.message)
        except Busy as exc:
            return _busy(path, exc)
        except TimeoutError:
            return _timeout(path)
        except BrokenProcessPool:
            log.exception("conversion worker process died", extra={"path": path})
            return _http_error(
                path, 503, "ServiceUnavailable", "the conversion worker stopped; retry (it is restarted)"
            )
        finally:
            metrics.duration.labels(path).observe(time.perf_counter() - started)

    for path, handler in ROUTES.items():
        app.router.add_post(path, endpoint(path, handler))
    app.router.add_post("/convert", convert)
