"""Kueue's ``kueue.x-k8s.io/resource-in-use`` finalizer: deleting a Workload does not hand its quota on while
the pods that use it still run.

A running Job's Workload is deleted; another Job waits for the same GPUs. The deleted Workload stays (with a
deletionTimestamp) and keeps its quota; its Job is stopped; only once the Job has no active pods does the
finalizer go, the Workload disappear, the waiting Job start, and the stopped Job queue again with a new
Workload. The fake runs without its Job controller, so each test says itself how many pods a Job still has
(``status.active``), as the Job controller reports them on a cluster.

The order of what happened is read back from the API server's event log (what ``kubectl get -w`` shows),
so the tests do not depend on when the controller gets round to each step.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.control.output.metrics import Metrics
from kueue_webhook.control.output.writers import Writer
from tests.fakeapi import FakeApiServer
from tests.support.fake_cluster import events_of, is_true, running, workload_of
from tests.support.replica import replica
from tests.support.research import QUOTA, gpu_job

JSON = dict[str, Any]
MakeFakeApi = Callable[..., Awaitable[FakeApiServer]]
HANG = 60.0  # seconds: only so that a hang fails instead of blocking the suite
NS = "team-a"
FINALIZER = "kueue.x-k8s.io/resource-in-use"


async def cluster_without_job_controller(make_fake_api: MakeFakeApi) -> FakeApiServer:
    api = await make_fake_api(job_controller=False)
    await api.apply_manifests(QUOTA)  # ClusterQueue research: 4 GPUs
    return api


async def report_active_pods(api: FakeApiServer, job: str, active: int) -> int:
    """Write the Job's ``status.active`` as the Job controller would; returns the write's resourceVersion."""
    written = await api.patch(
        "jobs", job, {"status": {"active": active or None}}, namespace=NS, subresource="status"
    )
    return int(written["metadata"]["resourceVersion"])


def workload_events(api: FakeApiServer) -> list[tuple[int, str, JSON]]:
    """Every Workload event the API server recorded, oldest first: (resourceVersion, type, object)."""
    return [(e.rv, e.type, e.obj) for e in api.store.events_after(0, ("kueue.x-k8s.io", "workloads"))]


def reserved_at(api: FakeApiServer, uid: str) -> int:
    """The resourceVersion at which the Workload with ``uid`` first held a quota reservation."""
    return next(
        rv
        for rv, _, obj in workload_events(api)
        if obj["metadata"]["uid"] == uid and is_true(obj, "QuotaReserved")
    )


def gone_at(api: FakeApiServer, uid: str) -> int:
    return next(
        rv for rv, kind, obj in workload_events(api) if obj["metadata"]["uid"] == uid and kind == "DELETED"
    )


def uid_of(obj: JSON | None) -> str:
    assert obj is not None
    return str(obj["metadata"]["uid"])


async def test_a_deleted_workload_keeps_its_quota_until_its_jobs_pods_are_gone(
    make_fake_api: MakeFakeApi,
) -> None:
    api = await cluster_without_job_controller(make_fake_api)
    async with replica(api.kubeconfig_path()):
        await api.create(gpu_job("training", gpus=4))
        await api.wait_for(lambda: running(api, NS, "training"), timeout=HANG)
        await report_active_pods(api, "training", 4)
        held = workload_of(api, NS, "training")
        assert held is not None and held["metadata"]["finalizers"] == [FINALIZER]

        await api.create(gpu_job("eval", gpus=4))
        await api.wait_for(lambda: workload_of(api, NS, "eval") is not None, timeout=HANG)

        await api.delete("workloads", held["metadata"]["name"], namespace=NS)
        await api.wait_for(lambda: not running(api, NS, "training"), timeout=HANG)
        await api.wait_for(lambda: "Stopped" in events_of(api, NS, "training"), timeout=HANG)
        assert events_of(api, NS, "training")["Stopped"] == "Workload is deleted"

        # training is stopped but its pods are still there: its Workload stays, and so does its quota
        deleting = api.get("workloads", held["metadata"]["name"], NS)
        assert deleting is not None and deleting["metadata"]["deletionTimestamp"]
        assert deleting["metadata"]["finalizers"] == [FINALIZER] and is_true(deleting, "QuotaReserved")
        assert not running(api, NS, "eval")
        assert not is_true(workload_of(api, NS, "eval"), "QuotaReserved")

        pods_gone = await report_active_pods(api, "training", 0)
        await api.wait_for(lambda: running(api, NS, "eval"), timeout=HANG)
        assert pods_gone < gone_at(api, uid_of(held)) < reserved_at(api, uid_of(workload_of(api, NS, "eval")))

        # training queues again, with a new Workload, behind eval
        await api.wait_for(
            lambda: uid_of(workload_of(api, NS, "training") or held) != uid_of(held), timeout=HANG
        )
        requeued = workload_of(api, NS, "training")
        assert requeued is not None and requeued["metadata"]["finalizers"] == [FINALIZER]
        assert not is_true(requeued, "QuotaReserved") and not running(api, NS, "training")


async def test_a_restarted_controller_counts_a_deleted_workload_then_finishes_letting_it_go(
    make_fake_api: MakeFakeApi,
) -> None:
    api = await cluster_without_job_controller(make_fake_api)
    async with replica(api.kubeconfig_path(), identity="first"):
        await api.create(gpu_job("training", gpus=4))
        await api.wait_for(lambda: running(api, NS, "training"), timeout=HANG)
        await report_active_pods(api, "training", 4)
        await api.create(gpu_job("eval", gpus=4))
        await api.wait_for(lambda: workload_of(api, NS, "eval") is not None, timeout=HANG)
    held = workload_of(api, NS, "training")
    assert held is not None
    await api.delete("workloads", held["metadata"]["name"], namespace=NS)  # while no controller runs

    async with replica(api.kubeconfig_path(), identity="second"):
        await api.wait_for(lambda: "Stopped" in events_of(api, NS, "training"), timeout=HANG)
        assert api.get("workloads", held["metadata"]["name"], NS) is not None
        assert not running(api, NS, "eval")

        pods_gone = await report_active_pods(api, "training", 0)
        await api.wait_for(lambda: running(api, NS, "eval"), timeout=HANG)
        assert pods_gone < gone_at(api, uid_of(held)) < reserved_at(api, uid_of(workload_of(api, NS, "eval")))


def standalone(name: str, *, gpus: int, finalizers: list[str] | None = None) -> JSON:
    """A Workload created directly, with no owner (as Kueue's performance runner creates them)."""
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}
    metadata: JSON = {"name": name, "namespace": NS}
    if finalizers:
        metadata["finalizers"] = finalizers
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": metadata,
        "spec": {
            "queueName": "team-a-gpu",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}],
        },
    }


