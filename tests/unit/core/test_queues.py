"""Queue order and FIFO modes: BestEffortFIFO parks a head that does not fit, StrictFIFO blocks on it."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kueue_webhook.core.model import WorkloadInfo
from kueue_webhook.core.pending_queue import PendingQueue, RetryCondition
from kueue_webhook.core.scheduler import SchedulerState

from .builders import admitted, cluster_queue, last_wait, run_until_quiet, state_with, workload


def info(name: str, priority: int = 0, created: int = 0) -> WorkloadInfo:
    return WorkloadInfo.from_workload(workload(name, priority=priority, created=created))


def test_order_is_priority_then_age_then_name() -> None:
    queue = PendingQueue()
    for item in (info("b", 0, 5), info("a", 0, 5), info("old", 0, 1), info("vip", 10, 9)):
        queue.push(item)
    assert [queue.pop().name for _ in range(4)] == ["vip", "old", "a", "b"]  # type: ignore[union-attr]
    assert queue.pop() is None


def test_an_updated_workload_moves_and_a_removed_one_never_surfaces() -> None:
    queue = PendingQueue()
    queue.push(info("a", created=1))
    queue.push(info("b", created=2))
    queue.push(info("b", priority=5, created=2))  # priority raised
    queue.remove(info("a").key)
    assert [queue.pop().name for _ in range(1)] == ["b"]  # type: ignore[union-attr]
    assert queue.pop() is None and len(queue) == 0


def test_best_effort_parks_the_failed_head_until_woken() -> None:
    queue = PendingQueue()
    queue.push(info("a", created=1))
    queue.push(info("b", created=2))
    head = queue.pop()
    assert head is not None
    queue.requeue_failed(head)
    assert queue.peek() is not None and queue.peek().name == "b"  # type: ignore[union-attr]
    assert queue.position(head) == 1 and len(queue) == 2
    queue.pop()
    assert queue.peek() is None
    assert queue.wake()
    assert queue.peek().name == "a"  # type: ignore[union-attr]


def test_a_head_released_parked_goes_back_untried_when_its_room_is_gone_unless_it_holds_a_claim() -> None:
    """A release woke the shape, then others took the room before its turn: parked again without an
    attempt. Not a preemptor holding a claim: the room it lacks is the room claimed for it, counted as
    taken until the cycle releases the claim to try it, so it would be parked again for as long as it
    holds the claim (a ClusterQueue of Kueue's baseline admitted nothing for a minute that way)."""
    needs_two: RetryCondition = ((((("default", "cpu"), 2),),),)  # one group, one flavor: 2 cpu
    for claimed, parked_again in (((), True), ({info("a").key}, False)):
        queue = PendingQueue()
        queue.push(info("a", created=1))
        head = queue.pop()
        assert head is not None
        queue.requeue_failed(head, retry_when=needs_two)
        assert queue.wake(available=lambda _: 2)  # room for it: released, still under its condition
        assert queue.park_unfit_head(lambda _: 0, claimed=claimed) is parked_again
        assert (queue.peek() is None) is parked_again


def test_strict_fifo_stalls_on_the_head_and_a_higher_priority_arrival_unstalls_it() -> None:
    queue = PendingQueue(strict=True)
    queue.push(info("a", created=1))
    queue.push(info("b", created=2))
    head = queue.pop()
    assert head is not None
    queue.requeue_failed(head)
    assert queue.peek() is None  # b may not overtake a
    queue.push(info("urgent", priority=100, created=3))
    assert queue.peek().name == "urgent"  # type: ignore[union-attr]


def test_best_effort_fifo_admits_a_smaller_later_workload_past_a_blocked_head() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 4}}))
    state.upsert_workload(workload("running", {"cpu": "3"}, created=0))
    run_until_quiet(state)
    state.upsert_workload(workload("big", {"cpu": "2"}, created=1))
    state.upsert_workload(workload("small", {"cpu": "1"}, created=2))
    decisions = run_until_quiet(state)
    assert admitted(decisions) == ["ns/small"]
    assert last_wait(decisions, "ns/big").reason == "WaitingForQuota"


