"""MultiKueue on three real control planes: how soon a worker's Job status reaches the manager's Job, and
the manager's CPU while idle with two workers connected.

The planes are those of ``tests/e2e/test_multikueue_dispatch_e2e.py`` (``KUEUE_E2E_KUBECONFIG`` the manager,
``KUEUE_E2E_WORKER_KUBECONFIGS`` two workers, with the CRDs that module installs). The manager connects to
the workers through MultiKueueClusters, with the default ``multiKueue`` settings.

1. Idle: only the manager's controller runs in this process (no worker controller, no test traffic); once
   both MultiKueueClusters are connected and the check is Active, the process's CPU time is read over
   ``--idle`` seconds.
2. Mirror latency: each worker gets its controller; for each of ``--jobs`` Jobs, once it runs in a worker,
   its pods are reported Succeeded there; two watches opened by this process (one on the worker, one on
   the manager) timestamp the moment the worker's Job says ``succeeded: 1`` and the moment the manager's
   Job does, with the same clock.

``python -m bench.multikueue_watch --jobs 10 --idle 60``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import resource
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.kinds import ADMISSION_CHECKS, JOBS
from tests.e2e.cluster import KUBECONFIG, Cluster
from tests.e2e.test_multikueue_dispatch_e2e import (
    _clean,
    eventually,
    get,
    job,
    queues,
    register_workers,
    unregister_workers,
    workload_of,
)
from tests.e2e.workers import WORKER_KUBECONFIGS
from tests.support.replica import Replica, start_replica

JSON = dict[str, Any]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _succeeded_at(client: KubeClient, namespace: str, name: str) -> float:
    """When the Job ``name`` first says ``succeeded: 1``, as seen by a watch from now on."""
    _, version = await client.list_all(JOBS, namespace=namespace)
    while True:
        async for event in client.watch(
            JOBS, resource_version=version, namespace=namespace, field_selector=f"metadata.name={name}"
        ):
            found = event.get("object") or {}
            version = str((found.get("metadata") or {}).get("resourceVersion") or version)
            if (found.get("status") or {}).get("succeeded") == 1:
                return time.monotonic()


async def _active(manager: KubeClient, check: str) -> bool:
    found = await manager.get(ADMISSION_CHECKS, name=check)
    return any(
        c.get("type") == "Active" and c.get("status") == "True"
        for c in (found.get("status") or {}).get("conditions") or []
    )


async def run(jobs: int, idle: float) -> None:
    name = f"mkw-{uuid.uuid4().hex[:6]}"
    manager = await KubeClient.connect(kubeconfig=KUBECONFIG)
    kubeconfigs = {f"{name}-{i}": Path(p) for i, p in enumerate(WORKER_KUBECONFIGS)}
    workers = {w: await KubeClient.connect(kubeconfig=str(p)) for w, p in kubeconfigs.items()}
    replicas: list[Replica] = []
    try:
        system = await register_workers(manager, name, kubeconfigs)
        await queues(manager, name, "2", [name], system=system)
        for client in workers.values():
            await queues(client, name, "4", [])
        controller = await start_replica(
            Path(KUBECONFIG), identity="manager", namespace=system, leader_election=False, status_interval=1.0
        )
        replicas.append(controller)
        await eventually(lambda: _active(manager, name), "the MultiKueue check is Active")
        await asyncio.sleep(5.0)
        cpu, started = _cpu(), time.monotonic()
        await asyncio.sleep(idle)
        share = (_cpu() - cpu) / (time.monotonic() - started)
        print(f"idle manager, two workers connected: {share * 100:.2f}% of a core over {idle:.0f} s")

        for worker, path in kubeconfigs.items():
            replicas.append(await start_replica(path, identity=worker, leader_election=False))
        latencies: list[float] = []
        for i in range(jobs):
            job_name = f"j{i}"
            await manager.create(JOBS, job(name, job_name), namespace=name)

            async def chosen(job_name: str = job_name) -> str:
                workload = await workload_of(manager, name, job_name)
                return str(((workload or {}).get("status") or {}).get("clusterName") or "")

            worker = await eventually(chosen, "the Job is dispatched")

            async def running(job_name: str = job_name) -> bool:
                found = await get(manager, JOBS, job_name, name)
                return bool(found and (found.get("status") or {}).get("active") == 1)

            await eventually(running, "the manager's Job shows its worker's pod")
            there = asyncio.ensure_future(_succeeded_at(workers[worker], name, job_name))
            here = asyncio.ensure_future(_succeeded_at(manager, name, job_name))
            await asyncio.sleep(0.5)  # both watches open
            await asyncio.to_thread(Cluster(kubeconfigs[worker]).finish_pods, name, jobs={job_name})
            worker_at, manager_at = await asyncio.wait_for(asyncio.gather(there, here), timeout=120)
            latencies.append(manager_at - worker_at)
            print(
                f"{job_name} in {worker}: mirrored {manager_at - worker_at:.3f} s after the worker's change"
            )
        if latencies:
            ordered = sorted(latencies)
            print(
                f"mirror latency over {len(ordered)} Jobs: median {statistics.median(ordered):.3f} s, "
                f"min {ordered[0]:.3f} s, max {ordered[-1]:.3f} s"
            )
    finally:
        for replica in replicas:
            await replica.stop()
        for client in [manager, *workers.values()]:
            with contextlib.suppress(Exception):
                await _clean(client, name)
        await unregister_workers(manager, name, list(kubeconfigs))
        await manager.close()
        for client in workers.values():
            await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10)
    parser.add_argument("--idle", type=float, default=60.0)
    args = parser.parse_args()
    asyncio.run(run(args.jobs, args.idle))


if __name__ == "__main__":
    main()
