"""waitForPodsReady through the real controller against the fake API server, with the fake's Job controller
off so each test says itself how many of a Job's pods are ready (``status.ready``), as the Job controller
would. Kueue's rules: pkg/controller/jobframework/reconciler.go (generatePodsReadyCondition),
pkg/controller/jobs/job (Job.PodsReady), pkg/controller/core/workload_controller.go (reconcileNotReadyTimeout,
the requeue backoff), pkg/scheduler (waitForPodsReadyIfNeeded).

Waits are on the fake API server's change notifications; ``HANG`` only bounds a hang. The timeout tests use
a one-second timeout and backoff, so they take a few seconds of real time by design.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tests.fakeapi import FakeApiServer
from tests.support import fake_cluster as harness
from tests.support.fake_cluster import condition, is_true
from tests.support.fake_cluster import controller_config as config
from tests.support.replica import replica
from tests.support.research import HANG, QUOTA, gpu_job, running, workloads_of

JSON = dict[str, Any]
MakeFakeApi = Callable[..., Awaitable[FakeApiServer]]
NS = "team-a"


async def cluster(make_fake_api: MakeFakeApi, wait_for_pods_ready: str) -> FakeApiServer:
    api = await make_fake_api(job_controller=False)
    await api.apply_manifests(config(wait_for_pods_ready) + "---\n" + QUOTA)
    return api


async def report_ready(api: FakeApiServer, job: str, ready: int) -> None:
    """What the Job controller writes when ``ready`` of the Job's pods pass their readiness probes."""
    await api.patch("jobs", job, {"status": {"ready": ready}}, namespace=NS, subresource="status")


def workload(api: FakeApiServer, job: str) -> JSON:
    [found] = workloads_of(api, job)
    return found


def pods_ready(api: FakeApiServer, job: str) -> tuple[str, str, str] | None:
    found = workloads_of(api, job)
    cond = condition(found[0], "PodsReady") if found else None
    return None if cond is None else (cond["status"], cond["reason"], cond["message"])


async def test_pods_ready_is_false_wait_for_start_from_admission_then_true_once_the_jobs_pods_are_ready(
    make_fake_api: MakeFakeApi,
) -> None:
    api = await cluster(make_fake_api, "waitForPodsReady: {timeout: 1h}")
    async with replica(api.kubeconfig_path()):
        await api.create(gpu_job("train"))
        await api.wait_for(lambda: running(api, "train"), timeout=HANG)
        assert pods_ready(api, "train") == ("False", "WaitForStart", "Not all pods are ready or succeeded")
        # one status write per admission: the write that reserved quota already said PodsReady=False
        uid = workload(api, "train")["metadata"]["uid"]
        first_reserved = next(
            e.obj
            for e in api.store.events_after(0, ("kueue.x-k8s.io", "workloads"))
            if e.obj["metadata"]["uid"] == uid and is_true(e.obj, "QuotaReserved")
        )
        assert condition(first_reserved, "PodsReady") is not None

        await report_ready(api, "train", 1)
        await api.wait_for(lambda: is_true(workload(api, "train"), "PodsReady"), timeout=HANG)
        assert pods_ready(api, "train") == (
            "True",
            "Started",
            "All pods reached readiness and the workload is running",
        )

        await report_ready(api, "train", 0)  # a pod failed: Kueue waits for its replacement
        await api.wait_for(lambda: not is_true(workload(api, "train"), "PodsReady"), timeout=HANG)
        assert pods_ready(api, "train") == (
            "False",
            "WaitForRecovery",
            "At least one pod has failed, waiting for recovery",
        )


async def test_with_wait_for_pods_ready_disabled_the_admission_writes_no_pods_ready(
    make_fake_api: MakeFakeApi,
) -> None:
    api = await cluster(make_fake_api, "waitForPodsReady: {enable: false}")
    async with replica(api.kubeconfig_path()):
        await api.create(gpu_job("train"))
        await api.wait_for(lambda: running(api, "train"), timeout=HANG)
        assert is_true(workload(api, "train"), "Admitted")
        assert pods_ready(api, "train") is None


def history(api: FakeApiServer, kind: tuple[str, str]) -> list[JSON]:
    """Every version of every object of ``kind`` the API server stored, oldest first."""
    return [e.obj for e in api.store.events_after(0, kind)]


def first_index(versions: list[JSON], predicate: Callable[[JSON], bool], after: int = -1) -> int:
    return next(i for i, obj in enumerate(versions) if i > after and predicate(obj))


def has(obj: JSON, kind: str, status: str, reason: str) -> bool:
    found = condition(obj, kind)
    return found is not None and (found["status"], found["reason"]) == (status, reason)


