"""Scheduler state and cycle: routing, namespace selectors, stop policies, missing objects, restarts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kueue_webhook.api.objects import (
    WorkloadPriorityClass,
    parse_workload_priority_class,
)
from kueue_webhook.api.objects.multikueue import MultiKueueConfig, parse_multikueue_config
from kueue_webhook.core.scheduler import Admit, SchedulerState, Wait

from .builders import (
    admitted,
    admitted_status,
    cluster_queue,
    cohort,
    flavor,
    last_wait,
    local_queue,
    run_until_quiet,
    state_with,
    workload,
)

GPU = {"gpu-nodes": {"nvidia.com/gpu": 64}}


def test_seed_thirty_two_admitted_and_the_thirty_third_waits_with_kueues_message() -> None:
    state = state_with(cluster_queue("research", GPU), flavors=("gpu-nodes",))
    for index in range(33):
        state.upsert_workload(workload(f"job-{index:02d}", {"nvidia.com/gpu": "2"}, created=index))
    decisions = run_until_quiet(state)
    assert len(admitted(decisions)) == 32
    wait = last_wait(decisions, "ns/job-32")
    assert wait.reason == "WaitingForQuota"
    assert wait.message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
        "gpu-nodes, 2 more needed"
    )
    assert (wait.cluster_queue, wait.position) == ("research", 1)
    assert state.ledger.usage("research") == {("gpu-nodes", "nvidia.com/gpu"): 64 * 10**9}


def test_a_deleted_workload_keeps_its_quota_until_its_finalizer_lets_it_go() -> None:
    """Kueue's resource-in-use finalizer: a deleted Workload stays, with its reservation counted, until the
    controller removes the finalizer (its Job stopped, its pods gone); only then is the quota free."""
    state = state_with(cluster_queue("research", GPU), flavors=("gpu-nodes",))
    holding = admitted_status("research", {"nvidia.com/gpu": "gpu-nodes"}, {"nvidia.com/gpu": "64"})
    state.upsert_workload(workload("running", {"nvidia.com/gpu": "64"}, status=holding))
    state.upsert_workload(workload("waiting", {"nvidia.com/gpu": "64"}, created=1))
    assert admitted(run_until_quiet(state)) == []
    state.upsert_workload(workload("running", {"nvidia.com/gpu": "64"}, status=holding, deleting=True))
    assert admitted(run_until_quiet(state)) == []
    assert state.ledger.usage("research") == {("gpu-nodes", "nvidia.com/gpu"): 64 * 10**9}
    state.delete_workload("ns/running")  # the finalizer was removed: the object is gone
    assert admitted(run_until_quiet(state)) == ["ns/waiting"]


def test_a_workload_deleted_while_pending_is_not_admitted() -> None:
    state = state_with(cluster_queue("research", GPU), flavors=("gpu-nodes",))
    state.upsert_workload(workload("first", {"nvidia.com/gpu": "64"}))
    state.upsert_workload(workload("second", {"nvidia.com/gpu": "64"}, created=1))
    state.upsert_workload(workload("first", {"nvidia.com/gpu": "64"}, deleting=True))
    assert admitted(run_until_quiet(state)) == ["ns/second"]


def test_namespace_selector_absent_empty_and_matching() -> None:
    labels = {"team-a": {"kueue.x-k8s.io/queue": "research"}, "other": {}}
    selective = cluster_queue(
        "sel", {"default": {"cpu": 9}}, namespaceSelector={"matchLabels": labels["team-a"]}
    )
    state = SchedulerState()
    for name, ns_labels in labels.items():
        state.upsert_namespace(name, ns_labels)
    state.upsert_resource_flavor(flavor("default"))
    state.upsert_cluster_queue(selective)
    for ns in labels:
        state.upsert_local_queue(local_queue("lq", "sel", namespace=ns))
    state.upsert_workload(workload("in", namespace="team-a"))
    state.upsert_workload(workload("out", namespace="other"))
    decisions = run_until_quiet(state)
    assert admitted(decisions) == ["team-a/in"]
    assert (last_wait(decisions, "other/out").reason, last_wait(decisions, "other/out").message) == (
        "Misconfigured",
        "workload namespace doesn't match ClusterQueue selector",
    )
    state.upsert_namespace("other", labels["team-a"])  # labelling the namespace lets it in, at once
    assert admitted(run_until_quiet(state)) == ["other/out"]


def test_a_cluster_queue_without_namespace_selector_admits_no_namespace() -> None:
    queue = cluster_queue("cq", {"default": {"cpu": 4}})
    spec_without_selector = replace(queue, namespace_selector=None)
    state = state_with(spec_without_selector)
    state.upsert_workload(workload("w"))
    assert (
        last_wait(run_until_quiet(state), "ns/w").message
        == "workload namespace doesn't match ClusterQueue selector"
    )


def test_missing_local_queue_then_created() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 4}}), local_queues={})
    state.upsert_workload(workload("w", queue="later"))
    wait = last_wait(run_until_quiet(state), "ns/w")
    assert (wait.reason, wait.message, wait.position) == (
        "Misconfigured",
        "LocalQueue later is terminating or missing",
        None,
    )
    state.upsert_local_queue(local_queue("later", "cq"))
    assert admitted(run_until_quiet(state)) == ["ns/w"]


def test_missing_cluster_queue_then_created() -> None:
    state = state_with(cluster_queue("other", {"default": {"cpu": 4}}), local_queues={"lq": "absent"})
    state.upsert_workload(workload("w"))
    wait = last_wait(run_until_quiet(state), "ns/w")
    assert (wait.reason, wait.message) == ("Misconfigured", "ClusterQueue absent is terminating or missing")
    state.upsert_cluster_queue(cluster_queue("absent", {"default": {"cpu": 4}}))
    assert admitted(run_until_quiet(state)) == ["ns/w"]


def test_missing_flavor_makes_the_queue_inactive_until_it_exists() -> None:
    state = state_with(cluster_queue("cq", GPU), flavors=())
    state.upsert_workload(workload("w", {"nvidia.com/gpu": "1"}))
    assert last_wait(run_until_quiet(state), "ns/w").message == "ClusterQueue cq is inactive"
    assert state.missing_flavors("cq") == ("gpu-nodes",)
    state.upsert_resource_flavor(flavor("gpu-nodes"))
    assert admitted(run_until_quiet(state)) == ["ns/w"]


def test_stop_policy_hold_keeps_workloads_pending_and_resuming_admits_them() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 4}}, stopPolicy="Hold"))
    state.upsert_workload(workload("w"))
    wait = last_wait(run_until_quiet(state), "ns/w")
    assert (wait.reason, wait.message) == ("Suspended", "ClusterQueue cq is stopped")
    state.upsert_cluster_queue(cluster_queue("cq", {"default": {"cpu": 4}}))
    assert admitted(run_until_quiet(state)) == ["ns/w"]


def test_stopped_local_queue_holds_its_workloads() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 4}}), local_queues={})
    state.upsert_local_queue(local_queue("lq", "cq", stopPolicy="Hold"))
    state.upsert_workload(workload("w"))
    assert last_wait(run_until_quiet(state), "ns/w").message == "LocalQueue lq is stopped"
    state.upsert_local_queue(local_queue("lq", "cq"))
    assert admitted(run_until_quiet(state)) == ["ns/w"]


def test_restart_restores_usage_before_any_new_admission() -> None:
    state = SchedulerState()
    status = admitted_status("cq", {"cpu": "default"}, {"cpu": "3"})
    # the cluster is listed in any order: workloads may arrive before their ClusterQueue
    state.upsert_workload(workload("running", {"cpu": "3"}, created=0, status=status))
    state.upsert_workload(workload("new", {"cpu": "2"}, created=1))
    state.upsert_namespace("ns", {})
    state.upsert_resource_flavor(flavor("default"))
    state.upsert_cluster_queue(cluster_queue("cq", {"default": {"cpu": 4}}))
    state.upsert_local_queue(local_queue("lq", "cq"))
    decisions = run_until_quiet(state)
    assert admitted(decisions) == []
    assert "1 more needed" in last_wait(decisions, "ns/new").message


def test_two_heads_in_one_cohort_cannot_take_the_same_capacity() -> None:
    a = cluster_queue("a", {"default": {"cpu": 2}}, cohortName="org")
    b = cluster_queue("b", {"default": {"cpu": 2}}, cohortName="org")
    state = state_with(a, b, local_queues={"lq-a": "a", "lq-b": "b"})
    state.upsert_workload(workload("wa", {"cpu": "3"}, queue="lq-a", created=0))
    state.upsert_workload(workload("wb", {"cpu": "3"}, queue="lq-b", created=1))
    decisions = state.cycle()
    assert admitted(decisions) == ["ns/wa"]
    wait = last_wait(decisions, "ns/wb")
    assert (wait.reason, wait.message) == (
        "WaitingForQuota",
        "Workload no longer fits after processing another workload",
    )
    assert state.ledger.usage("a")[("default", "cpu")] == 3 * 10**9
    assert state.ledger.usage("b").get(("default", "cpu"), 0) == 0
    assert admitted(run_until_quiet(state)) == []
    state.finish_workload("ns/wa")  # the room comes back: wb gets it at once
    assert admitted(run_until_quiet(state)) == ["ns/wb"]


def test_a_woken_head_that_lost_its_room_in_the_cycle_is_retried_and_told_why_it_waits() -> None:
    """Kueue requeues a head that no longer fits after another admission (RequeueReasonFailedAfterNomination:
    back in the heap), so the next cycle nominates it again and its condition ends on the no-fit reason
    of that attempt, not on "no longer fits". Here both heads were parked and woken by one release."""
    queues = [cluster_queue(name, {"default": {"cpu": 2}}, cohortName="org") for name in ("a", "b", "c")]
    state = state_with(*queues, local_queues={"lq-a": "a", "lq-b": "b", "lq-c": "c"})
    state.upsert_workload(workload("x", {"cpu": "4"}, queue="lq-c", created=0))
    assert admitted(run_until_quiet(state)) == ["ns/x"]
    state.upsert_workload(workload("wa", {"cpu": "4"}, queue="lq-a", created=1))
    state.upsert_workload(workload("wb", {"cpu": "4"}, queue="lq-b", created=2))
    run_until_quiet(state)
    state.finish_workload("ns/x")  # 6 cpu free: room for one of them
    decisions = run_until_quiet(state)
    assert admitted(decisions) == ["ns/wa"]
    told = [wait.message for wait in decisions if isinstance(wait, Wait) and wait.workload == "ns/wb"]
    assert told == [
        "Workload no longer fits after processing another workload",
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, "
        "2 more needed",
    ]
    assert state.last_wait("ns/wb") == ("WaitingForQuota", told[-1])


def test_non_borrowing_heads_go_first_then_priority() -> None:
    a = cluster_queue("a", {"default": {"cpu": 2}}, cohortName="org")
    b = cluster_queue("b", {"default": {"cpu": 2}}, cohortName="org")
    state = state_with(a, b, local_queues={"lq-a": "a", "lq-b": "b"})
    state.upsert_workload(workload("borrower", {"cpu": "3"}, queue="lq-a", priority=100, created=0))
    state.upsert_workload(workload("modest", {"cpu": "2"}, queue="lq-b", priority=0, created=5))
    decisions = state.cycle()
    assert admitted(decisions) == ["ns/modest"]


def test_in_a_hierarchical_cohort_the_head_borrowing_less_is_scheduled_first() -> None:
    """Kueue's scheduler_test of that name (classical entry ordering: borrowing level before priority).
    ``guaranteed`` borrows within its cohort (level 1); ``best-effort``, of higher priority, borrows from
    the root (level 2, the root's height), so it goes second and the cpu is gone."""
    state = state_with(local_queues={})
    state.upsert_cohort(cohort("root", {"default": {"cpu": 0}}))
    state.upsert_cohort(cohort("guaranteed", {"default": {"cpu": 4}}, parent="root"))
    for name, parent in (("guaranteed", "guaranteed"), ("best-effort", "root")):
        state.upsert_cluster_queue(cluster_queue(name, {"default": {"cpu": 0}}, cohortName=parent))
        state.upsert_local_queue(local_queue(f"lq-{name}", name))
    state.upsert_workload(workload("guaranteed", {"cpu": "4"}, queue="lq-guaranteed", priority=0))
    state.upsert_workload(workload("best-effort", {"cpu": "4"}, queue="lq-best-effort", priority=3))
    decisions = state.cycle()
    assert admitted(decisions) == ["ns/guaranteed"]
    wait = last_wait(decisions, "ns/best-effort")
    assert (wait.reason, wait.message) == (
        "WaitingForQuota",
        "Workload no longer fits after processing another workload",
    )


def test_at_one_borrowing_level_priority_decides() -> None:
    """Two ClusterQueues of one cohort of ClusterQueues both borrow at level 1: priority goes first."""
    a = cluster_queue("a", {"default": {"cpu": 2}}, cohortName="org")
    b = cluster_queue("b", {"default": {"cpu": 2}}, cohortName="org")
    state = state_with(a, b, local_queues={"lq-a": "a", "lq-b": "b"})
    state.upsert_workload(workload("older", {"cpu": "3"}, queue="lq-a", priority=0, created=0))
    state.upsert_workload(workload("urgent", {"cpu": "3"}, queue="lq-b", priority=5, created=5))
    assert admitted(state.cycle()) == ["ns/urgent"]


def test_priority_from_a_workload_priority_class() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 1}}))
    high = parse_workload_priority_class({"metadata": {"name": "high"}, "value": 1000})
    assert isinstance(high, WorkloadPriorityClass)
    state.upsert_priority_class(high)
    state.upsert_workload(workload("old", created=0))
    vip = workload("vip", created=9)
    vip = replace(vip, priority_class_name="high", priority_class_group="kueue.x-k8s.io")
    state.upsert_workload(vip)
    assert admitted(run_until_quiet(state)) == ["ns/vip"]


