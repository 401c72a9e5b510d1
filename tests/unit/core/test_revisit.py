"""Parked workloads are told what is true now: a change of usage in their cohort tree brings one retry of
them a batch period later (Kueue's inadmissible-workload requeuer, ``requeueBatchPeriod`` of 1 s), and
nothing is decided for a workload whose message did not move."""

from __future__ import annotations

import pytest

from kueue_webhook.core import decisions
from kueue_webhook.core.decisions import Notices
from kueue_webhook.core.model import WorkloadKey
from kueue_webhook.core.revisits import REVISIT_AFTER
from kueue_webhook.core.scheduler import SchedulerState, Wait

from .builders import admitted, cluster_queue, last_wait, local_queue, run_until_quiet, state_with, workload

A_NEEDS = (
    "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, "
    "{} more needed"
)


def _cohort() -> SchedulerState:
    """team-a owns 4 cpu of cohort org; team-b owns none and borrows; team-a's ``parked`` needs 3 of the
    2 left, so it waits with "1 more needed"."""
    state = state_with(
        cluster_queue("team-a", {"default": {"cpu": 4}}, cohortName="org"),
        cluster_queue("team-b", {"default": {"cpu": 0}}, cohortName="org"),
        local_queues={"lq": "team-a", "lq-b": "team-b"},
    )
    state.upsert_workload(workload("running", {"cpu": "2"}, created=0))
    assert admitted(run_until_quiet(state, now=0.0)) == ["ns/running"]
    state.upsert_workload(workload("parked", {"cpu": "3"}, created=1))
    assert last_wait(run_until_quiet(state, now=0.0), "ns/parked").message == A_NEEDS.format(1)
    run_until_quiet(state, now=REVISIT_AFTER)  # the revisit planned by the first admission
    return state


def _waits(decisions: list[object]) -> list[Wait]:
    return [d for d in decisions if isinstance(d, Wait)]


def test_a_parked_workload_is_told_more_is_needed_once_others_borrowed_its_cohorts_room() -> None:
    state = _cohort()
    state.upsert_workload(workload("borrower", {"cpu": "1"}, queue="lq-b", created=10))
    assert admitted(run_until_quiet(state, now=10.0)) == ["ns/borrower"]
    # a batch period passes before the parked workload is tried again
    assert not state.has_work(10.0 + REVISIT_AFTER / 2)
    assert state.next_revisit() == 10.0 + REVISIT_AFTER
    decisions = run_until_quiet(state, now=10.0 + REVISIT_AFTER)
    assert last_wait(decisions, "ns/parked").message == A_NEEDS.format(2)
    assert state.last_wait("ns/parked") == ("WaitingForQuota", A_NEEDS.format(2))
    # the revisit itself moved no quota: nothing more is planned
    assert state.next_revisit() is None
    assert not state.has_work(100.0)


def test_changes_within_a_batch_period_bring_one_revisit_at_the_end_of_the_first() -> None:
    state = _cohort()
    state.upsert_workload(workload("b1", {"cpu": "1"}, queue="lq-b", created=10))
    run_until_quiet(state, now=10.0)
    state.upsert_workload(workload("b2", {"cpu": "1"}, queue="lq-b", created=11))
    assert admitted(run_until_quiet(state, now=10.5)) == ["ns/b2"]
    assert state.next_revisit() == 10.0 + REVISIT_AFTER
    decisions = run_until_quiet(state, now=10.0 + REVISIT_AFTER)
    # both borrowers took their room: 3 more needed, said once
    assert [w.message for w in _waits(decisions)] == [A_NEEDS.format(3)]


def test_a_revisit_that_finds_the_same_message_decides_nothing() -> None:
    state = _cohort()
    state.upsert_workload(workload("brief", {"cpu": "1"}, queue="lq-b", created=10))
    run_until_quiet(state, now=10.0)
    state.finish_workload("ns/brief")  # gone again before the revisit: the room is back
    assert run_until_quiet(state, now=10.2) == []
    assert state.next_revisit() == 10.0 + REVISIT_AFTER
    assert _waits(run_until_quiet(state, now=10.0 + REVISIT_AFTER)) == []
    assert state.last_wait("ns/parked") == ("WaitingForQuota", A_NEEDS.format(1))


def test_parked_workloads_of_one_shape_are_all_restated_with_one_decision() -> None:
    state = _cohort()
    for index in range(2, 5):
        state.upsert_workload(workload(f"alike-{index}", {"cpu": "3"}, created=index))
    run_until_quiet(state, now=1.0)
    state.take_restated()
    state.upsert_workload(workload("borrower", {"cpu": "1"}, queue="lq-b", created=10))
    run_until_quiet(state, now=10.0)
    decisions = run_until_quiet(state, now=10.0 + REVISIT_AFTER)
    # the first of the shape is tried; the rest would fail alike and are told so without a decision each
    assert [w.workload for w in _waits(decisions)] == ["ns/parked"]
    for index in range(2, 5):
        assert state.last_wait(f"ns/alike-{index}") == ("WaitingForQuota", A_NEEDS.format(2))
    assert state.take_restated() == {f"ns/alike-{index}": "team-a" for index in range(2, 5)}
    assert state.take_restated() == {}


