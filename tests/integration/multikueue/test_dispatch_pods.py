"""MultiKueue dispatch of plain Pods and pod groups on fake clusters: one manager, two workers.

A pod has no ``spec.managedBy``: the manager's webhook gates it, its Workload is dispatched like a Job's,
and the manager's pods keep their scheduling gate while copies of them (the Workload copy's name in their
prebuilt-workload annotation) run in the worker that admitted the Workload copy (Kueue's pod MultiKueue
adapter, its jobframework's ``ShouldSkipLocalExecution``). The test plays the worker's kubelet; the copies'
status comes back into the manager's pods, their end finishes the manager's Workload and frees its quota,
and deleting the manager's pods deletes the copies. kube-apiserver (and the fake) never lets a scheduling
gate be added back, so a manager pod gated at the end was gated all along.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kueue_webhook.api.integrations.leaderworkersets import workload_name_of_group
from kueue_webhook.api.integrations.statefulsets import statefulset_workload_name
from kueue_webhook.api.multikueue import (
    ORIGIN_LABEL,
    ORIGIN_UID_ANNOTATION,
    PREBUILT_WORKLOAD_LABEL,
    WORKER_POD_LABEL,
)
from kueue_webhook.control.kube.client import KubeClient
from tests.crds import integration_crds
from tests.fakeapi import DEFAULT_CRDS, FakeApiServer, load_crds
from tests.integration.multikueue.test_dispatch import (
    SETTINGS,
    check,
    manager_manifests,
    register_workers,
    worker_queues,
)
from tests.support.builders import container, gpu_limits
from tests.support.builders import pod as builders_pod
from tests.support.fake_cluster import condition, controller_config, is_true, serving_webhook
from tests.support.worker_clusters import StaticWorkers

JSON = dict[str, Any]
HANG = 30.0
GATE = "kueue.x-k8s.io/admission"
GROUP = "kueue.x-k8s.io/pod-group-name"
TOTAL = "kueue.x-k8s.io/pod-group-total-count"
FRAMEWORKS = (
    "integrations: {frameworks: [batch/job, pod, statefulset, leaderworkerset.x-k8s.io/leaderworkerset]}"
)


@dataclass
class Clusters:
    manager: FakeApiServer
    workers: dict[str, FakeApiServer]
    stand_in: StaticWorkers


@pytest.fixture
async def clusters(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> AsyncIterator[Clusters]:
    crds = load_crds(DEFAULT_CRDS) + integration_crds("leaderworkersets")
    manager = await make_fake_api(crds=crds)
    await manager.apply_manifests(manager_manifests(FRAMEWORKS))
    # worker-a has 4 GPUs, worker-b 8: a 6-GPU Workload can only be admitted by worker-b
    workers = {"worker-a": await make_fake_api(crds=crds), "worker-b": await make_fake_api(crds=crds)}
    await register_workers(manager, workers)
    async with AsyncExitStack() as stack:
        clients = {}
        for name, worker in workers.items():
            gpus = 4 if name == "worker-a" else 8
            await worker.apply_manifests(controller_config(FRAMEWORKS) + "---\n" + worker_queues(gpus))
            # each worker's controller serves its webhook, as a worker's Kueue does
            await stack.enter_async_context(serving_webhook(worker, tmp_path / name, identity=name))
            clients[name] = await KubeClient.connect(kubeconfig=str(worker.kubeconfig_path()))
        stand_in = StaticWorkers(clients, checks={"workers": ("worker-a", "worker-b")})
        stack.push_async_callback(stand_in.close)
        await stack.enter_async_context(
            serving_webhook(manager, tmp_path / "manager", workers=stand_in, multikueue=SETTINGS)
        )
        yield Clusters(manager, workers, stand_in)


def pod(name: str, gpus: int, *, group: str | None = None, total: int = 0) -> JSON:
    labels = {GROUP: group} if group else None
    annotations = {TOTAL: str(total)} if group else {}
    return builders_pod(
        name,
        "ml",
        queue="team",
        labels=labels,
        metadata={"annotations": annotations},
        pod_spec={"restartPolicy": "Never", "containers": [container(resources=gpu_limits(gpus))]},
    )


def gated(obj: JSON | None) -> bool:
    return obj is not None and any(g["name"] == GATE for g in obj["spec"].get("schedulingGates") or [])


def ungated(api: FakeApiServer, name: str) -> Callable[[], bool]:
    """The pod exists and its scheduling gate is lifted."""
    return lambda: (found := api.get("pods", name, "ml")) is not None and not gated(found)


def in_phase(api: FakeApiServer, name: str, phase: str) -> Callable[[], bool]:
    return lambda: ((api.get("pods", name, "ml") or {}).get("status") or {}).get("phase") == phase


def gone(api: FakeApiServer, name: str) -> Callable[[], bool]:
    return lambda: api.get("pods", name, "ml") is None


def workload_named(api: FakeApiServer, pod_name: str) -> JSON | None:
    for workload in api.list("workloads", "ml"):
        if any(ref.get("name") == pod_name for ref in workload["metadata"].get("ownerReferences") or []):
            return workload
    return None


async def set_phase(api: FakeApiServer, name: str, phase: str) -> None:
    ready = "True" if phase == "Running" else "False"
    status = {"phase": phase, "conditions": [{"type": "Ready", "status": ready}]}
    await api.patch("pods", name, {"status": status}, namespace="ml", subresource="status")


def research_usage(api: FakeApiServer) -> tuple[int, int]:
    """(admitted Workloads, GPUs in use) the manager's ClusterQueue shows."""
    status = (api.get("clusterqueues", "research") or {}).get("status") or {}
    used = 0
    for flavor in status.get("flavorsUsage") or []:
        for resource in flavor.get("resources") or []:
            if resource.get("name") == "nvidia.com/gpu":
                used += int(str(resource.get("total", "0")))
    return int(status.get("admittedWorkloads") or 0), used


