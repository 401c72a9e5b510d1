"""Run `kueue-webhook serve` in-process against any API server given by a kubeconfig (fake or real).

Integration tests (on tests/fakeapi) and e2e tests (on a real cluster) share this harness so they exercise
exactly the production wiring: ``Controller`` + ``WebhookServer`` + ``create_app``, as ``serve`` builds
them, only with short lease timings so failover tests take seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from webhook.certs import CertificateSet, ca_bundle, ensure_certificates
from webhook.control.controller import Controller
from webhook.control.kinds import NAMESPACES
from webhook.control.kube import ApiError, KubeClient
from webhook.server import WebhookServer, create_app

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTROLLER_MANIFESTS = REPO_ROOT / "manifests" / "controller"
FAST_LEASE = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.2}


@dataclass
class Replica:
    controller: Controller
    client: KubeClient
    server: WebhookServer | None
    task: asyncio.Task[None]

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.port

    async def stop(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
        if self.server is not None:
            await self.server.stop()
        await self.client.close()


def certificates(directory: Path) -> CertificateSet:
    return ensure_certificates(directory, ips=["127.0.0.1"], hosts=["localhost"])


def webhook_configurations(*, ca: str, url_base: str | None = None) -> list[dict[str, Any]]:
    """Our manifests' webhook configurations with ``caBundle`` set (and ``url`` instead of the Service)."""
    out = []
    for name in ("mutatingwebhookconfiguration.yaml", "validatingwebhookconfiguration.yaml"):
        doc = yaml.safe_load((CONTROLLER_MANIFESTS / name).read_text())
        for hook in doc["webhooks"]:
            hook["clientConfig"]["caBundle"] = ca
            if url_base is not None:
                path = hook["clientConfig"].pop("service")["path"]
                hook["clientConfig"]["url"] = f"{url_base}{path}"
        out.append(doc)
    return out


async def start_replica(
    kubeconfig: Path,
    *,
    identity: str = "replica-a",
    tls: CertificateSet | None = None,
    leader_election: bool = True,
    namespace: str = "kueue-system",
    status_interval: float = 0.05,
    wait_ready: bool = True,
) -> Replica:
    """Start one replica; with ``tls`` it also serves the webhook on 127.0.0.1 (an ephemeral port)."""
    client = await KubeClient.connect(kubeconfig=str(kubeconfig))
    await ensure_namespace(client, namespace)
    controller = Controller(
        client=client,
        namespace=namespace,
        identity=identity,
        leader_election=leader_election,
        status_interval=status_interval,
        watch_timeout_seconds=60,
        **FAST_LEASE,
    )
    server = None
    if tls is not None:
        app = create_app(
            view=controller.store,
            config=controller.configuration,
            registry=controller.metrics.registry,
            ready=controller.ready,
        )
        server = WebhookServer(app, cert_file=tls.cert, key_file=tls.key, host="127.0.0.1", port=0)
        await server.start()
    task = asyncio.create_task(controller.run(), name=f"controller-{identity}")
    replica = Replica(controller, client, server, task)
    if wait_ready:
        await asyncio.wait_for(controller.synced.wait(), 20)
    return replica


async def ensure_namespace(client: KubeClient, name: str) -> None:
    """The install creates ``kueue-system``; tests that skip the install create it here."""
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    try:
        await client.create(NAMESPACES, body)
    except ApiError as exc:
        if exc.status != 409:
            raise


@contextlib.asynccontextmanager
async def replica(kubeconfig: Path, **kwargs: Any) -> AsyncIterator[Replica]:
    started = await start_replica(kubeconfig, **kwargs)
    try:
        yield started
    finally:
        await started.stop()


def tls_bundle(tls: CertificateSet) -> str:
    return ca_bundle(tls)
