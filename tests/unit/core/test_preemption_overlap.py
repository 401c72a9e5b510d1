"""Two preemptors of one cycle choosing the same victim (Kueue's
RecomputeAssignmentUponPreemptionTargetsOverlap, on by default since v0.20; the cases are those of Kueue's
``pkg/scheduler/scheduler_recompute_preemption_test.go``).

The second preemptor's assignment is computed again as if the victims chosen before it were gone, on the
flavors it was first given: it then preempts other workloads in the same cycle, waits for the evictions
already issued when they make enough room, or waits as it would without them.
"""

from __future__ import annotations

from typing import Any

from kueue_webhook.core.scheduler import Admit, Evict, SchedulerState

from .builders import cluster_queue, cohort, flavor, last_wait, local_queue
from .test_preemption import Cluster, cluster, cpu_queue

RECLAIM = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}


def four_teams(*, fair: bool) -> Cluster:
    """Kueue's test tree: root-cohort (3005 cpu) over parent-cohort-a (cq-hero 3000, cq-noisy 0),
    parent-cohort-b (cq-tiny 50) and parent-cohort-c (cq-rest 0); every ClusterQueue reclaims."""
    c = cluster(
        cpu_queue("cq-hero", 3000, cohortName="parent-cohort-a", preemption=RECLAIM),
        cpu_queue("cq-noisy", 0, cohortName="parent-cohort-a", preemption=RECLAIM),
        cpu_queue("cq-tiny", 50, cohortName="parent-cohort-b", preemption=RECLAIM),
        cpu_queue("cq-rest", 0, cohortName="parent-cohort-c", preemption=RECLAIM),
        local_queues={
            "lq-hero": "cq-hero",
            "lq-noisy": "cq-noisy",
            "lq-tiny": "cq-tiny",
            "lq-rest": "cq-rest",
        },
    )
    c.state.upsert_cohort(cohort("root-cohort", {"default": {"cpu": 3005}}))
    c.state.upsert_cohort(cohort("parent-cohort-a", {"default": {"cpu": 0}}, parent="root-cohort"))
    c.state.upsert_cohort(cohort("parent-cohort-b", parent="root-cohort"))
    c.state.upsert_cohort(cohort("parent-cohort-c", parent="root-cohort"))
    c.state.configure_fair_sharing(enabled=fair)
    return c


def evictions(decisions: list[Any]) -> list[tuple[str, str, str]]:
    return [(d.workload, d.preemptor, d.preemption_reason) for d in decisions if isinstance(d, Evict)]


def test_two_reclaimers_of_one_victim_the_second_waits_for_it_as_a_deferred_fit() -> None:
    """Kueue: "two workloads reclaim nominal quota; RecomputePreemptionTargetsUponOverlap enabled". Both
    reclaim their nominal quota from cq-rest's one workload; the older preemptor evicts it, and the other
    is told it will fit once that eviction is done, instead of only that its targets overlap."""
    c = four_teams(fair=False)
    c.add("wl-rest-admitted", 6055, queue="lq-rest")
    c.settle()
    assert c.admitted == {"ns/wl-rest-admitted"}
    c.add("wl-tiny-pending", 50, queue="lq-tiny", created=10)
    c.add("wl-hero", 2950, queue="lq-hero", created=11)
    decisions = c.state.cycle()
    assert evictions(decisions) == [("ns/wl-rest-admitted", "ns/wl-tiny-pending", "InCohortReclamation")]
    tiny = last_wait(decisions, "ns/wl-tiny-pending")
    assert (tiny.reason, tiny.message) == (
        "WaitingForPreemptedWorkloads",
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, "
        "50 more needed. Pending the preemption of 1 workload(s)",
    )
    hero = last_wait(decisions, "ns/wl-hero")
    assert (hero.reason, hero.message) == (
        "WaitingForPreemptedWorkloads",
        "Workload has overlapping preemption targets with another workload, but will fit after these "
        "preemptions complete",
    )
    # the victim still runs: nothing is admitted until its eviction is done, then both get in
    assert not c.settle(acknowledge=False)
    c.admitted.discard("ns/wl-rest-admitted")
    c.state.upsert_workload(c.workloads["ns/wl-rest-admitted"])
    c.settle()
    assert c.admitted == {"ns/wl-tiny-pending", "ns/wl-hero"}
    assert not c.evictions  # nobody else was evicted for them


