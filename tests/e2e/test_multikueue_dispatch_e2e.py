"""MultiKueue dispatch on three real control planes: a manager and two workers, each with its own
controller (``KUEUE_E2E_KUBECONFIG`` is the manager, ``KUEUE_E2E_WORKER_KUBECONFIGS`` the two workers,
comma-separated; all with the Kueue CRDs and the minimal JobSet and AppWrapper CRDs installed).

The manager's ClusterQueue lists a MultiKueue check; a Job (``spec.managedBy`` MultiKueue's, so the
manager's Job controller never makes its pods) is copied to the workers, runs in one, its pods are played
Succeeded there by the test (no kubelet), and its completion comes back to the manager's Job and Workload.
A JobSet and an AppWrapper go the same way, their worker status played by the test. Where the control
plane's scripts are at hand (``tests/e2e/workers.py``) a worker is stopped mid-run with ``down.sh``; after
the (short) worker-lost timeout its Workload runs in the other worker, and the manager's quota is never
exceeded; the stopped worker is started again (``up.sh``). The same through real ``MultiKueueCluster``
connections, where the stale copy left in the stopped worker is deleted once it is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kueue_webhook.api.multikueue import MULTIKUEUE_CONTROLLER, WORKER_POD_LABEL
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import (
    ADMISSION_CHECKS,
    CLUSTER_QUEUES,
    CONFIGMAPS,
    JOBS,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    Kind,
)
from kueue_webhook.control.multikueue.dispatcher import DispatchSettings
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster
from tests.e2e.workers import (
    CAN_STOP_WORKERS,
    NO_SCRIPTS,
    NO_WORKERS,
    REPO_ROOT,
    WORKER_KUBECONFIGS,
    control_plane,
    install_crds,
    remove_crds,
)
from tests.support import builders
from tests.support.replica import Replica, start_replica
from tests.support.worker_clusters import StaticWorkers

pytestmark = [
    pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER),
    pytest.mark.skipif(len(WORKER_KUBECONFIGS) < 2, reason=f"two workers needed: {NO_WORKERS}"),
]
JSON = dict[str, Any]
JOBSETS = Kind("JobSet", "jobset.x-k8s.io", "v1alpha2", "jobsets", namespaced=True)
APPWRAPPERS = Kind("AppWrapper", "workload.codeflare.dev", "v1beta2", "appwrappers", namespaced=True)
HANG = 180.0  # seconds: a bound on a hang, never a pace
SETTINGS = DispatchSettings(worker_lost_timeout=3.0, gc_interval=1.0, longest_wait=15.0)
CONFIG = (
    "integrations: {frameworks: [batch/job, pod, jobset.x-k8s.io/jobset, workload.codeflare.dev/appwrapper]}"
)


@dataclass
class Setup:
    name: str
    manager: KubeClient
    workers: dict[str, KubeClient]
    worker_kubeconfigs: dict[str, Path]
    stand_in: StaticWorkers
    controller: Replica


async def eventually(check: Callable[[], Any], what: str, timeout: float = HANG) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = await check()
        if found:
            return found
        if loop.time() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        await asyncio.sleep(0.3)


async def get(client: KubeClient, kind: Kind, name: str, namespace: str) -> JSON | None:
    try:
        return await client.get(kind, name=name, namespace=namespace)
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise


async def queues(
    client: KubeClient, name: str, quota: str, checks: list[str], *, system: str = "kueue-system"
) -> None:
    """A flavor, ClusterQueue and LocalQueue ``name``, and this module's configuration in the ConfigMap of
    ``system``, the namespace the cluster's controller runs in."""
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
        # left by another module (an install's own ConfigMap): this module's frameworks must be on
        await client.patch(
            CONFIGMAPS, name="kueue-webhook-config", namespace=system, patch={"data": config["data"]}
        )
    await client.create(NAMESPACES, builders.namespace(name))
    extra = {"admissionChecksStrategy": {"admissionChecks": [{"name": c} for c in checks]}} if checks else {}
    flavor, cluster_queue, local_queue = builders.own_queue(
        name, name, {"cpu": quota}, queue="team", namespace_selector=builders.only(name), **extra
    )
    await client.create(RESOURCE_FLAVORS, flavor)
    await client.create(CLUSTER_QUEUES, cluster_queue)
    await client.create(LOCAL_QUEUES, local_queue, namespace=name)


