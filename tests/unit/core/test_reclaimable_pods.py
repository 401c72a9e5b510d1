"""Reclaimable pods in the scheduling core: an admitted Workload is charged for the pods that may still run
(Kueue's totalRequestsFromAdmission), so the quota its finished pods gave back admits the next Workload, is
shown in the queues' usage, and is what preemption and fair sharing weigh."""

from __future__ import annotations

from typing import Any

from kueue_webhook.core.decisions import Evict
from kueue_webhook.core.model import WorkloadInfo
from kueue_webhook.core.status import cluster_queue_status, local_queue_status

from .builders import admitted, admitted_status, cluster_queue, cohort, run_until_quiet, state_with, workload

GPU = "nvidia.com/gpu"
NANO = 10**9
FOUR_GPUS = {"gpu-nodes": {GPU: 4}}


def running(
    name: str = "first", *, reclaimable: int = 0, priority: int | None = None, cq: str = "research"
) -> Any:
    """A Job of 2 pods of 2 GPUs admitted with all 4 GPUs, ``reclaimable`` of its pods done for good."""
    status = admitted_status(cq, {GPU: "gpu-nodes"}, {GPU: "4"}, count=2)
    if reclaimable:
        status["reclaimablePods"] = [{"name": "main", "count": reclaimable}]
    return workload(name, {GPU: "2"}, count=2, status=status, priority=priority)


def gpus_used(status: dict[str, Any], key: str = "flavorsUsage") -> str:
    return str(status[key][0]["resources"][0]["total"])


def test_an_admitted_workload_is_charged_for_the_pods_that_may_still_run() -> None:
    assert WorkloadInfo.from_workload(running()).usage == {("gpu-nodes", GPU): 4 * NANO}
    assert WorkloadInfo.from_workload(running(reclaimable=1)).usage == {("gpu-nodes", GPU): 2 * NANO}
    assert WorkloadInfo.from_workload(running(reclaimable=2)).usage == {}
    # a count beyond the pod set's (left by a scale-down) never makes usage negative
    assert WorkloadInfo.from_workload(running(reclaimable=5)).usage == {}


def test_a_partial_admission_for_fewer_pods_than_may_still_run_keeps_its_charge() -> None:
    """Kueue: when the count after reclaim is not below the admitted count the admission stands."""
    status = admitted_status("research", {GPU: "gpu-nodes"}, {GPU: "4"}, count=2)
    status["reclaimablePods"] = [{"name": "main", "count": 1}]
    partial = workload("partial", {GPU: "2"}, count=4, status=status)
    assert WorkloadInfo.from_workload(partial).usage == {("gpu-nodes", GPU): 4 * NANO}


def test_the_quota_given_back_by_finished_pods_admits_the_next_workload_while_the_first_runs() -> None:
    state = state_with(cluster_queue("research", FOUR_GPUS), flavors=("gpu-nodes",))
    state.upsert_workload(running())
    state.upsert_workload(workload("next", {GPU: "2"}, created=1))
    assert admitted(run_until_quiet(state)) == []
    state.upsert_workload(running(reclaimable=1))
    assert admitted(run_until_quiet(state)) == ["ns/next"]
    assert state.ledger.usage("research") == {("gpu-nodes", GPU): 4 * NANO}


def test_queue_status_shows_the_reduced_usage() -> None:
    state = state_with(cluster_queue("research", FOUR_GPUS), flavors=("gpu-nodes",))
    state.upsert_workload(running(reclaimable=1))
    status = cluster_queue_status(state, "research")
    assert (gpus_used(status), gpus_used(status, "flavorsReservation")) == ("2", "2")
    assert status["admittedWorkloads"] == 1
    assert gpus_used(local_queue_status(state, "ns", "lq")) == "2"


def test_a_higher_priority_workload_takes_the_given_back_quota_without_preempting() -> None:
    """Preemption weighs the reduced usage: the room is free, so nothing is evicted."""
    queue = cluster_queue("research", FOUR_GPUS, preemption={"withinClusterQueue": "LowerPriority"})
    state = state_with(queue, flavors=("gpu-nodes",))
    state.upsert_workload(running(reclaimable=1, priority=0))
    state.upsert_workload(workload("urgent", {GPU: "2"}, created=1, priority=100))
    decisions = run_until_quiet(state)
    assert admitted(decisions) == ["ns/urgent"]
    assert [d for d in decisions if isinstance(d, Evict)] == []


def test_a_borrower_that_gave_pods_back_borrows_less_and_is_not_reclaimed_from() -> None:
    """Another ClusterQueue reclaiming its nominal quota sees the borrower's reduced usage: once the
    borrower's remaining pods fit in its own quota, the lender's workload is admitted with no eviction."""
    two = {"gpu-nodes": {GPU: 2}}
    borrower = cluster_queue("borrower", two, cohortName="pool")
    lender = cluster_queue("lender", two, cohortName="pool", preemption={"reclaimWithinCohort": "Any"})
    state = state_with(
        borrower, lender, flavors=("gpu-nodes",), local_queues={"lq": "borrower", "mine": "lender"}
    )
    state.upsert_cohort(cohort("pool"))
    state.upsert_workload(running(reclaimable=1, cq="borrower"))
    state.upsert_workload(workload("owner", {GPU: "2"}, queue="mine", created=1))
    decisions = run_until_quiet(state)
    assert admitted(decisions) == ["ns/owner"]
    assert [d for d in decisions if isinstance(d, Evict)] == []


def test_a_pending_workload_asks_only_for_the_pods_still_to_run() -> None:
    """Kueue's totalRequestsFromPodSets: a requeued Job whose pods partly succeeded queues for the rest."""
    state = state_with(cluster_queue("research", {"gpu-nodes": {GPU: 2}}), flavors=("gpu-nodes",))
    status = {"reclaimablePods": [{"name": "main", "count": 1}]}
    state.upsert_workload(workload("requeued", {GPU: "2"}, count=2, status=status))
    assert admitted(run_until_quiet(state)) == ["ns/requeued"]
    assert state.ledger.usage("research") == {("gpu-nodes", GPU): 2 * NANO}
