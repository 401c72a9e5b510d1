"""MultiKueue dispatch of the kinds beyond Job and JobSet on fake clusters, each with its CRD installed: an
XGBoostJob, PaddleJob, JAXJob, RayService or AppWrapper queued on the manager is made MultiKueue's by its
webhook (``managedBy`` where the kind keeps it), runs in the worker that admits its Workload copy (the
copy without ``managedBy``, so the worker's own controller starts it) and its status, played by the test
in the worker, is read back on the manager. A kind that finishes finishes the manager's Workload; a
RayService, which serves until deleted, has its Serve config edits followed by the copy and its copies
deleted with it (Kueue's adapters for these kinds).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from kueue_webhook.api.multikueue import MULTIKUEUE_CONTROLLER, ORIGIN_LABEL, managed_by
from kueue_webhook.control.kube.client import KubeClient
from tests.crds import integration_crds
from tests.crds.samples import SAMPLES, Sample, dig
from tests.fakeapi import DEFAULT_CRDS, FakeApiServer, load_crds
from tests.integration.multikueue.test_dispatch import (
    SETTINGS,
    check,
    manager_manifests,
    register_workers,
    worker_queues,
)
from tests.support.fake_cluster import condition, controller_config, serving_webhook
from tests.support.replica import replica
from tests.support.worker_clusters import StaticWorkers

JSON = dict[str, Any]
HANG = 30.0
KINDS = ["XGBoostJob", "PaddleJob", "JAXJob", "RayService", "AppWrapper"]


def frameworks(sample: Sample) -> str:
    return f"integrations: {{frameworks: [batch/job, {sample.framework}]}}"


def workload_of(api: FakeApiServer, kind: str) -> JSON | None:
    for workload in api.list("workloads", "ml"):
        if any(ref.get("kind") == kind for ref in workload["metadata"].get("ownerReferences") or []):
            return workload
    return None


@pytest.fixture
async def setup(
    request: pytest.FixtureRequest, make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> AsyncIterator[tuple[Sample, FakeApiServer, dict[str, FakeApiServer]]]:
    sample = SAMPLES[request.param]
    crds = load_crds(DEFAULT_CRDS) + integration_crds(sample.plural)
    manager = await make_fake_api(crds=crds)
    await manager.apply_manifests(manager_manifests(frameworks(sample)))
    workers = {"worker-a": await make_fake_api(crds=crds), "worker-b": await make_fake_api(crds=crds)}
    await register_workers(manager, workers)
    async with AsyncExitStack() as stack:
        clients = {}
        for name, worker in workers.items():
            await worker.apply_manifests(controller_config(frameworks(sample)) + "---\n" + worker_queues(8))
            await stack.enter_async_context(replica(worker.kubeconfig_path(), identity=name))
            clients[name] = await KubeClient.connect(kubeconfig=str(worker.kubeconfig_path()))
        stand_in = StaticWorkers(clients, checks={"workers": ("worker-a", "worker-b")})
        stack.push_async_callback(stand_in.close)
        await stack.enter_async_context(
            serving_webhook(manager, tmp_path, workers=stand_in, multikueue=SETTINGS)
        )
        yield sample, manager, workers


@pytest.mark.parametrize("setup", KINDS, indirect=True)
async def test_a_kind_kueue_dispatches_runs_in_a_worker_and_reads_its_status_back(
    setup: tuple[Sample, FakeApiServer, dict[str, FakeApiServer]],
) -> None:
    sample, manager, workers = setup
    plural = sample.plural
    created = await manager.create(sample.manifest("train", "ml", "team"), admit=True)
    assert managed_by(created) == MULTIKUEUE_CONTROLLER
    await manager.wait_for(
        lambda: check(workload_of(manager, sample.kind)).get("state") == "Ready", timeout=HANG
    )
    local = workload_of(manager, sample.kind)
    assert local is not None
    chosen = workers[local["status"]["clusterName"]]

    def started() -> bool:
        remote = chosen.get(plural, "train", "ml")
        return remote is not None and dig(remote, sample.suspend) is False

    await chosen.wait_for(started, timeout=HANG)  # the worker's own controller started the copy
    remote = chosen.get(plural, "train", "ml")
    assert remote is not None
    assert remote["metadata"]["labels"][ORIGIN_LABEL] == "multikueue"
    assert managed_by(remote) == ""

    status: JSON = sample.done or {"serviceStatus": "Running", "observedGeneration": 1}
    await chosen.patch(plural, "train", {"status": status}, namespace="ml", subresource="status")
    await manager.wait_for(
        lambda: (manager.get(plural, "train", "ml") or {}).get("status") == status, timeout=HANG
    )
    name = local["metadata"]["name"]
    if sample.done is not None:
        await manager.wait_for(lambda: condition(workload_of(manager, sample.kind), "Finished") is not None)
        await manager.wait_for(lambda: chosen.get("workloads", name, "ml") is None, timeout=HANG)
        return
    # a RayService: a new Serve config reaches the running copy, and deleting it deletes the copies
    await manager.patch(plural, "train", {"spec": {"serveConfigV2": "applications: [x]\n"}}, namespace="ml")
    await chosen.wait_for(
        lambda: (
            (chosen.get(plural, "train", "ml") or {}).get("spec", {}).get("serveConfigV2")
            == "applications: [x]\n"
        ),
        timeout=HANG,
    )
    await manager.delete(plural, "train", namespace="ml")
    await chosen.wait_for(lambda: chosen.get(plural, "train", "ml") is None, timeout=HANG)
    assert chosen.get("workloads", name, "ml") is None
