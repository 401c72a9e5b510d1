"""Serving the application over TLS, and the webhook alone as a process (``python -m
kueue_webhook.http.server``:
no controller, an empty cluster view and the default configuration; the webhook benchmark runs it so)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import ssl
import sys
from pathlib import Path

from aiohttp import web
from prometheus_client import CollectorRegistry

from kueue_webhook import runtime
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration
from kueue_webhook.http.app import CERTIFICATE_EXPIRY, CERTIFICATE_LOADED, create_app
from kueue_webhook.http.tls import CertificateReloader, server_ssl_context
from kueue_webhook.logs import RedactSecrets
from kueue_webhook.memory import freeze_survivors

__all__ = ["DEFAULT_PORT", "PlainMetricsServer", "WebhookServer", "main"]

DEFAULT_PORT = 9443
log = logging.getLogger("kueue_webhook.admission")


class WebhookServer:
    """Serves an app from :func:`create_app` over TLS on ``host:port``, reloading the certificate live.

    Clients are not asked for a certificate until :meth:`trust_client_ca` names a CA (the front proxy's);
    then one is requested, not required: kube-apiserver calls the admission webhooks without one.
    """

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
        if CERTIFICATE_EXPIRY in app:
            app[CERTIFICATE_EXPIRY].not_after = lambda: self.reloader.not_after
        self._runner: web.AppRunner | None = None
        self._watch: asyncio.Task[None] | None = None

    def trust_client_ca(self, pem: bytes) -> None:
        """Request a client certificate from now on and verify one presented against ``pem`` (added to the
        CAs given before: a TLS context cannot forget one, so the caller checks the issuer against the
        current CAs itself, :func:`kueue_webhook.http.front_proxy.verify_proxy_certificate`). A certificate
        reload
        changes only the serving pair, so this stays in force."""
        self.context.load_verify_locations(cadata=pem.decode())
        self.context.verify_mode = ssl.CERT_OPTIONAL

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


def main(argv: list[str] | None = None) -> int:
    """Serve the webhook alone (no controller): an empty cluster view and the default configuration."""
    parser = argparse.ArgumentParser(prog="python -m kueue_webhook.http.server", description=main.__doc__)
    parser.add_argument("--cert", default="certs/tls.crt", help="serving certificate (PEM)")
    parser.add_argument("--key", default="certs/tls.key", help="private key (PEM)")
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--port-file", help="write the bound port here once listening (for --port 0)")
    args = parser.parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(runtime.JsonFormatter())
    handler.addFilter(RedactSecrets())  # before any formatter: no credential reaches a line
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    configuration = Configuration()
    app = create_app(view=StaticClusterView(), config=lambda: configuration, registry=CollectorRegistry())
    server = WebhookServer(app, cert_file=args.cert, key_file=args.key, host=args.host, port=args.port)

    async def run() -> None:
        await server.start()
        freeze_survivors()
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


class PlainMetricsServer:
    """``/metrics`` over plain HTTP with no authentication, on an address of its own (host:port; port 0
    picks one)."""

    def __init__(self, app: web.Application, *, host: str, port: int) -> None:
        self.app, self.host, self.port = app, host, port
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()
        addresses = self._runner.addresses
        if addresses:
            self.port = int(addresses[0][1])
        log.info("metrics served without authentication", extra={"host": self.host, "port": self.port})

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
