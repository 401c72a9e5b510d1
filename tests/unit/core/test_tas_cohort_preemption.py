"""Preemption for topology across a cohort, as Kueue's preemptor does it: the victims are the fewest whose
room lets the preemptor's pods fit one domain of the level they require, found among borrowers of the
cohort (reclaim) as well as in the preemptor's own ClusterQueue; a ClusterQueue within its nominal quota
is never reclaimed from, and quota and topology must both fit once the victims are gone."""

from __future__ import annotations

from typing import Any

from kueue_webhook.core.scheduler import Admit, Evict, SchedulerState

from .builders import admitted, cluster_queue, last_wait, local_queue, run_until_quiet, workload
from .test_tas_scheduling import assignment_of, node, tas_flavor, topology

RECLAIM_ANY = {"reclaimWithinCohort": "Any"}


def cohort_state(quotas: dict[str, int], preemption: dict[str, Any], *, fair: bool = False) -> SchedulerState:
    """Two racks of two 2-cpu hosts (4 cpus each), shared by the ClusterQueues of cohort ``all``; ``a``
    has the preemption policy given, the others none."""
    state = SchedulerState()
    state.configure_fair_sharing(enabled=fair)
    state.upsert_namespace("ns", {})
    state.upsert_topology(topology())
    state.upsert_resource_flavor(tas_flavor())
    for name, quota in quotas.items():
        spec: dict[str, Any] = {"cohortName": "all"}
        if name == "a":
            spec["preemption"] = preemption
        state.upsert_cluster_queue(cluster_queue(name, {"tas-flavor": {"cpu": quota}}, **spec))
        state.upsert_local_queue(local_queue(f"lq-{name}", name))
    for each in (node("a1", "a", 2), node("a2", "a", 2), node("b1", "b", 2), node("b2", "b", 2)):
        state.upsert_node(each)
    return state


def rack_job(name: str, queue: str, count: int, *, created: int, priority: int = 0, rack: str = "") -> Any:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    if rack:
        spec["nodeSelector"] = {"rack": rack}
    template = {"spec": spec}
    pod_set = {"name": "main", "count": count, "template": template, "topologyRequest": {"required": "rack"}}
    return workload(name, pod_sets=[pod_set], queue=f"lq-{queue}", created=created, priority=priority)


def fill_b(state: SchedulerState, first: int, second: int) -> None:
    """``b`` runs ``first`` pods on rack a, then ``second`` pods on rack b."""
    state.upsert_workload(rack_job("b-old", "b", first, created=0, rack="a"))
    state.upsert_workload(rack_job("b-new", "b", second, created=1, rack="b"))
    decisions = run_until_quiet(state)
    assert sorted(admitted(decisions)) == ["ns/b-new", "ns/b-old"]
    racks = {
        d.workload: {dom.values[0][0] for dom in assignment_of(d)} for d in decisions if isinstance(d, Admit)
    }
    assert racks == {"ns/b-old": {"a"}, "ns/b-new": {"b"}}


def evictions(decisions: list[Any]) -> list[tuple[str, str, str]]:
    return [(d.workload, d.cluster_queue, d.preemption_reason) for d in decisions if isinstance(d, Evict)]


def test_quota_fits_but_no_rack_does_so_the_borrower_of_the_cohort_gives_back_a_whole_rack() -> None:
    state = cohort_state({"a": 4, "b": 4}, RECLAIM_ANY)
    fill_b(state, 3, 2)  # b uses 5 of its 4: it borrows one of a's
    state.upsert_workload(rack_job("rack3", "a", 3, created=2))
    decisions = run_until_quiet(state)
    # a's quota holds 3 pods (3 cpus are unused in the cohort) but no rack has 3 free: one rack has 1,
    # the other 2. Reclaiming b's newest workload frees rack b whole.
    assert evictions(decisions) == [("ns/b-new", "b", "InCohortReclamation")]
    assert last_wait(decisions, "ns/rack3").message.endswith("Pending the preemption of 1 workload(s)")
    state.finish_workload("ns/b-new")
    (admit,) = [d for d in run_until_quiet(state) if isinstance(d, Admit)]
    assert admit.workload == "ns/rack3"
    assert {d.values[0] for d in assignment_of(admit)} == {"b1", "b2"}