@pytest.fixture(scope="module", autouse=True)
def crds() -> Iterator[None]:
    """Kueue's CRDs and the minimal JobSet and AppWrapper CRDs on the manager and on both workers; the
    JobSet and AppWrapper CRDs this module created are deleted when it is done."""
    folder = REPO_ROOT / "tests" / "crds" / "minimal"
    minimal = [folder / f"{kind}.yaml" for kind in ("jobsets", "appwrappers")]
    clusters = (Path(KUBECONFIG), *WORKER_KUBECONFIGS)
    created = {kubeconfig: install_crds(kubeconfig, *minimal) for kubeconfig in clusters}
    yield
    for kubeconfig, names in created.items():
        remove_crds(kubeconfig, names)


SECRETS = Kind("Secret", "", "v1", "secrets", namespaced=True)
CLUSTERS_KIND = Kind("MultiKueueCluster", "kueue.x-k8s.io", "v1beta2", "multikueueclusters", namespaced=False)
CONFIGS_KIND = Kind("MultiKueueConfig", "kueue.x-k8s.io", "v1beta2", "multikueueconfigs", namespaced=False)


async def register_workers(manager: KubeClient, name: str, kubeconfigs: dict[str, Path]) -> str:
    """The MultiKueue AdmissionCheck ``name`` as an admin sets it up: a MultiKueueCluster per worker (its
    kubeconfig in a Secret of the namespace ``<name>-system``, returned), a MultiKueueConfig listing them, the
    check naming it. The check turns Active once the workers connect, and only then does its ClusterQueue
    admit (Kueue keeps a ClusterQueue with an inactive check inactive)."""
    system = f"{name}-system"
    await manager.create(NAMESPACES, builders.namespace(system))
    for worker, path in kubeconfigs.items():
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": worker, "namespace": system}}
        secret["stringData"] = {"kubeconfig": path.read_text()}
        await manager.create(SECRETS, secret, namespace=system)
        await manager.create(
            CLUSTERS_KIND,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "MultiKueueCluster",
                "metadata": {"name": worker},
                "spec": {"clusterSource": {"kubeConfig": {"location": worker, "locationType": "Secret"}}},
            },
        )
    await manager.create(
        CONFIGS_KIND,
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "MultiKueueConfig",
            "metadata": {"name": name},
            "spec": {"clusters": sorted(kubeconfigs)},
        },
    )
    check = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": name}}
    check["spec"] = {
        "controllerName": MULTIKUEUE_CONTROLLER,
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": name},
    }
    await manager.create(ADMISSION_CHECKS, check)
    return system


async def unregister_workers(manager: KubeClient, name: str, workers: list[str]) -> None:
    for kind, object_name in [(CONFIGS_KIND, name), *((CLUSTERS_KIND, w) for w in workers)]:
        with contextlib.suppress(ApiError, OSError):
            await manager.delete(kind, name=object_name)
    with contextlib.suppress(ApiError, OSError):
        await manager.delete(NAMESPACES, name=f"{name}-system")


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    name = f"mk-{uuid.uuid4().hex[:6]}"
    manager = await KubeClient.connect(kubeconfig=KUBECONFIG)
    kubeconfigs = {f"worker-{i}": p for i, p in enumerate(WORKER_KUBECONFIGS)}
    workers = {w: await KubeClient.connect(kubeconfig=str(p)) for w, p in kubeconfigs.items()}
    replicas: list[Replica] = []
    stand_in = StaticWorkers(workers, checks={name: tuple(sorted(workers))})
    registered = {f"{name}-{worker}": Path(path) for worker, path in kubeconfigs.items()}
    try:
        system = await register_workers(manager, name, registered)
        await queues(manager, name, "2", [name], system=system)
        for worker, client in workers.items():
            await queues(client, name, "4", [])
            replicas.append(await start_replica(kubeconfigs[worker], identity=worker, leader_election=False))
        controller = await start_replica(
            Path(KUBECONFIG),
            identity="manager",
            namespace=system,
            leader_election=False,
            workers=stand_in,
            multikueue=SETTINGS,
        )
        replicas.append(controller)
        yield Setup(name, manager, workers, kubeconfigs, stand_in, controller)
    finally:
        for running in replicas:
            await running.stop()
        for client in [manager, *workers.values()]:
            with contextlib.suppress(ApiError, OSError):
                await _clean(client, name)
        await unregister_workers(manager, name, list(registered))
        await manager.close()
        await stand_in.close()