def test_forget_returns_quota_and_requeues() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 1}}))
    state.upsert_workload(workload("w"))
    assert admitted(run_until_quiet(state)) == ["ns/w"]
    state.forget("ns/w")  # the status write failed
    assert state.ledger.usage("cq").get(("default", "cpu"), 0) == 0
    assert admitted(run_until_quiet(state)) == ["ns/w"]


def test_a_stale_update_does_not_undo_an_assumed_admission_but_a_cleared_reservation_does() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 1}}))
    pending = workload("w")
    state.upsert_workload(pending)
    run_until_quiet(state)
    state.upsert_workload(pending)  # an event from before the status write
    assert state.ledger.usage("cq")[("default", "cpu")] == 10**9
    state.upsert_workload(workload("w", status=admitted_status("cq", {"cpu": "default"}, {"cpu": "1"})))
    state.upsert_workload(pending)  # now the reservation really was cleared (eviction acknowledged)
    assert state.ledger.usage("cq")[("default", "cpu")] == 0
    assert admitted(run_until_quiet(state)) == ["ns/w"]


def test_finished_and_deleted_workloads_release_quota() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 2}}))
    for name in ("a", "b", "c"):
        state.upsert_workload(workload(name, created=ord(name)))
    assert admitted(run_until_quiet(state)) == ["ns/a", "ns/b"]
    finished = workload("a", status={"conditions": [{"type": "Finished", "status": "True"}]})
    state.upsert_workload(finished)
    assert admitted(run_until_quiet(state)) == ["ns/c"]
    state.delete_workload("ns/b")
    state.delete_workload("ns/c")
    assert state.ledger.usage("cq")[("default", "cpu")] == 0


