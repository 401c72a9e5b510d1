"""A leader whose event loop stalls past its renew deadline admits nothing until it has renewed, on a real
control plane.

``KUEUE_E2E_KUBECONFIG`` names the cluster (the Kueue CRDs installed). One replica runs in-process with short
lease timings; a store listener blocks its event loop past the renew deadline the moment a new Workload
appears, with that Workload's admission about to be decided. etcd orders every write with one
resourceVersion, so watching the Lease and the Workloads tells the order the API server applied them in:
the admission must come after a renewal the replica sent once the stall was over, never before.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kueue_webhook.control.cache.store import Change
from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.kinds import (
    JOBS,
    LEASES,
    WORKLOADS,
    Kind,
)
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER
from tests.e2e.support import leading_team_queue
from tests.support.replica import FAST_LEASE, Replica

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, Any]
HANG = 120.0  # seconds: a bound on a hang, never a pace
STALL = FAST_LEASE["renew_deadline"] + 0.5


def reserved(workload: JSON) -> bool:
    return any(
        c.get("type") == "QuotaReserved" and c.get("status") == "True"
        for c in (workload.get("status") or {}).get("conditions") or []
    )


def renewed_at(lease: JSON) -> datetime:
    return datetime.strptime(lease["spec"]["renewTime"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


class Watched:
    """Every event of some watches, (resourceVersion, object), in arrival order."""

    def __init__(self) -> None:
        self.events: list[tuple[int, JSON]] = []

    async def follow(self, client: KubeClient, kind: Kind, namespace: str, since: str) -> None:
        async for event in client.watch(
            kind, namespace=namespace, resource_version=since, timeout_seconds=600
        ):
            if event.get("type") != "BOOKMARK":
                obj = event["object"]
                self.events.append((int(obj["metadata"]["resourceVersion"]), obj))


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[KubeClient, Replica, str]]:
    async with leading_team_queue(Path(KUBECONFIG), "e2e-stall") as found:
        yield found


async def test_a_leader_stalled_past_its_renew_deadline_admits_only_after_renewing(
    cluster: tuple[KubeClient, Replica, str],
) -> None:
    client, running, ns = cluster
    _, workloads_since = await client.list_all(WORKLOADS, namespace=ns)
    _, leases_since = await client.list_all(LEASES, namespace="kueue-system")
    watched = Watched()
    watches = [
        asyncio.create_task(watched.follow(client, WORKLOADS, ns, workloads_since)),
        asyncio.create_task(watched.follow(client, LEASES, "kueue-system", leases_since)),
    ]
    stall_over: list[datetime] = []

    def stall_once_the_workload_is_queued(change: Change) -> None:
        if change.kind is WORKLOADS and change.old is None and change.key[0] == ns and not stall_over:
            time.sleep(STALL)  # the stall itself: blocks the replica's event loop, no tick can run
            stall_over.append(datetime.now(UTC))

    running.controller.store.subscribe(stall_once_the_workload_is_queued)
    container = {"name": "work", "image": "busybox:1.36", "resources": {"requests": {"cpu": "1"}}}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "stalled", "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "e2e"}},
        "spec": {
            "suspend": True,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    }
    try:
        await client.create(JOBS, job, namespace=ns)
        async with asyncio.timeout(HANG):
            while not any(obj.get("kind") == "Workload" and reserved(obj) for _, obj in watched.events):
                await asyncio.sleep(0.2)  # polling what the watches recorded, which raise no event
    finally:
        for task in watches:
            task.cancel()
    assert stall_over, "the replica's store never saw the Workload"
    admitted = min(rv for rv, obj in watched.events if obj.get("kind") == "Workload" and reserved(obj))
    renewals_after_the_stall = [
        rv
        for rv, obj in watched.events
        if obj.get("kind") == "Lease"
        and obj["metadata"]["name"] == "kueue-webhook-leader"
        and obj["spec"].get("holderIdentity") == running.controller.identity
        and renewed_at(obj) >= stall_over[0]
    ]
    assert renewals_after_the_stall, "the admission landed before any renewal sent after the stall"
    # the deadline passed during the stall: the admission waited for a renewal sent after it
    assert admitted > min(renewals_after_the_stall)