def test_strict_fifo_keeps_the_smaller_later_workload_behind_the_head() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 4}}, queueingStrategy="StrictFIFO"))
    state.upsert_workload(workload("running", {"cpu": "3"}, created=0))
    run_until_quiet(state)
    state.upsert_workload(workload("big", {"cpu": "2"}, created=1))
    state.upsert_workload(workload("small", {"cpu": "1"}, created=2))
    decisions = run_until_quiet(state)
    assert admitted(decisions) == []
    assert last_wait(decisions, "ns/big").position == 1
    state.finish_workload("ns/running")
    assert admitted(run_until_quiet(state)) == ["ns/big", "ns/small"]


def test_parked_workloads_return_as_soon_as_quota_is_released() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 2}}))
    state.upsert_workload(workload("a", {"cpu": "2"}, created=0))
    state.upsert_workload(workload("b", {"cpu": "2"}, created=1))
    assert admitted(run_until_quiet(state)) == ["ns/a"]
    assert not state.has_work()  # b is parked: no cycle is needed until something changes
    state.finish_workload("ns/a")
    assert state.has_work()
    assert admitted(run_until_quiet(state)) == ["ns/b"]


def test_parked_workloads_return_when_quota_grows() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 2}}))
    state.upsert_workload(workload("big", {"cpu": "3"}))
    assert last_wait(run_until_quiet(state), "ns/big").reason == "ExceedsMaxQuota"
    state.upsert_cluster_queue(cluster_queue("cq", {"default": {"cpu": 4}}))
    assert admitted(run_until_quiet(state)) == ["ns/big"]


def test_position_counts_the_parked_workloads_ahead() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 1}}))
    state.upsert_workload(workload("holder", {"cpu": "1"}, created=0))
    run_until_quiet(state)
    for index in range(3):
        state.upsert_workload(workload(f"w{index}", {"cpu": "1"}, created=index + 1))
    decisions = run_until_quiet(state)
    assert [last_wait(decisions, f"ns/w{i}").position for i in range(3)] == [1, 2, 3]


def test_a_release_too_small_for_a_parked_workload_leaves_it_parked() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 4}}))
    state.upsert_workload(workload("h1", {"cpu": "2"}, created=0))
    state.upsert_workload(workload("h2", {"cpu": "2"}, created=1))
    state.upsert_workload(workload("big", {"cpu": "3"}, created=2))
    assert admitted(run_until_quiet(state)) == ["ns/h1", "ns/h2"]
    state.finish_workload("ns/h1")
    assert not state.has_work()  # 2 free, 3 needed: nothing to retry
    state.finish_workload("ns/h2")
    assert admitted(run_until_quiet(state)) == ["ns/big"]


def test_identical_parked_workloads_are_admitted_in_order_as_room_appears() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 2}}))
    state.upsert_workload(workload("holder", {"cpu": "2"}, created=0))
    for index in range(4):
        state.upsert_workload(workload(f"same-{index}", {"cpu": "1"}, created=index + 1))
    assert admitted(run_until_quiet(state)) == ["ns/holder"]
    state.finish_workload("ns/holder")
    assert admitted(run_until_quiet(state)) == ["ns/same-0", "ns/same-1"]
    state.finish_workload("ns/same-1")
    assert admitted(run_until_quiet(state)) == ["ns/same-2"]


def test_parked_workloads_count_as_inadmissible_until_they_are_woken() -> None:
    """kueue_pending_workloads splits pending into active and inadmissible (Kueue's parked list)."""
    state = state_with(cluster_queue("cq", {"default": {"cpu": 2}}))
    state.upsert_workload(workload("a", {"cpu": "2"}, created=0))
    state.upsert_workload(workload("b", {"cpu": "2"}, created=1))
    run_until_quiet(state)
    assert (state.pending_count("cq"), state.inadmissible_count("cq")) == (1, 1)
    state.upsert_workload(workload("c", {"cpu": "1"}, created=2))  # new arrivals are active
    assert (state.pending_count("cq"), state.inadmissible_count("cq")) == (2, 1)
    state.finish_workload("ns/a")
    assert state.inadmissible_count("cq") == 0  # woken: active again
    assert state.inadmissible_count("absent") == 0


