"""MultiKueue dispatch on fake clusters: one manager, two workers, each with its own controller.

The manager's ClusterQueue lists a MultiKueue check; its webhook makes the Job MultiKueue's
(``spec.managedBy``), its controller copies the reserved Workload into both workers, the first worker to
admit the copy gets the Job and the other copy goes, the check turns Ready and the Workload Admitted with
``status.clusterName``. The worker's Job finishing finishes the manager's Workload, with its status read
back. A lost worker's Workload moves to the other after the worker-lost timeout, never running in both.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kueue_webhook.api.multikueue import (
    MULTIKUEUE_CONTROLLER,
    ORIGIN_LABEL,
    PREBUILT_WORKLOAD_LABEL,
    WORKER_POD_LABEL,
)
from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.multikueue.dispatcher import DispatchSettings
from tests.fakeapi import FakeApiServer
from tests.support.builders import PRIORITY_LABEL, gpu_limits, queued_job
from tests.support.fake_cluster import condition, controller_config, is_true, serving_webhook
from tests.support.replica import Replica, replica, start_replica
from tests.support.worker_clusters import StaticWorkers

JSON = dict[str, Any]

QUEUES = """
apiVersion: v1
kind: Namespace
metadata: {name: ml}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpus}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: research}
spec:
  namespaceSelector: {}
  CHECKS
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: gpus
      resources: [{name: nvidia.com/gpu, nominalQuota: QUOTA}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: team, namespace: ml}
