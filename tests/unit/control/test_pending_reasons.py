"""Pending reasons: Kueue's message byte for byte, with Admitted=False NoReservation in the same write. A
first pending condition is written once the Workload has waited a second, a new reason at once, both only
while the write budget allows; the rest, and a reworded message, are left to the pending messages pass,
which writes the latest message, front of the queue first, within the budget. Never over an admission."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.kube.kinds import WORKLOADS, Kind
from kueue_webhook.control.scheduling.pending_conditions import PASS_WRITES_AT_MOST, PendingConditions
from kueue_webhook.core.model import WorkloadKey
from kueue_webhook.core.scheduler import SchedulerState, Wait
from tests.support import builders
from tests.unit.control.fakes import Clock, control_context

JSON = dict[str, Any]
CLOCK = Clock()
FULL = (
    "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor rf, 1 more needed"
)


class RecordingWriter:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.messages: list[tuple[str, str]] = []
        self.statuses: list[JSON] = []
        self.version = 100

    async def patch_status(self, kind: Kind, obj: JSON, build: Any) -> JSON | None:
        current = self.store.get(kind, obj["metadata"]["name"], obj["metadata"]["namespace"]) or obj
        status = build(current)
        if status is None:
            return None
        self.version += 1
        meta = {**current["metadata"], "resourceVersion": str(self.version)}
        updated = {**current, "metadata": meta, "status": {**(current.get("status") or {}), **status}}
        self.store.upsert(kind, updated)
        self.messages.append((obj["metadata"]["name"], status["conditions"][0]["message"]))
        self.statuses.append(status)
        return updated


class Events:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def record(self, obj: JSON, *, type: str, reason: str, message: str) -> None:
        self.reasons.append(f"{type} {reason}")


def workload(name: str) -> JSON:
    return builders.workload(name, api_version=False, resourceVersion="1", generation=1)


class Queue:
    """What the messages pass asks the scheduler: queue order and each one's latest wait."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.waits: dict[str, tuple[str, str]] = {}
        self.asked: list[str] = []  # whose latest wait the pass asked for
        self.others: dict[str, list[str]] = {}  # the queue order of other ClusterQueues

    def pending_in(self, name: str) -> list[SimpleNamespace]:
        return (
            [SimpleNamespace(key=key, sort_key=rank) for rank, key in enumerate(self.order)]
            if name == "cq"
            else []
        )

    def pending_workload(self, name: str, key: str) -> SimpleNamespace | None:
        order = self.order if name == "cq" else self.others.get(name, [])
        if key not in order:
            return None
        return SimpleNamespace(key=key, sort_key=order.index(key))

    def last_wait(self, key: str) -> tuple[str, str] | None:
        self.asked.append(key)
        return self.waits.get(key)


class Budget:
    """A write budget of ``tokens`` writes."""

    def __init__(self, tokens: int = 1000) -> None:
        self.tokens = tokens

    def take(self, *, keep: float = 0.0) -> float:
        if self.tokens <= 0:
            return 1.0
        self.tokens -= 1
        return 0.0


def setup(
    queue: Queue | None = None, *, debounce: float = 0.0, budget: Budget | None = None
) -> tuple[Store, RecordingWriter, Events, PendingConditions]:
    store = Store()
    writer = RecordingWriter(store)
    events = Events()
    context = control_context(store, writer=writer, events=events, budget=budget or Budget())
    pending = PendingConditions(
        context,
        state=(lambda: queue) if queue is not None else SchedulerState,  # type: ignore[arg-type,return-value]
        debounce=debounce,
        clock=CLOCK,
    )
    return store, writer, events, pending


def wait(name: str, message: str, position: int, reason: str = "Pending") -> Wait:
    return Wait(WorkloadKey(f"team/{name}"), "cq", reason, message, position)