def cycles_until_quiet(state: SchedulerState) -> tuple[int, list[str]]:
    """How many cycles the scheduler runs before it has nothing to decide, and what they admitted."""
    cycles, decisions = 0, []
    while state.has_work():
        decisions.extend(state.cycle())
        cycles += 1
    return cycles, admitted(decisions)


def test_a_woken_shape_whose_room_was_taken_first_goes_back_whole_in_one_cycle() -> None:
    """A release wakes the first parked workload of a shape; a higher-priority arrival takes the room first.
    When the woken one finds the room gone, the next of its shape (released behind it) goes back parked
    with it: retrying it would only fail the same way, in a cycle of its own."""
    state = state_with(cluster_queue("cq", {"default": {"cpu": 2}}))
    state.upsert_workload(workload("holder", {"cpu": "2"}, created=0))
    for index in range(3):
        state.upsert_workload(workload(f"same-{index}", {"cpu": "2"}, created=index + 1))
    assert admitted(run_until_quiet(state)) == ["ns/holder"]
    state.finish_workload("ns/holder")  # wakes same-0
    state.upsert_workload(workload("vip", {"cpu": "1500m"}, priority=10, created=9))
    cycles, admissions = cycles_until_quiet(state)
    assert admissions == ["ns/vip"]
    assert cycles == 2  # vip's, then same-0 found the room taken: same-1 is not tried on its own
    assert state.inadmissible_count("cq") == 3
    state.finish_workload("ns/vip")
    assert admitted(run_until_quiet(state)) == ["ns/same-0"]


def test_only_an_outcome_the_whole_shape_shares_sends_the_next_of_the_shape_back() -> None:
    """A head whose failure says nothing about the rest of its shape (a preemption search that found nobody,
    where candidates depend on priority) leaves the next one released behind it to be tried; a failure the
    shape shares (``alike``) parks that one again with it."""
    queue = PendingQueue()
    for name in ("a", "b", "c"):
        queue.push(info(name, created=ord(name)))
    for _ in range(3):
        head = queue.pop()
        assert head is not None
        queue.requeue_failed(head, retry_when=None)
    assert queue.wake()
    head = queue.pop()  # a, releasing b behind it
    assert head is not None and head.name == "a"
    queue.requeue_failed(head, retry_when=None)
    head = queue.pop()
    assert head is not None and head.name == "b"  # left to be tried
    queue.requeue_failed(head, retry_when=None)
    assert queue.wake()
    head = queue.pop()  # a again, releasing b behind it
    assert head is not None and head.name == "a"
    queue.requeue_failed(head, retry_when=None, alike=True)
    assert queue.peek() is None and queue.parked_count == 3


def test_releases_in_a_row_put_one_workload_of_a_shape_in_the_heap_at_a_time() -> None:
    """Several releases before the next cycle: the first of the shape is still untried in the heap, so the
    others change nothing; each admission releases the next of the shape, in queue order."""
    state = state_with(cluster_queue("cq", {"default": {"cpu": 3}}))
    for index in range(3):
        state.upsert_workload(workload(f"holder-{index}", {"cpu": "1"}, created=index))
    for index in range(4):
        state.upsert_workload(workload(f"same-{index}", {"cpu": "1"}, created=10 + index))
    assert len(admitted(run_until_quiet(state))) == 3
    for index in range(3):
        state.finish_workload(f"ns/holder-{index}")
    assert (state.pending_count("cq"), state.inadmissible_count("cq")) == (4, 3)  # one in the heap
    cycles, admissions = cycles_until_quiet(state)
    assert admissions == ["ns/same-0", "ns/same-1", "ns/same-2"]
    assert cycles == 4  # the last one: same-3, released behind same-2, finds no room and goes back
    assert state.inadmissible_count("cq") == 1


