"""A bad day for the controller: restarts mid-admission, conflict storms, dropped and expired watches,
live configuration edits, and two replicas competing for the lease. The invariant everywhere: never more
admitted than the quota, and every Job that fits eventually runs."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from tests.fakeapi import FakeApiServer
from tests.support.fake_cluster import is_true
from tests.support.replica import Replica, replica, start_replica
from tests.support.research import QUOTA, gpu_job, running, workloads_of

JSON = dict[str, Any]
QUOTA_GPUS = 4  # QUOTA gives research 4 GPUs: two 2-GPU Jobs at a time
HANG = 60.0  # seconds: generous, only so that a hang fails instead of blocking the suite


def micro_time(text: str) -> datetime:
    """A Lease's MicroTime (``2026-11-22T01:02:03.456789Z``)."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")


def admitted_gpus(fake_api: FakeApiServer) -> int:
    """GPUs held by Workloads whose reservation is recorded and that have not finished."""
    total = 0
    for workload in fake_api.list("workloads", "team-a"):
        if is_true(workload, "QuotaReserved") and not is_true(workload, "Finished"):
            for assignment in workload["status"]["admission"]["podSetAssignments"]:
                total += int(assignment["resourceUsage"].get("nvidia.com/gpu", "0"))
    return total


def running_jobs(fake_api: FakeApiServer) -> list[str]:
    return sorted(
        j["metadata"]["name"] for j in fake_api.list("jobs", "team-a") if j["spec"].get("suspend") is False
    )


async def test_restart_in_the_middle_of_admissions_never_over_admits(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(QUOTA)
    for index in range(6):
        await fake_api.create(gpu_job(f"job-{index}"))
    first = await start_replica(fake_api.kubeconfig_path(), identity="first")
    await fake_api.wait_for(lambda: len(running_jobs(fake_api)) >= 1, timeout=HANG)
    await first.stop()  # possibly between a Workload's status write and its Job patch
    assert admitted_gpus(fake_api) <= QUOTA_GPUS
    async with replica(fake_api.kubeconfig_path(), identity="second"):
        await fake_api.wait_for(lambda: len(running_jobs(fake_api)) == 2, timeout=HANG)
        assert admitted_gpus(fake_api) == QUOTA_GPUS
        for name in running_jobs(fake_api):
            await fake_api.complete_job("team-a", name)
        await fake_api.wait_for(lambda: len(running_jobs(fake_api)) == 4, timeout=HANG)
        assert admitted_gpus(fake_api) == QUOTA_GPUS


async def test_admitted_workload_whose_job_is_still_suspended_gets_its_job_started(
    fake_api: FakeApiServer,
) -> None:
    """A crash between the two writes: Workload admitted, Job still suspended. The restart finishes it."""
    await fake_api.apply_manifests(QUOTA)
    async with replica(fake_api.kubeconfig_path(), identity="first"):
        await fake_api.create(gpu_job("a"))
        await fake_api.wait_for(lambda: running(fake_api, "a"), timeout=HANG)
    await fake_api.patch("jobs", "a", {"spec": {"suspend": True}}, namespace="team-a")
    async with replica(fake_api.kubeconfig_path(), identity="second"):
        await fake_api.wait_for(lambda: running(fake_api, "a"), timeout=HANG)
        assert len(workloads_of(fake_api, "a")) == 1


async def test_conflict_storm_delays_but_never_duplicates_admissions(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(QUOTA)
    async with replica(fake_api.kubeconfig_path()) as serving:
        await asyncio.wait_for(serving.controller.leading.wait(), HANG)
        fake_api.fail_next_writes(25, status=409)
        for index in range(4):
            await fake_api.create(gpu_job(f"job-{index}"))
        await fake_api.wait_for(
            lambda: (
                len(running_jobs(fake_api)) == 2 and all(workloads_of(fake_api, f"job-{i}") for i in range(4))
            ),
            timeout=HANG,
        )
        assert admitted_gpus(fake_api) == QUOTA_GPUS
        assert all(len(workloads_of(fake_api, f"job-{i}")) == 1 for i in range(4))


async def test_dropped_watches_are_resumed_and_expired_ones_relisted(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(QUOTA)
    async with replica(fake_api.kubeconfig_path()) as serving:
        await fake_api.create(gpu_job("a"))
        await fake_api.wait_for(lambda: running(fake_api, "a"), timeout=HANG)
        fake_api.drop_watches()
        await fake_api.create(gpu_job("b"))
        await fake_api.wait_for(lambda: running(fake_api, "b"), timeout=HANG)
        relists = sum(informer.relists for informer in serving.controller.informers)
        fake_api.compact()
        fake_api.drop_watches()
        await fake_api.complete_job("team-a", "a")
        await fake_api.create(gpu_job("c"))
        await fake_api.wait_for(lambda: running(fake_api, "c"), timeout=HANG)
        assert sum(informer.relists for informer in serving.controller.informers) > relists
        assert admitted_gpus(fake_api) == QUOTA_GPUS


CONFIGMAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "kueue-webhook-config", "namespace": "kueue-system"},
    "data": {"config.yaml": "manageJobsWithoutQueueName: false\n"},
}


async def test_configuration_edits_apply_live_and_a_bad_edit_keeps_the_last_good_one(
    fake_api: FakeApiServer,
) -> None:
    await fake_api.apply_manifests(QUOTA)
    async with replica(fake_api.kubeconfig_path()) as serving:
        await asyncio.wait_for(serving.controller.leading.wait(), HANG)  # the leader reports bad edits
        live = serving.controller.live_config
        await fake_api.create(CONFIGMAP)
        await fake_api.patch(
            "configmaps",
            "kueue-webhook-config",
            {"data": {"config.yaml": "manageJobsWithoutQueueName: true\n"}},
            namespace="kueue-system",
        )
        await fake_api.wait_for(lambda: live.current.manage_jobs_without_queue_name, timeout=HANG)

        await fake_api.patch(
            "configmaps",
            "kueue-webhook-config",
            {"data": {"config.yaml": "manageJobsWithoutQueueName: sometimes\n"}},
            namespace="kueue-system",
        )

        def warned() -> list[JSON]:
            return [
                e
                for e in fake_api.list("events", "kueue-system")
                if e.get("reason") == "InvalidConfiguration"
            ]

        await fake_api.wait_for(lambda: bool(warned()), timeout=HANG)
        [event] = warned()
        assert event["type"] == "Warning"
        assert event["involvedObject"]["name"] == "kueue-webhook-config"
        assert "manageJobsWithoutQueueName" in event["message"]
        assert live.current.manage_jobs_without_queue_name is True
        rejected = serving.controller.metrics.registry.get_sample_value(
            "kueue_webhook_config_reloads_total", {"result": "rejected"}
        )
        assert rejected == 1


async def first_leader(*replicas: Replica) -> None:
    waits = [asyncio.ensure_future(r.controller.leading.wait()) for r in replicas]
    try:
        await asyncio.wait_for(asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED), HANG)
    finally:
        for waiting in waits:
            waiting.cancel()


