"""A 5000-digit quantity on a real control plane: kube-apiserver stores it, the controller refuses it cleanly.

``KUEUE_E2E_KUBECONFIG`` names the cluster (the Kueue CRDs installed). kube-apiserver's quantity parser has no
length limit: it creates a ClusterQueue whose ``nominalQuota`` is 5000 digits long (the CRD only checks the
pattern) and a Job requesting 5000 digits of cpu (core validation parses it into an arbitrary-precision
decimal). Nothing can use such a value, so the controller (one replica, in-process) reports both as invalid
and carries on: the ClusterQueue and the Job's Workload are ignored with a log line saying why, and a Job
beside them is admitted as usual.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.kinds import CLUSTER_QUEUES, JOBS, LOCAL_QUEUES
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER
from tests.e2e.support import leading_team_queue
from tests.support import builders
from tests.support.replica import Replica

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, Any]
HUGE = "1" * 5000
HANG = 120.0  # seconds: a bound on a hang, never a pace


def cluster_queue(name: str, namespace: str, quota: str) -> JSON:
    return builders.cluster_queue(
        name, {namespace: {"cpu": quota}}, namespace_selector=builders.only(namespace)
    )


def cpu_job(name: str, namespace: str, *, queue: str, cpu: str) -> JSON:
    work = builders.container(name="work", image="busybox:1.36", resources=builders.cpu_requests(cpu))
    return builders.job(
        name, namespace, queue=queue, pod_spec={"restartPolicy": "Never", "containers": [work]}
    )


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[KubeClient, Replica, str]]:
    async with leading_team_queue(Path(KUBECONFIG), "e2e-huge", more_cluster_queues=["-huge"]) as found:
        yield found


async def until(check: Any, what: str) -> None:
    async with asyncio.timeout(HANG):
        while not await check():
            await asyncio.sleep(0.2)  # polling the API server's state, which raises no event here


def ignored_as_invalid(caplog: pytest.LogCaptureFixture, kind: str) -> list[str]:
    return [
        str(r.__dict__.get("errors"))
        for r in caplog.records
        if r.getMessage() == "object ignored: invalid" and r.__dict__.get("kind") == kind
    ]


async def test_a_5000_digit_quantity_is_stored_by_the_api_server_and_refused_by_the_controller(
    cluster: tuple[KubeClient, Replica, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="kueue_webhook")
    client, running, ns = cluster

    # what kube-apiserver answers: both are created, the quantity stored as written
    huge_queue = await client.create(CLUSTER_QUEUES, cluster_queue(f"{ns}-huge", ns, HUGE))
    stored = huge_queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]
    assert stored == HUGE
    await client.create(LOCAL_QUEUES, builders.local_queue("huge", ns, f"{ns}-huge"), namespace=ns)
    huge_job = await client.create(JOBS, cpu_job("huge", ns, queue="e2e", cpu=HUGE), namespace=ns)
    assert huge_job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == HUGE
    await client.create(JOBS, cpu_job("in-huge-queue", ns, queue="huge", cpu="1"), namespace=ns)
    await client.create(JOBS, cpu_job("ordinary", ns, queue="e2e", cpu="1"), namespace=ns)

    # the controller goes on: the ordinary Job is admitted and started
    async def ordinary_started() -> bool:
        job = await client.get(JOBS, name="ordinary", namespace=ns)
        return job["spec"].get("suspend") is False

    await until(ordinary_started, "the ordinary Job started")

    async def huge_workload_seen() -> bool:
        return bool(ignored_as_invalid(caplog, "Workload"))

    await until(huge_workload_seen, "the huge Job's Workload reported invalid")
    assert running.running is not None and not running.running.done()

    # ... and says why it ignores the others, naming the limit
    [queue_errors] = ignored_as_invalid(caplog, "ClusterQueue")
    assert "must not be longer than 128 characters" in queue_errors
    assert all("must not be longer than 128 characters" in e for e in ignored_as_invalid(caplog, "Workload"))
    for name in ("huge", "in-huge-queue"):
        job = await client.get(JOBS, name=name, namespace=ns)
        assert job["spec"]["suspend"] is True, name
    # no ValueError escaped anywhere
    assert not [
        r for r in caplog.records if "ValueError" in r.getMessage() or "int max str" in str(r.__dict__)
    ]
