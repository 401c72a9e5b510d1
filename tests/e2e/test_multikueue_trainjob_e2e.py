"""MultiKueue dispatch of a Kubeflow Trainer TrainJob on three real control planes: a manager and two
workers, each with its own controller (``KUEUE_E2E_KUBECONFIG`` is the manager,
``KUEUE_E2E_WORKER_KUBECONFIGS`` the two workers), with the Kueue CRDs, the Trainer CRDs (tests/crds) and
the same ClusterTrainingRuntime on all three.

The manager's ClusterQueue lists a MultiKueue check. A TrainJob MultiKueue manages (``spec.managedBy``) gets
its Workload from the runtime on the manager; the copy runs in the worker that admits it, without
``managedBy`` and with that worker's flavor in Kueue's runtime patch; the Complete status the test writes
there (no Trainer runs) comes back to the manager's TrainJob, whose Workload finishes.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kueue_webhook.api.integrations.trainjob import RUNTIME_PATCH_MANAGER
from kueue_webhook.api.multikueue import MULTIKUEUE_CONTROLLER, ORIGIN_LABEL
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import (
    CLUSTER_QUEUES,
    CONFIGMAPS,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    Kind,
)
from kueue_webhook.control.multikueue.dispatcher import DispatchSettings
from tests.crds import crd_file
from tests.crds.trainer import TRAINER_CRDS, cluster_runtime, complete, kueue_patch, trainjob
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER
from tests.e2e.test_multikueue_dispatch_e2e import (
    _clean,
    eventually,
    get,
    is_true,
    register_workers,
    unregister_workers,
    workload_of,
)
from tests.e2e.workers import NO_WORKERS, WORKER_KUBECONFIGS, install_crds, remove_crds
from tests.support import builders
from tests.support.replica import Replica, start_replica
from tests.support.worker_clusters import StaticWorkers

JSON = dict[str, Any]
pytestmark = [
    pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER),
    pytest.mark.skipif(len(WORKER_KUBECONFIGS) < 2, reason=f"two workers needed: {NO_WORKERS}"),
]

TRAINJOBS = Kind("TrainJob", "trainer.kubeflow.org", "v1alpha1", "trainjobs", namespaced=True)
RUNTIMES = Kind(
    "ClusterTrainingRuntime", "trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes", namespaced=False
)
SETTINGS = DispatchSettings(worker_lost_timeout=3.0, gc_interval=1.0, longest_wait=15.0)
CONFIG = "integrations: {frameworks: [batch/job, trainer.kubeflow.org/trainjob]}"


@dataclass
class Setup:
    name: str
    manager: KubeClient
    workers: dict[str, KubeClient]


@pytest.fixture(scope="module", autouse=True)
def crds() -> Iterator[None]:
    """Kueue's CRDs and the Trainer's on the manager and on both workers; the Trainer's CRDs this module
    created are deleted when it is done."""
    clusters = (Path(KUBECONFIG), *WORKER_KUBECONFIGS)
    trainer = [crd_file(plural) for plural in TRAINER_CRDS]
    created = {kubeconfig: install_crds(kubeconfig, *trainer) for kubeconfig in clusters}
    yield
    for kubeconfig, names in created.items():
        remove_crds(kubeconfig, names)


async def queues(client: KubeClient, name: str, checks: list[str], *, system: str, pool: str) -> None:
    """Flavor (node label ``pool``), ClusterQueue and LocalQueue ``team`` of 4 cpus, named ``name``, the
    runtime ``name``, and this module's configuration in the ConfigMap of ``system``."""
    with contextlib.suppress(ApiError):
        await client.create(NAMESPACES, builders.namespace(system))
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kueue-webhook-config", "namespace": system},
        "data": {"config.yaml": CONFIG},
    }
    try:
        await client.create(CONFIGMAPS, config, namespace=system)
    except ApiError as exc:
        if exc.status != 409:
            raise
        await client.patch(
            CONFIGMAPS, name="kueue-webhook-config", namespace=system, patch={"data": config["data"]}
        )
    await client.create(NAMESPACES, builders.namespace(name))
    extra = {"admissionChecksStrategy": {"admissionChecks": [{"name": c} for c in checks]}} if checks else {}
    flavor, cluster_queue, local_queue = builders.own_queue(
        name, name, {"cpu": "4"}, queue="team", namespace_selector=builders.only(name), **extra
    )
    flavor.setdefault("spec", {})["nodeLabels"] = {"pool": pool}
    await client.create(RESOURCE_FLAVORS, flavor)
    await client.create(CLUSTER_QUEUES, cluster_queue)
    await client.create(LOCAL_QUEUES, local_queue, namespace=name)
    runtime = cluster_runtime(name, resources={"requests": {"cpu": "1"}})
    await client.create(RUNTIMES, runtime)


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    name = f"mk-tj-{uuid.uuid4().hex[:6]}"
    manager = await KubeClient.connect(kubeconfig=KUBECONFIG)
    kubeconfigs = {f"worker-{i}": p for i, p in enumerate(WORKER_KUBECONFIGS)}
    workers = {w: await KubeClient.connect(kubeconfig=str(p)) for w, p in kubeconfigs.items()}
    replicas: list[Replica] = []
    stand_in = StaticWorkers(workers, checks={name: tuple(sorted(workers))})
    registered = {f"{name}-{worker}": Path(path) for worker, path in kubeconfigs.items()}
    try:
        system = await register_workers(manager, name, registered)
        await queues(manager, name, [name], system=system, pool="manager")
        for worker, client in workers.items():
            await queues(client, name, [], system="kueue-system", pool=worker)
            replicas.append(await start_replica(kubeconfigs[worker], identity=worker, leader_election=False))
        replicas.append(
            await start_replica(
                Path(KUBECONFIG),
                identity="manager",
                namespace=system,
                leader_election=False,
                workers=stand_in,
                multikueue=SETTINGS,
            )
        )
        yield Setup(name, manager, workers)
    finally:
        for running in replicas:
            await running.stop()
        for client in [manager, *workers.values()]:
            with contextlib.suppress(ApiError, OSError):
                await _clean(client, name)
            with contextlib.suppress(ApiError, OSError):
                await client.delete(RUNTIMES, name=name)
        await unregister_workers(manager, name, list(registered))
        await manager.close()
        await stand_in.close()
        for client in workers.values():
            await client.close()


