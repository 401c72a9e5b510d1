"""MultiKueue dispatch of a Kubeflow Trainer TrainJob on fake clusters with the Trainer CRDs and the same
ClusterTrainingRuntime in each: queued on the manager it is made MultiKueue's by the webhook
(``spec.managedBy``), its Workload's pod sets read from the runtime; its copy runs in the worker that admits
the Workload copy, without ``managedBy`` and without the manager's runtime patch, the worker's own
controller writing its flavor there; the status the Trainer (played by the test) writes in the worker is
read back on the manager, whose Workload finishes (Kueue's TrainJob MultiKueue adapter)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from kueue_webhook.api.integrations.trainjob import RUNTIME_PATCH_MANAGER
from kueue_webhook.api.multikueue import MULTIKUEUE_CONTROLLER, ORIGIN_LABEL, managed_by
from kueue_webhook.control.kube.client import KubeClient
from tests.crds import integration_crds
from tests.crds.trainer import TRAINER_CRDS, cluster_runtime, complete, kueue_patch, trainjob
from tests.fakeapi import DEFAULT_CRDS, FakeApiServer, load_crds
from tests.integration.multikueue.test_dispatch import (
    SETTINGS,
    check,
    manager_manifests,
    register_workers,
    worker_queues,
)
from tests.integration.multikueue.test_dispatch_kinds import workload_of
from tests.support.fake_cluster import condition, controller_config, serving_webhook
from tests.support.replica import replica
from tests.support.worker_clusters import StaticWorkers

HANG = 30.0
FRAMEWORKS = "integrations: {frameworks: [batch/job, trainer.kubeflow.org/trainjob]}"


@pytest.fixture
async def clusters(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> AsyncIterator[tuple[FakeApiServer, dict[str, FakeApiServer]]]:
    crds = load_crds(DEFAULT_CRDS) + integration_crds(*TRAINER_CRDS)
    manager = await make_fake_api(crds=crds)
    await manager.apply_manifests(manager_manifests(FRAMEWORKS))
    await manager.create(cluster_runtime("torch"))
    await manager.patch("resourceflavors", "gpus", {"spec": {"nodeLabels": {"pool": "manager"}}})
    workers = {"worker-a": await make_fake_api(crds=crds), "worker-b": await make_fake_api(crds=crds)}
    await register_workers(manager, workers)
    async with AsyncExitStack() as stack:
        clients = {}
        for name, worker in workers.items():
            await worker.apply_manifests(controller_config(FRAMEWORKS) + "---\n" + worker_queues(8))
            await worker.create(cluster_runtime("torch"))
            await worker.patch("resourceflavors", "gpus", {"spec": {"nodeLabels": {"pool": name}}})
            await stack.enter_async_context(replica(worker.kubeconfig_path(), identity=name))
            clients[name] = await KubeClient.connect(kubeconfig=str(worker.kubeconfig_path()))
        stand_in = StaticWorkers(clients, checks={"workers": ("worker-a", "worker-b")})
        stack.push_async_callback(stand_in.close)
        await stack.enter_async_context(
            serving_webhook(manager, tmp_path, workers=stand_in, multikueue=SETTINGS)
        )
        yield manager, workers


async def test_a_trainjob_runs_in_a_worker_without_the_managers_runtime_patch_and_finishes_on_the_manager(
    clusters: tuple[FakeApiServer, dict[str, FakeApiServer]],
) -> None:
    manager, workers = clusters
    created = await manager.create(trainjob("train", "ml", "team", "torch", nodes=2), admit=True)
    assert managed_by(created) == MULTIKUEUE_CONTROLLER
    await manager.wait_for(
        lambda: check(workload_of(manager, "TrainJob")).get("state") == "Ready", timeout=HANG
    )
    local = workload_of(manager, "TrainJob")
    assert local is not None
    assert [(p["name"], p["count"]) for p in local["spec"]["podSets"]] == [("node", 2)]
    chosen = workers[local["status"]["clusterName"]]

    def started() -> bool:
        remote = chosen.get("trainjobs", "train", "ml")
        return remote is not None and remote["spec"]["suspend"] is False

    await chosen.wait_for(started, timeout=HANG)  # the worker's own controller started the copy
    remote = chosen.get("trainjobs", "train", "ml")
    assert remote is not None
    assert remote["metadata"]["labels"][ORIGIN_LABEL] == "multikueue"
    assert managed_by(remote) == "trainer.kubeflow.org/trainjob-controller"  # cleared: the CRD's default
    # one runtime patch of Kueue's: the worker's own, with the worker's flavor, not the manager's
    assert [p["manager"] for p in remote["spec"]["runtimePatches"]] == [RUNTIME_PATCH_MANAGER]
    assert kueue_patch(remote)["nodeSelector"] == {"pool": local["status"]["clusterName"]}

    status = complete(2)
    await chosen.patch("trainjobs", "train", {"status": status}, namespace="ml", subresource="status")
    await manager.wait_for(
        lambda: (manager.get("trainjobs", "train", "ml") or {}).get("status") == status, timeout=HANG
    )
    await manager.wait_for(lambda: condition(workload_of(manager, "TrainJob"), "Finished") is not None)
    await manager.wait_for(
        lambda: chosen.get("workloads", local["metadata"]["name"], "ml") is None, timeout=HANG
    )
