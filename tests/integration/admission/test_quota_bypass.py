"""Two ordinary edits that used to run or hold quota outside the queue, through the real controller and
webhook against the fake API server.

A user raises the parallelism of a running admitted Job: the webhook lets it through (Kueue refuses it only
under partial admission), and the controller stops the Job, deletes its Workload and queues a new one for
the new shape, with Kueue's Events (its jobframework ``ensureOneWorkload``). A user removes the queue label
of a suspended queued Job whose Workload holds quota: the Workload goes and the quota is free for the next
Job; a running Job's label stays immutable.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import JOBS
from tests.fakeapi import FakeApiServer
from tests.integration.scheduling.test_checks import SETUP as CHECKS_SETUP
from tests.support import fake_cluster as harness
from tests.support.builders import cluster_queue, gpu_limits, local_queue, manifests, queued_job
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
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


async def _serve(fake_api: FakeApiServer, tmp_path: Path, manifests: str) -> AsyncIterator[Replica]:
    await fake_api.apply_manifests(manifests)
    async with serving_webhook(fake_api, tmp_path, kubeconfig=as_controller(fake_api)) as started:
        yield started


@pytest.fixture
async def research(fake_api: FakeApiServer, tmp_path: Path) -> AsyncIterator[Replica]:
    """4 GPUs in ClusterQueue ``research``, a replica serving the webhook too."""
    setup = controller_config(f'controllerIdentity: {{username: "{CONTROLLER}"}}')
    async for started in _serve(fake_api, tmp_path, setup + "---\n" + QUOTA):
        yield started


@pytest.fixture
async def checked(fake_api: FakeApiServer, tmp_path: Path) -> AsyncIterator[Replica]:
    """8 GPUs in ClusterQueue ``a100`` whose manual approval keeps every Workload reserved, not admitted."""
    async for started in _serve(fake_api, tmp_path, CHECKS_SETUP):
        yield started


async def as_alice(fake_api: FakeApiServer, name: str, namespace: str, patch: JSON) -> JSON:
    client = await KubeClient.connect(kubeconfig=str(fake_api.kubeconfig_path(user="alice")))
    try:
        return await client.patch(JOBS, name=name, namespace=namespace, patch=patch)
    finally:
        await client.close()


def said(fake_api: FakeApiServer, namespace: str, name: str) -> set[tuple[str, str]]:
    """(reason, message) of every Event on the object ``name``."""
    return {
        (e["reason"], e["message"])
        for e in fake_api.list("events", namespace)
        if e.get("involvedObject", {}).get("name") == name
    }


def gpus_in_use(fake_api: FakeApiServer, cluster_queue: str, field: str = "flavorsUsage") -> str:
    usage = ((fake_api.get("clusterqueues", cluster_queue) or {}).get("status") or {}).get(field)
    return str(usage[0]["resources"][0]["total"]) if usage else ""


async def test_raised_parallelism_of_a_running_job_stops_it_and_queues_it_for_the_new_shape(
    fake_api: FakeApiServer, research: Replica
) -> None:
    del research
    await fake_api.create(gpu_job("holder", gpus=2))  # 2 of the 4 GPUs
    await fake_api.wait_for(lambda: running(fake_api, "holder"), timeout=HANG)
    grow = queued_job("team-a", "grow", queue="team-a-gpu", resources=gpu_limits(1))
    grow["spec"].update(parallelism=1, completions=4)
    await fake_api.create(grow)
    await fake_api.wait_for(lambda: running(fake_api, "grow"), timeout=HANG)
    [first] = workloads_of(fake_api, "grow")
    await fake_api.wait_for(lambda: gpus_in_use(fake_api, "research") == "3", timeout=HANG)

    # the webhook lets it through: no partial admission, so Kueue does not refuse it either
    await as_alice(fake_api, "grow", "team-a", {"spec": {"parallelism": 3}})

    def requeued() -> bool:
        job = fake_api.get("jobs", "grow", "team-a") or {}
        found = workloads_of(fake_api, "grow")
        return (
            job["spec"].get("suspend") is True
            and not (job.get("status") or {}).get("active")
            and len(found) == 1
            and found[0]["metadata"]["uid"] != first["metadata"]["uid"]
        )

    await fake_api.wait_for(requeued, timeout=HANG)
    [second] = workloads_of(fake_api, "grow")
    assert second["spec"]["podSets"][0]["count"] == 3
    # 3 GPUs do not fit beside the holder's 2: it waits, and only the holder's quota is in use
    await fake_api.wait_for(lambda: condition(workloads_of(fake_api, "grow")[0], "QuotaReserved") is not None)
    assert not is_true(workloads_of(fake_api, "grow")[0], "QuotaReserved")
    await fake_api.wait_for(lambda: gpus_in_use(fake_api, "research") == "2", timeout=HANG)
    job = fake_api.get("jobs", "grow", "team-a") or {}
    # its template is back as the Workload recorded it: no flavor nodeSelector left behind
    assert "nodeSelector" not in job["spec"]["template"]["spec"]
    wanted = {
        ("Stopped", "No matching Workload; restoring pod templates according to existent Workload"),
        ("DeletedWorkload", f"Deleted not matching Workload: team-a/{first['metadata']['name']}"),
        ("CreatedWorkload", f"Created Workload: team-a/{second['metadata']['name']}"),
    }
    # Events are written in the background
    await fake_api.wait_for(lambda: wanted <= said(fake_api, "team-a", "grow"), timeout=HANG)


async def test_a_running_jobs_queue_label_cannot_be_removed(
    fake_api: FakeApiServer, research: Replica
) -> None:
    del research
    await fake_api.create(gpu_job("steady", gpus=1))
    await fake_api.wait_for(lambda: running(fake_api, "steady"), timeout=HANG)
    with pytest.raises(ApiError) as refused:
        await as_alice(fake_api, "steady", "team-a", {"metadata": {"labels": {QUEUE_LABEL: None}}})
    assert refused.value.status == 403
    assert f"metadata.labels[{QUEUE_LABEL}]: Invalid value" in refused.value.message
    assert "field is immutable" in refused.value.message


async def test_a_label_removed_from_a_suspended_job_frees_its_workloads_quota(
    fake_api: FakeApiServer, checked: Replica
) -> None:
    del checked

    def workload(name: str) -> JSON | None:
        return harness.workload_of(fake_api, "ml", name)

    await fake_api.create(queued_job("ml", "first", queue="a100", resources=gpu_limits(8)))
    await fake_api.wait_for(lambda: is_true(workload("first"), "QuotaReserved"), timeout=HANG)
    held = workload("first")
    assert held is not None
    await fake_api.create(queued_job("ml", "second", queue="a100", resources=gpu_limits(8)))
    await fake_api.wait_for(lambda: workload("second") is not None, timeout=HANG)
    await fake_api.wait_for(lambda: gpus_in_use(fake_api, "a100", "flavorsReservation") == "8", timeout=HANG)
    assert not is_true(workload("second"), "QuotaReserved")  # all 8 GPUs are reserved for "first"

    await as_alice(fake_api, "first", "ml", {"metadata": {"labels": {QUEUE_LABEL: None}}})
    await fake_api.wait_for(lambda: workload("first") is None, timeout=HANG)
    assert fake_api.get("workloads", held["metadata"]["name"], "ml") is None
    message = f"Deleted Workload: ml/{held['metadata']['name']}, the Job no longer names a LocalQueue"
    await fake_api.wait_for(
        lambda: ("DeletedWorkload", message) in said(fake_api, "ml", "first"), timeout=HANG
    )
    # the quota it held goes to the next Job in line
    await fake_api.wait_for(lambda: is_true(workload("second"), "QuotaReserved"), timeout=HANG)

    # a pending Workload goes too, and the ClusterQueue reserves nothing any more
    await as_alice(fake_api, "second", "ml", {"metadata": {"labels": {QUEUE_LABEL: None}}})
    await fake_api.wait_for(lambda: workload("second") is None, timeout=HANG)
    await fake_api.wait_for(lambda: gpus_in_use(fake_api, "a100", "flavorsReservation") == "0", timeout=HANG)
    first = fake_api.get("jobs", "first", "ml") or {}
    assert first["spec"]["suspend"] is True  # no longer queued, nobody starts it


SPARE = manifests(
    cluster_queue("spare", {"gpu-nodes": {"nvidia.com/gpu": 4}}),
    local_queue("team-a-spare", "team-a", "spare"),
)


async def test_a_waiting_job_moved_to_another_local_queue_is_admitted_there(
    fake_api: FakeApiServer, research: Replica
) -> None:
    del research
    await fake_api.apply_manifests(SPARE)
    await fake_api.create(gpu_job("holder", gpus=4))
    await fake_api.wait_for(lambda: running(fake_api, "holder"), timeout=HANG)
    await fake_api.create(gpu_job("mover", gpus=4))
    await fake_api.wait_for(
        lambda: condition((workloads_of(fake_api, "mover") or [{}])[0], "QuotaReserved") is not None,
        timeout=HANG,
    )
    assert not running(fake_api, "mover")

    await as_alice(fake_api, "mover", "team-a", {"metadata": {"labels": {QUEUE_LABEL: "team-a-spare"}}})
    await fake_api.wait_for(lambda: running(fake_api, "mover"), timeout=HANG)
    [moved] = workloads_of(fake_api, "mover")
    assert moved["spec"]["queueName"] == "team-a-spare"
    assert moved["status"]["admission"]["clusterQueue"] == "spare"
