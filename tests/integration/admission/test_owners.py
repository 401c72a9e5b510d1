"""Forged ownership frees no Job from quota, on the fake API server with the webhook and the controller:
only a real queued owner (it exists, with the reference's UID, and is queued) leaves a Job to it, a Job of an
unadmitted owner that runs is suspended (Kueue's child-job rule), and an ownerReference added to a queued Job
leaves it queued on its own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.crds import integration_crds
from tests.crds.samples import SAMPLES
from tests.fakeapi import DEFAULT_CRDS, FakeApiServer, load_crds
from tests.fakeapi.errors import ApiError
from tests.fakeapi.identity import UserInfo
from tests.support.builders import gpu_limits, queued_job
from tests.support.fake_cluster import (
    controller_config,
    events_of,
    is_true,
    running,
    serving_webhook,
    workload_of,
)
from tests.support.research import preempting_research

JSON = dict[str, Any]
HANG = 30.0
SETUP = preempting_research("team", "gpus", gpus=8)
CONFIG = "integrations:\n  frameworks: [batch/job, jobset.x-k8s.io/jobset]"
PRIORITY = "kueue.x-k8s.io/priority-class"
ALICE = UserInfo(username="alice", groups=("system:authenticated",), uid="alice")


@pytest.fixture
async def cluster(make_fake_api: Callable[..., Awaitable[FakeApiServer]]) -> FakeApiServer:
    fake_api = await make_fake_api(crds=load_crds(DEFAULT_CRDS) + integration_crds("jobsets"))
    await fake_api.apply_manifests(controller_config(CONFIG) + "---\n" + SETUP)
    return fake_api


def controlled_by(job: JSON, kind: str, name: str, uid: str, api_version: str) -> JSON:
    job["metadata"]["ownerReferences"] = [
        {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}
    ]
    return job


def jobset_reference(jobset: JSON) -> JSON:
    meta = jobset["metadata"]
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
    }


async def test_a_job_naming_a_jobset_that_does_not_exist_is_queued_on_its_own(
    cluster: FakeApiServer, tmp_path: Path
) -> None:
    async with serving_webhook(cluster, tmp_path):
        forged = controlled_by(
            queued_job("team", "forged", queue="gpus", resources=gpu_limits(1), suspend=False),
            "JobSet",
            "ghost",
            "ghost-uid",
            "jobset.x-k8s.io/v1alpha2",
        )
        created = await cluster.create(forged, admit=True)
        assert created["spec"]["suspend"] is True  # the webhook suspended it
        await cluster.wait_for(lambda: running(cluster, "team", "forged"), timeout=HANG)
        workload = workload_of(cluster, "team", "forged")
        assert workload is not None and is_true(workload, "Admitted")


async def test_a_job_naming_an_admitted_job_with_its_real_uid_waits_for_quota_of_its_own(
    cluster: FakeApiServer, tmp_path: Path
) -> None:
    async with serving_webhook(cluster, tmp_path):
        first = await cluster.create(
            queued_job("team", "first", queue="gpus", resources=gpu_limits(8)), admit=True
        )
        await cluster.wait_for(lambda: running(cluster, "team", "first"), timeout=HANG)
        rider = controlled_by(
            queued_job("team", "rider", queue="gpus", resources=gpu_limits(1), suspend=False),
            "Job",
            "first",
            first["metadata"]["uid"],
            "batch/v1",
        )
        created = await cluster.create(rider, admit=True)
        assert created["spec"]["suspend"] is True

        def pending() -> bool:
            workload = workload_of(cluster, "team", "rider")
            return workload is not None and "insufficient" in str(
                (workload.get("status") or {}).get("conditions")
            )

        await cluster.wait_for(pending, timeout=HANG)
        assert not running(cluster, "team", "rider")
        await cluster.complete_job("team", "first")
        await cluster.wait_for(lambda: running(cluster, "team", "rider"), timeout=HANG)


async def test_a_running_job_of_an_unadmitted_jobset_is_suspended_and_runs_once_it_is_admitted(
    cluster: FakeApiServer, tmp_path: Path
) -> None:
    """Kueue's shouldSuspendChildJob: the JobSet's Workload waits for quota, so its Job is suspended."""
    async with serving_webhook(cluster, tmp_path):
        await cluster.create(queued_job("team", "hog", queue="gpus", resources=gpu_limits(4)), admit=True)
        await cluster.wait_for(lambda: running(cluster, "team", "hog"), timeout=HANG)
        jobset = await cluster.create(SAMPLES["JobSet"].manifest("train", "team", "gpus"), admit=True)
        await cluster.wait_for(lambda: workload_of(cluster, "team", "train") is not None, timeout=HANG)
        child = queued_job("team", "train-workers-0", queue="gpus", resources=gpu_limits(1), suspend=False)
        del child["metadata"]["labels"]  # as the JobSet controller makes them: no queue name of their own
        child["metadata"]["ownerReferences"] = [jobset_reference(jobset)]
        created = await cluster.create(child, admit=True)
        assert created["spec"]["suspend"] is False  # left to its JobSet by the webhook
        await cluster.wait_for(
            lambda: (cluster.get("jobs", "train-workers-0", "team") or {})["spec"]["suspend"] is True,
            timeout=HANG,
        )
        await cluster.wait_for(
            lambda: "Suspended" in events_of(cluster, "team", "train-workers-0"), timeout=HANG
        )
        message = events_of(cluster, "team", "train-workers-0")["Suspended"]
        assert message == "Kueue managed child job suspended"
        # the JobSet's Workload holds its quota: none of its own
        assert workload_of(cluster, "team", "train-workers-0") is None
        await cluster.complete_job("team", "hog")
        await cluster.wait_for(
            lambda: (cluster.get("jobsets", "train", "team") or {})["spec"]["suspend"] is False, timeout=HANG
        )
        # the JobSet controller (played here) starts its Job once the JobSet runs: it is left alone
        started = await cluster.patch(
            "jobs", "train-workers-0", {"spec": {"suspend": False}}, namespace="team", admit=True
        )
        assert started["spec"]["suspend"] is False
        assert workload_of(cluster, "team", "train-workers-0") is None


async def test_an_owner_reference_added_to_a_queued_job_leaves_it_queued(
    cluster: FakeApiServer, tmp_path: Path
) -> None:
    async with serving_webhook(cluster, tmp_path):
        await cluster.create(queued_job("team", "hog", queue="gpus", resources=gpu_limits(8)), admit=True)
        await cluster.wait_for(lambda: running(cluster, "team", "hog"), timeout=HANG)
        jobset = await cluster.create(SAMPLES["JobSet"].manifest("train", "team", "gpus"), admit=True)
        await cluster.create(queued_job("team", "mine", queue="gpus", resources=gpu_limits(1)), admit=True)
        await cluster.wait_for(lambda: workload_of(cluster, "team", "mine") is not None, timeout=HANG)
        adopt = {"metadata": {"ownerReferences": [jobset_reference(jobset)]}}
        rtype = cluster.resolve("jobs")
        with pytest.raises(ApiError) as denied:
            await cluster.api.patch(rtype, "team", "mine", "application/merge-patch+json", adopt, user=ALICE)
        assert denied.value.code == 403
        assert "metadata.ownerReferences: Forbidden: the Job is queued on its own" in denied.value.message
        # the controller's identity may (the fake API server's admin here): the Job keeps its Workload and
        # is started by its own admission, not left to the JobSet, which is still waiting
        await cluster.patch("jobs", "mine", adopt, namespace="team", admit=True)
        await cluster.complete_job("team", "hog")
        await cluster.wait_for(lambda: running(cluster, "team", "mine"), timeout=HANG)
        workload = workload_of(cluster, "team", "mine")
        assert workload is not None and is_true(workload, "Admitted")


async def test_a_running_job_of_a_preempted_jobset_is_suspended_when_the_jobsets_workload_is_evicted(
    cluster: FakeApiServer, tmp_path: Path
) -> None:
    """Kueue's parent Workload handler: a change of the JobSet's Workload reconciles the Jobs left to it."""
    async with serving_webhook(cluster, tmp_path):
        jobset = await cluster.create(SAMPLES["JobSet"].manifest("train", "team", "gpus"), admit=True)
        await cluster.wait_for(
            lambda: (cluster.get("jobsets", "train", "team") or {})["spec"]["suspend"] is False, timeout=HANG
        )
        child = queued_job("team", "train-workers-0", queue="gpus", resources=gpu_limits(1), suspend=False)
        child["metadata"]["ownerReferences"] = [jobset_reference(jobset)]
        created = await cluster.create(child, admit=True)
        assert created["spec"]["suspend"] is False
        urgent = queued_job(
            "team", "urgent", queue="gpus", resources=gpu_limits(8), labels={PRIORITY: "urgent"}
        )
        await cluster.create(urgent, admit=True)
        await cluster.wait_for(
            lambda: (cluster.get("jobs", "train-workers-0", "team") or {})["spec"]["suspend"] is True,
            timeout=HANG,
        )
        await cluster.wait_for(lambda: running(cluster, "team", "urgent"), timeout=HANG)
        assert workload_of(cluster, "team", "train-workers-0") is None
