"""MultiKueue dispatch of a pod group on three real control planes (the manager and two workers of
``test_multikueue_dispatch_e2e``, each with its own controller).

Pods have no ``spec.managedBy``: the manager's pods keep the scheduling gate ``kueue.x-k8s.io/admission``
while their Workload, with its MultiKueue check, is dispatched; copies of the pods run in the worker that
admits the Workload copy, whose controller ungates them. The test plays the worker's kubelet (there is none)
through ``pods/status``; the copies' phases come back to the manager's pods, their success finishes the
manager's Workload and frees its quota, and the copies are deleted. kube-apiserver refuses to add a
scheduling gate back, so a manager pod still gated at the end was never ungated.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from kueue_webhook.api.multikueue import ORIGIN_LABEL, PREBUILT_WORKLOAD_LABEL
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import CLUSTER_QUEUES, WORKLOADS, Kind
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER
from tests.e2e.test_multikueue_dispatch_e2e import Setup, crds, eventually, get, is_true, setup
from tests.e2e.workers import NO_WORKERS, WORKER_KUBECONFIGS

pytestmark = [
    pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER),
    pytest.mark.skipif(len(WORKER_KUBECONFIGS) < 2, reason=f"two workers needed: {NO_WORKERS}"),
]
__all__ = ["crds", "setup"]  # the fixtures: the CRDs on the three planes, the controllers

JSON = dict[str, Any]
PODS = Kind("Pod", "", "v1", "pods", namespaced=True)
GATE = "kueue.x-k8s.io/admission"
GROUP = "kueue.x-k8s.io/pod-group-name"
TOTAL = "kueue.x-k8s.io/pod-group-total-count"
MANAGED = "kueue.x-k8s.io/managed"


def group_pod(namespace: str, name: str, group: str, total: int) -> JSON:
    """A pod of a group as the manager's pod webhook leaves it (gated, marked managed, with the finalizer);
    this module's manager serves no webhook."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"kueue.x-k8s.io/queue-name": "team", GROUP: group, MANAGED: "true"},
            "annotations": {TOTAL: str(total)},
            "finalizers": [MANAGED],
        },
        "spec": {
            "restartPolicy": "Never",
            "schedulingGates": [{"name": GATE}],
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "500m"}}}],
        },
    }


def gated(pod: JSON | None) -> bool:
    return any(g.get("name") == GATE for g in ((pod or {}).get("spec") or {}).get("schedulingGates") or [])


def phase(pod: JSON | None) -> str:
    return str(((pod or {}).get("status") or {}).get("phase") or "")


async def report_phase(client: KubeClient, namespace: str, name: str, new_phase: str) -> None:
    """The kubelet's report, which no kubelet makes here."""
    ready = "True" if new_phase == "Running" else "False"
    status = {"phase": new_phase, "conditions": [{"type": "Ready", "status": ready}]}
    await client.patch(PODS, name=name, namespace=namespace, patch={"status": status}, subresource="status")


async def release_finalizers(client: KubeClient, namespace: str) -> None:
    """Whatever a failed run left holding the namespace's pods."""
    pods, _ = await client.list_all(PODS, namespace=namespace)
    for pod in pods:
        if pod["metadata"].get("finalizers"):
            with contextlib.suppress(ApiError):
                await client.patch(
                    PODS,
                    name=pod["metadata"]["name"],
                    namespace=namespace,
                    patch={"metadata": {"finalizers": None}},
                )


async def test_a_pod_group_runs_in_a_worker_and_finishes_on_the_manager_whose_pods_stay_gated(
    setup: Setup,
) -> None:
    ns = setup.name
    names = [f"trio-{index}" for index in range(3)]
    try:
        for name in names:
            await setup.manager.create(PODS, group_pod(ns, name, "trio", 3), namespace=ns)

        async def chosen() -> str:
            workload = await get(setup.manager, WORKLOADS, "trio", ns)
            admitted = is_true(workload, "Admitted")
            return str(((workload or {}).get("status") or {}).get("clusterName") or "") if admitted else ""

        worker = await eventually(chosen, "the group's Workload is admitted on the manager for a worker")
        remote = setup.workers[worker]

        async def copies_started() -> bool:
            copies = [await get(remote, PODS, name, ns) for name in names]
            return all(c is not None and not gated(c) for c in copies)

        await eventually(copies_started, f"the worker {worker} ungates the copies of the group's pods")
        for name in names:
            copy = await get(remote, PODS, name, ns)
            assert copy is not None
            assert copy["metadata"]["labels"][ORIGIN_LABEL] == "multikueue"
            assert copy["metadata"]["annotations"][PREBUILT_WORKLOAD_LABEL] == "trio"
            assert gated(await get(setup.manager, PODS, name, ns))
        other = next(client for w, client in setup.workers.items() if w != worker)

        async def other_empty() -> bool:
            return await get(other, WORKLOADS, "trio", ns) is None

        await eventually(other_empty, "the losing copy is deleted")
        for name in names:
            assert await get(other, PODS, name, ns) is None

        for name in names:
            await report_phase(remote, ns, name, "Running")

        async def running_on_manager() -> bool:
            return [phase(await get(setup.manager, PODS, name, ns)) for name in names] == ["Running"] * 3

        await eventually(running_on_manager, "the manager's pods show the copies running")
        for name in names:
            assert gated(await get(setup.manager, PODS, name, ns))

        for name in names:
            await report_phase(remote, ns, name, "Succeeded")

        async def finished() -> bool:
            return is_true(await get(setup.manager, WORKLOADS, "trio", ns), "Finished")

        await eventually(finished, "the manager's Workload is Finished")
        workload = await get(setup.manager, WORKLOADS, "trio", ns)
        done = next(c for c in workload["status"]["conditions"] if c["type"] == "Finished")  # type: ignore[index]
        assert done["reason"] == "Succeeded"

        async def quota_free() -> bool:
            queue = await setup.manager.get(CLUSTER_QUEUES, name=ns)
            return int((queue.get("status") or {}).get("admittedWorkloads") or 0) == 0

        await eventually(quota_free, "the manager's ClusterQueue no longer counts the group")

        async def copies_gone() -> bool:
            left = [await get(remote, PODS, name, ns) for name in names]
            return all(c is None for c in left) and await get(remote, WORKLOADS, "trio", ns) is None

        await eventually(copies_gone, "the finished group's copies are deleted")
        for name in names:
            local = await get(setup.manager, PODS, name, ns)
            assert phase(local) == "Succeeded" and gated(local)
            assert MANAGED not in (local or {}).get("metadata", {}).get("finalizers", [])
    finally:
        await release_finalizers(setup.manager, ns)
