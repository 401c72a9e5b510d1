"""The admission webhook's HTTPS server: HTTP in, pure admission rules, HTTP out.

The server does only transport. It reads at most 3 MiB, hands the body to
:func:`webhook.admission.review.parse_review`, runs the rule that :data:`webhook.admission.routes.ROUTES`
names for the path, and writes the AdmissionReview back. The rules are synchronous and take microseconds,
so they run inline on the event loop: no thread hop, no lock, and the configuration and cluster view are
read once per request through the callables the controller passes in (a live ConfigMap reload or informer
update is seen by the next request).

``/convert`` answers CRD ConversionReviews (kueue.x-k8s.io v1beta1 <-> v1beta2, see
:mod:`webhook.api.conversion_review`) with the same transport rules.

Answers, in order of preference: a review response (allowed or denied, with a status kube-apiserver shows to
the user); HTTP 400 with a ``Status`` body when the body is not an AdmissionReview; 413 above 3 MiB; 404/405
for unknown paths and methods. A bug in a rule is answered as a denial with code 500 and logged with its
traceback; the client never sees one.

TLS is 1.2 or newer. The certificate and key are reloaded when their files change (a Secret volume update,
``kueue-webhook certs`` rotating them): the files are polled, the new pair is validated in a scratch context,
and only a good pair is loaded into the live context, so a half-written rotation never breaks handshakes.

The same server answers Kueue's visibility API (``visibility.kueue.x-k8s.io/v1beta2``, see
``webhook.core.visibility``) under ``/apis/``, for the kube-apiserver aggregator (an APIService pointing at
this Service) or any client. The leader answers from the scheduler's queues; a replica that does not lead
holds no queues and answers 503 ``ServiceUnavailable`` saying so (with ``Retry-After``), while discovery is
answered by every replica so the APIService stays Available. No client certificate is asked for:
authentication and RBAC (Kueue's ClusterRoles on ``clusterqueues/pendingworkloads`` and
``localqueues/pendingworkloads``) are enforced by kube-apiserver before it proxies; the aggregator's
``X-Remote-User`` header is logged, not trusted, and anyone reaching the pod directly can read pending
Workloads' names and ranks.

``/healthz`` is always 200 while the loop runs; ``/readyz`` is 200 once the certificate is loaded and the
``ready`` callable (the controller's cache sync) says so; ``/metrics`` serves the registry it was given, to
which this module adds ``kueue_webhook_admission_requests_total`` and
``kueue_webhook_admission_duration_seconds``. Logs are JSON lines; every denial is logged once with its
reason.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
import ssl
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

from webhook import runtime
from webhook.admission.review import AdmissionRequest, ReviewError, Verdict, parse_review, render_response
from webhook.admission.routes import ROUTES, Handler
from webhook.admission.view import ClusterView, StaticClusterView
from webhook.api.config import Configuration
from webhook.api.conversion_review import ConversionReviewError, answer_review
from webhook.core import visibility as vis
from webhook.core.view import SchedulerView

__all__ = [
    "DEFAULT_PORT",
    "MAX_BODY_BYTES",
    "CertificateReloader",
    "JsonFormatter",
    "Visibility",
    "WebhookServer",
    "create_app",
    "server_ssl_context",
]

DEFAULT_PORT = 9443
MAX_BODY_BYTES = 3 * 1024 * 1024
log = logging.getLogger("kueue_webhook.admission")

CERTIFICATE_LOADED = web.AppKey("certificate_loaded", list[bool])
_JSON = "application/json"
_LATENCY_BUCKETS = (0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5)


class _Metrics:
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


def _status_body(code: int, reason: str, message: str) -> bytes:
    return orjson.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    )


#: the request, the configuration in force and the view in; a view that also answers the request's owners out
OwnerResolver = Callable[[AdmissionRequest, Configuration, ClusterView], Awaitable[ClusterView]]


@dataclass(frozen=True, slots=True)
class Visibility:
    """What the visibility API reads: the scheduler's queues while this replica leads (None while it does
    not), the Workloads' metadata from the store, and this replica's name for the not-leader answer."""

    scheduler: Callable[[], SchedulerView | None]
    workload: vis.WorkloadLookup
    identity: str = ""


def create_app(
    *,
    view: ClusterView,
    config: Callable[[], Configuration],
    registry: CollectorRegistry,
    ready: Callable[[], bool] = lambda: True,
    visibility: Visibility | None = None,
    owners: OwnerResolver | None = None,
) -> web.Application:
    """The aiohttp application; serve it with :class:`WebhookServer` (or any aiohttp runner, for tests).
    ``owners`` looks up, before a rule runs, the owners a request's object claims that ``view`` cannot
    answer for (``webhook.control.owner_lookup``)."""
    metrics = _Metrics(registry)
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app[CERTIFICATE_LOADED] = [False]

    def endpoint(path: str, handler: Handler) -> Callable[[web.Request], Any]:
        async def admit(request: web.Request) -> web.Response:
            started = time.perf_counter()
            response = await _admit(request, path, handler, view=view, config=config)
            metrics.duration.labels(path).observe(time.perf_counter() - started)
            return response

        return admit

    async def _admit(
        request: web.Request,
        path: str,
        handler: Handler,
        *,
        view: ClusterView,
        config: Callable[[], Configuration],
    ) -> web.Response:
        body = await _json_body(request, path)
        if isinstance(body, web.Response):
            return body
        try:
            review = parse_review(body)
        except ReviewError as exc:
            return _http_error(path, 400, "BadRequest", str(exc))
        configuration = config()
        if owners is not None:
            view = await owners(review, configuration, view)
        try:
            verdict = handler(review, config=configuration, view=view)
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
        return web.Response(body=render_response(review.uid, verdict), content_type=_JSON)

    async def _json_body(request: web.Request, path: str) -> bytes | web.Response:
        """The body of a review POST, or the error answer when it is not JSON or too large."""
        if request.content_type != _JSON:
            return _http_error(
                path, 400, "BadRequest", f"Content-Type must be {_JSON}, got {request.content_type!r}"
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
        return web.Response(status=code, body=_status_body(code, reason, message), content_type=_JSON)

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
            return web.Response(body=answer, content_type=_JSON)
        finally:
            metrics.duration.labels(path).observe(time.perf_counter() - started)

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        if not app[CERTIFICATE_LOADED][0]:
            return web.Response(status=503, text="serving certificate not loaded yet")
        if not ready():
            return web.Response(status=503, text="caches not synced yet")
        return web.Response(text="ok")

    async def metrics_endpoint(_: web.Request) -> web.Response:
        response = web.Response(body=generate_latest(registry))
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    for path, handler in ROUTES.items():
        app.router.add_post(path, endpoint(path, handler))
    app.router.add_post("/convert", convert)
    if visibility is not None:
        _add_visibility_routes(app, visibility)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics_endpoint)
    return app


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(body), content_type=_JSON)


def _add_visibility_routes(app: web.Application, visibility: Visibility) -> None:
    """Discovery and the two pendingworkloads reads of ``visibility.kueue.x-k8s.io/v1beta2``."""
    base = f"/apis/{vis.GROUP_VERSION}"

    def answer(
        request: web.Request, read: Callable[[SchedulerView, vis.Page], Any], kind: str
    ) -> web.Response:
        try:
            page = vis.parse_page(request.query)
        except vis.VisibilityError as exc:
            return _json(orjson.loads(_status_body(400, "BadRequest", str(exc))), 400)
        scheduler = visibility.scheduler()
        log.debug(
            "visibility request", extra={"path": request.path, "user": request.headers.get("X-Remote-User")}
        )
        if scheduler is None:
            message = (
                f"kueue-webhook replica {visibility.identity or '(unnamed)'} is not the leader: only the "
                "leader holds the queues; retry (the Service may send the next request to the leader)"
            )
            response = _json(orjson.loads(_status_body(503, "ServiceUnavailable", message)), 503)
            response.headers["Retry-After"] = "1"
            return response
        summary = read(scheduler, page)
        if summary is None:
            return _json(vis.not_found(kind, request.match_info["name"]), 404)
        return _json(summary)

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
        return _json(vis.api_group_list())

    async def group(_: web.Request) -> web.Response:
        return _json(vis.api_group())

    async def resources(_: web.Request) -> web.Response:
        return _json(vis.api_resource_list())

    app.router.add_get("/apis", group_list)
    app.router.add_get(f"/apis/{vis.GROUP}", group)
    app.router.add_get(base, resources)
    app.router.add_get(f"{base}/clusterqueues/{{name}}/pendingworkloads", cluster_queue)
    app.router.add_get(f"{base}/namespaces/{{namespace}}/localqueues/{{name}}/pendingworkloads", local_queue)


def server_ssl_context(cert_file: str | os.PathLike[str], key_file: str | os.PathLike[str]) -> ssl.SSLContext:
    """A TLS 1.2+ server context for the given PEM files (raises ssl.SSLError / OSError when unusable)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    return context