async def showing_full(count: int) -> tuple[Queue, RecordingWriter, PendingConditions, list[str]]:
    """A queue of ``count`` pending Workloads (``w000``...), in name order, each already showing ``FULL``."""
    queue = Queue()
    store, writer, _, pending = setup(queue)
    names = [f"w{index:03d}" for index in range(count)]
    for name in names:
        store.upsert(WORKLOADS, workload(name))
        await pending.write(wait(name, FULL, 1))
    queue.order = [f"team/{name}" for name in names]
    return queue, writer, pending, names


async def test_the_first_reason_and_a_new_reason_are_written_at_once_a_reworded_message_is_not() -> None:
    store, writer, events, pending = setup()
    store.upsert(WORKLOADS, workload("b"))
    await pending.write(wait("b", FULL, 2))
    await pending.write(wait("b", FULL.replace("1 more", "3 more"), 2))  # the messages pass's business
    await pending.write(wait("b", FULL, 1))  # only the rank moved: nothing to write at all
    await pending.write(wait("b", "preempting", 1, reason="WaitingForPreemptedWorkloads"))
    # Kueue's text exactly: no queue position appended (the visibility API serves positions)
    assert writer.messages == [("b", FULL), ("b", "preempting")]
    assert events.reasons == ["Warning Pending", "Warning WaitingForPreemptedWorkloads"]


async def test_a_new_reason_the_workload_already_shows_from_another_writer_is_not_written_at_once() -> None:
    """A wait is judged on the condition remembered from the last write; before writing, on what the store
    shows now: here another writer (a previous leader) already showed the new reason."""
    store, writer, events, pending = setup()
    store.upsert(WORKLOADS, workload("b"))
    await pending.write(wait("b", FULL, 1))
    shown = store.get(WORKLOADS, "b", "team")
    assert shown is not None
    shown["metadata"]["resourceVersion"] = "500"
    shown["status"]["conditions"][0].update(reason="WaitingForPreemptedWorkloads", message="preempting")
    store.upsert(WORKLOADS, shown)
    # the same reason, reworded: the messages pass's business, as for a reason this replica wrote
    await pending.write(wait("b", "preempting again", 1, reason="WaitingForPreemptedWorkloads"))
    assert writer.messages == [("b", FULL)]
    assert events.reasons == ["Warning Pending"]


async def test_the_messages_pass_writes_the_latest_message_front_first_and_ignores_moved_ranks() -> None:
    queue = Queue()
    store, writer, _, pending = setup(queue)
    for name in ("a", "b", "c"):
        store.upsert(WORKLOADS, workload(name))
    queue.order = ["team/a", "team/b", "team/c"]
    for rank, name in enumerate(("a", "b", "c"), start=1):
        await pending.write(wait(name, FULL, rank))
        queue.waits[f"team/{name}"] = ("Pending", FULL)
    writer.messages.clear()

    # a was admitted; b and c were tried again and Kueue's numbers moved; d only moved up
    store.upsert(WORKLOADS, workload("d"))
    await pending.write(wait("d", FULL, 4))
    queue.waits["team/d"] = ("Pending", FULL)
    writer.messages.clear()
    queue.order = ["team/b", "team/c", "team/d"]
    reworded = FULL.replace("1 more", "4 more")
    queue.waits["team/b"] = queue.waits["team/c"] = ("Pending", reworded)
    budget = pending.context.budget
    assert isinstance(budget, Budget)
    budget.tokens = 1
    pending.mark("cq")
    await pending.refresh_once()
    assert writer.messages == [("b", reworded)]
    budget.tokens = 1
    await pending.refresh_once()  # what the budget held back comes on the next pass
    assert writer.messages[1:] == [("c", reworded)]
    await pending.refresh_once()
    assert len(writer.messages) == 2  # converged: d's rank moved, but ranks are not written


async def test_the_pending_write_sets_admitted_false_no_reservation_as_kueue_does() -> None:
    """Kueue's UnsetQuotaReservationWithCondition syncs Admitted in the write that sets QuotaReserved=False
    (pkg/workload): reason NoReservation, "The workload has no reservation"; no write of its own."""
    store, writer, _, pending = setup()
    store.upsert(WORKLOADS, workload("b"))
    await pending.write(wait("b", FULL, 1))
    assert len(writer.statuses) == 1
    conditions = {c["type"]: c for c in writer.statuses[0]["conditions"]}
    assert conditions["QuotaReserved"]["status"] == "False"
    admitted = conditions["Admitted"]
    assert (admitted["status"], admitted["reason"], admitted["message"]) == (
        "False",
        "NoReservation",
        "The workload has no reservation",
    )
    assert admitted["observedGeneration"] == 1 and admitted["lastTransitionTime"]


