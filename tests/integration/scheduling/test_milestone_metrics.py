"""Kueue's metrics of a Workload's later life, through the real controller against the fake API server:
``kueue_ready_wait_time_seconds`` and ``kueue_admitted_until_ready_wait_time_seconds`` when its pods are first
ready (pkg/controller/jobframework/reconciler.go: only for PodsReady reason Started, not on a recovery),
``kueue_finished_workloads_total`` and ``kueue_execution_time_seconds`` when it finishes
(pkg/controller/core/workload_controller.go, reportFinishedWorkload), and
``kueue_workload_creation_latency_seconds`` when its Job gets it (jobframework's
RecordWorkloadCreationLatency)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from tests.fakeapi import FakeApiServer
from tests.support import fake_cluster as harness
from tests.support.fake_cluster import controller_config as config
from tests.support.fake_cluster import is_true
from tests.support.replica import replica
from tests.support.research import HANG, QUOTA, gpu_job, running, workloads_of

MakeFakeApi = Callable[..., Awaitable[FakeApiServer]]
LABELS = {"cluster_queue": "research", "priority_class": "", "replica_role": "leader"}


def observed(registry: object, histogram: str) -> float | None:
    return registry.get_sample_value(f"{histogram}_count", LABELS)  # type: ignore[attr-defined, no-any-return]


async def test_the_pods_first_ready_are_timed_once_and_a_recovery_is_not(make_fake_api: MakeFakeApi) -> None:
    api = await make_fake_api(job_controller=False)
    await api.apply_manifests(config("waitForPodsReady: {timeout: 1h}") + "---\n" + QUOTA)
    async with replica(api.kubeconfig_path()) as serving:
        registry = serving.controller.metrics.registry
        await api.create(gpu_job("train"))
        await api.wait_for(lambda: running(api, "train"), timeout=HANG)
        assert observed(registry, "kueue_ready_wait_time_seconds") is None

        for ready, reason in ((1, "Started"), (0, "WaitForRecovery"), (1, "Recovered")):
            await api.patch(
                "jobs", "train", {"status": {"ready": ready}}, namespace="team-a", subresource="status"
            )
            await api.wait_for(lambda r=reason: pods_ready_reason(api) == r, timeout=HANG)
        assert observed(registry, "kueue_ready_wait_time_seconds") == 1
        assert observed(registry, "kueue_admitted_until_ready_wait_time_seconds") == 1


def pods_ready_reason(api: FakeApiServer) -> str:
    found = workloads_of(api, "train")
    cond = harness.condition(found[0], "PodsReady") if found else None
    return str((cond or {}).get("reason", ""))


async def test_a_finished_workload_is_counted_once_with_its_execution_time(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(QUOTA)
    async with replica(fake_api.kubeconfig_path()) as serving:
        registry = serving.controller.metrics.registry
        await fake_api.create(gpu_job("train"))
        await fake_api.wait_for(lambda: running(fake_api, "train"), timeout=HANG)
        assert registry.get_sample_value("kueue_finished_workloads_total", LABELS) is None
        created = {"job_kind": "Job", "replica_role": "leader"}
        assert registry.get_sample_value("kueue_workload_creation_latency_seconds_count", created) == 1

        await fake_api.complete_job("team-a", "train")
        [workload] = workloads_of(fake_api, "train")
        name = workload["metadata"]["name"]
        # the Finished Event comes after the write's answer went through the store and its listeners
        await fake_api.wait_for(
            lambda: "Finished" in harness.events_of(fake_api, "team-a", name), timeout=HANG
        )
        assert is_true(workloads_of(fake_api, "train")[0], "Finished")
        assert registry.get_sample_value("kueue_finished_workloads_total", LABELS) == 1
        assert observed(registry, "kueue_execution_time_seconds") == 1


async def test_an_eviction_after_the_pods_were_ready_is_timed_and_so_is_the_release(
    make_fake_api: MakeFakeApi,
) -> None:
    """``kueue_pods_ready_to_evicted_time_seconds`` when a Workload whose pods were ready is evicted (Kueue's
    evict.reportEvictedWorkload), ``kueue_workload_eviction_latency_seconds`` when its quota is then released
    (Kueue's EvictionPendingLatency): here a user deactivates it."""
    api = await make_fake_api(job_controller=False)
    await api.apply_manifests(config("waitForPodsReady: {timeout: 1h}") + "---\n" + QUOTA)
    async with replica(api.kubeconfig_path()) as serving:
        registry = serving.controller.metrics.registry
        await api.create(gpu_job("train"))
        await api.wait_for(lambda: running(api, "train"), timeout=HANG)
        await api.patch("jobs", "train", {"status": {"ready": 1}}, namespace="team-a", subresource="status")
        await api.wait_for(lambda: pods_ready_reason(api) == "Started", timeout=HANG)
        [workload] = workloads_of(api, "train")
        await api.patch(
            "workloads", workload["metadata"]["name"], {"spec": {"active": False}}, namespace="team-a"
        )
        await api.wait_for(lambda: not is_true(workloads_of(api, "train")[0], "QuotaReserved"), timeout=HANG)
        evicted = {"cluster_queue": "research", "reason": "Deactivated", "replica_role": "leader"}
        ready_to_evicted = registry.get_sample_value(
            "kueue_pods_ready_to_evicted_time_seconds_count", {**evicted, "underlying_cause": ""}
        )
        assert ready_to_evicted == 1
        await api.wait_for(
            lambda: registry.get_sample_value("kueue_workload_eviction_latency_seconds_count", evicted) == 1,
            timeout=HANG,
        )
