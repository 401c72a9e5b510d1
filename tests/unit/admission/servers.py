"""A webhook served over real TLS on 127.0.0.1 with freshly generated certificates, for the server tests."""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration
from kueue_webhook.http.app import create_app
from kueue_webhook.http.certs import CertificateSet, ensure_certificates
from kueue_webhook.http.server import WebhookServer
from kueue_webhook.http.visibility import Visibility
from tests.unit.admission.golden import GOLDEN


@dataclass
class Webhook:
    """A running server plus the knobs tests turn: the cluster view, the configuration, readiness."""

    server: WebhookServer
    certs: CertificateSet
    view: StaticClusterView
    registry: CollectorRegistry
    config: list[Configuration] = field(default_factory=lambda: [Configuration()])
    ready: list[bool] = field(default_factory=lambda: [True])

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server.port}"

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.certs.ca_cert))


def make_certs(directory: Path) -> CertificateSet:
    return ensure_certificates(directory, ips=["127.0.0.1"], hosts=["localhost"])


@asynccontextmanager
async def running_webhook(
    directory: Path, *, reload_interval: float = 0.05, visibility: Visibility | None = None
) -> AsyncIterator[Webhook]:
    certs = make_certs(directory)
    view = StaticClusterView(
        namespaces={"golden-hooked": {"kubernetes.io/metadata.name": "golden-hooked"}},
        local_queues={"golden-hooked": {"team-a-gpu"}, "golden": {"team-a-gpu"}},
    )
    registry = CollectorRegistry()
    config = [Configuration()]
    ready = [True]
    app = create_app(
        view=view,
        config=lambda: config[0],
        registry=registry,
        ready=lambda: ready[0],
        visibility=visibility,
    )
    server = WebhookServer(
        app,
        cert_file=certs.cert,
        key_file=certs.key,
        host="127.0.0.1",
        port=0,
        reload_interval=reload_interval,
    )
    await server.start()
    try:
        yield Webhook(server, certs, view, registry, config, ready)
    finally:
        await server.stop()


@contextmanager
def webhook_in_thread(directory: Path, *, visibility: Visibility | None = None) -> Iterator[Webhook]:
    """The same server on its own event loop thread, for synchronous (hypothesis) tests."""
    loop = asyncio.new_event_loop()
    started: list[Webhook] = []
    done = threading.Event()
    stop = asyncio.Event()

    async def main() -> None:
        async with running_webhook(directory, visibility=visibility) as webhook:
            started.append(webhook)
            done.set()
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    assert done.wait(timeout=30), "webhook did not start"
    try:
        yield started[0]
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=30)
        loop.close()


def golden_object(name: str) -> dict[str, Any]:
    """The object the API server returned in ``<name>.json`` (a create capture)."""
    body: dict[str, Any] = json.loads((GOLDEN / f"{name}.json").read_text())["response"]["body"]
    return body


def review_for(
    obj: dict[str, Any], *, operation: str = "CREATE", old: dict[str, Any] | None = None, uid: str = "u-1"
) -> dict[str, Any]:
    group, _, version = obj["apiVersion"].rpartition("/")
    meta = obj.get("metadata", {})
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": group, "version": version, "kind": obj["kind"]},
            "resource": {"group": group, "version": version, "resource": obj["kind"].lower() + "s"},
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace", ""),
            "operation": operation,
            "userInfo": {"username": "admin", "groups": ["system:masters"]},
            "object": obj,
            "oldObject": old,
            "dryRun": False,
        },
    }
