"""A leadership term whose start takes longer than the renew deadline keeps the Lease and then schedules.

Starting a term reads every Workload (the core's rebuild, the controllers' resyncs): seconds of CPU with
tens of thousands of them. Done in one go, the Lease could not be renewed meanwhile, and a replica under
load lost the Lease it had just won, took it back, started again and lost it again, never scheduling. Here
that cost is simulated on the elector's clock (a fake one: each Workload the start reads moves it on by
``COST``), and the elector's timer by a task that ticks whenever a retry period has passed on that clock
and it gets a turn of the event loop, which is all a real timer can do. The start's passes measure their
slices on the same clock, so the test is deterministic.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kueue_webhook.control.kube.kinds import WORKLOADS as WORKLOADS_KIND
from kueue_webhook.control.replica.controller import Controller
from kueue_webhook.control.replica.controller_settings import ControllerSettings
from kueue_webhook.control.scheduling.scheduler_loop import SchedulerLoop
from kueue_webhook.core import visibility as vis
from tests.unit.control.fakes import Clock, control_context
from tests.unit.control.small_cluster import RecordingApi, cluster, install

JSON = dict[str, Any]
TIMINGS = {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0}
WORKLOADS = 200
#: elector-clock seconds each Workload costs the start: 200 of them take 30 s, three renew deadlines
COST = 0.15


class LeaseCountingApi(RecordingApi):
    """``RecordingApi`` that counts the Lease writes it applied."""

    def __init__(self) -> None:
        super().__init__()
        self.lease_writes = 0

    async def create(self, kind: Any, body: JSON, *, namespace: str | None = None) -> JSON:
        created = await super().create(kind, body, namespace=namespace)
        self.lease_writes += kind.plural == "leases"
        return created

    async def replace(self, kind: Any, body: JSON, *, subresource: str = "") -> JSON:
        replaced = await super().replace(kind, body, subresource=subresource)
        self.lease_writes += kind.plural == "leases"
        return replaced


def workloads_written(api: RecordingApi) -> set[str]:
    return {path for path in api.patched if path.startswith("workloads/")}


class Replica:
    """A controller on ``LeaseCountingApi`` with a start that costs ``COST`` per Workload on ``clock``."""

    def __init__(self) -> None:
        self.api, self.clock = LeaseCountingApi(), Clock()
        self.controller = Controller(
            client=self.api,  # type: ignore[arg-type]
            namespace="kueue-system",
            identity="a",
            settings=ControllerSettings(**TIMINGS),
        )
        assert self.controller.elector is not None
        self.elector = self.controller.elector
        self.elector.clock = self.controller.slice_clock = self.clock
        install(self.api, self.controller.store, cluster(WORKLOADS))
        self.transitions: list[bool] = []
        told = self.elector.on_change
        assert told is not None

        def transition(leading: bool) -> None:
            self.transitions.append(leading)
            told(leading)

        self.elector.on_change = transition
        self.read_during_start = 0
        self.on_read: Callable[[], None] = lambda: None
        ungater_resync = self.controller.ungater.resync_workload

        def costly(workload: JSON) -> None:  # one of the consumers a start hands each Workload to
            self.read_during_start += 1
            self.clock.now += COST
            self.on_read()
            ungater_resync(workload)

        self.controller.ungater.resync_workload = costly  # type: ignore[method-assign]
        self.admitted: list[str] = []
        self.all_admitted = asyncio.Event()
        self.controller.scheduler.on_admitted.append(self._admitted)

    def _admitted(self, key: str) -> None:
        self.admitted.append(key)
        if len(set(self.admitted)) == WORKLOADS:
            self.all_admitted.set()

    async def timer(self) -> None:
        """The elector's timer on the fake clock: a tick once a retry period has passed, at a loop turn."""
        due = self.clock.now
        while True:
            await asyncio.sleep(0)
            if self.clock.now >= due:
                await self.elector.tick()
                due = self.clock.now + TIMINGS["retry_period"]


@pytest.fixture
async def replica() -> AsyncIterator[Replica]:
    running = Replica()
    timer = asyncio.create_task(running.timer())
    yield running
    timer.cancel()
    running.controller._stop_leading(shutting_down=True)
    await asyncio.gather(timer, return_exceptions=True)


