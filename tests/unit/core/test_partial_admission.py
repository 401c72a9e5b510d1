"""Partial admission (Kueue's PartialAdmission, on by default): a workload whose pod set has ``minCount`` is
admitted with fewer pods when the whole does not fit (scheduler.go getInitialAssignments, flavorassigner's
PodSetReducer), and the admission records and charges the reduced count."""

from __future__ import annotations

from typing import Any

from kueue_webhook.core.partial import reduced_counts, search_counts
from kueue_webhook.core.scheduler import Admit, Evict, SchedulerState

from .builders import admitted_status, cluster_queue, last_wait, run_until_quiet, state_with, workload

CPU = 10**9


def partial_workload(name: str, count: int, min_count: int | None, *, created: int = 0, **kw: Any) -> Any:
    template = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    pod_set: dict[str, Any] = {"name": "main", "count": count, "template": template}
    if min_count is not None:
        pod_set["minCount"] = min_count
    return workload(name, pod_sets=[pod_set], created=created, **kw)


def admits(decisions: list[Any]) -> dict[str, Admit]:
    return {d.workload: d for d in decisions if isinstance(d, Admit)}


def cpu_state(quota: int, **spec: Any) -> SchedulerState:
    return state_with(cluster_queue("cq", {"default": {"cpu": quota}}, **spec))


# -- the count search (PodSetReducer) ------------------------------------------------------------------


def test_reducer_steps_take_the_same_share_of_each_pod_sets_slack_from_full_to_minimum() -> None:
    # fillPodSetSizesForSearchIndex: count - slack * step // total_slack
    assert reduced_counts((10, 6), (5, 3), 0, 8) == (10, 6)
    assert reduced_counts((10, 6), (5, 3), 4, 8) == (8, 5)
    assert reduced_counts((10, 6), (5, 3), 8, 8) == (5, 3)


def test_reducer_binary_search_finds_the_largest_count_that_fits_and_stops_at_min_count() -> None:
    tried: list[int] = []

    def fits_up_to(limit: int) -> Any:
        def fits(counts: tuple[int, ...]) -> str | None:
            tried.append(counts[0])
            return f"{counts[0]} pods" if counts[0] <= limit else None

        return fits

    assert search_counts([8], [2], fits_up_to(5)) == "5 pods"
    assert tried == [5, 7, 6]  # steps 0..6 over counts 8..2: midpoints 3, 5, 4 -> counts 5, 7, 6
    tried.clear()
    assert search_counts([8], [2], fits_up_to(1)) is None  # below minCount is never tried
    assert min(tried) == 2
    tried.clear()
    assert search_counts([4], [None], fits_up_to(4)) is None  # no minCount: nothing to shrink
    assert search_counts([4], [4], fits_up_to(4)) is None
    assert tried == []


# -- the scheduler -------------------------------------------------------------------------------------


def test_a_workload_that_does_not_fit_whole_is_admitted_with_min_count_and_charged_for_it() -> None:
    state = cpu_state(2)
    state.upsert_workload(partial_workload("job", 4, 2))
    decision = admits(run_until_quiet(state))["ns/job"]
    (assignment,) = decision.admission.pod_set_assignments
    assert assignment.count == 2
    assert assignment.resource_usage["cpu"].canonical() == "2"
    assert state.ledger.usage("cq") == {("default", "cpu"): 2 * CPU}


def test_the_largest_count_that_fits_is_admitted_not_the_minimum() -> None:
    state = cpu_state(3)
    state.upsert_workload(partial_workload("job", 4, 1))
    (assignment,) = admits(run_until_quiet(state))["ns/job"].admission.pod_set_assignments
    assert (assignment.count, assignment.resource_usage["cpu"].canonical()) == (3, "3")


def test_a_workload_that_fits_whole_is_admitted_with_its_full_count() -> None:
    state = cpu_state(8)
    state.upsert_workload(partial_workload("job", 4, 2))
    (assignment,) = admits(run_until_quiet(state))["ns/job"].admission.pod_set_assignments
    assert assignment.count == 4


def test_without_min_count_a_workload_waits_for_its_whole_count() -> None:
    state = cpu_state(2)
    state.upsert_workload(partial_workload("job", 4, None))
    decisions = run_until_quiet(state)
    assert admits(decisions) == {}
    assert "insufficient quota for cpu" in last_wait(decisions, "ns/job").message


def test_when_even_min_count_does_not_fit_the_wait_names_the_full_request_and_a_release_lets_it_in() -> None:
    state = cpu_state(4)
    holding = admitted_status("cq", {"cpu": "default"}, {"cpu": "3"}, count=3)
    state.upsert_workload(partial_workload("running", 3, None, status=holding))
    state.upsert_workload(partial_workload("job", 4, 2, created=1))
    decisions = run_until_quiet(state)
    assert admits(decisions) == {}
    # the full assignment's verdict stands, as in Kueue: 4 wanted, 1 free
    assert last_wait(decisions, "ns/job").message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, "
        "3 more needed"
    )
    # a release of 1 is less than the full shortfall (3) but lets the minimum (2) in
    shrunk = admitted_status("cq", {"cpu": "default"}, {"cpu": "2"}, count=2)
    state.upsert_workload(partial_workload("running", 2, None, status=shrunk))
    (assignment,) = admits(run_until_quiet(state))["ns/job"].admission.pod_set_assignments
    assert assignment.count == 2


def test_preemption_for_the_whole_count_comes_before_reducing_it() -> None:
    """getInitialAssignments: a full assignment that can preempt is used; counts shrink only when it can't."""
    state = cpu_state(4, preemption={"withinClusterQueue": "LowerPriority"})
    low = admitted_status("cq", {"cpu": "default"}, {"cpu": "2"}, count=2)
    state.upsert_workload(partial_workload("low", 2, None, priority=0, status=low))
    state.upsert_workload(partial_workload("high", 4, 2, priority=10, created=1))
    decisions = run_until_quiet(state)
    assert [d.workload for d in decisions if isinstance(d, Evict)] == ["ns/low"]
    assert "ns/high" not in admits(decisions)


def test_counts_shrink_when_preemption_finds_nobody_to_evict() -> None:
    state = cpu_state(4, preemption={"withinClusterQueue": "LowerPriority"})
    peer = admitted_status("cq", {"cpu": "default"}, {"cpu": "2"}, count=2)
    state.upsert_workload(partial_workload("peer", 2, None, priority=10, status=peer))
    state.upsert_workload(partial_workload("job", 4, 1, priority=10, created=1))
    decisions = run_until_quiet(state)
    assert not [d for d in decisions if isinstance(d, Evict)]
    (assignment,) = admits(decisions)["ns/job"].admission.pod_set_assignments
    assert assignment.count == 2


def test_a_reduced_admission_is_charged_as_recorded_after_a_restart() -> None:
    state = cpu_state(4)
    reduced = admitted_status("cq", {"cpu": "default"}, {"cpu": "2"}, count=2)
    state.upsert_workload(partial_workload("running", 4, 2, status=reduced))
    assert state.ledger.usage("cq") == {("default", "cpu"): 2 * CPU}
    state.upsert_workload(partial_workload("next", 2, None, created=1))
    assert list(admits(run_until_quiet(state))) == ["ns/next"]
