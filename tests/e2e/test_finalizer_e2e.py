"""A deleted Workload keeps its quota until its Job's pods are gone, on a real control plane.

``KUEUE_E2E_KUBECONFIG`` names the cluster (the Kueue CRDs installed; no kubelet needed: pods stay
Pending). The test runs one controller replica in-process, so it needs no installed kueue-webhook and is
skipped when another controller already holds the leader Lease. Job A takes the ClusterQueue's only CPU and
its pod is created; Job B waits. A's Workload is deleted: the controller suspends A, the Job controller
deletes A's pod, the finalizer goes, and only then is B admitted. The order is read from the watch
streams' resourceVersions: one etcd orders every write, so a smaller version was written earlier.

Everything lives in a fresh namespace with a uniquely named ClusterQueue and ResourceFlavor; the
controller is stopped and every Workload's finalizer stripped before the namespace is deleted, so nothing
is left behind waiting for a controller that is gone.

Deleting A's Workload while A exists makes the controller suspend A and give it a new Workload, which queues
beside B. Kueue orders Workloads of one priority by creation time, a second's precision, then by UID
(baseCompareFunc in pkg/cache/queue/cluster_queue.go; this controller by name). So that B is the older of
the two whatever their UIDs and names, A's Workload is deleted only once the API server's clock has left
the second B's was created in.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.kinds import (
    CONFIGMAPS,
    JOBS,
    WORKLOADS,
    Kind,
)
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER
from tests.e2e.support import leading_team_queue
from tests.support import builders
from tests.support.replica import Replica

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, Any]
PODS = Kind("Pod", "", "v1", "pods", namespaced=True)
FINALIZER = "kueue.x-k8s.io/resource-in-use"
HANG = 120.0  # seconds: a bound on a hang, never a pace
CLOCK_PROBE_EVERY = 0.2  # seconds between reads of the API server's clock while waiting for a second to end


class Recorded:
    """Every event of a watch, kept in arrival order, with a way to await one that matters."""

    def __init__(self) -> None:
        self.events: list[tuple[int, str, JSON]] = []
        self._changed = asyncio.Event()

    async def follow(self, client: KubeClient, kind: Kind, namespace: str, since: str) -> None:
        async for event in client.watch(
            kind, namespace=namespace, resource_version=since, timeout_seconds=600
        ):
            if event.get("type") == "BOOKMARK":
                continue
            obj = event["object"]
            self.events.append((int(obj["metadata"]["resourceVersion"]), str(event["type"]), obj))
            self._changed.set()

    async def first(self, match: Callable[[str, JSON], bool]) -> int:
        """The resourceVersion of the first event (type, object) that ``match``es, once it has arrived."""
        async with asyncio.timeout(HANG):
            while True:
                for version, kind, obj in self.events:
                    if match(kind, obj):
                        return version
                self._changed.clear()
                await self._changed.wait()


def history(*recorded: Recorded) -> str:
    """What the watches saw, in commit order, to tell why an ordering did not hold."""
    lines = []
    for version, kind, obj in sorted((e for r in recorded for e in r.events), key=lambda e: e[0]):
        meta = obj["metadata"]
        conditions = (obj.get("status") or {}).get("conditions") or []
        states = [c["type"] for c in conditions if c.get("status") == "True"]
        deleting = " deleting" if meta.get("deletionTimestamp") else ""
        lines.append(f"{version} {kind} {obj.get('kind')} {meta['name']}{deleting} {states}")
    return "\n".join(lines)


def reserved(obj: JSON) -> bool:
    return any(
        c.get("type") == "QuotaReserved" and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def owned_by(obj: JSON, job: str) -> bool:
    return any(ref.get("name") == job for ref in obj["metadata"].get("ownerReferences") or [])


def cpu_job(name: str, namespace: str) -> JSON:
    work = builders.container(name="work", image="busybox:1.36", resources=builders.cpu_requests("1"))
    return builders.job(
        name, namespace, queue="e2e", pod_spec={"restartPolicy": "Never", "containers": [work]}
    )


async def after_the_second_of(client: KubeClient, namespace: str, timestamp: str) -> None:
    """Return once an object created now gets a later creationTimestamp than ``timestamp``: the API
    server's clock, read from ConfigMaps created to read it (its seconds are the only clock a test shares
    with it)."""
    async with asyncio.timeout(HANG):
        while True:
            probe = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "clock-"}}
            created = await client.create(CONFIGMAPS, probe, namespace=namespace)
            await client.delete(CONFIGMAPS, name=created["metadata"]["name"], namespace=namespace)
            # RFC 3339 in UTC, to the second: text order is time order
            if created["metadata"]["creationTimestamp"] > timestamp:
                return
            await asyncio.sleep(CLOCK_PROBE_EVERY)  # a clock to pass, not an event to await


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[KubeClient, Replica, str]]:
    async with leading_team_queue(Path(KUBECONFIG), "e2e-finalizer") as found:
        yield found


async def test_deleted_workload_holds_its_quota_until_the_jobs_pod_is_gone(
    cluster: tuple[KubeClient, Replica, str],
) -> None:
    client, _, ns = cluster
    _, since = await client.list_all(WORKLOADS, namespace=ns)
    pods, workloads = Recorded(), Recorded()
    watches = [
        asyncio.create_task(pods.follow(client, PODS, ns, since)),
        asyncio.create_task(workloads.follow(client, WORKLOADS, ns, since)),
    ]
    try:
        await client.create(JOBS, cpu_job("a", ns), namespace=ns)
        await pods.first(lambda kind, pod: kind == "ADDED" and pod["metadata"]["name"].startswith("a-"))
        await client.create(JOBS, cpu_job("b", ns), namespace=ns)
        await workloads.first(lambda kind, w: owned_by(w, "b"))
        b_workload = next(w for _, _, w in workloads.events if owned_by(w, "b"))
        await after_the_second_of(client, ns, b_workload["metadata"]["creationTimestamp"])

        held = next(w for _, kind, w in workloads.events if owned_by(w, "a") and reserved(w))
        assert held["metadata"]["finalizers"] == [FINALIZER]
        await client.delete(WORKLOADS, name=held["metadata"]["name"], namespace=ns)

        b_reserved = await workloads.first(lambda kind, w: owned_by(w, "b") and reserved(w))
        uid = held["metadata"]["uid"]
        a_gone = await workloads.first(lambda kind, w: kind == "DELETED" and w["metadata"]["uid"] == uid)
        # the pod stops counting as active (Kueue's IsActive reads the Job's status.active) once it is being
        # deleted: the Job controller's own pod finalizer may keep the object a moment longer
        pod_stopping = await pods.first(
            lambda kind, pod: (
                pod["metadata"]["name"].startswith("a-")
                and (kind == "DELETED" or bool(pod["metadata"].get("deletionTimestamp")))
            )
        )
        marked = await workloads.first(
            lambda kind, w: w["metadata"]["uid"] == uid and bool(w["metadata"].get("deletionTimestamp"))
        )
        assert marked < pod_stopping < a_gone < b_reserved, history(pods, workloads)
        job_a = await client.get(JOBS, name="a", namespace=ns)
        assert job_a["spec"]["suspend"] is True
    finally:
        for watch in watches:
            watch.cancel()
        await asyncio.gather(*watches, return_exceptions=True)
