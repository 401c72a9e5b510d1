"""Run `kueue-webhook serve` in-process against any API server given by a kubeconfig (fake or real).

Integration tests (on tests/fakeapi) and e2e tests (on a real cluster) share this harness so they exercise
exactly the production wiring: ``webhook.control.replica.wiring.build``, which ``serve`` calls too, only with
short
lease timings so failover tests take seconds, and an ephemeral port.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.control.kube.client import ApiError, KubeClient
from webhook.control.kube.kinds import CLUSTER_QUEUES, LOCAL_QUEUES, NAMESPACES, RESOURCE_FLAVORS, WORKLOADS
from webhook.control.replica.controller import ControllerSettings
from webhook.control.replica.wiring import Listen, Replica, build
from webhook.http.certs import CertificateSet, ca_bundle, ensure_certificates

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
            watch_timeout_seconds=60,
            **FAST_LEASE,
        ),
        listen=listen,
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


#: Kueue's visibility API as an aggregated API: the APIService's fixed name
APISERVICE = "v1beta2.visibility.kueue.x-k8s.io"


def visibility_api_service(namespace: str, port: int) -> str:
    """The visibility API registered with the aggregator for a replica on this host: an ``ExternalName``
    Service naming ``localhost`` at the replica's port (this control plane has no kube-proxy) and the
    APIService pointing at it."""
    return f"""apiVersion: v1
kind: Service
metadata: {{name: kueue-webhook, namespace: {namespace}}}
spec:
  type: ExternalName
  externalName: localhost
  ports: [{{name: https, port: {port}, protocol: TCP}}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {{name: {APISERVICE}}}
spec:
  group: visibility.kueue.x-k8s.io
  version: v1beta2
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service: {{name: kueue-webhook, namespace: {namespace}, port: {port}}}
"""


@contextlib.asynccontextmanager
async def leading_team_queue(
    kubeconfig: Path, prefix: str, *, more_cluster_queues: Sequence[str] = ()
) -> AsyncIterator[tuple[KubeClient, Replica, str]]:
    """A replica that leads (the test is skipped when another controller holds the Lease), and a namespace
    ``<prefix>-<random>`` with LocalQueue ``e2e`` of a ClusterQueue of one cpu in a flavor, all named after
    the namespace, which is yielded with a client and the replica. Afterwards the replica stops, the
    Workloads' finalizers are let go (nothing is left to hold the namespace), and the namespace, the
    ClusterQueue (and the test's own ``<namespace><suffix>`` for each of ``more_cluster_queues``) and the
    flavor are deleted."""
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    group = "kueue.x-k8s.io/v1beta2"
    client = await KubeClient.connect(kubeconfig=str(kubeconfig))
    running = await start_replica(kubeconfig, identity=name)
    try:
        try:
            await asyncio.wait_for(running.controller.leading.wait(), 20)
        except TimeoutError:
            pytest.skip("another controller holds kueue-system/kueue-webhook-leader on this cluster")
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        await client.create(
            RESOURCE_FLAVORS, {"apiVersion": group, "kind": "ResourceFlavor", "metadata": {"name": name}}
        )
        quota = [{"name": name, "resources": [{"name": "cpu", "nominalQuota": "1"}]}]
        await client.create(
            CLUSTER_QUEUES,
            {
                "apiVersion": group,
                "kind": "ClusterQueue",
                "metadata": {"name": name},
                "spec": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}},
                    "resourceGroups": [{"coveredResources": ["cpu"], "flavors": quota}],
                },
            },
        )
        local_queue = {"name": "e2e", "namespace": name}
        await client.create(
            LOCAL_QUEUES,
            {
                "apiVersion": group,
                "kind": "LocalQueue",
                "metadata": local_queue,
                "spec": {"clusterQueue": name},
            },
            namespace=name,
        )
        yield client, running, name
    finally:
        await running.stop()
        with contextlib.suppress(ApiError):
            workloads, _ = await client.list_all(WORKLOADS, namespace=name)
            for workload in workloads:
                with contextlib.suppress(ApiError):
                    await client.patch(
                        WORKLOADS,
                        name=workload["metadata"]["name"],
                        namespace=name,
                        patch={"metadata": {"finalizers": None}},
                        patch_type="merge",
                    )
        doomed = [
            (NAMESPACES, name),
            (CLUSTER_QUEUES, name),
            *((CLUSTER_QUEUES, name + suffix) for suffix in more_cluster_queues),
        ]
        for kind, object_name in [*doomed, (RESOURCE_FLAVORS, name)]:
            with contextlib.suppress(ApiError):
                await client.delete(kind, name=object_name)
        await client.close()