class CertificateReloader:
    """Keeps ``context`` loaded with the current contents of ``cert_file``/``key_file``.

    ``generation`` counts successful loads; ``changed`` is set after each one (tests and the readiness
    probe await it instead of sleeping).
    """

    def __init__(
        self,
        *,
        context: ssl.SSLContext,
        cert_file: str | os.PathLike[str],
        key_file: str | os.PathLike[str],
        interval: float = 1.0,
    ) -> None:
        self.context = context
        self.cert_file = Path(cert_file)
        self.key_file = Path(key_file)
        self.interval = interval
        self.generation = 0
        self.changed = asyncio.Event()
        self._stamp: tuple[Any, ...] | None = None

    def _file_stamp(self) -> tuple[Any, ...]:
        stats = [path.stat() for path in (self.cert_file, self.key_file)]
        return tuple((s.st_ino, s.st_size, s.st_mtime_ns) for s in stats)

    def load_if_changed(self) -> bool:
        """Load the pair if the files changed and form a valid pair; True when a new pair is in force."""
        try:
            stamp = self._file_stamp()
        except OSError as exc:
            log.warning("serving certificate unreadable", extra={"error": str(exc)})
            return False
        if stamp == self._stamp:
            return False
        scratch = Path(tempfile.mkdtemp(prefix="kueue-webhook-tls-"))
        try:
            # snapshot both files first so the pair validated is the pair loaded, even mid-rotation
            cert_copy, key_copy = scratch / "tls.crt", scratch / "tls.key"
            cert_copy.write_bytes(self.cert_file.read_bytes())
            key_copy.touch(mode=0o600)
            key_copy.write_bytes(self.key_file.read_bytes())
            server_ssl_context(cert_copy, key_copy)
            self.context.load_cert_chain(cert_copy, key_copy)
        except (OSError, ssl.SSLError) as exc:
            log.warning(
                "serving certificate not reloaded, keeping the current one", extra={"error": str(exc)}
            )
            return False
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        self._stamp = stamp
        self.generation += 1
        log.info(
            "serving certificate loaded",
            extra={"cert_file": str(self.cert_file), "generation": self.generation},
        )
        self.changed.set()
        return True

    async def watch(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.load_if_changed()


class WebhookServer:
    """Serves an app from :func:`create_app` over TLS on ``host:port``, reloading the certificate live."""

    def __init__(
        self,
        app: web.Application,
        *,
        cert_file: str | os.PathLike[str],
        key_file: str | os.PathLike[str],
        host: str = "0.0.0.0",
        port: int = DEFAULT_PORT,
        reload_interval: float = 1.0,
    ) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self.reloader = CertificateReloader(
            context=self.context, cert_file=cert_file, key_file=key_file, interval=reload_interval
        )
        self._runner: web.AppRunner | None = None
        self._watch: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Load the certificate (raising if it is unusable) and start listening."""
        if not self.reloader.load_if_changed():
            cert, key = self.reloader.cert_file, self.reloader.key_file
            try:  # load directly to learn why, and say it with both paths
                server_ssl_context(cert, key)
            except OSError as exc:  # ssl.SSLError is an OSError too
                reason = exc.strerror or str(exc)
                raise OSError(f"serving certificate {cert} / key {key} unusable: {reason}") from exc
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self.context, backlog=1024)
        await site.start()
        addresses = self._runner.addresses
        if addresses:
            self.port = int(addresses[0][1])
        self.app[CERTIFICATE_LOADED][0] = True
        self._watch = asyncio.create_task(self.reloader.watch(), name="webhook-certificate-reload")
        log.info("webhook serving", extra={"host": self.host, "port": self.port})

    async def stop(self) -> None:
        self.app[CERTIFICATE_LOADED][0] = False
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        if self._runner is not None:
            await self._runner.cleanup()

    async def serve_forever(self) -> None:
        await self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await self.stop()


_STANDARD_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and every ``extra=`` field."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_RECORD_FIELDS:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


JsonFormatter.converter = time.gmtime


def main(argv: list[str] | None = None) -> int:
    """Serve the webhook alone (no controller): an empty cluster view and the default configuration."""
    parser = argparse.ArgumentParser(prog="python -m webhook.server", description=main.__doc__)
    parser.add_argument("--cert", default="certs/tls.crt", help="serving certificate (PEM)")
    parser.add_argument("--key", default="certs/tls.key", help="private key (PEM)")
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--port-file", help="write the bound port here once listening (for --port 0)")
    args = parser.parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    configuration = Configuration()
    app = create_app(view=StaticClusterView(), config=lambda: configuration, registry=CollectorRegistry())
    server = WebhookServer(app, cert_file=args.cert, key_file=args.key, host=args.host, port=args.port)

    async def run() -> None:
        await server.start()
        if args.port_file:
            Path(args.port_file).write_text(str(server.port))
        try:
            await asyncio.Event().wait()
        finally:
            await server.stop()

    try:
        runtime.run(run())
    except KeyboardInterrupt:
        return 0
    except (OSError, ssl.SSLError) as exc:
        print(f"kueue-webhook: cannot serve: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