async def _clean(client: KubeClient, name: str) -> None:
    workloads, _ = await client.list_all(WORKLOADS, namespace=name)
    for workload in workloads:
        with contextlib.suppress(ApiError):
            await client.patch(
                WORKLOADS,
                name=workload["metadata"]["name"],
                namespace=name,
                patch={"metadata": {"finalizers": None}},
            )
    for kind, object_name in [
        (NAMESPACES, name),
        (CLUSTER_QUEUES, name),
        (RESOURCE_FLAVORS, name),
        (ADMISSION_CHECKS, name),
    ]:
        with contextlib.suppress(ApiError):
            await client.delete(kind, name=object_name)


def job(namespace: str, name: str) -> JSON:
    body = builders.queued_job(namespace, name, queue="team", resources={"requests": {"cpu": "1"}})
    body["spec"]["managedBy"] = MULTIKUEUE_CONTROLLER
    return body


async def workload_of(client: KubeClient, namespace: str, owner: str) -> JSON | None:
    items, _ = await client.list_all(WORKLOADS, namespace=namespace)
    for item in items:
        if any(ref.get("name") == owner for ref in item["metadata"].get("ownerReferences") or []):
            return item
    return None


def is_true(obj: JSON | None, kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in ((obj or {}).get("status") or {}).get("conditions") or []
    )


async def test_a_job_runs_in_a_worker_and_its_completion_comes_back(setup: Setup) -> None:
    ns = setup.name
    await setup.manager.create(JOBS, job(ns, "train"), namespace=ns)

    async def chosen() -> str:
        workload = await workload_of(setup.manager, ns, "train")
        return str(((workload or {}).get("status") or {}).get("clusterName") or "")

    worker = await eventually(chosen, "the manager's Workload names the worker running it")
    local = await workload_of(setup.manager, ns, "train")
    assert local is not None and is_true(local, "QuotaReserved")
    await eventually(lambda: _admitted(setup.manager, ns, "train"), "the manager's Workload is Admitted")
    remote = setup.workers[worker]

    async def running_there() -> bool:
        found = await get(remote, JOBS, "train", ns)
        return bool(found and found["spec"].get("suspend") is False)

    await eventually(running_there, f"the Job runs in {worker}")
    started = await get(remote, JOBS, "train", ns)
    assert started is not None  # its pods are labelled as a MultiKueue worker's, as Kueue's worker does
    assert started["spec"]["template"]["metadata"]["labels"][WORKER_POD_LABEL] == "true"
    other = next(w for w in setup.workers if w != worker)
    assert await get(setup.workers[other], JOBS, "train", ns) is None
    # the manager's Job controller left it alone: no pods on the manager
    pods, _ = await setup.manager.list_all(Kind("Pod", "", "v1", "pods", namespaced=True), namespace=ns)
    assert pods == []

    worker_cluster = Cluster(setup.worker_kubeconfigs[worker])

    async def complete_on_manager() -> bool:
        await asyncio.to_thread(worker_cluster.finish_pods, ns)  # the kubelet's part, in the worker
        return is_true(await get(setup.manager, JOBS, "train", ns), "Complete")

    await eventually(complete_on_manager, "the manager's Job shows the worker's completion")
    mirrored = await get(setup.manager, JOBS, "train", ns)
    assert mirrored is not None and mirrored["status"]["succeeded"] == 1

    async def finished_on_manager() -> bool:
        return is_true(await workload_of(setup.manager, ns, "train"), "Finished")

    await eventually(finished_on_manager, "the manager's Workload is Finished")


async def _admitted(client: KubeClient, ns: str, owner: str) -> bool:
    return is_true(await workload_of(client, ns, owner), "Admitted")


