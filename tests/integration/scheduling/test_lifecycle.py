"""Job ⇄ Workload lifecycle through the real controller against the fake API server.

Every wait is on the fake API server's own change notifications; ``HANG`` only bounds a hang (a loaded CI
machine on 2 shared cores can be many times slower than a laptop), it never paces the test.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.fakeapi import FakeApiServer
from tests.support import fake_cluster as harness
from tests.support.builders import pod_set, workload
from tests.support.fake_cluster import condition, is_true
from tests.support.replica import replica
from tests.support.research import HANG, QUOTA, gpu_job, preempting_research, running, workloads_of

JSON = dict[str, Any]


async def test_job_is_admitted_started_on_its_flavor_and_finishes(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(QUOTA)
    async with replica(fake_api.kubeconfig_path()):
        await fake_api.create(gpu_job("train-1"))
        await fake_api.wait_for(lambda: running(fake_api, "train-1"), timeout=HANG)
        job = fake_api.get("jobs", "train-1", "team-a")
        assert job is not None
        assert job["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
        [workload] = workloads_of(fake_api, "train-1")
        assert is_true(workload, "QuotaReserved") and is_true(workload, "Admitted")
        assert workload["status"]["admission"]["clusterQueue"] == "research"
        # Kueue's marks on the pods (podset label, AssignQueueLabelsForPods, the Workload annotation)
        pod_meta = job["spec"]["template"]["metadata"]
        assert {k: v for k, v in pod_meta["labels"].items() if k.startswith("kueue.x-k8s.io/")} == {
            "kueue.x-k8s.io/podset": "main",
            "kueue.x-k8s.io/local-queue-name": "team-a-gpu",
            "kueue.x-k8s.io/cluster-queue-name": "research",
        }
        assert pod_meta["annotations"] == {"kueue.x-k8s.io/workload": workload["metadata"]["name"]}
        owner = workload["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["uid"], owner["controller"]) == ("Job", job["metadata"]["uid"], True)

        def events_of(name: str) -> dict[str, str]:
            return harness.events_of(fake_api, "team-a", name)

        await fake_api.wait_for(lambda: "Admitted" in events_of(workload["metadata"]["name"]), timeout=HANG)
        texts = events_of(workload["metadata"]["name"])
        assert texts["Admitted"] == "Admitted by ClusterQueue research, wait time since reservation was 0s"
        assert texts["QuotaReserved"].startswith(
            "Quota reserved in ClusterQueue research, wait time since queued"
        )
        await fake_api.wait_for(lambda: "Started" in events_of("train-1"), timeout=HANG)
        assert events_of("train-1")["Started"] == "Admitted by clusterQueue research"

        await fake_api.complete_job("team-a", "train-1")
        await fake_api.wait_for(
            lambda: is_true(workloads_of(fake_api, "train-1")[0], "Finished"), timeout=HANG
        )
        finished = condition(workloads_of(fake_api, "train-1")[0], "Finished")
        assert finished is not None and finished["reason"] == "Succeeded"
        assert finished["message"] == "Reached expected number of succeeded pods"
        await fake_api.wait_for(lambda: "Finished" in events_of(workload["metadata"]["name"]), timeout=HANG)


async def test_job_beyond_quota_waits_with_kueue_message_and_starts_when_another_finishes(
    fake_api: FakeApiServer,
) -> None:
    await fake_api.apply_manifests(QUOTA)
    async with replica(fake_api.kubeconfig_path()):
        for name in ("a", "b", "c"):
            await fake_api.create(gpu_job(name))
        await fake_api.wait_for(lambda: running(fake_api, "a") and running(fake_api, "b"), timeout=HANG)
        await fake_api.wait_for(
            lambda: (
                bool(workloads_of(fake_api, "c"))
                and condition(workloads_of(fake_api, "c")[0], "QuotaReserved") is not None
            ),
            timeout=HANG,
        )
        pending = condition(workloads_of(fake_api, "c")[0], "QuotaReserved")
        assert pending is not None and pending["status"] == "False"
        assert pending["message"] == (
            "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
            "gpu-nodes, 2 more needed"
        )
        assert not running(fake_api, "c")

        await fake_api.complete_job("team-a", "a")
        await fake_api.wait_for(lambda: running(fake_api, "c"), timeout=HANG)
        # Kueue's cache releases quota when the Workload is Finished, not when the Job completes: in the API
        # server's commit order, a's Finished comes before c's reservation, so nobody watching Workloads ever
        # sees more reserved than the quota
        events = [(e.rv, e.obj) for e in fake_api.store.events_after(0, ("kueue.x-k8s.io", "workloads"))]
        a_finished = min(
            rv
            for rv, obj in events
            if obj["metadata"]["name"].startswith("job-a-") and is_true(obj, "Finished")
        )
        c_reserved = min(
            rv
            for rv, obj in events
            if obj["metadata"]["name"].startswith("job-c-") and is_true(obj, "QuotaReserved")
        )
        assert a_finished < c_reserved


async def test_cluster_queue_status_reports_usage_and_counts(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(QUOTA)
    async with replica(fake_api.kubeconfig_path()) as serving:
        await fake_api.create(gpu_job("a"))

        def reported() -> bool:
            cq = fake_api.get("clusterqueues", "research") or {}
            return (cq.get("status") or {}).get("admittedWorkloads") == 1

        await fake_api.wait_for(reported, timeout=HANG)
        # the admission counters are bumped when the Workload's status write returns, just before its
        # Admitted event is recorded; the queue status may be reported before that
        await fake_api.wait_for(
            lambda: any(
                e.get("reason") == "Admitted" and e.get("involvedObject", {}).get("kind") == "Workload"
                for e in fake_api.list("events", "team-a")
            ),
            timeout=HANG,
        )
        cq = fake_api.get("clusterqueues", "research")
        assert cq is not None
        active = condition(cq, "Active")
        assert active is not None and (active["status"], active["reason"]) == ("True", "Ready")
        [flavor] = cq["status"]["flavorsUsage"]
        assert flavor["name"] == "gpu-nodes"
        assert flavor["resources"] == [{"name": "nvidia.com/gpu", "total": "2", "borrowed": "0"}]

        registry = serving.controller.metrics.registry
        queue = {"cluster_queue": "research", "replica_role": "leader"}
        gpus = {**queue, "cohort": "", "flavor": "gpu-nodes", "resource": "nvidia.com/gpu"}
        assert (
            registry.get_sample_value("kueue_admitted_workloads_total", {**queue, "priority_class": ""}) == 1
        )
        assert registry.get_sample_value("kueue_cluster_queue_resource_usage", gpus) == 2
        assert registry.get_sample_value("kueue_cluster_queue_nominal_quota", gpus) == 4
        assert registry.get_sample_value("kueue_cluster_queue_status", {**queue, "status": "active"}) == 1
        # the same per LocalQueue (Kueue's LocalQueueMetrics, on by default)
        local = {"name": "team-a-gpu", "namespace": "team-a", "replica_role": "leader"}
        assert (
            registry.get_sample_value(
                "kueue_local_queue_admitted_workloads_total", {**local, "priority_class": ""}
            )
            == 1
        )
        lq_gpus = {**local, "flavor": "gpu-nodes", "resource": "nvidia.com/gpu"}
        assert registry.get_sample_value("kueue_local_queue_resource_usage", lq_gpus) == 2
        assert registry.get_sample_value("kueue_local_queue_status", {**local, "active": "True"}) == 1
        assert registry.get_sample_value(
            "kueue_admission_attempts_total", {"result": "success", "replica_role": "leader"}
        )


async def test_user_unsuspending_a_job_that_is_not_admitted_gets_it_suspended_again(
    fake_api: FakeApiServer,
) -> None:
    await fake_api.apply_manifests(QUOTA)
    async with replica(fake_api.kubeconfig_path()):
        for name in ("a", "b"):
            await fake_api.create(gpu_job(name))
        await fake_api.wait_for(lambda: running(fake_api, "a") and running(fake_api, "b"), timeout=HANG)
        await fake_api.create(gpu_job("c"))
        await fake_api.wait_for(lambda: bool(workloads_of(fake_api, "c")), timeout=HANG)
        await fake_api.patch("jobs", "c", {"spec": {"suspend": False}}, namespace="team-a")
        await fake_api.wait_for(
            lambda: (fake_api.get("jobs", "c", "team-a") or {}).get("spec", {}).get("suspend") is True,
            timeout=HANG,
        )

        def stopped_events() -> list[JSON]:
            return [
                e
                for e in fake_api.list("events", "team-a")
                if e.get("involvedObject", {}).get("name") == "c" and e.get("reason") == "Stopped"
            ]

        await fake_api.wait_for(lambda: bool(stopped_events()), timeout=HANG)
        assert stopped_events()[0]["message"] == "Not admitted by cluster queue"


def bare_workload(name: str, gpus: int) -> JSON:
    """A Workload with no owner, as Kueue's performance runner creates them."""
    requests = {"nvidia.com/gpu": str(gpus)}
    return workload(
        name,
        "team-a",
        queue="team-a-gpu",
        pod_sets=[pod_set(image="x", requests=requests, restartPolicy="Never")],
    )