async def test_an_admitted_workload_gets_no_pending_reason() -> None:
    store, writer, events, pending = setup()
    admitted = workload("a")
    admitted["status"] = {
        "admission": {"clusterQueue": "cq", "podSetAssignments": []},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "m"}
        ],
    }
    store.upsert(WORKLOADS, admitted)
    await pending.write(wait("a", FULL, 1))
    assert writer.messages == [] and events.reasons == []


async def test_a_message_with_an_old_position_suffix_is_brought_back_to_kueues_text() -> None:
    """Workloads written by an earlier version carry ``(position N in ClusterQueue X)``; the messages pass
    rewrites them to Kueue's text, under the same rate limit, without a change of reason being needed."""
    queue = Queue()
    store, writer, _, pending = setup(queue)
    old = workload("b")
    old["status"] = {
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "False",
                "reason": "Pending",
                "message": FULL + " (position 3 in ClusterQueue cq)",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
    }
    store.upsert(WORKLOADS, old)
    queue.order = ["team/b"]
    queue.waits["team/b"] = ("Pending", FULL)
    await pending.write(wait("b", FULL, 1))  # same reason: left to the pass
    assert writer.messages == []
    pending.mark("cq")
    await pending.refresh_once()
    assert writer.messages == [("b", FULL)]


async def test_a_first_reason_waits_a_second_then_the_pass_writes_it_with_kueues_event() -> None:
    """Most Workloads that do not fit at once are admitted within a second: their pending write would be
    wasted. One still waiting after the debounce gets its condition (and Kueue's Pending Event) from the
    pass, with the latest message the scheduler decided."""
    queue = Queue()
    store, writer, events, pending = setup(queue, debounce=1.0)
    store.upsert(WORKLOADS, workload("b"))
    store.upsert(WORKLOADS, workload("c"))
    queue.order = ["team/b", "team/c"]
    for name in ("b", "c"):
        await pending.write(wait(name, FULL, 1))
        queue.waits[f"team/{name}"] = ("Pending", FULL)
        pending.mark("cq")
    assert writer.messages == [] and events.reasons == []
    queue.order = ["team/c"]  # b was admitted meanwhile: it never cost a pending write
    pending.forget("team/b")
    CLOCK.now += 0.5
    await pending.refresh_once()
    assert writer.messages == []  # c has waited half a second: not yet
    CLOCK.now += 0.6
    await pending.refresh_once()
    assert writer.messages == [("c", FULL)]
    assert events.reasons == ["Warning Pending"]


async def test_a_busy_api_server_defers_even_a_new_reason_to_the_pass() -> None:
    queue = Queue()
    budget = Budget(tokens=0)
    store, writer, _, pending = setup(queue, budget=budget)
    store.upsert(WORKLOADS, workload("b"))
    queue.order = ["team/b"]
    queue.waits["team/b"] = ("Pending", FULL)
    await pending.write(wait("b", FULL, 1))
    pending.mark("cq")
    await pending.refresh_once()
    assert writer.messages == []  # no budget: nothing written, the queue stays dirty
    budget.tokens = 1
    await pending.refresh_once()
    assert writer.messages == [("b", FULL)]


async def test_a_pass_writes_at_most_a_full_budget_front_first_and_the_next_pass_the_rest() -> None:
    queue, writer, pending, names = await showing_full(PASS_WRITES_AT_MOST + 7)
    reworded = FULL.replace("1 more", "2 more")
    queue.waits = dict.fromkeys(queue.order, ("Pending", reworded))
    writer.messages.clear()

    pending.mark("cq")
    await pending.refresh_once()
    assert writer.messages == [(name, reworded) for name in names[:PASS_WRITES_AT_MOST]]
    writer.messages.clear()
    await pending.refresh_once()  # the queue stayed marked: the rest, still front first
    assert writer.messages == [(name, reworded) for name in names[PASS_WRITES_AT_MOST:]]


