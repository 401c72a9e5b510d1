"""Kueue's visibility API served by our HTTPS server from the leader's queues, read as a client reads it.

``kubectl get --raw /apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/research/pendingworkloads`` goes
through kube-apiserver's aggregator to this server (the fake API server does not aggregate, so the tests call
the server directly, over HTTPS as the aggregator does). Positions move as the queue moves, with no write to
the Workloads; a replica that does not lead says so instead of answering from queues it does not keep.
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

import aiohttp

from tests.e2e.support import certificates, replica, start_replica
from tests.fakeapi import FakeApiServer
from tests.integration.controller_harness import condition
from tests.integration.research import HANG, QUOTA, gpu_job, running, workloads_of

JSON = dict[str, Any]
BASE = "/apis/visibility.kueue.x-k8s.io/v1beta2"


async def get(port: int, ca: Path, path: str) -> tuple[int, JSON]:
    context = ssl.create_default_context(cafile=str(ca))
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"https://127.0.0.1:{port}{path}", ssl=context) as response,
    ):
        return response.status, await response.json()


def pending(fake_api: FakeApiServer, name: str) -> bool:
    found = workloads_of(fake_api, name)
    reserved = condition(found[0], "QuotaReserved") if found else None
    return reserved is not None and reserved["status"] == "False"


def owners(summary: JSON) -> list[tuple[str, int, int]]:
    """(owning Job, positionInClusterQueue, positionInLocalQueue) of each item."""
    return [
        (
            item["metadata"]["ownerReferences"][0]["name"],
            item["positionInClusterQueue"],
            item["positionInLocalQueue"],
        )
        for item in summary["items"]
    ]


async def test_pending_workloads_of_a_cluster_queue_and_a_local_queue_follow_the_queue(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    await fake_api.apply_manifests(QUOTA)
    tls = certificates(tmp_path / "tls")
    async with replica(fake_api.kubeconfig_path(), tls=tls) as serving:
        await asyncio.wait_for(serving.controller.leading.wait(), HANG)
        for name in ("j0", "j1", "j2", "j3", "j4"):
            await fake_api.create(gpu_job(name))
        await fake_api.wait_for(lambda: running(fake_api, "j0") and running(fake_api, "j1"), timeout=HANG)
        # the leader wrote their pending condition, so its queues hold them
        await fake_api.wait_for(lambda: all(pending(fake_api, n) for n in ("j2", "j3", "j4")), timeout=HANG)

        status, summary = await get(
            serving.port, tls.ca_cert, f"{BASE}/clusterqueues/research/pendingworkloads"
        )
        assert status == 200
        assert (summary["kind"], summary["apiVersion"]) == (
            "PendingWorkloadsSummary",
            "visibility.kueue.x-k8s.io/v1beta2",
        )
        assert owners(summary) == [("j2", 0, 0), ("j3", 1, 1), ("j4", 2, 2)]
        item = summary["items"][0]
        assert (item["localQueueName"], item["priority"], item["metadata"]["namespace"]) == (
            "team-a-gpu",
            0,
            "team-a",
        )
        assert item["metadata"]["ownerReferences"][0]["kind"] == "Job"

        lq = f"{BASE}/namespaces/team-a/localqueues/team-a-gpu/pendingworkloads"
        status, page = await get(serving.port, tls.ca_cert, f"{lq}?offset=1&limit=1")
        assert status == 200 and owners(page) == [("j3", 1, 1)]

        await fake_api.complete_job("team-a", "j0")
        await fake_api.wait_for(lambda: running(fake_api, "j2"), timeout=HANG)
        _, summary = await get(serving.port, tls.ca_cert, f"{BASE}/clusterqueues/research/pendingworkloads")
        assert owners(summary) == [("j3", 0, 0), ("j4", 1, 1)]


async def test_unknown_queues_bad_parameters_and_discovery(fake_api: FakeApiServer, tmp_path: Path) -> None:
    await fake_api.apply_manifests(QUOTA)
    tls = certificates(tmp_path / "tls")
    async with replica(fake_api.kubeconfig_path(), tls=tls) as serving:
        await asyncio.wait_for(serving.controller.leading.wait(), HANG)
        status, body = await get(serving.port, tls.ca_cert, f"{BASE}/clusterqueues/nope/pendingworkloads")
        assert (status, body["reason"], body["message"]) == (
            404,
            "NotFound",
            'clusterqueue.visibility.kueue.x-k8s.io "nope" not found',
        )
        status, body = await get(
            serving.port, tls.ca_cert, f"{BASE}/namespaces/team-a/localqueues/nope/pendingworkloads"
        )
        assert (status, body["reason"]) == (404, "NotFound")
        status, body = await get(
            serving.port, tls.ca_cert, f"{BASE}/clusterqueues/research/pendingworkloads?limit=ten"
        )
        assert (status, body["reason"], body["message"]) == (
            400,
            "BadRequest",
            "limit: not a whole number: 'ten'",
        )
        status, body = await get(serving.port, tls.ca_cert, BASE)
        assert status == 200 and body["kind"] == "APIResourceList"
        assert "clusterqueues/pendingworkloads" in {r["name"] for r in body["resources"]}


async def test_a_replica_that_does_not_lead_says_so_and_still_serves_discovery(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    await fake_api.apply_manifests(QUOTA)
    tls = certificates(tmp_path / "tls")
    async with replica(fake_api.kubeconfig_path(), tls=tls, identity="replica-a") as leader:
        await asyncio.wait_for(leader.controller.leading.wait(), HANG)
        standby = await start_replica(fake_api.kubeconfig_path(), tls=tls, identity="replica-b")
        try:
            assert not standby.controller.is_leader()
            path = f"{BASE}/clusterqueues/research/pendingworkloads"
            status, body = await get(standby.port, tls.ca_cert, path)
            assert (status, body["reason"]) == (503, "ServiceUnavailable")
            assert body["message"].startswith("kueue-webhook replica replica-b is not the leader")
            status, _ = await get(standby.port, tls.ca_cert, BASE)
            assert status == 200
            status, _ = await get(leader.port, tls.ca_cert, path)
            assert status == 200
        finally:
            await standby.stop()
