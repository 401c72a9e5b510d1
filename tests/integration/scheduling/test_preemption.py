"""Preemption and stop policies carried through the real controller to real Jobs on the fake API server.

What a user sees: the preempted Workload walks Evicted=True, Preempted=True, then (once its Job has no
active pods) QuotaReserved=False, Admitted=False and Requeued=True, with Kueue's messages; its Job is
suspended again with the pod template it had before admission; events on both Workloads; Kueue's
``kueue_preempted_workloads_total`` and ``kueue_evicted_workloads_total``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tests.fakeapi import FakeApiServer
from tests.support.builders import (
    manifests,
    team_queue,
)
from tests.support.fake_cluster import condition, events_of, is_true, running, workload_of
from tests.support.replica import replica
from tests.support.research import PRIORITIES, team_gpu_job

JSON = dict[str, Any]
HANG = 60.0  # seconds: only so that a hang fails instead of blocking the suite


def team(name: str, *, gpus: int, cohort: str | None = None, preemption: JSON | None = None) -> str:
    """Namespace ``name`` with LocalQueue ``gpus`` of its own ClusterQueue: ``gpus`` GPUs of ``gpu-nodes``."""
    queues = team_queue(
        name, {"gpu-nodes": {"nvidia.com/gpu": gpus}}, cohortName=cohort, preemption=preemption
    )
    return "---\n" + manifests(*queues)


def gpu_job(namespace: str, name: str, *, gpus: int, priority: str = "batch") -> JSON:
    return team_gpu_job(
        namespace,
        name,
        gpus=gpus,
        priority=priority,
        pod={"tolerations": [{"key": "team", "operator": "Exists"}]},
    )


async def test_urgent_job_preempts_batch_job_in_its_cluster_queue(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(
        PRIORITIES + team("vision", gpus=4, preemption={"withinClusterQueue": "LowerPriority"})
    )
    async with replica(fake_api.kubeconfig_path()) as serving:
        await fake_api.create(gpu_job("vision", "batch-1", gpus=4))
        await fake_api.wait_for(lambda: running(fake_api, "vision", "batch-1"))
        started = fake_api.get("jobs", "batch-1", "vision")
        assert started is not None
        assert started["spec"]["template"]["spec"]["nodeSelector"] == {"node-pool": "gpu"}

        await fake_api.create(gpu_job("vision", "urgent-1", gpus=4, priority="urgent"))
        await fake_api.wait_for(lambda: running(fake_api, "vision", "urgent-1"), timeout=20)

        low = workload_of(fake_api, "vision", "batch-1")
        high = workload_of(fake_api, "vision", "urgent-1")
        assert low is not None and high is not None
        high_uid, job_uid = (
            high["metadata"]["uid"],
            fake_api.get("jobs", "urgent-1", "vision")["metadata"]["uid"],
        )
        message = (
            f"Preempted to accommodate a workload (UID: {high_uid}, JobUID: {job_uid}) due to prioritization "
            "in the ClusterQueue; preemptor path: /vision; preemptee path: /vision"
        )
        evicted, preempted = condition(low, "Evicted"), condition(low, "Preempted")
        assert evicted is not None and (evicted["status"], evicted["reason"]) == ("True", "Preempted")
        assert preempted is not None and (preempted["status"], preempted["reason"]) == (
            "True",
            "InClusterQueue",
        )
        assert evicted["message"] == preempted["message"] == message
        requeued = condition(low, "Requeued")
        assert requeued is not None and (requeued["status"], requeued["reason"]) == ("True", "Preempted")
        assert requeued["message"] == message
        reserved, admitted = condition(low, "QuotaReserved"), condition(low, "Admitted")
        assert reserved is not None and reserved["status"] == "False"
        assert admitted is not None and (admitted["status"], admitted["reason"]) == ("False", "NoReservation")
        assert "admission" not in low["status"]

        # the preempted Job is suspended again with the template it was created with
        stopped = fake_api.get("jobs", "batch-1", "vision")
        assert stopped is not None and stopped["spec"]["suspend"] is True
        assert "nodeSelector" not in stopped["spec"]["template"]["spec"]
        assert stopped["spec"]["template"]["spec"]["tolerations"] == [{"key": "team", "operator": "Exists"}]
        marks = stopped["spec"]["template"].get("metadata") or {}  # Kueue's pod marks taken off with the rest
        assert not [k for k in marks.get("labels") or {} if k.startswith("kueue.x-k8s.io/")]
        assert "kueue.x-k8s.io/workload" not in (marks.get("annotations") or {})

        low_name, high_name = low["metadata"]["name"], high["metadata"]["name"]
        await fake_api.wait_for(lambda: "PreemptedWorkload" in events_of(fake_api, "vision", high_name))
        await fake_api.wait_for(lambda: "Stopped" in events_of(fake_api, "vision", "batch-1"))
        low_events = events_of(fake_api, "vision", low_name)
        priorities = (
            "preemptor effective priority: 1000 (base: 1000, boost: 0); "
            "preemptee effective priority: 100 (base: 100, boost: 0)"
        )
        assert low_events["Preempted"] == f"{message}; {priorities}"
        assert low_events["EvictedDueToPreempted"] == message
        assert events_of(fake_api, "vision", high_name)["PreemptedWorkload"] == (
            f"Preempted workload vision/{low_name} (UID: {low['metadata']['uid']}) in ClusterQueue vision; "
            f"{priorities}"
        )
        assert events_of(fake_api, "vision", "batch-1")["Stopped"] == message

        registry = serving.controller.metrics.registry
        assert (
            registry.get_sample_value(
                "kueue_preempted_workloads_total",
                {"preempting_cluster_queue": "vision", "reason": "InClusterQueue", "replica_role": "leader"},
            )
            == 1
        )
        evicted_labels = {
            "cluster_queue": "vision",
            "reason": "Preempted",
            "underlying_cause": "",
            "priority_class": "batch",
            "replica_role": "leader",
        }
        assert registry.get_sample_value("kueue_evicted_workloads_total", evicted_labels) == 1
        assert registry.get_sample_value("kueue_evicted_workloads_once_total", evicted_labels) == 1
        # Kueue's workloadEvictionStateInc: the Workload counts its evictions by reason
        assert low["status"]["schedulingStats"] == {
            "evictions": [{"reason": "Preempted", "underlyingCause": "", "count": 1}]
        }

        # the preempted Job queues again and runs once the urgent one finishes
        await fake_api.complete_job("vision", "urgent-1")
        await fake_api.wait_for(lambda: running(fake_api, "vision", "batch-1"), timeout=20)
        readmitted = workload_of(fake_api, "vision", "batch-1")
        evicted_again = condition(readmitted, "Evicted")
        assert evicted_again is not None and evicted_again["status"] == "False"
        assert evicted_again["message"] == f"Previously: {message}"


async def test_a_team_reclaims_its_lent_quota_from_the_borrower(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(
        PRIORITIES
        + team("vision", gpus=4, cohort="research", preemption={"reclaimWithinCohort": "Any"})
        + team("nlp", gpus=4, cohort="research")
    )
    async with replica(fake_api.kubeconfig_path()) as serving:
        await fake_api.create(gpu_job("nlp", "own", gpus=4))
        await fake_api.wait_for(lambda: running(fake_api, "nlp", "own"))
        await fake_api.create(gpu_job("nlp", "borrowed", gpus=4))
        await fake_api.wait_for(lambda: running(fake_api, "nlp", "borrowed"))

        await fake_api.create(gpu_job("vision", "mine", gpus=4))
        await fake_api.wait_for(lambda: running(fake_api, "vision", "mine"), timeout=20)

        assert running(fake_api, "nlp", "own")
        borrower = workload_of(fake_api, "nlp", "borrowed")
        preempted = condition(borrower, "Preempted")
        assert preempted is not None and preempted["reason"] == "InCohortReclamation"
        assert preempted["message"].endswith(
            "due to reclamation within the cohort; preemptor path: /research/vision; "
            "preemptee path: /research/nlp"
        )
        assert is_true(borrower, "Requeued") and not running(fake_api, "nlp", "borrowed")
        registry = serving.controller.metrics.registry
        assert (
            registry.get_sample_value(
                "kueue_preempted_workloads_total",
                {
                    "preempting_cluster_queue": "vision",
                    "reason": "InCohortReclamation",
                    "replica_role": "leader",
                },
            )
            == 1
        )


async def report_active_pods(api: FakeApiServer, namespace: str, job: str, active: int) -> None:
    """Write the Job's ``status.active`` as the Job controller would (the fake's own is off here)."""
    await api.patch(
        "jobs", job, {"status": {"active": active or None}}, namespace=namespace, subresource="status"
    )


def reserved_reason(api: FakeApiServer, namespace: str, job: str) -> tuple[str, str]:
    reserved = condition(workload_of(api, namespace, job), "QuotaReserved")
    return ("", "") if reserved is None else (reserved["reason"], reserved["message"])


async def test_two_teams_of_a_cohort_preempt_within_themselves_at_once(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]],
) -> None:
    """Kueue's scheduler_test "multiple preemptions without borrowing": each team of a cohort is full with a
    batch Job when an urgent one arrives in each. Both batch Jobs are preempted while their pods are still
    there, and both urgent Jobs wait for their own victim (neither told "insufficient unused quota"), then
    both run. The victims keep their quota until their pods are gone: nothing runs beside them."""
    api = await make_fake_api(job_controller=False)
    teams = ("vision", "speech")
    lower = {"withinClusterQueue": "LowerPriority"}
    await api.apply_manifests(
        PRIORITIES + "".join(team(t, gpus=2, cohort="lab", preemption=lower) for t in teams)
    )
    async with replica(api.kubeconfig_path()):
        for name in teams:
            await api.create(gpu_job(name, "batch", gpus=2))
        await api.wait_for(lambda: all(running(api, t, "batch") for t in teams), timeout=HANG)
        for name in teams:
            await report_active_pods(api, name, "batch", 2)
            await api.create(gpu_job(name, "urgent", gpus=2, priority="urgent"))

        waiting = (
            "WaitingForPreemptedWorkloads",
            "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in "
            "flavor gpu-nodes, 2 more needed. Pending the preemption of 1 workload(s)",
        )

        await api.wait_for(
            lambda: all(reserved_reason(api, t, "urgent") == waiting for t in teams), timeout=HANG
        )
        await api.wait_for(lambda: not any(running(api, t, "batch") for t in teams), timeout=HANG)
        for name in teams:
            victim = workload_of(api, name, "batch")
            preempted = condition(victim, "Preempted")
            assert preempted is not None and preempted["reason"] == "InClusterQueue"
            assert preempted["message"].endswith(f"preemptor path: /lab/{name}; preemptee path: /lab/{name}")
            # suspended, but its pods are still there: it holds its quota, the urgent Job waits
            assert is_true(victim, "QuotaReserved") and not running(api, name, "urgent")

        for name in teams:
            await report_active_pods(api, name, "batch", 0)
        await api.wait_for(lambda: all(running(api, t, "urgent") for t in teams), timeout=HANG)
        assert not any(running(api, t, "batch") for t in teams)


async def test_hold_and_drain_evicts_running_jobs_and_admits_nothing(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(PRIORITIES + team("vision", gpus=4))
    async with replica(fake_api.kubeconfig_path()) as serving:
        await fake_api.create(gpu_job("vision", "running", gpus=2))
        await fake_api.wait_for(lambda: running(fake_api, "vision", "running"))

        await fake_api.patch("clusterqueues", "vision", {"spec": {"stopPolicy": "HoldAndDrain"}})
        await fake_api.wait_for(
            lambda: (
                condition(workload_of(fake_api, "vision", "running"), "QuotaReserved") is not None
                and not is_true(workload_of(fake_api, "vision", "running"), "QuotaReserved")
            )
        )
        drained = workload_of(fake_api, "vision", "running")
        evicted = condition(drained, "Evicted")
        assert evicted is not None and (evicted["reason"], evicted["message"]) == (
            "ClusterQueueStopped",
            "The ClusterQueue is stopped",
        )
        assert condition(drained, "Preempted") is None
        requeued = condition(drained, "Requeued")
        assert requeued is not None and (requeued["status"], requeued["reason"]) == (
            "False",
            "ClusterQueueStopped",
        )
        assert not running(fake_api, "vision", "running")

        await fake_api.create(gpu_job("vision", "later", gpus=1))
        await fake_api.wait_for(
            lambda: condition(workload_of(fake_api, "vision", "later"), "QuotaReserved") is not None
        )
        waiting = condition(workload_of(fake_api, "vision", "later"), "QuotaReserved")
        assert waiting is not None and waiting["status"] == "False"
        assert not running(fake_api, "vision", "later")
        labels = {
            "cluster_queue": "vision",
            "reason": "ClusterQueueStopped",
            "underlying_cause": "",
            "priority_class": "batch",
            "replica_role": "leader",
        }
        assert (
            serving.controller.metrics.registry.get_sample_value("kueue_evicted_workloads_total", labels) == 1
        )

        await fake_api.patch("clusterqueues", "vision", {"spec": {"stopPolicy": "None"}})
        await fake_api.wait_for(
            lambda: running(fake_api, "vision", "running") and running(fake_api, "vision", "later"),
            timeout=20,
        )
