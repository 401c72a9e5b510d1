"""Run `kueue-webhook serve` in-process against any API server given by a kubeconfig (fake or real).

Integration tests (on tests/fakeapi) and e2e tests (on a real cluster) share this harness so they exercise
exactly the production wiring: ``kueue_webhook.control.replica.wiring.build``, which ``serve`` calls too,
only with
short lease timings so failover tests take seconds, and an ephemeral port.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import NAMESPACES
from kueue_webhook.control.multikueue.dispatcher import DispatchSettings
from kueue_webhook.control.multikueue.workers import WorkerClusters
from kueue_webhook.control.replica.controller_settings import ControllerSettings
from kueue_webhook.control.replica.wiring import Listen, Replica, build
from kueue_webhook.http.certs import CertificateSet, ca_bundle, ensure_certificates

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTROLLER_MANIFESTS = REPO_ROOT / "manifests" / "controller"
FAST_LEASE = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.2}


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
    workers: WorkerClusters | None = None,
    multikueue: DispatchSettings | None = None,
    settings: Mapping[str, Any] | None = None,
) -> Replica:
    """Start one replica; with ``tls`` it also serves the webhook on 127.0.0.1 (an ephemeral port)."""
    listen = None if tls is None else Listen(cert_file=tls.cert, key_file=tls.key, host="127.0.0.1", port=0)
    started = await build(
        kubeconfig=str(kubeconfig),
        namespace=namespace,
        identity=identity,
        settings=ControllerSettings(
            leader_election=leader_election,
            status_interval=status_interval,
            **{"watch_timeout_seconds": 60, **FAST_LEASE, **(settings or {})},
            **({"multikueue": multikueue} if multikueue is not None else {}),
        ),
        listen=listen,
        workers=workers,
    )
    await ensure_namespace(started.client, namespace)
    await started.start()
    if wait_ready:
        await asyncio.wait_for(started.controller.synced.wait(), 20)
    return started


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
