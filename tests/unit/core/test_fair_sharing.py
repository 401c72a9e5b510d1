"""Fair sharing: dominant resource shares as Kueue reports them, admission by lowest share, and
preemption that brings tenants of equal weight and equal demand to equal shares."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_webhook.core.scheduler import Admit, Evict, SchedulerState
from kueue_webhook.core.status import cluster_queue_status, cohort_status

from .builders import cluster_queue, cohort, run_until_quiet, state_with, workload

CPU = ("default", "cpu")
G = 10**9


def teams(*weights: str | None, nominal: int = 0, shared: int = 12, fair: bool = True) -> SchedulerState:
    """ClusterQueues t0, t1... in cohort ``org`` whose own quota is ``shared`` cpu."""
    queues = []
    for index, weight in enumerate(weights):
        spec = {
            "cohortName": "org",
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
        }
        if weight is not None:
            spec["fairSharing"] = {"weight": weight}
        queues.append(cluster_queue(f"t{index}", {"default": {"cpu": nominal}}, **spec))
    state = state_with(*queues, local_queues={f"lq{i}": f"t{i}" for i in range(len(weights))})
    state.upsert_cohort(cohort("org", {"default": {"cpu": shared}}))
    state.configure_fair_sharing(enabled=fair)
    return state


def test_weighted_share_in_status_follows_borrowing_and_weight() -> None:
    state = teams(None, "2", "0")
    for index in range(3):
        state.upsert_workload(workload(f"w{index}", {"cpu": "2"}, queue=f"lq{index}", created=index))
    run_until_quiet(state)
    # 2 of 12 lendable cpu borrowed = 166.7 per mille; weight 2 halves it; weight 0 ranks last
    shares = [cluster_queue_status(state, f"t{i}")["fairSharing"]["weightedShare"] for i in range(3)]
    assert shares == [167, 84, 2**63 - 1]


def test_no_fair_sharing_field_when_disabled() -> None:
    state = teams(None, fair=False)
    assert "fairSharing" not in cluster_queue_status(state, "t0")


def test_lowest_share_is_admitted_first() -> None:
    state = teams(None, None, shared=4)
    state.upsert_workload(workload("busy-1", {"cpu": "2"}, queue="lq0", created=0))
    run_until_quiet(state)
    # t0 already borrows 2; t1's newer head goes before t0's older one
    state.upsert_workload(workload("busy-2", {"cpu": "2"}, queue="lq0", created=1))
    state.upsert_workload(workload("idle-1", {"cpu": "2"}, queue="lq1", created=2))
    decisions = state.cycle()
    assert [d.workload for d in decisions if isinstance(d, Admit)] == ["ns/idle-1"]


def test_classical_order_would_take_the_older_head() -> None:
    state = teams(None, None, shared=4, fair=False)
    state.upsert_workload(workload("busy-1", {"cpu": "2"}, queue="lq0", created=0))
    run_until_quiet(state)
    state.upsert_workload(workload("busy-2", {"cpu": "2"}, queue="lq0", created=1))
    state.upsert_workload(workload("idle-1", {"cpu": "2"}, queue="lq1", created=2))
    assert [d.workload for d in state.cycle() if isinstance(d, Admit)] == ["ns/busy-2"]


def settle(state: SchedulerState, fed: dict[str, object]) -> list[Evict]:
    evictions: list[Evict] = []
    while True:
        decisions = run_until_quiet(state)
        for d in decisions:
            if isinstance(d, Admit):
                state.confirm(d.workload)  # the admission write landed and was seen
        found = [d for d in decisions if isinstance(d, Evict)]
        if not found:
            return evictions
        evictions.extend(found)
        for d in found:
            state.upsert_workload(fed[d.workload])  # type: ignore[arg-type]


@given(st.integers(12, 16), st.integers(12, 16), st.sampled_from([6, 8, 12]))
@settings(max_examples=30)
def test_equal_weights_and_equal_demand_converge_to_equal_shares(
    first: int, second: int, shared: int
) -> None:
    state = teams(None, None, shared=shared)
    fed: dict[str, object] = {}
    for index in range(first):  # t0 arrives first and takes everything
        wl = workload(f"a{index}", {"cpu": "1"}, queue="lq0", created=index)
        fed[wl.key] = wl
        state.upsert_workload(wl)
    settle(state, fed)
    assert state.ledger.usage("t0")[CPU] == shared * G
    for index in range(second):  # then t1 wants at least as much
        wl = workload(f"b{index}", {"cpu": "1"}, queue="lq1", created=100 + index)
        fed[wl.key] = wl
        state.upsert_workload(wl)
    evictions = settle(state, fed)
    assert all(e.preemption_reason == "InCohortFairSharing" for e in evictions)
    used = [state.ledger.usage(f"t{i}").get(CPU, 0) // G for i in range(2)]
    assert sum(used) == shared and abs(used[0] - used[1]) <= 1, used


def test_cohort_share_counts_what_its_subtree_borrows_from_the_parent() -> None:
    state = teams(None, None, shared=0)  # "org" holds no quota of its own: its members lend to each other
    state.upsert_cohort(cohort("org", {"default": {"cpu": 0}}, parent="root"))
    state.upsert_cohort(cohort("root", {"default": {"cpu": 8}}))
    state.upsert_workload(workload("big", {"cpu": "4"}, queue="lq0"))
    run_until_quiet(state)
    # org borrows all 4 of the 8 cpu root can lend it: 500 per mille
    assert cohort_status(state, "org") == {"fairSharing": {"weightedShare": 500}}
    assert cohort_status(state, "root") == {"fairSharing": {"weightedShare": 0}}
    state.configure_fair_sharing(enabled=False)
    assert cohort_status(state, "org") == {}


def test_a_head_that_borrows_nothing_it_asks_for_goes_before_a_lower_share() -> None:
    """Kueue's FairSharingPrioritizeNonBorrowing (on by default since v0.17): b borrows all of a's lent f2,
    so its share is the higher, but its new head asks for f1 within b's own quota; a's head would borrow
    f1. Only one of them fits: b's goes first and gets in, a's waits."""
    a = cluster_queue("a", {"f1": {"cpu": 2}, "f2": {"cpu": 10}}, cohortName="org")
    b = cluster_queue("b", {"f1": {"cpu": 4}, "f2": {"cpu": 0}}, cohortName="org")
    state = state_with(a, b, flavors=("f1", "f2"), local_queues={"lq-a": "a", "lq-b": "b"})
    state.configure_fair_sharing(enabled=True)
    state.upsert_workload(workload("b-big", {"cpu": "10"}, queue="lq-b"))
    assert [d.workload for d in run_until_quiet(state) if isinstance(d, Admit)] == ["ns/b-big"]
    state.upsert_workload(workload("a-new", {"cpu": "3"}, queue="lq-a", created=1))
    state.upsert_workload(workload("b-new", {"cpu": "4"}, queue="lq-b", created=2))
    assert [d.workload for d in run_until_quiet(state) if isinstance(d, Admit)] == ["ns/b-new"]