async def dispatched(clusters: Clusters, pod_names: list[str], gpus: int) -> tuple[JSON, FakeApiServer]:
    """Wait until the Workload of ``pod_names`` is admitted in a worker and every copy there is ungated
    by that worker; the manager's Workload and the worker."""
    manager = clusters.manager
    await manager.wait_for(lambda: is_true(workload_named(manager, pod_names[0]), "Admitted"), timeout=HANG)
    local = workload_named(manager, pod_names[0])
    assert local is not None and check(local)["state"] == "Ready"
    chosen = clusters.workers[local["status"]["clusterName"]]
    for name in pod_names:
        await chosen.wait_for(ungated(chosen, name), timeout=HANG)
    await manager.wait_for(lambda: research_usage(manager) == (1, gpus))
    return local, chosen


async def test_a_pod_runs_in_a_worker_its_status_comes_back_and_its_end_finishes_the_manager_workload(
    clusters: Clusters,
) -> None:
    manager = clusters.manager
    await manager.create(pod("solo", 6), admit=True)
    local, chosen = await dispatched(clusters, ["solo"], 6)
    assert chosen is clusters.workers["worker-b"]  # the only one with room for 6 GPUs
    name = local["metadata"]["name"]
    remote = chosen.get("pods", "solo", "ml")
    assert remote is not None
    assert remote["metadata"]["labels"][ORIGIN_LABEL] == "multikueue"
    assert remote["metadata"]["annotations"][PREBUILT_WORKLOAD_LABEL] == name
    assert remote["metadata"]["labels"][WORKER_POD_LABEL] == "true"  # ungated by the worker as a copy's pod
    remote_workload = chosen.get("workloads", name, "ml")
    assert remote_workload is not None  # adopted by the copy
    assert remote_workload["metadata"]["ownerReferences"][0]["uid"] == remote["metadata"]["uid"]
    await manager.wait_for(lambda: clusters.workers["worker-a"].get("workloads", name, "ml") is None)
    assert clusters.workers["worker-a"].get("pods", "solo", "ml") is None

    await set_phase(chosen, "solo", "Running")
    await manager.wait_for(in_phase(manager, "solo", "Running"))
    assert gated(manager.get("pods", "solo", "ml"))
    await set_phase(chosen, "solo", "Succeeded")
    await manager.wait_for(lambda: is_true(workload_named(manager, "solo"), "Finished"), timeout=HANG)
    finished = condition(workload_named(manager, "solo"), "Finished")
    assert finished is not None and finished["reason"] == "Succeeded"
    await manager.wait_for(in_phase(manager, "solo", "Succeeded"))
    await manager.wait_for(lambda: research_usage(manager) == (0, 0))
    await manager.wait_for(lambda: chosen.get("workloads", name, "ml") is None, timeout=HANG)
    await manager.wait_for(gone(chosen, "solo"), timeout=HANG)
    assert gated(manager.get("pods", "solo", "ml"))  # never ungated: a gate cannot come back