async def test_a_start_that_outlasts_the_renew_deadline_keeps_the_lease_and_then_admits(
    replica: Replica,
) -> None:
    await asyncio.wait_for(replica.controller.term_open.wait(), 30)
    assert replica.read_during_start == WORKLOADS
    assert replica.clock.now - 1000.0 >= 3 * TIMINGS["renew_deadline"]  # the start did outlast it
    assert replica.transitions == [True]  # never stepped down
    # renewed at least once per renew deadline while it started (and created the Lease before)
    assert replica.api.lease_writes >= 1 + WORKLOADS * COST // TIMINGS["renew_deadline"]
    await asyncio.wait_for(replica.all_admitted.wait(), 30)
    assert replica.transitions == [True]
    assert workloads_written(replica.api) == {f"workloads/w{i}" for i in range(WORKLOADS)}


async def test_a_lease_lost_while_the_term_starts_ends_the_start_unwritten_and_the_replica_leads_again(
    replica: Replica,
) -> None:
    """The fence stays the authority: the API goes away halfway through the start, the renew deadline
    passes, the replica steps down, the start is abandoned and nothing is written. When the API is back,
    the lone replica takes the Lease again, starts a whole term and admits everything."""

    def api_down_halfway() -> None:
        if replica.read_during_start == WORKLOADS // 2:
            replica.api.down = True

    replica.on_read = api_down_halfway
    await asyncio.wait_for(replica.controller.leading.wait(), 30)
    await asyncio.wait_for(replica.controller.following.wait(), 30)
    assert replica.transitions == [True, False]
    # stepped down at the renew deadline, in the middle of the start: it went no further
    assert replica.read_during_start < WORKLOADS
    assert not replica.controller.term_open.is_set()
    assert replica.api.patched == []

    replica.on_read = lambda: None
    replica.api.down = False
    replica.clock.now += TIMINGS["retry_period"]  # the timer's next tick is due
    await asyncio.wait_for(replica.controller.term_open.wait(), 30)
    assert replica.transitions == [True, False, True]
    await asyncio.wait_for(replica.all_admitted.wait(), 30)
    assert workloads_written(replica.api) == {f"workloads/w{i}" for i in range(WORKLOADS)}


async def test_a_start_that_fails_steps_down_and_the_next_term_starts_whole(
    replica: Replica, caplog: pytest.LogCaptureFixture
) -> None:
    """A leader that never schedules is the worst outcome: it holds the Lease, so no other replica may."""
    failures = [RuntimeError("a Workload no controller expected")]

    def fail_once() -> None:
        if replica.read_during_start == 10 and failures:
            raise failures.pop()

    replica.on_read = fail_once
    await asyncio.wait_for(replica.controller.leading.wait(), 30)
    await asyncio.wait_for(replica.controller.following.wait(), 30)
    assert replica.transitions == [True, False]
    assert any("could not start" in r.message for r in caplog.records)
    replica.clock.now += TIMINGS["retry_period"]  # the timer's next tick is due
    await asyncio.wait_for(replica.controller.term_open.wait(), 30)
    assert replica.transitions == [True, False, True]
    await asyncio.wait_for(replica.all_admitted.wait(), 30)


async def test_after_a_step_down_the_standby_answers_from_whole_queues_only(replica: Replica) -> None:
    """The standby's queues are rebuilt in slices too; until they are whole the visibility API says to
    retry rather than rank a partial list."""
    replica.controller.synced.set()  # as after the informers' first lists
    await asyncio.wait_for(replica.controller.term_open.wait(), 30)
    replica.elector.step_down()
    assert replica.controller.pending_queues() is None
    rebuilding = replica.controller._mirror_rebuild
    assert rebuilding is not None
    await rebuilding
    mirror = replica.controller.pending_queues()
    assert mirror is not None
    fresh = SchedulerLoop(control_context(replica.controller.store))
    fresh.rebuild()

    def lookup(namespace: str, name: str) -> JSON | None:
        return replica.controller.store.get(WORKLOADS_KIND, name, namespace)

    ranked = vis.cluster_queue_pending(mirror, "cq", vis.Page(), lookup)
    assert ranked == vis.cluster_queue_pending(fresh.state, "cq", vis.Page(), lookup)
    assert ranked is not None and ranked["items"]  # ranked as a rebuild from the store ranks them
