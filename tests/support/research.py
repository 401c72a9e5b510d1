"""The cluster most controller tests start from: ClusterQueue ``research`` (4 GPUs of flavor ``gpu-nodes``),
LocalQueue ``team-a-gpu`` in namespace ``team-a``, and that team's GPU Jobs.

``HANG`` bounds only a hang (a loaded CI machine on 2 shared cores can be many times slower than a laptop);
every wait is on the fake API server's own change notifications, so it never paces a test.
"""

from __future__ import annotations

from typing import Any

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
