"""A Workload's time limit through the real controller against the fake API server: a Job labelled
``kueue.x-k8s.io/max-exec-time-seconds`` runs at most that long, then its Workload is deactivated and the Job
stopped, as Kueue's workload controller does (pkg/controller/core/workload_controller.go,
reconcileMaxExecutionTime; the eviction of an inactive Workload with cause MaximumExecutionTimeExceeded).

Waits are on the fake API server's change notifications; ``HANG`` only bounds a hang. The limit is one
second, so a test takes about a second of real time by design.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tests.fakeapi import FakeApiServer
from tests.support.fake_cluster import condition, events_of, is_true
from tests.support.replica import replica
from tests.support.research import HANG, QUOTA, gpu_job, running, workloads_of

JSON = dict[str, Any]
MakeFakeApi = Callable[..., Awaitable[FakeApiServer]]
LIMIT_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"


def limited_job(name: str, seconds: str, *, gpus: int = 2) -> JSON:
    job = gpu_job(name, gpus=gpus)
    job["metadata"].setdefault("labels", {})[LIMIT_LABEL] = seconds
    return job


def workload(api: FakeApiServer, job: str) -> JSON:
    [found] = workloads_of(api, job)
    return found


def deactivated(api: FakeApiServer, job: str) -> bool:
    found = workloads_of(api, job)
    return bool(found) and (found[0].get("spec") or {}).get("active") is False


async def test_a_job_past_its_time_limit_is_stopped_and_its_workload_deactivated_with_kueues_reason(
    make_fake_api: MakeFakeApi,
) -> None:
    api = await make_fake_api()
    await api.apply_manifests(QUOTA)
    async with replica(api.kubeconfig_path()):
        await api.create(limited_job("short", "1"))
        await api.wait_for(lambda: running(api, "short"), timeout=HANG)
        assert workload(api, "short")["spec"]["maximumExecutionTimeSeconds"] == 1

        await api.wait_for(lambda: deactivated(api, "short"), timeout=HANG)
        await api.wait_for(lambda: not running(api, "short"), timeout=HANG)
        found = workload(api, "short")
        evicted = condition(found, "Evicted")
        assert evicted is not None
        assert (evicted["status"], evicted["reason"], evicted["message"]) == (
            "True",
            "DeactivatedDueToMaximumExecutionTimeExceeded",
            "The workload is deactivated due to exceeding the maximum execution time",
        )
        name = found["metadata"]["name"]
        # Events are written after the writes a user waits on (the release window): wait for it
        await api.wait_for(
            lambda: "MaximumExecutionTimeExceeded" in events_of(api, "team-a", name), timeout=HANG
        )
        events = events_of(api, "team-a", name)
        assert events["MaximumExecutionTimeExceeded"] == "The maximum execution time (1s) exceeded"
        # its quota is released and it does not queue again while inactive
        await api.wait_for(lambda: not is_true(workload(api, "short"), "QuotaReserved"), timeout=HANG)
        assert api.get("jobs", "short", "team-a")["spec"]["suspend"] is True


async def test_only_the_job_past_its_limit_is_stopped_one_within_it_or_without_one_keeps_running(
    make_fake_api: MakeFakeApi,
) -> None:
    api = await make_fake_api()
    await api.apply_manifests(QUOTA)
    async with replica(api.kubeconfig_path()):
        await api.create(limited_job("short", "1"))
        await api.create(limited_job("long", "3600", gpus=1))
        await api.create(gpu_job("unlimited", gpus=1))
        await api.wait_for(
            lambda: all(running(api, job) for job in ("short", "long", "unlimited")), timeout=HANG
        )
        assert "maximumExecutionTimeSeconds" not in workload(api, "unlimited")["spec"]

        await api.wait_for(lambda: deactivated(api, "short"), timeout=HANG)
        for job in ("long", "unlimited"):
            assert running(api, job)
            assert (workload(api, job).get("spec") or {}).get("active") is not False
            assert condition(workload(api, job), "Evicted") is None
