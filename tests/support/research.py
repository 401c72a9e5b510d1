"""The cluster most controller tests start from: ClusterQueue ``research`` (4 GPUs of flavor ``gpu-nodes``),
LocalQueue ``team-a-gpu`` in namespace ``team-a``, and that team's GPU Jobs.

``HANG`` bounds only a hang (a loaded CI machine on 2 shared cores can be many times slower than a laptop);
every wait is on the fake API server's own change notifications, so it never paces a test.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from kueue_webhook.control.replica.wiring import Replica
from kueue_webhook.http.certs import CertificateSet
from tests.fakeapi import FakeApiServer
from tests.support import fake_cluster as harness
from tests.support.builders import (
    PRIORITY_LABEL,
    cluster_queue,
    gpu_limits,
    local_queue,
    manifests,
    namespace,
    queued_job,
    resource_flavor,
    workload_priority_class,
)
from tests.support.replica import replica, start_replica

JSON = dict[str, Any]
HANG = 60.0  # seconds: generous, only so that a hang fails instead of blocking the suite

GPU = "nvidia.com/gpu"
URGENT = "urgent"  # a WorkloadPriorityClass of value 1000

QUOTA = manifests(
    namespace("team-a", labels={"kueue.x-k8s.io/queue": "research"}),
    resource_flavor("gpu-nodes", node_labels={"nvidia.com/gpu.present": "true"}),
    cluster_queue(
        "research",
        {"gpu-nodes": {GPU: 4}},
        namespace_selector={"matchLabels": {"kueue.x-k8s.io/queue": "research"}},
    ),
    local_queue("team-a-gpu", "team-a", "research"),
)

#: WorkloadPriorityClasses ``batch`` (100) and ``urgent`` (1000), flavor ``gpu-nodes`` (``node-pool: gpu``)
PRIORITIES = manifests(
    workload_priority_class("batch", 100),
    workload_priority_class("urgent", 1000),
    resource_flavor("gpu-nodes", node_labels={"node-pool": "gpu"}),
)


def preempting_research(
    team: str,
    queue: str,
    *,
    gpus: int,
    node_labels: dict[str, str] | None = None,
    tolerations: list[JSON] | None = None,
) -> str:
    """ClusterQueue ``research`` for all namespaces: ``gpus`` GPUs of flavor ``gpu-nodes`` (``node_labels``,
    ``tolerations``), preempting lower priorities within itself; WorkloadPriorityClass ``urgent``; namespace
    ``team`` with LocalQueue ``queue`` of it."""
    return manifests(
        resource_flavor("gpu-nodes", node_labels=node_labels, tolerations=tolerations),
        workload_priority_class(URGENT, 1000),
        cluster_queue(
            "research", {"gpu-nodes": {GPU: gpus}}, preemption={"withinClusterQueue": "LowerPriority"}
        ),
        namespace(team),
        local_queue(queue, team, "research"),
    )


def gpu_job(name: str, *, gpus: int = 2, suspend: bool = True) -> JSON:
    return queued_job("team-a", name, queue="team-a-gpu", resources=gpu_limits(gpus), suspend=suspend)


def workloads_of(fake_api: FakeApiServer, job_name: str) -> list[JSON]:
    return harness.workloads_of(fake_api, "team-a", job_name)


def running(fake_api: FakeApiServer, name: str) -> bool:
    return harness.running(fake_api, "team-a", name)


def team_gpu_job(
    namespace: str, name: str, *, gpus: int, priority: str = "batch", pod: JSON | None = None
) -> JSON:
    """A Job of a team_queue's LocalQueue ``gpus`` for ``gpus`` GPUs, of priority class ``priority``."""
    return queued_job(
        namespace, name, queue="gpus", resources=gpu_limits(gpus), labels={PRIORITY_LABEL: priority}, pod=pod
    )


def waiting(fake_api: FakeApiServer, job: str) -> bool:
    """The Job's Workload waits: QuotaReserved is False."""
    found = workloads_of(fake_api, job)
    reserved = harness.condition(found[0], "QuotaReserved") if found else None
    return reserved is not None and reserved["status"] == "False"


@contextlib.asynccontextmanager
async def leader_and_standby(
    fake_api: FakeApiServer, tls: CertificateSet
) -> AsyncIterator[tuple[Replica, Replica]]:
    """``QUOTA`` served by two replicas, ``replica-a`` leading and ``replica-b`` standing by, with five Jobs
    of 2 GPUs: j0 and j1 running, j2, j3 and j4 waiting in that order."""
    await fake_api.apply_manifests(QUOTA)
    async with replica(fake_api.kubeconfig_path(), tls=tls, identity="replica-a") as leader:
        await asyncio.wait_for(leader.controller.leading.wait(), HANG)
        standby = await start_replica(fake_api.kubeconfig_path(), tls=tls, identity="replica-b")
        try:
            assert not standby.controller.is_leader()
            for name in ("j0", "j1", "j2", "j3", "j4"):
                await fake_api.create(gpu_job(name))
            await fake_api.wait_for(
                lambda: (
                    running(fake_api, "j0")
                    and running(fake_api, "j1")
                    and all(waiting(fake_api, n) for n in ("j2", "j3", "j4"))
                ),
                timeout=HANG,
            )
            yield leader, standby
        finally:
            await standby.stop()