def test_without_a_clock_nothing_is_revisited() -> None:
    state = state_with(
        cluster_queue("team-a", {"default": {"cpu": 4}}, cohortName="org"),
        cluster_queue("team-b", {"default": {"cpu": 0}}, cohortName="org"),
        local_queues={"lq": "team-a", "lq-b": "team-b"},
    )
    state.upsert_workload(workload("parked", {"cpu": "5"}))
    state.upsert_workload(workload("borrower", {"cpu": "1"}, queue="lq-b"))
    run_until_quiet(state)
    assert state.next_revisit() is None
    assert not state.has_work()


def test_a_tree_without_changes_is_left_alone() -> None:
    state = _cohort()
    state.upsert_cluster_queue(cluster_queue("other", {"default": {"cpu": 1}}))
    state.upsert_local_queue(local_queue("lq-o", "other"))
    state.upsert_workload(workload("elsewhere", {"cpu": "1"}, queue="lq-o", created=10))
    assert admitted(run_until_quiet(state, now=10.0)) == ["ns/elsewhere"]
    assert _waits(run_until_quiet(state, now=10.0 + REVISIT_AFTER)) == []
    assert state.last_wait("ns/parked") == ("WaitingForQuota", A_NEEDS.format(1))


def test_every_member_of_a_large_parked_shape_is_told_the_restated_message() -> None:
    state = _cohort()
    alike = [f"ns/many-{index}" for index in range(300)]
    for index in range(300):
        state.upsert_workload(workload(f"many-{index}", {"cpu": "3"}, created=2 + index))
    run_until_quiet(state, now=1.0)
    assert {state.last_wait(key) for key in alike} == {("WaitingForQuota", A_NEEDS.format(1))}
    state.take_restated()
    state.upsert_workload(workload("borrower", {"cpu": "1"}, queue="lq-b", created=1000))
    run_until_quiet(state, now=1000.0)
    decisions = run_until_quiet(state, now=1000.0 + REVISIT_AFTER)
    # one decision for the shape's first; all 300 behind it read the new message
    assert [w.workload for w in _waits(decisions)] == ["ns/parked"]
    assert {state.last_wait(key) for key in alike} == {("WaitingForQuota", A_NEEDS.format(2))}
    # the visibility API and ``kubectl describe`` read the same message
    assert [state.last_wait(str(info.key)) for info in state.pending_in("team-a")] == [
        ("WaitingForQuota", A_NEEDS.format(2))
    ] * 301


def _told_then_parked(
    notices: Notices, out: list[object], key: WorkloadKey, message: str, position: int
) -> None:
    """A workload told ``message`` at ``position`` in ClusterQueue ``cq``, then parked as ``shape``."""
    notices.wait(out, key, "cq", "WaitingForQuota", message, position)
    notices.parked(key, "shape")


def test_a_workload_keeps_what_its_shape_was_told_once_it_leaves_the_parked_list() -> None:
    notices = Notices()
    out: list[object] = []
    key, later = WorkloadKey("ns/a"), WorkloadKey("ns/b")
    _told_then_parked(notices, out, key, "old", 3)
    notices.restate_parked("shape", "cq", "WaitingForQuota", "new", lambda: [key])
    _told_then_parked(notices, out, later, "own", 4)  # parked after the restatement: it keeps its own message
    assert (notices.last_wait(key), notices.last_wait(later)) == (
        ("WaitingForQuota", "new"),
        ("WaitingForQuota", "own"),
    )
    notices.unparked(key)
    notices.restate_parked("shape", "cq", "WaitingForQuota", "newer", lambda: [later])
    assert (notices.last_wait(key), notices.last_wait(later)) == (
        ("WaitingForQuota", "new"),  # the restatement speaks for the parked only
        ("WaitingForQuota", "newer"),
    )
    # what it was told, position included, is not decided again
    notices.wait(out, key, "cq", "WaitingForQuota", "new", 3)
    assert len(out) == 2


def test_a_restatement_that_repeats_the_last_looks_only_at_workloads_parked_since() -> None:
    notices = Notices()
    out: list[object] = []
    old, new = WorkloadKey("ns/old"), WorkloadKey("ns/new")
    _told_then_parked(notices, out, old, "1 more needed", 1)
    notices.restate_parked("shape", "cq", "WaitingForQuota", "2 more needed", lambda: [old])
    assert notices.take_restated() == {old: "cq"}
    _told_then_parked(notices, out, new, "1 more needed", 2)

    def every_member() -> list[WorkloadKey]:
        raise AssertionError("the shape's members are not listed again")

    notices.restate_parked("shape", "cq", "WaitingForQuota", "2 more needed", every_member)
    assert notices.take_restated() == {new: "cq"}
    assert notices.last_wait(old) == notices.last_wait(new) == ("WaitingForQuota", "2 more needed")


def test_past_the_bound_of_noted_workloads_a_repeated_restatement_lists_the_members(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(decisions, "SINCE_AT_MOST", 1)
    notices = Notices()
    out: list[object] = []
    keys = [WorkloadKey(f"ns/w{index}") for index in range(3)]
    notices.parked(keys[0], "shape")
    notices.restate_parked("shape", "cq", "WaitingForQuota", "same", lambda: [keys[0]])
    for key in keys[1:]:  # two told and parked since: more than noted
        _told_then_parked(notices, out, key, "own", 1)
    notices.restate_parked("shape", "cq", "WaitingForQuota", "same", lambda: keys)
    assert notices.take_restated() == {keys[1]: "cq", keys[2]: "cq"}
