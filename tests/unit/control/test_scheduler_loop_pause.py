"""After a cycle that mostly found no room (it admitted nothing, or fewer than half the heads it tried) the
loop lets the changes of the next few milliseconds gather and decides them in one cycle (under load most
changes only wake heads that still do not fit); a cycle that admits most of its heads is followed at once,
so a queue's run of admissions is not held back."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from typing import Any

import pytest

from kueue_webhook.control.cache.store import Change, Store, key_of
from kueue_webhook.control.kube.kinds import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    Kind,
)
from kueue_webhook.control.scheduling.scheduler_loop import SchedulerLoop
from tests.support import builders
from tests.unit.control.fakes import control_context
from tests.unit.control.small_cluster import queue
from tests.unit.control.test_admission_starts_job import AnsweringWriter

JSON = dict[str, Any]


def pending(name: str, cpus: int, created: int) -> JSON:
    return builders.workload(
        name,
        pod_sets=[builders.pod_set(requests={"cpu": str(cpus)})],
        uid=f"uid-{name}",
        resourceVersion="1",
        creationTimestamp=f"2026-01-01T00:00:{created:02d}Z",
    )


def feed(loop: SchedulerLoop, store: Store, kind: Kind, obj: JSON) -> None:
    old = store.get(kind, key_of(obj)[1], key_of(obj)[0])
    store.upsert(kind, obj)
    loop.on_change(Change(kind, key_of(obj), old, copy.deepcopy(obj)))


def finished(store: Store, name: str) -> JSON:
    """``name`` as it reads once its run is over (Finished=True)."""
    workload = copy.deepcopy(store.get(WORKLOADS, name, "team"))
    workload["metadata"]["resourceVersion"] = "9999"
    workload["status"]["conditions"].append(
        {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "done"}
    )
    return workload


def admitted(store: Store) -> list[str]:
    return sorted(
        w["metadata"]["name"] for w in store.items(WORKLOADS) if (w.get("status") or {}).get("admission")
    )


class ObservedLoop(SchedulerLoop):
    """The loop, telling the test each time a cycle ends or an admission is recorded."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.moved = asyncio.Event()
        self.on_admitted.append(lambda _key: self.moved.set())

    async def _cycle(self) -> bool:
        admitted = await super()._cycle()
        self.moved.set()
        return admitted


async def until(loop: ObservedLoop, condition: Any) -> None:
    """Once ``condition()`` holds, checked again each time the loop ends a cycle or records an admission."""

    async def watched() -> None:
        while not condition():
            loop.moved.clear()
            await loop.moved.wait()

    await asyncio.wait_for(watched(), 10)  # bounds a hang only


@contextlib.asynccontextmanager
async def running(cpus: int, pause: float) -> Any:
    store = Store()
    # pauses as long as ``pause`` however few heads the test's cycles try (they bound the pause otherwise)
    loop = ObservedLoop(
        control_context(store, writer=AnsweringWriter(store)),
        idle_cycle_pause=pause,
        pause_per_head_tried=3600,
    )
    for kind, obj in queue(cpus=cpus):
        feed(loop, store, kind, obj)
    task = asyncio.create_task(loop.run())
    try:
        yield loop, store
    finally:
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=10)  # bounds a hang only
        assert done, "the loop ran on after it was cancelled"


async def test_cycles_that_admit_follow_one_another_without_a_pause() -> None:
    # one head per ClusterQueue per cycle: five admissions are five cycles, none of them paused
    async with running(cpus=5, pause=3600) as (loop, store):
        for i in range(5):
            feed(loop, store, WORKLOADS, pending(f"w{i}", 1, i))
        await until(loop, lambda: loop.admitted == 5)
        assert admitted(store) == ["w0", "w1", "w2", "w3", "w4"]


async def test_after_a_cycle_that_admitted_nothing_the_changes_meanwhile_are_decided_together() -> None:
    async with running(cpus=2, pause=0.5) as (loop, store):
        feed(loop, store, WORKLOADS, pending("holder", 2, 0))
        await until(loop, lambda: loop.admitted == 1)
        feed(loop, store, WORKLOADS, pending("first", 1, 1))  # no room: a cycle that admits nothing
        await until(loop, lambda: loop.state.last_wait("team/first") is not None)
        cycles = loop.cycles
        feed(loop, store, WORKLOADS, finished(store, "holder"))  # room for both, told on separate turns
        for _ in range(5):
            await asyncio.sleep(0)
        assert (loop.cycles, loop.admitted) == (cycles, 1)  # unpaused, "first" would be admitted by now
        feed(loop, store, WORKLOADS, pending("second", 1, 2))
        await until(loop, lambda: loop.admitted == 3)
        assert admitted(store) == ["first", "holder", "second"]  # holder finished with its admission
        assert loop.cycles == cycles + 2  # one head of a ClusterQueue per cycle: no cycle in between