def test_the_victims_free_room_in_one_rack_not_just_quota() -> None:
    state = cohort_state({"a": 5, "b": 3}, RECLAIM_ANY)
    # b uses 5 of its 3: rack a holds b-old (2) and b-new (1), rack b holds b-mid (2)
    state.upsert_workload(rack_job("b-old", "b", 2, created=0, rack="a"))
    state.upsert_workload(rack_job("b-mid", "b", 2, created=1, rack="b"))
    state.upsert_workload(rack_job("b-new", "b", 1, created=2, rack="a"))
    assert len(admitted(run_until_quiet(state))) == 3
    state.upsert_workload(rack_job("rack4", "a", 4, created=3))
    decisions = run_until_quiet(state)
    # quota alone needs one cpu back, which the newest (b-new) gives, but that leaves 2 free on each
    # rack; evicting b-mid (b still borrows without b-new) frees rack b whole, and b-new may stay
    assert evictions(decisions) == [("ns/b-mid", "b", "InCohortReclamation")]
    state.finish_workload("ns/b-mid")
    (admit,) = [d for d in run_until_quiet(state) if isinstance(d, Admit)]
    assert {d.values[0] for d in assignment_of(admit)} == {"b1", "b2"}


def test_a_cluster_queue_within_its_nominal_quota_is_not_reclaimed_from_for_topology() -> None:
    state = cohort_state({"a": 4, "b": 4}, RECLAIM_ANY)
    fill_b(state, 3, 1)  # b uses exactly its own 4, one pod on rack b
    state.upsert_workload(rack_job("rack4", "a", 4, created=2))
    decisions = run_until_quiet(state)
    assert evictions(decisions) == []
    wait = last_wait(decisions, "ns/rack4")
    assert wait.reason == "WaitingForQuota"
    assert "allows to fit only 3 out of 4 pod(s)" in wait.message


def test_without_reclaim_the_rack_job_waits_for_the_borrower() -> None:
    state = cohort_state({"a": 4, "b": 4}, {"reclaimWithinCohort": "Never"})
    fill_b(state, 3, 2)
    state.upsert_workload(rack_job("rack3", "a", 3, created=2))
    decisions = run_until_quiet(state)
    assert evictions(decisions) == []
    assert last_wait(decisions, "ns/rack3").reason == "WaitingForQuota"


def test_a_borrowing_rack_job_preempts_a_lower_priority_borrower_when_borrow_within_cohort_allows() -> None:
    borrow = {"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}}
    state = cohort_state({"a": 2, "b": 4, "c": 2}, borrow)
    fill_b(state, 3, 2)  # b borrows one
    state.upsert_workload(rack_job("rack3", "a", 3, created=2, priority=10))
    decisions = run_until_quiet(state)
    # 3 pods are more than a's 2: it borrows to run, so only a lower priority borrower can be preempted
    assert evictions(decisions) == [("ns/b-new", "b", "InCohortReclaimWhileBorrowing")]


def test_a_borrowing_rack_job_does_not_preempt_when_borrow_within_cohort_is_never() -> None:
    state = cohort_state({"a": 2, "b": 4, "c": 2}, RECLAIM_ANY)
    fill_b(state, 3, 2)
    state.upsert_workload(rack_job("rack3", "a", 3, created=2, priority=10))
    decisions = run_until_quiet(state)
    assert evictions(decisions) == []
    assert last_wait(decisions, "ns/rack3").reason == "WaitingForQuota"


def test_with_fair_sharing_the_borrower_gives_back_a_whole_rack_too() -> None:
    state = cohort_state({"a": 4, "b": 4}, RECLAIM_ANY, fair=True)
    fill_b(state, 3, 2)
    state.upsert_workload(rack_job("rack3", "a", 3, created=2))
    decisions = run_until_quiet(state)
    # a within its nominal quota: taken back without a share comparison (FairSharingPreemptWithinNominal)
    assert evictions(decisions) == [("ns/b-new", "b", "InCohortReclamation")]