async def test_a_pass_looks_only_at_the_workloads_whose_wait_changed_front_first() -> None:
    """A queue of thousands whose Workloads already show their message costs a pass nothing: only the
    Workloads marked since (a new decision, or a wait restated for their shape) are looked at, and the
    ones still pending are written in queue order."""
    queue, writer, pending, _ = await showing_full(200)
    queue.waits = dict.fromkeys(queue.order, ("Pending", FULL))
    writer.messages.clear()

    reworded = FULL.replace("1 more", "2 more")
    for name in ("w150", "w007", "w099"):
        queue.waits[f"team/{name}"] = ("Pending", reworded)
        pending.mark("cq", f"team/{name}")
    pending.mark("cq", "team/gone")  # admitted meanwhile: no longer in the queue
    queue.asked.clear()
    await pending.refresh_once()
    assert writer.messages == [("w007", reworded), ("w099", reworded), ("w150", reworded)]
    assert sorted(queue.asked) == ["team/w007", "team/w099", "team/w150"]
    queue.asked.clear()
    await pending.refresh_once()
    assert queue.asked == [] and len(writer.messages) == 3


async def test_stale_workloads_beyond_what_a_pass_writes_wait_for_the_next_pass_unread() -> None:
    """When more messages moved than a pass may write, the pass reads only those it writes, front first;
    the ones behind stay marked for the next pass, which writes them."""
    queue, writer, pending, names = await showing_full(PASS_WRITES_AT_MOST + 10)
    reworded = FULL.replace("1 more", "2 more")
    queue.waits = dict.fromkeys(queue.order, ("Pending", reworded))
    writer.messages.clear()

    for key in reversed(queue.order):
        pending.mark("cq", key)
    queue.asked.clear()
    await pending.refresh_once()
    assert writer.messages == [(name, reworded) for name in names[:PASS_WRITES_AT_MOST]]
    assert len(queue.asked) == PASS_WRITES_AT_MOST
    writer.messages.clear()
    await pending.refresh_once()
    assert writer.messages == [(name, reworded) for name in names[PASS_WRITES_AT_MOST:]]


async def test_a_pass_shared_by_queues_takes_the_front_of_each_in_turn() -> None:
    """Stale Workloads in two ClusterQueues, more than a pass writes: the pass reads the front of each queue
    in turn until it holds what it may write, and the next pass goes on from there."""
    queue = Queue()
    store, writer, _, pending = setup(queue)
    per_queue = PASS_WRITES_AT_MOST // 2 + 5
    names = {"cq": [f"a{index:03d}" for index in range(per_queue)]}
    names["cq2"] = [f"b{index:03d}" for index in range(per_queue)]
    for name in names["cq"] + names["cq2"]:
        store.upsert(WORKLOADS, workload(name))
        await pending.write(wait(name, FULL, 1))
    queue.order = [f"team/{name}" for name in names["cq"]]
    queue.others["cq2"] = [f"team/{name}" for name in names["cq2"]]
    reworded = FULL.replace("1 more", "2 more")
    queue.waits = dict.fromkeys(queue.order + queue.others["cq2"], ("Pending", reworded))
    writer.messages.clear()

    for cluster_queue, order in (("cq", queue.order), ("cq2", queue.others["cq2"])):
        for key in order:
            pending.mark(cluster_queue, key)
    queue.asked.clear()
    await pending.refresh_once()
    half = PASS_WRITES_AT_MOST // 2
    assert sorted(name for name, _ in writer.messages) == sorted(names["cq"][:half] + names["cq2"][:half])
    assert len(queue.asked) == PASS_WRITES_AT_MOST
    writer.messages.clear()
    await pending.refresh_once()
    assert sorted(name for name, _ in writer.messages) == sorted(names["cq"][half:] + names["cq2"][half:])