async def test_a_standalone_workload_deleted_while_holding_quota_lets_go_at_once_even_after_a_restart(
    fake_api: FakeApiServer,
) -> None:
    """No Job means no pods to wait for: Kueue's workload controller removes the finalizer of a deleted
    Workload that has no owner at once. Until it is gone its quota stays counted, also by a controller
    that starts while the Workload waits for it."""
    await fake_api.apply_manifests(QUOTA)
    first = await fake_api.create(standalone("first", gpus=4, finalizers=[FINALIZER]))
    async with replica(fake_api.kubeconfig_path(), identity="before"):
        await fake_api.wait_for_object(
            "workloads", "first", lambda w: is_true(w, "QuotaReserved"), namespace=NS, timeout=HANG
        )
        await fake_api.create(standalone("second", gpus=4))
        await fake_api.wait_for_object(
            "workloads", "second", lambda w: w is not None and "status" in w, namespace=NS, timeout=HANG
        )
    await fake_api.delete("workloads", "first", namespace=NS)
    assert fake_api.get("workloads", "first", NS) is not None  # held by the finalizer

    async with replica(fake_api.kubeconfig_path(), identity="after"):
        await fake_api.wait_for_object(
            "workloads", "second", lambda w: is_true(w, "QuotaReserved"), namespace=NS, timeout=HANG
        )
        assert fake_api.get("workloads", "first", NS) is None
        second = fake_api.get("workloads", "second", NS)
        assert gone_at(fake_api, uid_of(first)) < reserved_at(fake_api, uid_of(second))


async def test_a_finished_workload_no_longer_holds_the_finalizer(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(QUOTA)
    async with replica(fake_api.kubeconfig_path()):
        await fake_api.create(gpu_job("training", gpus=4))
        await fake_api.wait_for(lambda: running(fake_api, NS, "training"), timeout=HANG)
        await fake_api.complete_job(NS, "training")
        await fake_api.wait_for(
            lambda: (
                is_true(workload_of(fake_api, NS, "training"), "Finished")
                and "finalizers" not in (workload_of(fake_api, NS, "training") or {})["metadata"]
            ),
            timeout=HANG,
        )


async def test_removing_the_finalizer_leaves_another_controllers_finalizer_in_place(
    fake_api: FakeApiServer,
) -> None:
    """The removal pins our entry with a JSON Patch ``test``: when the list moved under a stale copy, the
    patch fails, the writer reads the Workload again and removes only ours."""
    await fake_api.apply_manifests(QUOTA)
    stale = await fake_api.create(standalone("w", gpus=1, finalizers=[FINALIZER]))
    await fake_api.patch(
        "workloads", "w", {"metadata": {"finalizers": ["example.com/audit", FINALIZER]}}, namespace=NS
    )
    client = await KubeClient.connect(kubeconfig=str(fake_api.kubeconfig_path()))
    try:
        writer = Writer(client=client, store=Store(), metrics=Metrics())
        assert await writer.remove_finalizer(WORKLOADS, stale, FINALIZER) is not None
    finally:
        await client.close()
    kept = fake_api.get("workloads", "w", NS)
    assert kept is not None and kept["metadata"]["finalizers"] == ["example.com/audit"]
