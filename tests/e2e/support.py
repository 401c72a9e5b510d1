"""What only the e2e modules need beside the shared harness (tests/support/replica.py): the visibility API
registered with a real cluster's aggregator, and a leading replica with a team queue of its own."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
)
from kueue_webhook.control.replica.wiring import Replica
from tests.support import builders
from tests.support.replica import start_replica

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
    client = await KubeClient.connect(kubeconfig=str(kubeconfig))
    running = await start_replica(kubeconfig, identity=name)
    try:
        try:
            await asyncio.wait_for(running.controller.leading.wait(), 20)
        except TimeoutError:
            pytest.skip("another controller holds kueue-system/kueue-webhook-leader on this cluster")
        await client.create(NAMESPACES, builders.namespace(name))
        flavor, cluster_queue, local_queue = builders.own_queue(
            name, name, {"cpu": "1"}, queue="e2e", namespace_selector=builders.only(name)
        )
        await client.create(RESOURCE_FLAVORS, flavor)
        await client.create(CLUSTER_QUEUES, cluster_queue)
        await client.create(LOCAL_QUEUES, local_queue, namespace=name)
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
