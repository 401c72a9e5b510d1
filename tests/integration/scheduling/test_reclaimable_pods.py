"""Reclaimable pods through the real controller and webhook against the fake API server.

A Job of 4 completions run 2 at a time, 2 GPUs a pod, fills the 4-GPU ClusterQueue. Once 3 of its pods have
succeeded only one completion is left, so one of its two slots will never run again: the controller writes
``status.reclaimablePods`` into its Workload (Kueue's jobframework), the scheduler charges it for the one
pod left, and the 2 GPUs given back admit the next Job while the first still runs. The test plays the Job
controller by writing the Job's status.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakeapi import FakeApiServer
from tests.support.builders import gpu_limits, queued_job
from tests.support.fake_cluster import CONTROLLER_USER, as_controller, controller_config, serving_webhook
from tests.support.replica import Replica
from tests.support.research import HANG, QUOTA, gpu_job, running, waiting, workloads_of

JSON = dict[str, Any]
SETUP = controller_config(f'controllerIdentity: {{username: "{CONTROLLER_USER}"}}')


@pytest.fixture
async def serving(fake_api: FakeApiServer, tmp_path: Path) -> AsyncIterator[Replica]:
    await fake_api.apply_manifests(SETUP + "---\n" + QUOTA)
    async with serving_webhook(fake_api, tmp_path, kubeconfig=as_controller(fake_api)) as started:
        yield started


def gpus_in_use(fake_api: FakeApiServer, queue: str = "research") -> str:
    usage = ((fake_api.get("clusterqueues", queue) or {}).get("status") or {}).get("flavorsUsage")
    return str(usage[0]["resources"][0]["total"]) if usage else ""


def reclaimable(fake_api: FakeApiServer, job: str) -> Any:
    found = workloads_of(fake_api, job)
    return (found[0].get("status") or {}).get("reclaimablePods") if found else None


async def test_the_gpus_of_a_jobs_idle_slots_admit_the_next_job_while_it_still_runs(
    fake_api: FakeApiServer, serving: Replica
) -> None:
    del serving
    wide = queued_job("team-a", "wide", queue="team-a-gpu", resources=gpu_limits(2))
    wide["spec"].update(parallelism=2, completions=4)
    await fake_api.create(wide)
    await fake_api.wait_for(lambda: running(fake_api, "wide"), timeout=HANG)
    await fake_api.wait_for(lambda: gpus_in_use(fake_api) == "4", timeout=HANG)

    await fake_api.create(gpu_job("next", gpus=2))
    await fake_api.wait_for(lambda: waiting(fake_api, "next"), timeout=HANG)

    # two of four done: the two completions left still need both slots, nothing is reclaimable yet
    await fake_api.patch(
        "jobs", "wide", {"status": {"active": 2, "succeeded": 2}}, namespace="team-a", subresource="status"
    )
    # three done: one completion left, one slot idle for good
    await fake_api.patch(
        "jobs", "wide", {"status": {"active": 1, "succeeded": 3}}, namespace="team-a", subresource="status"
    )
    await fake_api.wait_for(
        lambda: reclaimable(fake_api, "wide") == [{"name": "main", "count": 1}], timeout=HANG
    )
    await fake_api.wait_for(lambda: running(fake_api, "next"), timeout=HANG)
    assert running(fake_api, "wide")  # the first Job was never stopped
    [admission] = workloads_of(fake_api, "wide")[0]["status"]["admission"]["podSetAssignments"]
    assert admission["resourceUsage"] == {"nvidia.com/gpu": "4"}  # its admission is unchanged
    await fake_api.wait_for(lambda: gpus_in_use(fake_api) == "4", timeout=HANG)  # 2 for "wide", 2 for "next"