def test_a_released_head_whose_room_is_gone_goes_back_parked_untried_with_its_shape() -> None:
    queue = PendingQueue()
    #: one resource group, one flavor, 2 cpu of it
    needs_two: RetryCondition = ((((("default", "cpu"), 2000),),),)
    same = [info(f"same-{index}", created=index) for index in range(3)]
    for item in same:
        queue.push(item)
    for _ in same:
        head = queue.pop()
        assert head is not None
        queue.requeue_failed(head, retry_when=needs_two, alike=True)
    assert queue.wake(available=lambda fr: 2000)  # the room is there: the first of the shape returns
    assert not queue.park_unfit_head(lambda fr: 2000)  # still there: it is tried
    assert queue.park_unfit_head(lambda fr: 1000)  # taken meanwhile: back, untried
    assert queue.peek() is None and queue.parked_count == 3
    assert queue.wake(available=lambda fr: 2000)
    assert [queue.pop().name for _ in range(2)] == ["same-0", "same-1"]  # type: ignore[union-attr]


def test_a_fresh_head_is_never_parked_untried() -> None:
    queue = PendingQueue()
    queue.push(info("new"))
    assert not queue.park_unfit_head(lambda fr: 0)
    assert queue.pop() is not None


def _in_local_queue(name: str, local_queue: str, priority: int, created: int) -> WorkloadInfo:
    return WorkloadInfo.from_workload(workload(name, queue=local_queue, priority=priority, created=created))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "push",
                    "pop",
                    "fail",
                    "fail-alike",
                    "retry-head",
                    "remove",
                    "wake",
                    "release",
                    "retry",
                    "park-unfit",
                    "strict",
                    "best-effort",
                ]
            ),
            st.integers(0, 3),
            st.integers(0, 2),
        ),
        max_size=60,
    )
)
# two of one shape parked, woken, the first tried and failed for the whole shape: the one its pop released
# goes back parked with it
@example(
    [
        ("push", 0, 0),
        ("push", 1, 0),
        ("pop", 0, 0),
        ("fail", 0, 0),
        ("pop", 0, 0),
        ("fail", 0, 0),
        ("wake", 0, 0),
        ("pop", 0, 0),
        ("fail-alike", 0, 0),
    ]
)
def test_the_pending_counts_per_local_queue_follow_every_move(ops: list[tuple[str, int, int]]) -> None:
    """kueue_local_queue_pending_workloads (active, inadmissible) is read per LocalQueue from counts kept as
    workloads move, not from a walk over the queue: after any sequence of arrivals, heads tried, failed,
    retried, parked and woken, they are what a walk would count."""
    queue = PendingQueue()
    popped: list[WorkloadInfo] = []
    needs_two: RetryCondition = ((((("default", "cpu"), 2),),),)
    for op, n, priority in ops:
        if op == "push":
            queue.push(_in_local_queue(f"w{n}", f"lq{n % 3}", priority, n))
        elif op == "pop" and (head := queue.pop()) is not None:
            popped.append(head)
        elif op in ("fail", "fail-alike", "retry-head") and popped:
            head = popped.pop()
            if head.key in queue:
                continue  # pushed again meanwhile: no longer in flight
            if op == "retry-head":
                queue.requeue_retry(head)
            else:
                queue.requeue_failed(head, retry_when=needs_two, alike=op == "fail-alike")
        elif op == "remove":
            queue.remove(_in_local_queue(f"w{n}", "", 0, 0).key)
        elif op == "wake":
            queue.wake()
        elif op == "release":
            room = 2 * priority
            queue.wake(available=lambda _, room=room: room)
        elif op == "retry":
            queue.retry(_in_local_queue(f"w{n}", "", 0, 0).key)
        elif op == "park-unfit":
            queue.park_unfit_head(lambda _: 0)
        elif op in ("strict", "best-effort"):
            queue.set_strict(op == "strict")
        counts = queue.by_local_queue()
        held: dict[tuple[str, str], int] = {}
        for pending in queue.unordered():
            held[(pending.namespace, pending.queue_name)] = (
                held.get((pending.namespace, pending.queue_name), 0) + 1
            )
        assert {lq: active + parked for lq, (active, parked) in counts.items()} == held
        assert sum(parked for _, parked in counts.values()) == queue.parked_count
