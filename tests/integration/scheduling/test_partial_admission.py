"""Partial admission through the real controller and webhook against the fake API server.

A Job with ``kueue.x-k8s.io/job-min-parallelism`` that does not fit whole runs with the pods that fit (its
``spec.parallelism`` set to the admitted count, Kueue's RunWithPodSetsInfo); while it runs nobody may change
that parallelism (Kueue's Job webhook); when it is evicted its parallelism is restored from the Workload's pod
set count (RestorePodSetsInfo), through Kueue's two-step stop that the webhook rule requires.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import JOBS
from tests.fakeapi import FakeApiServer
from tests.support.builders import gpu_limits, queued_job
from tests.support.fake_cluster import (
    CONTROLLER_USER,
    as_controller,
    condition,
    controller_config,
    is_true,
    serving_webhook,
)
from tests.support.replica import Replica
from tests.support.research import HANG, QUOTA, gpu_job, running, workloads_of

JSON = dict[str, Any]
CONTROLLER = CONTROLLER_USER
MIN = "kueue.x-k8s.io/job-min-parallelism"
SETUP = controller_config(f'controllerIdentity: {{username: "{CONTROLLER}"}}')


@pytest.fixture
async def serving(fake_api: FakeApiServer, tmp_path: Path) -> AsyncIterator[Replica]:
    """A replica serving the webhook too, registered in the fake API with our webhook configurations."""
    await fake_api.apply_manifests(SETUP + "---\n" + QUOTA)
    async with serving_webhook(fake_api, tmp_path, kubeconfig=as_controller(fake_api)) as started:
        yield started


def wide_job() -> JSON:
    """Four one-GPU pods, content with two."""
    job = queued_job("team-a", "wide", queue="team-a-gpu", resources=gpu_limits(1))
    job["metadata"]["annotations"] = {MIN: "2"}
    job["spec"].update(parallelism=4, completions=4)
    return job


def job(fake_api: FakeApiServer, name: str) -> JSON:
    found = fake_api.get("jobs", name, "team-a")
    assert found is not None
    return found


async def test_job_runs_with_the_admitted_count_and_gets_its_parallelism_back_when_evicted(
    fake_api: FakeApiServer, serving: Replica
) -> None:
    del serving
    await fake_api.create(gpu_job("holder", gpus=2))  # 2 of the 4 GPUs
    await fake_api.wait_for(lambda: running(fake_api, "holder"), timeout=HANG)

    await fake_api.create(wide_job())
    await fake_api.wait_for(lambda: running(fake_api, "wide"), timeout=HANG)
    assert job(fake_api, "wide")["spec"]["parallelism"] == 2
    [workload] = workloads_of(fake_api, "wide")
    assert workload["spec"]["podSets"][0]["count"] == 4
    assert workload["spec"]["podSets"][0]["minCount"] == 2
    [assignment] = workload["status"]["admission"]["podSetAssignments"]
    assert (assignment["count"], assignment["resourceUsage"]) == (2, {"nvidia.com/gpu": "2"})

    def gpus_in_use() -> str:
        usage = ((fake_api.get("clusterqueues", "research") or {}).get("status") or {}).get("flavorsUsage")
        return str(usage[0]["resources"][0]["total"]) if usage else ""

    await fake_api.wait_for(lambda: gpus_in_use() == "4", timeout=HANG)

    # Kueue's Job webhook: a running Job that accepts partial admission keeps its parallelism
    client = await KubeClient.connect(kubeconfig=str(fake_api.kubeconfig_path(user="alice")))
    try:
        with pytest.raises(ApiError) as refused:
            await client.patch(JOBS, name="wide", namespace="team-a", patch={"spec": {"parallelism": 3}})
    finally:
        await client.close()
    assert "spec.parallelism: Forbidden: cannot change when partial admission is enabled" in str(
        refused.value
    )

    await fake_api.patch("clusterqueues", "research", {"spec": {"stopPolicy": "HoldAndDrain"}})

    def restored() -> bool:
        stopped = job(fake_api, "wide")
        annotations = stopped["metadata"].get("annotations") or {}
        return (
            stopped["spec"].get("suspend") is True
            and stopped["spec"].get("parallelism") == 4
            and "kueue.x-k8s.io/stopping" not in annotations
        )

    await fake_api.wait_for(restored, timeout=HANG)
    await fake_api.wait_for(
        lambda: not is_true(workloads_of(fake_api, "wide")[0], "QuotaReserved"), timeout=HANG
    )
    evicted = condition(workloads_of(fake_api, "wide")[0], "Evicted")
    assert evicted is not None and evicted["reason"] == "ClusterQueueStopped"
    # the Workload still asks for the whole Job, so it queues for four pods again
    assert workloads_of(fake_api, "wide")[0]["spec"]["podSets"][0]["count"] == 4