def test_wait_decisions_are_not_repeated_when_nothing_changed() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 1}}))
    state.upsert_workload(workload("a", created=0))
    state.upsert_workload(workload("b", created=1))
    run_until_quiet(state)
    state.upsert_workload(workload("c", {"cpu": "100m"}, created=2))  # wakes nothing for b
    later = run_until_quiet(state)
    assert all(d.workload != "ns/b" for d in later)


def test_admission_decision_carries_the_cluster_queue_and_usage() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 4}}))
    state.upsert_workload(workload("w", {"cpu": "1"}, count=2))
    decision = run_until_quiet(state)[0]
    assert isinstance(decision, Admit)
    assert decision.cluster_queue == "cq" and not decision.borrowing
    assert decision.admission.pod_set_assignments[0].resource_usage["cpu"].canonical() == "2"


def test_apply_takes_every_kind_the_scheduler_keeps_through_one_entry() -> None:
    """``apply`` is what the controller's watch events and simulate's manifests both call: each parsed kind
    lands where its upsert puts it, so a Workload applied after its queues is admitted at its priority."""
    state = SchedulerState()
    state.upsert_namespace("ns", {})
    high = parse_workload_priority_class({"metadata": {"name": "high"}, "value": 100})
    assert isinstance(high, WorkloadPriorityClass)
    for obj in (
        high,
        flavor("default"),
        cluster_queue("cq", {"default": {"cpu": 1}}),
        local_queue("lq", "cq"),
        workload("low", {"cpu": "1"}, priority=1),
        replace(
            workload("urgent", {"cpu": "1"}, created=1),
            priority=None,
            priority_class_name="high",
            priority_class_group="kueue.x-k8s.io",
        ),
    ):
        state.apply(obj)
    assert admitted(run_until_quiet(state)) == ["ns/urgent"]


def test_apply_refuses_a_kind_the_scheduler_does_not_keep() -> None:
    config = parse_multikueue_config({"metadata": {"name": "workers"}, "spec": {"clusters": ["east"]}})
    assert isinstance(config, MultiKueueConfig)
    with pytest.raises(TypeError, match="the scheduler keeps no MultiKueueConfig"):
        state_with(cluster_queue("cq", {"default": {"cpu": 1}})).apply(config)  # type: ignore[arg-type]