spec: {clusterQueue: research}
"""


def manager_manifests(config: str) -> str:
    """The manager's configuration, its MultiKueue check naming the MultiKueueConfig ``workers``, and the
    ClusterQueue ``research`` (8 GPUs) with that check."""
    return (
        controller_config(config)
        + """---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: workers}
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: workers}
---
"""
        + QUEUES.replace("CHECKS", "admissionChecksStrategy: {admissionChecks: [{name: workers}]}").replace(
            "QUOTA", "8"
        )
    )


MANAGER = manager_manifests("integrations: {frameworks: [batch/job]}")


async def register_workers(manager: FakeApiServer, workers: dict[str, FakeApiServer]) -> None:
    """The manager's MultiKueueClusters (kubeconfigs in Secrets) and the MultiKueueConfig the check names,
    so the check turns Active as in production and its ClusterQueue admits (the dispatcher itself talks to
    the workers through the stand-in)."""
    for name, worker in workers.items():
        raw = worker.kubeconfig_path().read_bytes()
        await manager.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": f"{name}-kubeconfig", "namespace": "kueue-system"},
                "data": {"kubeconfig": base64.b64encode(raw).decode()},
            }
        )
        await manager.create(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "MultiKueueCluster",
                "metadata": {"name": name},
                "spec": {"clusterSource": {"kubeConfig": {"location": f"{name}-kubeconfig"}}},
            }
        )
    await manager.create(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "MultiKueueConfig",
            "metadata": {"name": "workers"},
            "spec": {"clusters": sorted(workers)},
        }
    )


def worker_queues(gpus: int) -> str:
    return QUEUES.replace("CHECKS", "").replace("QUOTA", str(gpus))


SETTINGS = DispatchSettings(worker_lost_timeout=1.0, gc_interval=0.3, longest_wait=3.0)


@dataclass
class Clusters:
    manager: FakeApiServer
    workers: dict[str, FakeApiServer]
    stand_in: StaticWorkers
    controller: Replica


@pytest.fixture
async def clusters(
    request: pytest.FixtureRequest, make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> AsyncIterator[Clusters]:
    settings: DispatchSettings = getattr(request, "param", SETTINGS)
    manager = await make_fake_api()
    await manager.apply_manifests(MANAGER)  # creates kueue-system, where the kubeconfig Secrets go
    workers = {"worker-a": await make_fake_api(), "worker-b": await make_fake_api()}
    await register_workers(manager, workers)
    async with AsyncExitStack() as stack:
        clients = {}
        for name, worker in workers.items():
            await worker.apply_manifests(worker_queues(4 if name == "worker-a" else 8))
            await stack.enter_async_context(replica(worker.kubeconfig_path(), identity=name))
            clients[name] = await KubeClient.connect(kubeconfig=str(worker.kubeconfig_path()))
        stand_in = StaticWorkers(clients, checks={"workers": ("worker-a", "worker-b")})
        stack.push_async_callback(stand_in.close)
        controller = await stack.enter_async_context(
            serving_webhook(manager, tmp_path, workers=stand_in, multikueue=settings)
        )
        yield Clusters(manager, workers, stand_in, controller)


def manager_workload(clusters: Clusters, job: str) -> JSON | None:
    return workload_in(clusters.manager, job)


def workload_in(api: FakeApiServer, job: str) -> JSON | None:
    for workload in api.list("workloads", "ml"):
        if any(ref.get("name") == job for ref in workload["metadata"].get("ownerReferences") or []):
            return workload
    return None


def check(workload: JSON | None) -> JSON:
    states = ((workload or {}).get("status") or {}).get("admissionChecks") or []
    return dict(states[0]) if states else {}


def gpu_job(name: str, gpus: int) -> JSON:
    return queued_job("ml", name, queue="team", resources=gpu_limits(gpus))


async def test_a_job_runs_in_the_first_worker_that_admits_it_and_finishes_on_the_manager(
    clusters: Clusters,
) -> None:
    # 6 GPUs: only worker-b (8) can admit the copy; worker-a (4) keeps it pending until it is removed
    await clusters.manager.create(gpu_job("train", 6), admit=True)
    await clusters.manager.wait_for(
        lambda: check(manager_workload(clusters, "train")).get("state") == "Ready"
    )
    local = manager_workload(clusters, "train")
    assert local is not None
    name = local["metadata"]["name"]
    assert local["status"]["clusterName"] == "worker-b"
    assert "nominatedClusterNames" not in local["status"]
    assert check(local)["message"] == 'The workload was admitted on "worker-b"'
    await clusters.manager.wait_for(lambda: is_true(manager_workload(clusters, "train"), "Admitted"))
    job = clusters.manager.get("jobs", "train", "ml")
    assert job is not None and job["spec"]["managedBy"] == MULTIKUEUE_CONTROLLER
    registry = clusters.controller.controller.metrics.registry
    for worker in ("worker-a", "worker-b"):
        labels = {"cluster_queue": "research", "cluster": worker, "replica_role": "leader"}
        assert registry.get_sample_value("multikueue_workloads_dispatched_total", labels) == 1
    won = {"cluster_queue": "research", "cluster": "worker-b", "replica_role": "leader"}
    assert registry.get_sample_value("multikueue_workloads_admitted_total", won) == 1

    worker_b = clusters.workers["worker-b"]
    await worker_b.wait_for(
        lambda: (worker_b.get("jobs", "train", "ml") or {}).get("spec", {}).get("suspend") is False
    )
    remote_job = worker_b.get("jobs", "train", "ml")
    assert remote_job is not None
    labels = remote_job["metadata"]["labels"]
    assert labels[ORIGIN_LABEL] == "multikueue" and labels[PREBUILT_WORKLOAD_LABEL] == name
    assert "managedBy" not in remote_job["spec"]
    # its pods are labelled as a MultiKueue worker's (Kueue's MultiKueueWorkerWorkloadPodLabel)
    assert remote_job["spec"]["template"]["metadata"]["labels"][WORKER_POD_LABEL] == "true"
    remote_workload = worker_b.get("workloads", name, "ml")
    assert remote_workload is not None and remote_workload["metadata"]["labels"][ORIGIN_LABEL] == "multikueue"
    assert remote_workload["metadata"]["ownerReferences"][0]["uid"] == remote_job["metadata"]["uid"]
    # the losing copy is gone from worker-a, and no Job was ever made there
    await clusters.manager.wait_for(lambda: clusters.workers["worker-a"].get("workloads", name, "ml") is None)
    assert clusters.workers["worker-a"].get("jobs", "train", "ml") is None

    # running in worker-b: the manager's Job shows its pods, and its own controller never ran it
    await clusters.manager.wait_for(
        lambda: (clusters.manager.get("jobs", "train", "ml") or {}).get("status", {}).get("active") == 1
    )
    await worker_b.complete_job("ml", "train")
    await clusters.manager.wait_for(lambda: is_true(manager_workload(clusters, "train"), "Finished"))
    finished = condition(manager_workload(clusters, "train"), "Finished")
    assert finished is not None and finished["reason"] == "Succeeded"
    await clusters.manager.wait_for(lambda: is_true(clusters.manager.get("jobs", "train", "ml"), "Complete"))
    mirrored = clusters.manager.get("jobs", "train", "ml")
    assert mirrored is not None and mirrored["status"]["succeeded"] == 1
    # the finished Workload's copies go
    await clusters.manager.wait_for(lambda: worker_b.get("workloads", name, "ml") is None)


async def test_a_lost_worker_s_workload_moves_to_the_other_after_the_timeout(clusters: Clusters) -> None:
    await clusters.manager.create(gpu_job("train", 2), admit=True)
    await clusters.manager.wait_for(
        lambda: check(manager_workload(clusters, "train")).get("state") == "Ready"
    )
    first = (manager_workload(clusters, "train") or {})["status"]["clusterName"]
    other = "worker-b" if first == "worker-a" else "worker-a"
    clusters.stand_in.lose(first)
    await clusters.manager.wait_for(
        lambda: (manager_workload(clusters, "train") or {}).get("status", {}).get("clusterName") == other,
        timeout=20,
    )
    moved = manager_workload(clusters, "train")
    assert moved is not None and check(moved)["state"] == "Ready"
    evicted = condition(moved, "Evicted")
    assert evicted is not None and "Admitting remote lost" in evicted["message"]
    # back again: the stale copy (Workload and Job) in the first worker is deleted, the other runs it
    lost = clusters.workers[first]
    clusters.stand_in.restore(first)
    name = moved["metadata"]["name"]
    await clusters.manager.wait_for(lambda: lost.get("workloads", name, "ml") is None, timeout=10)
    await clusters.manager.wait_for(lambda: lost.get("jobs", "train", "ml") is None)
    assert clusters.workers[other].get("jobs", "train", "ml") is not None


async def test_deleting_the_manager_job_deletes_its_copies(clusters: Clusters) -> None:
    await clusters.manager.create(gpu_job("train", 2), admit=True)
    await clusters.manager.wait_for(
        lambda: check(manager_workload(clusters, "train")).get("state") == "Ready"
    )
    local = manager_workload(clusters, "train") or {}
    worker = clusters.workers[local["status"]["clusterName"]]
    name = local["metadata"]["name"]
    await worker.wait_for(lambda: worker.get("jobs", "train", "ml") is not None)
    await clusters.manager.delete("jobs", "train", namespace="ml", propagation="Background")
    await worker.wait_for(lambda: worker.get("jobs", "train", "ml") is None, timeout=10)
    await worker.wait_for(lambda: worker.get("workloads", name, "ml") is None)


async def test_a_job_whose_api_server_dropped_managed_by_is_rejected_and_never_runs(
    clusters: Clusters,
) -> None:
    # created straight into the store, past the webhook: as an API server without JobManagedBy keeps it
    await clusters.manager.create(gpu_job("old", 2), admit=False)
    await clusters.manager.wait_for(
        lambda: check(manager_workload(clusters, "old")).get("state") == "Rejected"
    )
    state = check(manager_workload(clusters, "old"))
    assert state["message"].startswith(
        'The owner is not managed by Kueue: Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not ""'
    )
    assert "Kubernetes v1.30+" in state["message"]
    assert (clusters.manager.get("jobs", "old", "ml") or {})["spec"]["suspend"] is True
    for worker in clusters.workers.values():
        assert worker.list("workloads", "ml") == []


INCREMENTAL = DispatchSettings(
    dispatcher="kueue.x-k8s.io/multikueue-dispatcher-incremental",
    step_size=1,
    round_timeout=1.0,
    worker_lost_timeout=60.0,
    gc_interval=0.3,
    longest_wait=3.0,
)


@pytest.mark.parametrize("clusters", [INCREMENTAL], indirect=True, ids=["incremental"])
async def test_the_incremental_dispatcher_adds_a_worker_per_round_until_one_admits(
    clusters: Clusters,
) -> None:
    # 6 GPUs: worker-a (4), nominated first, cannot admit it; the next round adds worker-b, which can
    await clusters.manager.create(gpu_job("train", 6), admit=True)

    def nominated() -> list[str]:
        return list(
            ((manager_workload(clusters, "train") or {}).get("status") or {}).get("nominatedClusterNames")
            or []
        )

    await clusters.manager.wait_for(lambda: nominated() == ["worker-a"])
    name = (manager_workload(clusters, "train") or {})["metadata"]["name"]
    assert clusters.workers["worker-b"].get("workloads", name, "ml") is None
    await clusters.manager.wait_for(
        lambda: clusters.workers["worker-a"].get("workloads", name, "ml") is not None
    )
    assert clusters.workers["worker-b"].get("workloads", name, "ml") is None
    await clusters.manager.wait_for(
        lambda: check(manager_workload(clusters, "train")).get("state") == "Ready"
    )
    local = manager_workload(clusters, "train") or {}
    assert local["status"]["clusterName"] == "worker-b"


async def test_a_copy_deleted_by_hand_in_its_worker_requeues_the_workload_which_runs_again(
    clusters: Clusters,
) -> None:
    await clusters.manager.create(gpu_job("train", 2), admit=True)
    await clusters.manager.wait_for(
        lambda: check(manager_workload(clusters, "train")).get("state") == "Ready"
    )
    local = manager_workload(clusters, "train") or {}
    name, first = local["metadata"]["name"], local["status"]["clusterName"]
    worker = clusters.workers[first]
    await worker.wait_for(
        lambda: (worker.get("jobs", "train", "ml") or {}).get("spec", {}).get("suspend") is False
    )
    await worker.patch("workloads", name, {"metadata": {"finalizers": None}}, namespace="ml")
    await worker.delete("workloads", name, namespace="ml")

    def requeued() -> bool:
        evicted = condition(manager_workload(clusters, "train"), "Evicted") or {}
        return "Admitting remote no longer exists" in str(evicted.get("message", ""))

    await clusters.manager.wait_for(requeued)
    # queued again, dispatched again: Ready in some worker, its Job running there, and only there
    await clusters.manager.wait_for(
        lambda: (
            check(manager_workload(clusters, "train")).get("state") == "Ready"
            and bool((manager_workload(clusters, "train") or {}).get("status", {}).get("clusterName"))
        ),
        timeout=20,
    )
    again = (manager_workload(clusters, "train") or {})["status"]["clusterName"]
    runs = clusters.workers[again]
    await runs.wait_for(
        lambda: (runs.get("jobs", "train", "ml") or {}).get("spec", {}).get("suspend") is False
    )
    for other, api in clusters.workers.items():
        if other != again:
            await api.wait_for(lambda api=api: api.get("jobs", "train", "ml") is None)


async def test_a_new_leader_continues_a_dispatched_workload_from_what_the_api_objects_hold(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]],
) -> None:
    manager = await make_fake_api()
    await manager.apply_manifests(MANAGER)
    worker = await make_fake_api()
    await register_workers(manager, {"worker-a": worker})
    await worker.apply_manifests(worker_queues(8))
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(replica(worker.kubeconfig_path(), identity="worker"))
        client = await KubeClient.connect(kubeconfig=str(worker.kubeconfig_path()))
        stand_in = StaticWorkers({"worker-a": client}, checks={"workers": ("worker-a",)})
        stack.push_async_callback(stand_in.close)
        first = await start_replica(
            manager.kubeconfig_path(), identity="replica-a", workers=stand_in, multikueue=SETTINGS
        )
        stopped = False
        try:
            await asyncio.wait_for(first.controller.leading.wait(), 20)
            second = await stack.enter_async_context(
                replica(
                    manager.kubeconfig_path(), identity="replica-b", workers=stand_in, multikueue=SETTINGS
                )
            )
            job = gpu_job("train", 2)
            job["spec"]["managedBy"] = MULTIKUEUE_CONTROLLER  # no webhook here: set as the webhook would
            await manager.create(job)
            await manager.wait_for(lambda: check(workload_in(manager, "train")).get("state") == "Ready")
            await worker.wait_for(
                lambda: (worker.get("jobs", "train", "ml") or {}).get("spec", {}).get("suspend") is False
            )
            await first.stop()  # the leader goes; nothing it knew is needed
            stopped = True
            await asyncio.wait_for(second.controller.leading.wait(), 20)
            await worker.complete_job("ml", "train")
            await manager.wait_for(lambda: is_true(workload_in(manager, "train"), "Finished"))
            assert is_true(manager.get("jobs", "train", "ml"), "Complete")
        finally:
            if not stopped:
                await first.stop()


async def test_copies_left_in_a_worker_unreachable_when_their_job_was_deleted_are_garbage_collected(
    clusters: Clusters,
) -> None:
    await clusters.manager.create(gpu_job("train", 2), admit=True)
    await clusters.manager.wait_for(
        lambda: check(manager_workload(clusters, "train")).get("state") == "Ready"
    )
    local = manager_workload(clusters, "train") or {}
    name, first = local["metadata"]["name"], local["status"]["clusterName"]
    worker = clusters.workers[first]
    await worker.wait_for(lambda: worker.get("jobs", "train", "ml") is not None)
    clusters.stand_in.lose(first)
    await clusters.manager.delete("jobs", "train", namespace="ml", propagation="Background")
    await clusters.manager.wait_for(lambda: manager_workload(clusters, "train") is None)
    assert worker.get("workloads", name, "ml") is not None  # out of reach: still there
    clusters.stand_in.restore(first)
    await worker.wait_for(lambda: worker.get("workloads", name, "ml") is None)
    await worker.wait_for(lambda: worker.get("jobs", "train", "ml") is None)


PRIORITIES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: low}
value: 10
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: urgent}
value: 1000
"""