def test_a_second_reclaimer_preempts_someone_else_in_the_same_cycle_under_fair_sharing() -> None:
    """Kueue: "with fair sharing: hierarchical nominal-first prefers non-borrowing leaf CQ". cq-tiny's
    workload goes first (its share is lower) and evicts cq-rest's; cq-hero's head had chosen the same
    victim and, computed again without it, reclaims its quota from cq-noisy in the same cycle."""
    c = four_teams(fair=True)
    c.add("wl-noisy-admitted", 3000, queue="lq-noisy")
    c.add("wl-tiny-admitted", 60, queue="lq-tiny")
    c.add("wl-rest-admitted", 2995, queue="lq-rest")
    c.settle()
    assert len(c.admitted) == 3
    c.add("wl-tiny-pending", 10, queue="lq-tiny", created=10)
    c.add("wl-hero", 2990, queue="lq-hero", created=11)
    decisions = c.state.cycle()
    assert sorted(evictions(decisions)) == [
        ("ns/wl-noisy-admitted", "ns/wl-hero", "InCohortReclamation"),
        ("ns/wl-rest-admitted", "ns/wl-tiny-pending", "InCohortFairSharing"),
    ]
    assert last_wait(decisions, "ns/wl-hero").message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, "
        "5 more needed. Pending the preemption of 1 workload(s)"
    )
    assert last_wait(decisions, "ns/wl-tiny-pending").message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, "
        "10 more needed. Pending the preemption of 1 workload(s)"
    )
    for victim in ("ns/wl-noisy-admitted", "ns/wl-rest-admitted"):
        c.admitted.discard(victim)
        c.state.upsert_workload(c.workloads[victim])
    c.settle()
    assert {"ns/wl-hero", "ns/wl-tiny-pending"} <= c.admitted


def test_a_recomputed_assignment_keeps_the_flavor_it_was_first_given() -> None:
    """Kueue's flavor stickiness ("flavor stickiness with RecomputePreemptionTargetsUponOverlap"): b's head
    stopped at flavor f1, where it could preempt (``whenCanPreempt: MayStopSearch``), and chose the victim a's
    head chose first. Computed again without that victim, f1 has no room left for it and nobody else to
    preempt; it is not moved to f2, where it would fit, in the same cycle: it waits, and is told which
    flavor was skipped. Once the eviction is done it gets in, on f2."""
    queues = (
        {"f1": {"cpu": 6}, "f2": {"cpu": 0}},
        {"f1": {"cpu": 2}, "f2": {"cpu": 4}},
        {"f1": {"cpu": 0}, "f2": {"cpu": 0}},
    )
    state = SchedulerState()
    state.upsert_namespace("ns", {})
    for name in ("f1", "f2"):
        state.upsert_resource_flavor(flavor(name))
    policy = {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}}
    for name, quota in zip(("cq-a", "cq-b", "cq-big"), queues, strict=True):
        queue = cluster_queue(
            name,
            quota,
            cohortName="org",
            preemption=policy,
            flavorFungibility={"whenCanPreempt": "MayStopSearch"},
        )
        state.upsert_cluster_queue(queue)
        state.upsert_local_queue(local_queue(f"lq-{name[3:]}", name))
    c = Cluster(state)
    c.add("big", 8, queue="lq-big")
    c.settle()
    assert flavor_of(c, "ns/big") == "f1"
    c.add("a", 6, queue="lq-a", priority=10, created=10)
    c.add("b", 4, queue="lq-b", priority=10, created=11)
    decisions = c.state.cycle()
    assert evictions(decisions) == [("ns/big", "ns/a", "InCohortReclamation")]
    wait = last_wait(decisions, "ns/b")
    assert (wait.reason, wait.message) == (
        "WaitingForQuota",
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor f1, 2 more "
        "needed, skipping flavor f2 as it is not found in the nomination mapping for resource cpu",
    )
    assert not [d for d in decisions if isinstance(d, Admit)]
    c.admitted.discard("ns/big")
    c.state.upsert_workload(c.workloads["ns/big"])
    c.settle()
    assert {key: flavor_of(c, key) for key in c.admitted} == {"ns/a": "f1", "ns/b": "f2"}


def flavor_of(c: Cluster, key: str) -> str:
    info = c.state.workload(key)
    assert info is not None and info.admission is not None
    return info.admission.pod_set_assignments[0].flavors["cpu"]