async def test_a_job_whose_pods_never_become_ready_is_evicted_requeued_with_backoff_then_deactivated(
    make_fake_api: MakeFakeApi,
) -> None:
    api = await cluster(
        make_fake_api,
        "waitForPodsReady: {timeout: 1s, requeuingStrategy: {backoffBaseSeconds: 1, backoffLimitCount: 1}}",
    )
    async with replica(api.kubeconfig_path()):
        await api.create(gpu_job("stuck"))
        # the second timeout is past backoffLimitCount=1: deactivated, not requeued again. With one-second
        # timeouts the steps can follow each other faster than a test observes them, so the walk there is
        # read back from the API server's history.
        await api.wait_for(
            lambda: (
                bool(workloads_of(api, "stuck")) and workload(api, "stuck")["spec"].get("active") is False
            ),
            timeout=HANG,
        )
        await api.wait_for(lambda: not running(api, "stuck"), timeout=HANG)
        name = workload(api, "stuck")["metadata"]["name"]
        final = condition(workload(api, "stuck"), "Evicted")
        assert final is not None
        assert (final["status"], final["reason"], final["message"]) == (
            "True",
            "DeactivatedDueToRequeuingLimitExceeded",
            "The workload is deactivated due to exceeding the maximum number of re-queuing retries",
        )
        assert "requeueState" not in workload(api, "stuck")["status"]

        versions = history(api, ("kueue.x-k8s.io", "workloads"))
        admitted = first_index(versions, lambda w: is_true(w, "Admitted"))
        evicted = first_index(versions, lambda w: has(w, "Evicted", "True", "PodsReadyTimeout"), admitted)
        evicted_condition = condition(versions[evicted], "Evicted")
        assert evicted_condition is not None
        assert evicted_condition["message"] == f"Exceeded the PodsReady timeout {NS}/{name}"
        assert versions[evicted]["status"]["requeueState"]["count"] == 1
        # its Job is stopped, the reservation released, and the backoff waited out with Requeued=False ...
        backing_off = first_index(
            versions, lambda w: has(w, "Requeued", "False", "PodsReadyTimeout"), evicted
        )
        assert not is_true(versions[backing_off], "QuotaReserved")
        # ... then Requeued=True BackoffFinished, and it is admitted again
        requeued = first_index(versions, lambda w: has(w, "Requeued", "True", "BackoffFinished"), backing_off)
        first_index(versions, lambda w: is_true(w, "Admitted"), requeued)
        starts = [
            job
            for job in history(api, ("batch", "jobs"))
            if job["metadata"]["name"] == "stuck" and job["spec"].get("suspend") is False
        ]
        assert starts  # the Job was started (and, as the final state shows, suspended again)

        # Kueue's event reason for a deactivating eviction: Evicted + reason + underlying cause
        by_limit = "EvictedDueToDeactivatedDueToRequeuingLimitExceeded"
        await api.wait_for(lambda: by_limit in harness.events_of(api, NS, name), timeout=HANG)
        events = harness.events_of(api, NS, name)
        assert events["EvictedDueToPodsReadyTimeout"] == f"Exceeded the PodsReady timeout {NS}/{name}"
        assert events[by_limit] == (
            "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
        )


async def test_block_admission_holds_the_next_workload_until_the_admitted_one_is_ready(
    make_fake_api: MakeFakeApi,
) -> None:
    api = await cluster(make_fake_api, "waitForPodsReady: {timeout: 1h, blockAdmission: true}")
    async with replica(api.kubeconfig_path()):
        await api.create(gpu_job("first"))
        await api.wait_for(lambda: running(api, "first"), timeout=HANG)
        await api.create(gpu_job("second"))  # fits in the quota that is left

        def held() -> JSON | None:
            found = workloads_of(api, "second")
            return condition(found[0], "QuotaReserved") if found else None

        await api.wait_for(lambda: held() is not None, timeout=HANG)
        reserved = held()
        assert reserved is not None
        assert (reserved["status"], reserved["reason"]) == ("False", "WaitingForPodsReady")
        assert reserved["message"].startswith(
            "waiting for all admitted workloads to be in PodsReady condition"
        )
        assert not running(api, "second")
        # the pending reason's write carries PodsReady too, as Kueue sets it on a Workload not yet admitted
        assert pods_ready(api, "second") == ("False", "WaitForStart", "Not all pods are ready or succeeded")

        await report_ready(api, "first", 1)
        await api.wait_for(lambda: running(api, "second"), timeout=HANG)


async def test_block_admission_admits_one_of_two_workloads_that_both_fit_then_the_other_once_ready(
    make_fake_api: MakeFakeApi,
) -> None:
    api = await cluster(make_fake_api, "waitForPodsReady: {timeout: 1h, blockAdmission: true}")
    async with replica(api.kubeconfig_path()):
        await api.create(gpu_job("a"))
        await api.create(gpu_job("b"))

        def states() -> list[tuple[str, str]]:
            out = []
            for name in ("a", "b"):
                found = workloads_of(api, name)
                reserved = condition(found[0], "QuotaReserved") if found else None
                out.append((reserved["status"], reserved["reason"]) if reserved else ("", ""))
            return out

        await api.wait_for(lambda: all(status for status, _ in states()), timeout=HANG)
        assert sorted(states()) == [("False", "WaitingForPodsReady"), ("True", "QuotaReserved")]
        ready = "a" if running(api, "a") else "b"
        await report_ready(api, ready, 1)
        await api.wait_for(lambda: running(api, "a") and running(api, "b"), timeout=HANG)