@pytest.mark.looptime
async def test_a_finish_with_nobody_waiting_runs_no_cycle_then_or_at_its_revisit() -> None:
    """Quota given back with nothing to try only plans its cohort tree's revisit (Kueue's requeue a batch
    period later), and the revisit finds nobody parked: no cycle for either. A cycle that tries nothing
    would otherwise follow every finish, and under a stream of finishes one every pause."""
    async with running(cpus=1, pause=0.05) as (loop, store):
        feed(loop, store, WORKLOADS, pending("holder", 1, 0))
        await until(loop, lambda: loop.admitted == 1)
        await asyncio.sleep(5)  # the admission's own revisit comes and goes (the loop's clock is looptime's)
        assert loop.state.next_revisit() is None
        cycles = loop.cycles
        feed(loop, store, WORKLOADS, finished(store, "holder"))
        await asyncio.sleep(0.5)
        assert loop.state.next_revisit() is not None  # planned for a second after the release
        await asyncio.sleep(1)
        assert loop.state.next_revisit() is None  # made
        assert loop.cycles == cycles
        feed(loop, store, WORKLOADS, pending("next", 1, 1))  # something to try: a cycle, at once
        await until(loop, lambda: loop.admitted == 2)
        assert loop.cycles == cycles + 1


def test_only_a_busy_loop_pauses_and_only_after_a_cycle_that_was_not_productive() -> None:
    loop = SchedulerLoop(control_context(Store()), idle_cycle_pause=0.05)
    # the first cycle in a while: a lone change is served at once
    loop._note_cycle(100.0, productive=False, tried=30)
    assert loop._pause == 0
    loop._note_cycle(100.01, productive=False, tried=30)  # close behind another, mostly no room: pause
    assert (loop._pause, loop._last_cycle_at) == (0.05, 100.01)
    # admitted most of its heads: the next follows at once
    loop._note_cycle(100.02, productive=True, tried=30)
    assert loop._pause == 0
    # after a quiet spell (more than two pauses): no pause
    loop._note_cycle(100.5, productive=False, tried=30)
    assert loop._pause == 0


def test_a_run_of_cycles_that_mostly_found_no_room_doubles_the_pause_until_one_admits() -> None:
    """Sustained load (Kueue's baseline scenario: most of its cycles come in such runs) is looked at every
    100 ms instead of every 50; one or two such cycles keep the short pause, and a productive cycle or a
    quiet spell ends the run."""
    loop = SchedulerLoop(control_context(Store()), idle_cycle_pause=0.05)
    pauses = []
    for started in (100.0, 100.01, 100.06, 100.11, 100.21, 100.31):
        loop._note_cycle(started, productive=False, tried=30)
        pauses.append(loop._pause)
    assert pauses == [0, 0.05, 0.05, 0.1, 0.1, 0.1]
    # within two long pauses of the last: the run goes on
    loop._note_cycle(100.5, productive=False, tried=30)
    assert loop._pause == 0.1
    loop._note_cycle(100.6, productive=True, tried=30)
    assert loop._pause == 0
    for started in (100.61, 100.66):
        loop._note_cycle(started, productive=False, tried=30)
    assert loop._pause == 0.05  # a new run starts short
    # after a quiet spell (more than two pauses): none
    loop._note_cycle(101.0, productive=False, tried=30)
    assert loop._pause == 0


def test_the_pause_is_at_most_10_ms_per_head_the_last_cycle_tried() -> None:
    """A cycle that tried one arriving Workload is followed 10 ms later, not 100: a release behind a stream
    of submissions that do not fit is not held back for cycles that had little to look at, while cycles that
    retry the heads of many ClusterQueues pause as long as before."""
    loop = SchedulerLoop(control_context(Store()), idle_cycle_pause=0.05)
    for started in (100.0, 100.01, 100.02, 100.03):
        loop._note_cycle(started, productive=False, tried=1)
    assert loop._unproductive_run == 3
    assert loop._pause == 0.01
    loop._note_cycle(100.04, productive=False, tried=4)
    assert loop._pause == 0.04
    loop._note_cycle(100.05, productive=False, tried=26)  # many heads: the long pause, 100 ms
    assert loop._pause == 0.1


def three_queues(*, room_in_c: int) -> list[tuple[Kind, JSON]]:
    """ClusterQueues a, b (1 cpu each) and c (``room_in_c``), a LocalQueue each, and a Workload each: 1 cpu
    in a, 2 in b, 2 in c."""
    objects: list[tuple[Kind, JSON]] = [
        (NAMESPACES, builders.namespace("team")),
        (RESOURCE_FLAVORS, builders.resource_flavor("rf")),
    ]
    for name, cpus in (("a", 1), ("b", 1), ("c", room_in_c)):
        objects.append(
            (
                CLUSTER_QUEUES,
                builders.cluster_queue(name, {"rf": {"cpu": str(cpus)}}, metadata={"generation": 1}),
            )
        )
        objects.append((LOCAL_QUEUES, builders.local_queue(f"to-{name}", "team", name)))
    for index, (name, cpus) in enumerate((("a", 1), ("b", 2), ("c", 2))):
        workload = pending(f"w-{name}", cpus, index)
        workload["spec"]["queueName"] = f"to-{name}"
        objects.append((WORKLOADS, workload))
    return objects


async def test_a_cycle_that_admits_fewer_than_half_its_heads_is_not_productive() -> None:
    """With many ClusterQueues a cycle that tries a hundred woken heads and admits two costs as much as one
    that admits none: it is followed after the pause too."""
    for room_in_c, admitted_heads, productive in ((1, ["w-a"], False), (2, ["w-a", "w-c"], True)):
        store = Store()
        loop = SchedulerLoop(control_context(store, writer=AnsweringWriter(store)))
        for kind, obj in three_queues(room_in_c=room_in_c):
            feed(loop, store, kind, obj)
        assert await loop._cycle() is productive
        assert loop.state.last_cycle_tried == 3
        await asyncio.gather(*loop._tasks)  # the admissions' writes
        assert admitted(store) == admitted_heads
