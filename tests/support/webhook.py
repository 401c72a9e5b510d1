"""Our admission webhook served over TLS and registered in the fake API server with the shipped webhook
configurations (caBundle patched by ``certs``, as an install does), reading the cluster straight from the
fake instead of from the controller's informer store."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from kueue_webhook.api.config import Configuration
from kueue_webhook.api.integrations.owners import OwnerAnswer, Unresolved
from kueue_webhook.api.multikueue import MULTIKUEUE_CONTROLLER, cluster_queue_checks
from kueue_webhook.http.app import create_app
from kueue_webhook.http.ca_bundles import patch_webhook_configurations
from kueue_webhook.http.certs import ca_bundle, ensure_certificates
from kueue_webhook.http.server import WebhookServer
from tests.fakeapi import FakeApiServer

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests" / "controller"


class FakeApiView:
    """The ClusterView the controller's informer store provides, read here straight from the fake API."""

    def __init__(self, api: FakeApiServer) -> None:
        self.api = api

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        obj = self.api.get("namespaces", namespace)
        return None if obj is None else dict(obj["metadata"].get("labels") or {})

    def local_queue_names(self, namespace: str) -> Sequence[str]:
        return [q["metadata"]["name"] for q in self.api.list("localqueues", namespace)]

    def workload(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.api.get("workloads", name, namespace)

    def has_workload_priority_class(self, name: str) -> bool:
        return self.api.get("workloadpriorityclasses", name) is not None

    def dispatches_to_workers(self, namespace: str, local_queue: str) -> bool:
        queue = self.api.get("localqueues", local_queue, namespace) or {}
        cluster_queue = self.api.get("clusterqueues", str((queue.get("spec") or {}).get("clusterQueue", "")))
        return cluster_queue is not None and any(
            ((self.api.get("admissionchecks", name) or {}).get("spec") or {}).get("controllerName")
            == MULTIKUEUE_CONTROLLER
            for name in cluster_queue_checks(cluster_queue)
        )

    def owner(self, namespace: str, api_version: str, kind: str, name: str) -> OwnerAnswer:
        group = api_version.rpartition("/")[0]
        resource = f"{kind.lower()}s" + (f".{group}" if group else "")
        try:
            return self.api.get(resource, name, namespace)
        except Exception as exc:  # a resource the fake does not serve
            return Unresolved(str(exc))


@contextlib.asynccontextmanager
async def registered_webhook(
    fake_api: FakeApiServer,
    directory: Path,
    *,
    config: Callable[[], Configuration] = Configuration,
    crds: Sequence[str] = (),
) -> AsyncIterator[WebhookServer]:
    """The webhook server, its configurations applied and pointed at it (and ``crds``' conversion)."""
    certs = ensure_certificates(directory / "certs", ips=["127.0.0.1"])
    app = create_app(view=FakeApiView(fake_api), config=config, registry=CollectorRegistry())
    server = WebhookServer(app, cert_file=certs.cert, key_file=certs.key, host="127.0.0.1", port=0)
    await server.start()
    try:
        for name in ("mutatingwebhookconfiguration.yaml", "validatingwebhookconfiguration.yaml"):
            await fake_api.apply_manifests((MANIFESTS / name).read_text())
        fake_api.set_service_endpoint(
            namespace="kueue-system", name="kueue-webhook", address=f"127.0.0.1:{server.port}"
        )
        await patch_webhook_configurations(
            ca_bundle(certs),
            mutating=["kueue-webhook-mutating"],
            validating=["kueue-webhook-validating"],
            crds=crds,
            kubeconfig=str(fake_api.kubeconfig_path()),
        )
        yield server
    finally:
        await server.stop()
