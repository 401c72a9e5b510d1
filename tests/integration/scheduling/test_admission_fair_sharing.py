"""Kueue's admission fair sharing through the real controller against the fake API server: in a
ClusterQueue with ``admissionScope.admissionMode: UsageBasedAdmissionFairSharing``, once quota frees up
the Job of the LocalQueue that used less goes first, older Jobs of the busier LocalQueue wait; each
LocalQueue's status shows its consumed resources, sampled each ``usageSamplingInterval``.

Waits are on the fake API server's change notifications; ``HANG`` only bounds a hang.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tests.fakeapi import FakeApiServer
from tests.support.builders import (
    cluster_queue,
    gpu_limits,
    local_queue,
    manifests,
    namespace,
    queued_job,
    resource_flavor,
)
from tests.support.fake_cluster import controller_config, running
from tests.support.replica import replica
from tests.support.research import GPU, HANG

JSON = dict[str, Any]
MakeFakeApi = Callable[..., Awaitable[FakeApiServer]]


def shared_gpus(*, admission_mode: str | None) -> str:
    """ClusterQueue ``shared`` of 2 GPUs for namespace team-a, with LocalQueues ``busy`` and ``quiet``."""
    scope = {"admissionScope": {"admissionMode": admission_mode}} if admission_mode else {}
    return manifests(
        namespace("team-a"),
        resource_flavor("gpu-nodes"),
        cluster_queue("shared", {"gpu-nodes": {GPU: 2}}, **scope),
        local_queue("busy", "team-a", "shared"),
        local_queue("quiet", "team-a", "shared"),
    )


AFS_CONFIG = controller_config("admissionFairSharing:\n  usageHalfLifeTime: 1h\n  usageSamplingInterval: 1s")


def job(name: str, queue: str) -> JSON:
    return queued_job("team-a", name, queue=queue, resources=gpu_limits(2))


async def order_after_the_first_finishes(api: FakeApiServer) -> str:
    """``busy`` runs a Job, then ``busy`` queues an older Job and ``quiet`` a newer one; which starts once
    the first is done."""
    await api.create(job("first", "busy"))
    await api.wait_for(lambda: running(api, "team-a", "first"), timeout=HANG)
    await api.create(job("busy-next", "busy"))
    await api.create(job("quiet-next", "quiet"))
    await api.complete_job("team-a", "first")
    await api.wait_for(
        lambda: running(api, "team-a", "busy-next") or running(api, "team-a", "quiet-next"), timeout=HANG
    )
    return "quiet-next" if running(api, "team-a", "quiet-next") else "busy-next"


async def test_the_localqueue_that_used_less_goes_first(make_fake_api: MakeFakeApi) -> None:
    api = await make_fake_api()
    await api.apply_manifests(
        AFS_CONFIG + "---\n" + shared_gpus(admission_mode="UsageBasedAdmissionFairSharing")
    )
    async with replica(api.kubeconfig_path()) as serving:
        assert await order_after_the_first_finishes(api) == "quiet-next"

        def consumed(name: str) -> JSON:
            status = (api.get("localqueues", name, "team-a") or {}).get("status") or {}
            fair = (status.get("fairSharing") or {}).get("admissionFairSharingStatus") or {}
            return fair.get("consumedResources") or {}

        # sampled each second: both LocalQueues have run a Job of 2 GPUs by now
        await api.wait_for(lambda: bool(consumed("busy")) and bool(consumed("quiet")), timeout=HANG)
        assert set(consumed("busy")) == {GPU}
        labels = {"name": "busy", "namespace": "team-a", "cluster_queue": "shared", "replica_role": "leader"}
        usage = serving.controller.metrics.registry.get_sample_value(
            "kueue_local_queue_admission_fair_sharing_usage", labels
        )
        assert usage is not None and usage > 0


async def test_without_the_admission_mode_the_older_job_goes_first(make_fake_api: MakeFakeApi) -> None:
    api = await make_fake_api()
    await api.apply_manifests(AFS_CONFIG + "---\n" + shared_gpus(admission_mode=None))
    async with replica(api.kubeconfig_path()):
        assert await order_after_the_first_finishes(api) == "busy-next"
        status = (api.get("localqueues", "busy", "team-a") or {}).get("status") or {}
        assert "fairSharing" not in status