async def test_a_pod_group_runs_in_one_worker_and_finishes_when_all_its_pods_succeed(
    clusters: Clusters,
) -> None:
    manager = clusters.manager
    names = [f"trio-{index}" for index in range(3)]
    for name in names:
        await manager.create(pod(name, 2, group="trio", total=3), admit=True)
    local, chosen = await dispatched(clusters, names, 6)
    assert local["metadata"]["name"] == "trio"
    other = next(w for w in clusters.workers.values() if w is not chosen)
    await manager.wait_for(lambda: other.get("workloads", "trio", "ml") is None)
    for name in names:
        remote = chosen.get("pods", name, "ml")
        assert remote is not None and remote["metadata"]["annotations"][PREBUILT_WORKLOAD_LABEL] == "trio"
        assert remote["metadata"]["labels"][GROUP] == "trio"
        # the worker ungated it as one of a MultiKueue copy's pods (Kueue's MultiKueueWorkerWorkloadPodLabel)
        assert remote["metadata"]["labels"][WORKER_POD_LABEL] == "true"
        assert other.get("pods", name, "ml") is None
        await set_phase(chosen, name, "Running")
    for name in names:
        await manager.wait_for(in_phase(manager, name, "Running"))
    for name in names:
        await set_phase(chosen, name, "Succeeded")
    await manager.wait_for(lambda: is_true(manager.get("workloads", "trio", "ml"), "Finished"), timeout=HANG)
    await manager.wait_for(lambda: research_usage(manager) == (0, 0))
    await manager.wait_for(lambda: chosen.get("workloads", "trio", "ml") is None, timeout=HANG)
    for name in names:
        await manager.wait_for(gone(chosen, name))
        local_pod = manager.get("pods", name, "ml")
        assert gated(local_pod) and local_pod is not None
        assert local_pod["status"]["phase"] == "Succeeded"


async def test_deleting_a_manager_pod_group_deletes_its_copies(clusters: Clusters) -> None:
    manager = clusters.manager
    names = [f"pair-{index}" for index in range(2)]
    for name in names:
        await manager.create(pod(name, 1, group="pair", total=2), admit=True)
    _, chosen = await dispatched(clusters, names, 2)
    for name in names:
        await manager.delete("pods", name, namespace="ml")
    for name in names:
        await chosen.wait_for(gone(chosen, name), timeout=HANG)
    await chosen.wait_for(lambda: chosen.get("workloads", "pair", "ml") is None, timeout=HANG)
    await manager.wait_for(lambda: research_usage(manager) == (0, 0), timeout=HANG)


async def test_a_lost_worker_s_pod_group_runs_in_the_other_and_its_stale_copies_go_when_it_is_back(
    clusters: Clusters,
) -> None:
    manager = clusters.manager
    names = [f"pair-{index}" for index in range(2)]
    for name in names:
        await manager.create(pod(name, 1, group="pair", total=2), admit=True)
    local, first = await dispatched(clusters, names, 2)
    for name in names:
        await set_phase(first, name, "Running")
    for name in names:
        await manager.wait_for(in_phase(manager, name, "Running"))
    lost = local["status"]["clusterName"]
    other_name = "worker-b" if lost == "worker-a" else "worker-a"
    other = clusters.workers[other_name]
    clusters.stand_in.lose(lost)
    # after the worker-lost timeout the pods it ran no longer count, and the group runs in the other worker
    await manager.wait_for(
        lambda: (
            ((manager.get("workloads", "pair", "ml") or {}).get("status") or {}).get("clusterName")
            == other_name
        ),
        timeout=HANG,
    )
    for name in names:
        await other.wait_for(ungated(other, name), timeout=HANG)
    moved = manager.get("workloads", "pair", "ml")
    evicted = condition(moved, "Evicted")
    assert evicted is not None and "Admitting remote lost" in evicted["message"]
    clusters.stand_in.restore(lost)
    for name in names:
        await manager.wait_for(gone(first, name), timeout=HANG)
        assert gated(manager.get("pods", name, "ml"))
    await manager.wait_for(lambda: first.get("workloads", "pair", "ml") is None, timeout=HANG)
    await manager.wait_for(lambda: research_usage(manager) == (1, 2))