async def test_a_priority_raised_on_the_manager_s_workload_reaches_its_running_copy(
    clusters: Clusters,
) -> None:
    """Kueue's MultiKueue workload reconciler gives a changed WorkloadPriorityClass priority to the copies
    instead of deleting them as out of sync: the Workload keeps running where it is."""
    for api in (clusters.manager, *clusters.workers.values()):
        await api.apply_manifests(PRIORITIES)
    job = queued_job("ml", "train", queue="team", resources=gpu_limits(6), labels={PRIORITY_LABEL: "low"})
    await clusters.manager.create(job, admit=True)
    await clusters.manager.wait_for(lambda: is_true(manager_workload(clusters, "train"), "Admitted"))
    local = manager_workload(clusters, "train")
    assert local is not None and local["spec"]["priority"] == 10
    name, worker = local["metadata"]["name"], clusters.workers[local["status"]["clusterName"]]
    remote = worker.get("workloads", name, "ml")
    assert remote is not None
    uid = remote["metadata"]["uid"]
    ref = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "urgent"}
    await clusters.manager.patch(
        "workloads", name, {"spec": {"priorityClassRef": ref, "priority": 1000}}, namespace="ml"
    )
    await worker.wait_for(
        lambda: (worker.get("workloads", name, "ml") or {}).get("spec", {}).get("priority") == 1000
    )
    updated = worker.get("workloads", name, "ml")
    assert updated is not None and updated["metadata"]["uid"] == uid
    assert updated["spec"]["priorityClassRef"]["name"] == "urgent"
    assert check(manager_workload(clusters, "train"))["state"] == "Ready"
