"""A Job completes and the next one in a full ClusterQueue starts: three writes, in the one order that is
safe, each sent from the answer of the one before (the admission write's task starts the Job itself).

Kueue's order: the finished Workload's quota is released before it is reserved again (its cache releases on
Finished), and a Job is unsuspended only once its Workload's admission is recorded (jobframework's
reconciler starts the Job from the admitted Workload). Asserted in the fake API server's commit order."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.fakeapi import FakeApiServer
from tests.support.fake_cluster import is_true
from tests.support.replica import replica
from tests.support.research import HANG, QUOTA, gpu_job, running

JSON = dict[str, Any]


def first_rv(fake_api: FakeApiServer, kind: tuple[str, str], name: str, when: Any) -> int:
    events = fake_api.store.events_after(0, kind)
    return min(e.rv for e in events if e.obj["metadata"]["name"] == name and when(e.obj))


async def test_the_next_job_starts_with_one_patch_after_its_admission_is_written(
    fake_api: FakeApiServer,
) -> None:
    await fake_api.apply_manifests(QUOTA)
    async with replica(fake_api.kubeconfig_path()) as serving:
        for name in ("a", "b", "c"):  # 2 GPUs each in a ClusterQueue of 4: c waits
            await fake_api.create(gpu_job(name))
        await fake_api.wait_for(lambda: running(fake_api, "a") and running(fake_api, "b"), timeout=HANG)
        assert not running(fake_api, "c")
        marker = len(fake_api.requests)

        await fake_api.complete_job("team-a", "a")
        await fake_api.wait_for(lambda: running(fake_api, "c"), timeout=HANG)
        controller = serving.controller
        await asyncio.wait_for(controller.scheduler.wait_writes(), HANG)  # the admission's task, done
        await asyncio.wait_for(controller.reconciler.queue.wait_idle(), HANG)  # and every reconcile

        workloads = ("kueue.x-k8s.io", "workloads")
        names = {e.obj["metadata"]["name"] for e in fake_api.store.events_after(0, workloads)}
        job_a = next(n for n in names if n.startswith("job-a-"))
        job_c = next(n for n in names if n.startswith("job-c-"))
        a_finished = first_rv(fake_api, workloads, job_a, lambda w: is_true(w, "Finished"))
        c_admitted = first_rv(fake_api, workloads, job_c, lambda w: is_true(w, "Admitted"))
        c_started = first_rv(fake_api, ("batch", "jobs"), "c", lambda j: j["spec"].get("suspend") is False)
        assert a_finished < c_admitted < c_started
        job_patches = [
            line for line in fake_api.requests[marker:] if line.startswith("PATCH ") and "/jobs/c" in line
        ]
        assert len(job_patches) == 1