async def create_statefulset(api: FakeApiServer, name: str, replicas: int) -> JSON:
    template = pod("x", 1)
    return await api.create(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": name, "namespace": "ml", "labels": {"kueue.x-k8s.io/queue-name": "team"}},
            "spec": {
                "replicas": replicas,
                "serviceName": name,
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}}, "spec": template["spec"]},
            },
        },
        admit=True,
    )


async def make_statefulset_pods(api: FakeApiServer, sts: JSON) -> list[str]:
    """The pods the StatefulSet controller makes from the template (none runs in the fake)."""
    name, template = sts["metadata"]["name"], sts["spec"]["template"]
    owner = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": name,
        "uid": sts["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    names = []
    for index in range(sts["spec"]["replicas"]):
        labels = {**template["metadata"].get("labels", {}), "apps.kubernetes.io/pod-index": str(index)}
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-{index}",
                "namespace": "ml",
                "labels": labels,
                "annotations": dict(template["metadata"].get("annotations", {})),
                "ownerReferences": [owner],
            },
            "spec": template["spec"],
        }
        await api.create(body, admit=True)
        names.append(f"{name}-{index}")
    return names


async def test_a_statefulset_runs_in_a_worker_whose_workload_copy_it_adopts_and_goes_with_the_manager_s(
    clusters: Clusters,
) -> None:
    """Kueue's StatefulSet adapter: the StatefulSet is copied (the manager's uid in
    ``kueue.x-k8s.io/multikueue-origin-uid``, so the worker names its Workload as the manager did), the
    worker's own StatefulSet controller makes the pods, nothing is read back, and deleting the manager's
    StatefulSet deletes the copies."""
    manager = clusters.manager
    sts = await create_statefulset(manager, "web", 2)
    local_pods = await make_statefulset_pods(manager, sts)
    workload_name = statefulset_workload_name("web", sts["metadata"]["uid"])
    await manager.wait_for(
        lambda: is_true(manager.get("workloads", workload_name, "ml"), "Admitted"), timeout=HANG
    )
    local = manager.get("workloads", workload_name, "ml") or {}
    chosen = clusters.workers[local["status"]["clusterName"]]
    await chosen.wait_for(lambda: chosen.get("statefulsets", "web", "ml") is not None, timeout=HANG)
    remote = chosen.get("statefulsets", "web", "ml") or {}
    assert remote["metadata"]["labels"][ORIGIN_LABEL] == "multikueue"
    assert remote["metadata"]["annotations"][ORIGIN_UID_ANNOTATION] == sts["metadata"]["uid"]
    assert remote["metadata"]["annotations"][PREBUILT_WORKLOAD_LABEL] == workload_name
    remote_pods = await make_statefulset_pods(chosen, remote)
    for name in remote_pods:
        await chosen.wait_for(ungated(chosen, name), timeout=HANG)
    adopted = chosen.get("workloads", workload_name, "ml") or {}
    assert adopted["metadata"]["ownerReferences"][0]["uid"] == remote["metadata"]["uid"]
    assert len(chosen.list("workloads", "ml")) == 1  # the copy, no Workload of the worker's own
    await manager.wait_for(lambda: research_usage(manager) == (1, 2))
    for name in local_pods:
        assert gated(manager.get("pods", name, "ml"))

    await manager.delete("statefulsets", "web", namespace="ml", propagation="Background")
    await chosen.wait_for(lambda: chosen.get("statefulsets", "web", "ml") is None, timeout=HANG)
    await chosen.wait_for(lambda: chosen.get("workloads", workload_name, "ml") is None, timeout=HANG)
    await manager.wait_for(lambda: research_usage(manager) == (0, 0), timeout=HANG)


async def create_lws(api: FakeApiServer, name: str, replicas: int, size: int) -> JSON:
    template = {"metadata": {"labels": {"app": name}}, "spec": pod("x", 1)["spec"]}
    lwt = {"size": size, "leaderTemplate": template, "workerTemplate": template}
    return await api.create(
        {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "namespace": "ml", "labels": {"kueue.x-k8s.io/queue-name": "team"}},
            "spec": {"replicas": replicas, "leaderWorkerTemplate": lwt},
        },
        admit=True,
    )