async def test_a_jobset_runs_in_a_worker_and_its_completion_comes_back(setup: Setup) -> None:
    ns = setup.name
    body = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "sweep", "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "team"}},
        "spec": {
            "suspend": True,
            "managedBy": MULTIKUEUE_CONTROLLER,
            "replicatedJobs": [
                {
                    "name": "w",
                    "replicas": 1,
                    "template": {
                        "spec": builders.queued_job(
                            ns, "x", queue="team", resources={"requests": {"cpu": "1"}}
                        )["spec"]
                    },
                }
            ],
        },
    }
    await setup.manager.create(JOBSETS, body, namespace=ns)

    async def chosen() -> str:
        workload = await workload_of(setup.manager, ns, "sweep")
        return str(((workload or {}).get("status") or {}).get("clusterName") or "")

    worker = await eventually(chosen, "the JobSet's Workload names its worker")
    remote = setup.workers[worker]

    async def started_there() -> JSON | None:
        found = await get(remote, JOBSETS, "sweep", ns)
        return found if found and found["spec"].get("suspend") is False else None

    started = await eventually(started_there, f"the JobSet starts in {worker}")
    # no JobSet controller runs here: the test plays its status in the worker
    status = {
        "conditions": [
            {
                "type": "Completed",
                "status": "True",
                "reason": "AllJobsCompleted",
                "message": "jobset completed",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
        "replicatedJobsStatus": [
            {"name": "w", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}
        ],
    }
    await remote.patch(JOBSETS, name="sweep", namespace=ns, patch={"status": status}, subresource="status")
    del started

    async def finished_on_manager() -> bool:
        return is_true(await workload_of(setup.manager, ns, "sweep"), "Finished")

    await eventually(finished_on_manager, "the manager's Workload is Finished")
    mirrored = await get(setup.manager, JOBSETS, "sweep", ns)
    assert mirrored is not None and is_true(mirrored, "Completed")


async def test_an_app_wrapper_runs_in_a_worker_and_its_completion_comes_back(setup: Setup) -> None:
    ns = setup.name
    wrapped = builders.queued_job(ns, "inner", queue="team", resources={"requests": {"cpu": "1"}})
    wrapped["metadata"] = {"name": "inner"}
    body = {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": {"name": "wrapped", "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "team"}},
        "spec": {"suspend": True, "managedBy": MULTIKUEUE_CONTROLLER, "components": [{"template": wrapped}]},
    }
    await setup.manager.create(APPWRAPPERS, body, namespace=ns)

    async def started_somewhere() -> tuple[str, KubeClient] | None:
        workload = await workload_of(setup.manager, ns, "wrapped")
        worker = str(((workload or {}).get("status") or {}).get("clusterName") or "")
        found = await get(setup.workers[worker], APPWRAPPERS, "wrapped", ns) if worker else None
        return (worker, setup.workers[worker]) if found and found["spec"].get("suspend") is False else None

    worker, remote = await eventually(started_somewhere, "the AppWrapper starts in a worker")
    copy = await get(remote, APPWRAPPERS, "wrapped", ns)
    assert copy is not None and "managedBy" not in copy["spec"]  # the worker's AppWrapper controller runs it
    # no AppWrapper controller runs here: the test plays its status in the worker
    await remote.patch(
        APPWRAPPERS,
        name="wrapped",
        namespace=ns,
        patch={"status": {"phase": "Succeeded"}},
        subresource="status",
    )

    async def finished_on_manager() -> bool:
        return is_true(await workload_of(setup.manager, ns, "wrapped"), "Finished")

    await eventually(finished_on_manager, f"the manager's Workload is Finished (run in {worker})")
    mirrored = await get(setup.manager, APPWRAPPERS, "wrapped", ns)
    assert mirrored is not None and mirrored["status"]["phase"] == "Succeeded"


@pytest.mark.skipif(not CAN_STOP_WORKERS, reason=NO_SCRIPTS)
async def test_zz_a_stopped_worker_s_workload_runs_in_the_other_after_the_timeout(setup: Setup) -> None:
    ns = setup.name
    await setup.manager.create(JOBS, job(ns, "long"), namespace=ns)
    await setup.manager.create(JOBS, job(ns, "second"), namespace=ns)  # with "long", the whole quota (2 cpu)

    async def chosen() -> str:
        workload = await workload_of(setup.manager, ns, "long")
        return str(((workload or {}).get("status") or {}).get("clusterName") or "")

    first = await eventually(chosen, "the Job is dispatched")
    other = next(w for w in setup.workers if w != first)
    seen: list[tuple[str, ...]] = []

    async def watch_usage() -> None:
        while True:
            cq = await setup.manager.get(CLUSTER_QUEUES, name=ns)
            for usage in (cq.get("status") or {}).get("flavorsReservation") or []:
                for resource in usage.get("resources") or []:
                    seen.append((resource["name"], str(resource.get("total"))))
            await asyncio.sleep(0.5)

    watcher = asyncio.create_task(watch_usage())
    stopped = setup.worker_kubeconfigs[first]
    try:
        await control_plane("down.sh", stopped)
        setup.stand_in.lose(first)  # the cluster side's part: its connection failed

        async def moved() -> bool:
            return await chosen() == other

        await eventually(moved, f"the Workload moves to {other}")

        async def running_in_other() -> bool:
            found = await get(setup.workers[other], JOBS, "long", ns)
            return bool(found and found["spec"].get("suspend") is False)

        await eventually(running_in_other, f"the Job runs in {other}")
        workload = await workload_of(setup.manager, ns, "long")
        evicted = next(c for c in workload["status"]["conditions"] if c["type"] == "Evicted")
        assert "Admitting remote lost" in evicted["message"]
        # the lost worker's pods no longer count, the new worker's do: a third Job finds the quota full
        await setup.manager.create(JOBS, job(ns, "third"), namespace=ns)

        async def third_waits() -> bool:
            third = await workload_of(setup.manager, ns, "third")
            reserved = next(
                (
                    c
                    for c in ((third or {}).get("status") or {}).get("conditions") or []
                    if c["type"] == "QuotaReserved"
                ),
                {},
            )
            return reserved.get("reason") == "WaitingForQuota"

        await eventually(third_waits, "the third Job waits for quota")
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        await control_plane("up.sh", stopped)  # started again, so the next tests find it
    assert all(total in ("0", "1", "2") for name, total in seen if name == "cpu"), seen