async def test_workload_created_without_a_job_is_admitted_and_its_finish_frees_quota(
    fake_api: FakeApiServer,
) -> None:
    await fake_api.apply_manifests(QUOTA)
    async with replica(fake_api.kubeconfig_path()):
        await fake_api.create(bare_workload("runner-1", 4))
        await fake_api.create(bare_workload("runner-2", 4))
        await fake_api.wait_for(
            lambda: is_true(fake_api.get("workloads", "runner-1", "team-a"), "Admitted"), timeout=HANG
        )
        assert not is_true(fake_api.get("workloads", "runner-2", "team-a"), "QuotaReserved")
        finished = {
            "conditions": [
                *fake_api.get("workloads", "runner-1", "team-a")["status"]["conditions"],  # type: ignore[index]
                {
                    "type": "Finished",
                    "status": "True",
                    "reason": "Succeeded",
                    "message": "done",
                    "lastTransitionTime": "2026-11-22T01:00:00Z",
                },
            ]
        }
        await fake_api.patch(
            "workloads", "runner-1", {"status": finished}, namespace="team-a", subresource="status"
        )
        await fake_api.wait_for(
            lambda: is_true(fake_api.get("workloads", "runner-2", "team-a"), "Admitted"), timeout=HANG
        )


async def test_deleting_a_running_job_releases_its_quota(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(QUOTA)
    async with replica(fake_api.kubeconfig_path()):
        for name in ("a", "b", "c"):
            await fake_api.create(gpu_job(name))
        await fake_api.wait_for(lambda: running(fake_api, "a") and running(fake_api, "b"), timeout=HANG)
        await fake_api.delete("jobs", "a", namespace="team-a")
        await fake_api.wait_for(lambda: running(fake_api, "c"), timeout=HANG)
        await fake_api.wait_for(lambda: not workloads_of(fake_api, "a"), timeout=HANG)


async def test_an_admission_costs_no_write_to_the_workloads_behind_it(fake_api: FakeApiServer) -> None:
    """Waiting Workloads show Kueue's message alone (no rank), so when the head is admitted the ones behind
    it, whose message did not change, are not written at all: the admission costs its own writes only.

    The count is taken once the writes have settled, not at some instant in between.
    """
    await fake_api.apply_manifests(QUOTA)
    async with replica(fake_api.kubeconfig_path()) as serving:
        names = [f"job-{i:02d}" for i in range(12)]
        for name in names:
            await fake_api.create(gpu_job(name))

        def pending_shown(first: int) -> bool:
            """job-NN for NN >= first shows Kueue's pending condition and Admitted=False NoReservation."""
            for name in names[first:]:
                found = workloads_of(fake_api, name)
                reserved = condition(found[0], "QuotaReserved") if found else None
                admitted = condition(found[0], "Admitted") if found else None
                if reserved is None or reserved["status"] != "False" or admitted is None:
                    return False
                assert reserved["message"].endswith("more needed"), reserved["message"]
                assert (admitted["status"], admitted["reason"]) == ("False", "NoReservation")
            return True

        await fake_api.wait_for(lambda: pending_shown(2), timeout=HANG)
        await asyncio.wait_for(serving.controller.scheduler.wait_writes(), HANG)
        registry = serving.controller.metrics.registry
        labels = {"kind": "Workload", "verb": "patch-status"}
        before = registry.get_sample_value("kueue_webhook_api_writes_total", labels)
        assert before is not None

        await fake_api.complete_job("team-a", "job-00")
        await fake_api.wait_for(lambda: running(fake_api, "job-02"), timeout=HANG)
        await asyncio.wait_for(serving.controller.scheduler.wait_writes(), HANG)
        after = registry.get_sample_value("kueue_webhook_api_writes_total", labels)
        # job-00 Finished and job-02 admitted; nothing for the nine still waiting (job-03..job-11)
        assert after is not None and after - before == 2


PREEMPTING_QUEUE = preempting_research("team-a", "team-a-gpu", gpus=2)


async def test_higher_priority_job_preempts_a_running_one_which_is_stopped_and_requeued(
    fake_api: FakeApiServer,
) -> None:
    await fake_api.apply_manifests(PREEMPTING_QUEUE)
    async with replica(fake_api.kubeconfig_path()):
        await fake_api.create(gpu_job("low"))
        await fake_api.wait_for(lambda: running(fake_api, "low"), timeout=HANG)
        urgent = gpu_job("urgent")
        urgent["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "urgent"
        await fake_api.create(urgent)
        await fake_api.wait_for(lambda: running(fake_api, "urgent"), timeout=HANG)
        assert not running(fake_api, "low")
        [victim] = workloads_of(fake_api, "low")
        evicted = condition(victim, "Evicted")
        preempted = condition(victim, "Preempted")
        assert evicted is not None and (evicted["status"], evicted["reason"]) == ("True", "Preempted")
        assert preempted is not None and preempted["reason"] == "InClusterQueue"
        assert not is_true(victim, "QuotaReserved")
        assert "admission" not in victim["status"]


async def test_editing_a_waiting_job_updates_what_its_workload_asks_for(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(QUOTA)
    async with replica(fake_api.kubeconfig_path()):
        for name in ("a", "b"):
            await fake_api.create(gpu_job(name))
        work_queue_job = gpu_job("c")  # parallelism without completions: a work queue that can be resized
        work_queue_job["spec"]["parallelism"] = 1
        await fake_api.create(work_queue_job)
        await fake_api.wait_for(
            lambda: running(fake_api, "a") and running(fake_api, "b") and bool(workloads_of(fake_api, "c")),
            timeout=HANG,
        )
        await fake_api.patch("jobs", "c", {"spec": {"parallelism": 2}}, namespace="team-a")

        def asks_for_two_pods() -> bool:
            found = workloads_of(fake_api, "c")
            return bool(found) and found[0]["spec"]["podSets"][0]["count"] == 2

        await fake_api.wait_for(asks_for_two_pods, timeout=HANG)
        await fake_api.complete_job("team-a", "a")
        await fake_api.complete_job("team-a", "b")
        await fake_api.wait_for(lambda: running(fake_api, "c"), timeout=HANG)
        [workload] = workloads_of(fake_api, "c")
        assert workload["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] == {
            "nvidia.com/gpu": "4"
        }
