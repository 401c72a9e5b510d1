"""Kueue's visibility API served by our HTTPS server from a replica's queues, read as a client reads it.

``kubectl get --raw /apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/research/pendingworkloads`` goes
through kube-apiserver's aggregator to this server. The fake API server does not aggregate, so the tests play
its front proxy: they present a client certificate of the requestheader CA published in
``kube-system/extension-apiserver-authentication`` and name the user in ``X-Remote-User``; the fake answers
the replica's SubjectAccessReviews from what the test granted. Positions move as the queue moves, with no
write to the Workloads; a replica that does not lead answers the same as the leader.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kueue_webhook.control.replica.controller_settings import ControllerSettings
from kueue_webhook.control.replica.wiring import Listen, build
from tests.fakeapi import FakeApiServer
from tests.front_proxy import ClientPair
from tests.support.replica import certificates, replica
from tests.support.research import HANG, QUOTA, gpu_job, leader_and_standby, running, waiting

JSON = dict[str, Any]
BASE = "/apis/visibility.kueue.x-k8s.io/v1beta2"
GROUP = "visibility.kueue.x-k8s.io"
ADMIN: dict[str, Any] = {"user": "admin", "group": "system:masters"}
#: the front proxy of the module's tests (set by the ``front_proxy`` fixture)
PROXY: list[ClientPair] = []


@pytest.fixture(autouse=True)
async def front_proxy(fake_api: FakeApiServer) -> None:
    """Act as the fake's front proxy (its CA is published in the requestheader ConfigMap, as
    kube-apiserver does), and let ``alice`` read research's queues (as Kueue's ``kueue-batch-user-role``
    and ``clusterqueue`` viewer roles would)."""
    PROXY[:] = [fake_api.front_proxy_client]
    fake_api.grant("alice", group=GROUP, resource="clusterqueues/pendingworkloads", name="research")
    fake_api.grant("alice", group=GROUP, resource="localqueues/pendingworkloads", namespace="team-a")


async def get(
    port: int, ca: Path, path: str, *, user: str | None = "alice", group: str = "system:authenticated"
) -> tuple[int, JSON]:
    """GET as the aggregator does for ``user`` in ``group`` (None: directly, with no client certificate nor
    headers)."""
    if user is None:
        context = ssl.create_default_context(cafile=str(ca))
        headers = {}
    else:
        context = PROXY[0].context(ca)
        headers = {"X-Remote-User": user, "X-Remote-Group": group}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"https://127.0.0.1:{port}{path}", ssl=context, headers=headers) as response,
    ):
        return response.status, await response.json()


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
        await fake_api.wait_for(lambda: all(waiting(fake_api, n) for n in ("j2", "j3", "j4")), timeout=HANG)

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
        status, body = await get(
            serving.port, tls.ca_cert, f"{BASE}/clusterqueues/nope/pendingworkloads", **ADMIN
        )
        assert (status, body["reason"], body["message"]) == (
            404,
            "NotFound",
            'clusterqueue.visibility.kueue.x-k8s.io "nope" not found',
        )
        status, body = await get(
            serving.port, tls.ca_cert, f"{BASE}/namespaces/team-a/localqueues/nope/pendingworkloads", **ADMIN
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


async def test_a_replica_that_does_not_lead_answers_as_the_leader_does(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    tls = certificates(tmp_path / "tls")
    async with leader_and_standby(fake_api, tls) as (leader, standby):
        path = f"{BASE}/clusterqueues/research/pendingworkloads"
        lq = f"{BASE}/namespaces/team-a/localqueues/team-a-gpu/pendingworkloads?offset=1"

        async def standby_agrees() -> bool:
            answers = [await get(r.port, tls.ca_cert, p) for r in (leader, standby) for p in (path, lq)]
            return answers[:2] == answers[2:]

        await wait_until(standby_agrees)
        status, summary = await get(standby.port, tls.ca_cert, path)
        assert status == 200 and owners(summary) == [("j2", 0, 0), ("j3", 1, 1), ("j4", 2, 2)]
        status, page = await get(standby.port, tls.ca_cert, lq)
        assert status == 200 and owners(page) == [("j3", 1, 1), ("j4", 2, 2)]

        # the queue moves: the standby follows from the same store changes, without running cycles
        await fake_api.complete_job("team-a", "j0")
        await fake_api.wait_for(lambda: running(fake_api, "j2"), timeout=HANG)
        await wait_until(standby_agrees)
        _, summary = await get(standby.port, tls.ca_cert, path)
        assert owners(summary) == [("j3", 0, 0), ("j4", 1, 1)]
        status, _ = await get(standby.port, tls.ca_cert, BASE)
        assert status == 200


async def wait_until(check: Callable[[], Awaitable[bool]]) -> None:
    """The replicas' caches follow the fake's watch events; poll (briefly) until ``check`` holds."""
    async with asyncio.timeout(HANG):
        while not await check():
            await asyncio.sleep(0.05)


async def test_a_direct_call_is_401_and_a_user_rbac_does_not_allow_is_403(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    await fake_api.apply_manifests(QUOTA)
    tls = certificates(tmp_path / "tls")
    async with replica(fake_api.kubeconfig_path(), tls=tls) as serving:
        await asyncio.wait_for(serving.controller.leading.wait(), HANG)
        path = f"{BASE}/clusterqueues/research/pendingworkloads"
        status, body = await get(serving.port, tls.ca_cert, path, user=None)
        assert (status, body["reason"]) == (401, "Unauthorized")
        status, body = await get(serving.port, tls.ca_cert, path, user="mallory")
        assert (status, body["reason"], body["message"]) == (
            403,
            "Forbidden",
            'clusterqueues.visibility.kueue.x-k8s.io "research" is forbidden: User "mallory" cannot get '
            'resource "clusterqueues/pendingworkloads" in API group "visibility.kueue.x-k8s.io" at the '
            "cluster scope",
        )
        # alice may read research's queue and team-a's LocalQueues, nothing else
        status, _ = await get(serving.port, tls.ca_cert, f"{BASE}/clusterqueues/other/pendingworkloads")
        assert status == 403
        status, _ = await get(serving.port, tls.ca_cert, path)
        assert status == 200
        # discovery is public
        status, _ = await get(serving.port, tls.ca_cert, BASE, user=None)
        assert status == 200


async def test_metrics_answer_a_token_allowed_to_get_them(fake_api: FakeApiServer, tmp_path: Path) -> None:
    fake_api.add_token("scraper-token", "system:serviceaccount:monitoring:prometheus")
    fake_api.add_token("nosy-token", "system:serviceaccount:team-a:default")
    fake_api.grant("system:serviceaccount:monitoring:prometheus", non_resource_url="/metrics")
    tls = certificates(tmp_path / "tls")
    async with replica(fake_api.kubeconfig_path(), tls=tls) as serving:
        context = ssl.create_default_context(cafile=str(tls.ca_cert))

        async def metrics(token: str | None) -> tuple[int, str]:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            async with (
                aiohttp.ClientSession() as session,
                session.get(
                    f"https://127.0.0.1:{serving.port}/metrics", ssl=context, headers=headers
                ) as response,
            ):
                return response.status, await response.text()

        assert await metrics(None) == (401, "Unauthorized\n")
        assert await metrics("forged") == (401, "Unauthorized\n")
        assert await metrics("nosy-token") == (
            403,
            "Authorization denied for user system:serviceaccount:team-a:default\n",
        )
        status, text = await metrics("scraper-token")
        assert status == 200 and "kueue_" in text


async def test_metrics_bind_address_serves_them_without_a_token_over_plain_http(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    tls = certificates(tmp_path / "tls")
    listen = Listen(
        cert_file=tls.cert, key_file=tls.key, host="127.0.0.1", port=0, metrics_address=("127.0.0.1", 0)
    )
    serving = await build(
        kubeconfig=str(fake_api.kubeconfig_path()),
        namespace="kueue-system",
        identity="plain-metrics",
        settings=ControllerSettings(leader_election=False),
        listen=listen,
    )
    await serving.start()
    try:
        assert serving.plain_metrics is not None
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{serving.plain_metrics.port}/metrics") as response,
        ):
            assert response.status == 200
            assert "kueue_" in await response.text()
        context = ssl.create_default_context(cafile=str(tls.ca_cert))
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"https://127.0.0.1:{serving.port}/metrics", ssl=context) as response,
        ):
            assert response.status == 401  # the HTTPS port's still asks
    finally:
        await serving.stop()