async def test_two_replicas_one_leader_and_failover_within_the_lease(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(QUOTA)
    a = await start_replica(fake_api.kubeconfig_path(), identity="replica-a")
    b = await start_replica(fake_api.kubeconfig_path(), identity="replica-b")
    try:
        await first_leader(a, b)
        leader, standby = (a, b) if a.controller.is_leader() else (b, a)
        assert not standby.controller.is_leader()
        await fake_api.create(gpu_job("first"))
        await fake_api.wait_for(lambda: running(fake_api, "first"), timeout=HANG)
        assert standby.controller.scheduler.admitted == 0

        # the leader loses the API server (a network partition): it can neither renew nor release the lease
        await leader.client.close()
        await asyncio.wait_for(leader.controller.following.wait(), HANG)
        # never two leaders: the cut-off leader steps down at its renew deadline (1 s), before the lease it
        # can no longer renew expires and the standby may take it
        assert not standby.controller.is_leader()
        last_held = fake_api.get("leases", "kueue-webhook-leader", "kueue-system")
        assert last_held is not None and last_held["spec"]["holderIdentity"] == leader.controller.identity
        await fake_api.create(gpu_job("second"))
        await asyncio.wait_for(standby.controller.leading.wait(), HANG)
        lease = fake_api.get("leases", "kueue-webhook-leader", "kueue-system")
        assert lease is not None
        taken, held = lease["spec"], last_held["spec"]
        assert taken["holderIdentity"] == standby.controller.identity
        assert taken["leaseTransitions"] == held["leaseTransitions"] + 1
        # the standby waited out a whole lease duration after the last renewal it saw, and no more than
        # that lease duration plus its retry period and a generous allowance for a loaded machine
        waited = micro_time(taken["acquireTime"]) - micro_time(held["renewTime"])
        assert timedelta(seconds=held["leaseDurationSeconds"]) <= waited < timedelta(seconds=HANG)
        await fake_api.wait_for(lambda: running(fake_api, "second"), timeout=HANG)
        assert admitted_gpus(fake_api) == QUOTA_GPUS
    finally:
        await a.stop()
        await b.stop()