async def test_a_trainjob_runs_in_a_worker_with_that_workers_flavor_and_its_completion_comes_back(
    setup: Setup,
) -> None:
    ns = setup.name
    body = trainjob("train", ns, "team", ns, nodes=2)
    body["spec"].update(suspend=True, managedBy=MULTIKUEUE_CONTROLLER)
    await setup.manager.create(TRAINJOBS, body, namespace=ns)

    async def started_somewhere() -> tuple[str, JSON] | None:
        workload = await workload_of(setup.manager, ns, "train")
        worker = str(((workload or {}).get("status") or {}).get("clusterName") or "")
        found = await get(setup.workers[worker], TRAINJOBS, "train", ns) if worker else None
        return (worker, found) if found and found["spec"].get("suspend") is False else None

    worker, copy = await eventually(started_somewhere, "the TrainJob starts in a worker")
    local = await workload_of(setup.manager, ns, "train")
    assert local is not None
    assert [(p["name"], p["count"]) for p in local["spec"]["podSets"]] == [("node", 2)]
    assert copy["metadata"]["labels"][ORIGIN_LABEL] == "multikueue"
    # cleared, so the CRD's default names the worker's own Trainer controller
    assert copy["spec"]["managedBy"] == "trainer.kubeflow.org/trainjob-controller"
    assert [p["manager"] for p in copy["spec"]["runtimePatches"]] == [RUNTIME_PATCH_MANAGER]
    assert kueue_patch(copy)["nodeSelector"] == {"pool": worker}

    await setup.workers[worker].patch(
        TRAINJOBS, name="train", namespace=ns, patch={"status": complete(2)}, subresource="status"
    )

    async def finished_on_manager() -> bool:
        return is_true(await workload_of(setup.manager, ns, "train"), "Finished")

    await eventually(finished_on_manager, f"the manager's Workload is Finished (run in {worker})")
    mirrored = await get(setup.manager, TRAINJOBS, "train", ns)
    assert mirrored is not None and mirrored["status"]["conditions"][0]["type"] == "Complete"
