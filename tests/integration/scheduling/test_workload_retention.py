"""Kueue's ``objectRetentionPolicies.workloads`` through the real controller against the fake API server:
a finished Workload is deleted once ``afterFinished`` has passed (Kueue's workload controller, with its
``Deleted`` Event), and the Job of a Workload deactivated by its time limit is deleted once
``afterDeactivatedByKueue`` has passed (Kueue's job reconciler). Without a policy nothing is deleted.

Waits are on the fake API server's change notifications; ``HANG`` only bounds a hang.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tests.fakeapi import FakeApiServer
from tests.support.fake_cluster import controller_config, events_of, is_true
from tests.support.replica import replica
from tests.support.research import HANG, QUOTA, gpu_job, running, workloads_of

JSON = dict[str, Any]
MakeFakeApi = Callable[..., Awaitable[FakeApiServer]]
KEEP_NOTHING = controller_config(
    "objectRetentionPolicies:\n  workloads: {afterFinished: 0s, afterDeactivatedByKueue: 0s}"
)


async def test_a_finished_workload_is_deleted_once_its_retention_has_passed(
    make_fake_api: MakeFakeApi,
) -> None:
    api = await make_fake_api()
    await api.apply_manifests(KEEP_NOTHING + "---\n" + QUOTA)
    async with replica(api.kubeconfig_path()):
        await api.create(gpu_job("done"))
        await api.wait_for(lambda: running(api, "done"), timeout=HANG)
        [workload] = workloads_of(api, "done")
        name = workload["metadata"]["name"]
        await api.complete_job("team-a", "done")
        await api.wait_for(lambda: not workloads_of(api, "done"), timeout=HANG)
        await api.wait_for(lambda: "Deleted" in events_of(api, "team-a", name), timeout=HANG)
        assert (
            events_of(api, "team-a", name)["Deleted"] == "Deleted finished workload due to elapsed retention"
        )
        assert api.get("jobs", "done", "team-a") is not None  # the Job itself stays


async def test_the_job_of_a_deactivated_workload_is_deleted(make_fake_api: MakeFakeApi) -> None:
    api = await make_fake_api()
    await api.apply_manifests(KEEP_NOTHING + "---\n" + QUOTA)
    async with replica(api.kubeconfig_path()):
        limited = gpu_job("limited")
        limited["metadata"].setdefault("labels", {})["kueue.x-k8s.io/max-exec-time-seconds"] = "1"
        await api.create(limited)
        await api.wait_for(lambda: running(api, "limited"), timeout=HANG)
        await api.wait_for(lambda: api.get("jobs", "limited", "team-a") is None, timeout=HANG)
        await api.wait_for(lambda: "Deleted" in events_of(api, "team-a", "limited"), timeout=HANG)
        assert (
            events_of(api, "team-a", "limited")["Deleted"]
            == "Deleted job: deactivation retention period expired"
        )


async def test_without_a_policy_a_finished_workload_stays(make_fake_api: MakeFakeApi) -> None:
    api = await make_fake_api()
    await api.apply_manifests(QUOTA)
    async with replica(api.kubeconfig_path()):
        await api.create(gpu_job("kept"))
        await api.wait_for(lambda: running(api, "kept"), timeout=HANG)
        await api.complete_job("team-a", "kept")
        await api.wait_for(lambda: is_true(workloads_of(api, "kept")[0], "Finished"), timeout=HANG)
        await api.create(gpu_job("after"))  # one more reconcile round trip: any deletion would have happened
        await api.wait_for(lambda: running(api, "after"), timeout=HANG)
        assert workloads_of(api, "kept")