async def make_lws_group(api: FakeApiServer, lws: JSON, group: int) -> list[str]:
    """The pods the LeaderWorkerSet controller makes for one group (none runs in the fake)."""
    name, lwt = lws["metadata"]["name"], lws["spec"]["leaderWorkerTemplate"]
    leader = f"{name}-{group}"
    names = []
    for worker in range(lwt["size"]):
        source = lwt["leaderTemplate"] if worker == 0 else lwt["workerTemplate"]
        labels = {
            **source["metadata"].get("labels", {}),
            "leaderworkerset.sigs.k8s.io/name": name,
            "leaderworkerset.sigs.k8s.io/group-index": str(group),
            "leaderworkerset.sigs.k8s.io/worker-index": str(worker),
        }
        annotations = dict(source["metadata"].get("annotations", {}))
        if worker:
            annotations["leaderworkerset.sigs.k8s.io/leader-name"] = leader
        pod_name = leader if worker == 0 else f"{leader}-{worker}"
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod_name, "namespace": "ml", "labels": labels, "annotations": annotations},
            "spec": source["spec"],
        }
        await api.create(body, admit=True)
        names.append(pod_name)
    return names


async def test_a_leaderworkerset_s_groups_run_in_one_worker_that_adopts_their_workload_copies(
    clusters: Clusters,
) -> None:
    """Kueue's LeaderWorkerSet adapter: a Workload per group, all sent to the worker the lowest group went
    to; the LeaderWorkerSet is copied once (the manager's uid in ``kueue.x-k8s.io/multikueue-origin-uid``,
    so the worker names its groups' Workloads as the manager did), nothing is read back, and deleting the
    manager's LeaderWorkerSet deletes the copies."""
    manager = clusters.manager
    lws = await create_lws(manager, "serve", replicas=2, size=2)
    local_pods = [name for group in (0, 1) for name in await make_lws_group(manager, lws, group)]
    names = [workload_name_of_group("serve", lws["metadata"]["uid"], group) for group in (0, 1)]

    def admitted() -> bool:
        return all(is_true(manager.get("workloads", name, "ml"), "Admitted") for name in names)

    await manager.wait_for(admitted, timeout=HANG)
    clusters_of = {(manager.get("workloads", name, "ml") or {})["status"]["clusterName"] for name in names}
    assert len(clusters_of) == 1  # both groups in one worker
    chosen_name = clusters_of.pop()
    chosen, other = (
        clusters.workers[chosen_name],
        next(w for n, w in clusters.workers.items() if n != chosen_name),
    )
    await chosen.wait_for(lambda: chosen.get("leaderworkersets", "serve", "ml") is not None, timeout=HANG)
    remote = chosen.get("leaderworkersets", "serve", "ml") or {}
    assert remote["metadata"]["labels"][ORIGIN_LABEL] == "multikueue"
    assert remote["metadata"]["annotations"][ORIGIN_UID_ANNOTATION] == lws["metadata"]["uid"]
    assert PREBUILT_WORKLOAD_LABEL not in remote["metadata"]["annotations"]
    remote_pods = [name for group in (0, 1) for name in await make_lws_group(chosen, remote, group)]
    for name in remote_pods:
        await chosen.wait_for(ungated(chosen, name), timeout=HANG)
    assert sorted(w["metadata"]["name"] for w in chosen.list("workloads", "ml")) == sorted(names)
    for name in names:  # the copies adopted, none of the worker's own
        copied = chosen.get("workloads", name, "ml") or {}
        assert copied["metadata"]["ownerReferences"][0]["uid"] == remote["metadata"]["uid"]
    await manager.wait_for(lambda: other.list("workloads", "ml") == [], timeout=HANG)
    assert other.get("leaderworkersets", "serve", "ml") is None
    await manager.wait_for(lambda: research_usage(manager) == (2, 4))
    for name in local_pods:
        assert gated(manager.get("pods", name, "ml"))

    await manager.delete("leaderworkersets", "serve", namespace="ml", propagation="Background")
    await chosen.wait_for(lambda: chosen.get("leaderworkersets", "serve", "ml") is None, timeout=HANG)
    await chosen.wait_for(lambda: chosen.list("workloads", "ml") == [], timeout=HANG)
    await manager.wait_for(lambda: research_usage(manager) == (0, 0), timeout=HANG)