@pytest.mark.skipif(not CAN_STOP_WORKERS, reason=NO_SCRIPTS)
async def test_zz_via_multikueue_clusters_a_stopped_worker_s_job_moves_and_its_stale_copy_goes() -> None:
    name = f"mkc-{uuid.uuid4().hex[:6]}"
    system = f"{name}-system"
    manager = await KubeClient.connect(kubeconfig=KUBECONFIG)
    kubeconfigs = {f"{name}-{i}": p for i, p in enumerate(WORKER_KUBECONFIGS)}
    workers = {w: await KubeClient.connect(kubeconfig=str(p)) for w, p in kubeconfigs.items()}
    replicas: list[Replica] = []
    stopped: Path | None = None
    try:
        await register_workers(manager, name, {w: Path(p) for w, p in kubeconfigs.items()})
        await queues(manager, name, "2", [name], system=system)
        for worker, client in workers.items():
            await queues(client, name, "4", [])
            replicas.append(await start_replica(kubeconfigs[worker], identity=worker, leader_election=False))
        controller = await start_replica(
            Path(KUBECONFIG),
            identity="manager",
            namespace=system,
            leader_election=False,
            multikueue=SETTINGS,
            settings={"multikueue_retry_base": 1.0, "multikueue_retry_cap": 4.0},
        )
        replicas.append(controller)
        await manager.create(JOBS, job(name, "long"), namespace=name)

        async def chosen() -> str:
            workload = await workload_of(manager, name, "long")
            return str(((workload or {}).get("status") or {}).get("clusterName") or "")

        first = await eventually(chosen, "the Job is dispatched through the MultiKueueClusters")
        other = next(w for w in workers if w != first)

        async def running_in(worker: str) -> bool:
            found = await get(workers[worker], JOBS, "long", name)
            return bool(found and found["spec"].get("suspend") is False)

        await eventually(lambda: running_in(first), f"the Job runs in {first}")
        stopped = kubeconfigs[first]
        await control_plane("down.sh", stopped)  # the worker's connection fails: its cluster turns inactive

        async def moved() -> bool:
            return await chosen() == other

        await eventually(moved, f"the Workload moves to {other}")
        await eventually(lambda: running_in(other), f"the Job runs in {other}")
        workload = await workload_of(manager, name, "long")
        assert workload is not None
        evicted = next(c for c in workload["status"]["conditions"] if c["type"] == "Evicted")
        assert "Admitting remote lost" in evicted["message"]

        await control_plane(
            "up.sh", stopped
        )  # back: the stale copy there is deleted, the Job stays in the other
        stopped = None

        async def stale_gone() -> bool:
            return (
                await get(workers[first], JOBS, "long", name) is None
                and await get(workers[first], WORKLOADS, workload["metadata"]["name"], name) is None
            )

        await eventually(stale_gone, f"the stale copy in {first} is deleted")
        assert await running_in(other)
    finally:
        if stopped is not None:
            await control_plane("up.sh", stopped)
        for running in replicas:
            await running.stop()
        for client in [manager, *workers.values()]:
            with contextlib.suppress(ApiError, OSError):
                await _clean(client, name)
        await unregister_workers(manager, name, list(kubeconfigs))
        await manager.close()
        for client in workers.values():
            await client.close()
