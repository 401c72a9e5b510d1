"""Lease election: one leader at a time, failover after the lease duration, immediate step-down on loss."""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from kueue_webhook.control.kube.kinds import LEASES, Kind
from kueue_webhook.control.kube.leader import LeaderElector
from tests.unit.control.fakes import Clock, MemoryApi

JSON = dict[str, Any]
#: Kueue's (and controller-runtime's) Lease timings, which the step-by-step tests below walk through
KUEUE_TIMINGS = {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0}


def elector(api: MemoryApi, clock: Clock, identity: str) -> LeaderElector:
    return LeaderElector(
        client=api,
        namespace="kueue-system",
        name="kueue-webhook-leader",
        identity=identity,
        clock=clock,
        **KUEUE_TIMINGS,
    )


def lease(api: MemoryApi) -> dict[str, object]:
    return api.objects[("leases", "kueue-system", "kueue-webhook-leader")]["spec"]  # type: ignore[no-any-return]


async def test_exactly_one_of_two_replicas_leads() -> None:
    api, clock = MemoryApi(), Clock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    await a.tick()
    await b.tick()
    assert (a.is_leader, b.is_leader) == (True, False)
    assert lease(api)["holderIdentity"] == "a"
    assert lease(api)["leaseDurationSeconds"] == 15


async def test_standby_takes_over_only_after_the_lease_duration_without_renewal() -> None:
    api, clock = MemoryApi(), Clock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    await a.tick()
    await b.tick()  # b observes a's record now
    clock.now += 14.0  # a went silent, but the lease it wrote is still valid
    await b.tick()
    assert not b.is_leader
    clock.now += 1.5
    await b.tick()
    assert b.is_leader
    assert lease(api)["holderIdentity"] == "b"
    assert lease(api)["leaseTransitions"] == 1


async def test_renewals_keep_the_leader_and_hold_off_the_standby() -> None:
    api, clock = MemoryApi(), Clock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    for _ in range(20):
        await a.tick()
        await b.tick()
        clock.now += 2.0
    assert (a.is_leader, b.is_leader) == (True, False)


async def test_leader_that_cannot_renew_steps_down_before_anyone_may_take_over() -> None:
    api, clock = MemoryApi(), Clock()
    transitions: list[bool] = []
    a = LeaderElector(
        client=api,
        namespace="kueue-system",
        name="kueue-webhook-leader",
        identity="a",
        clock=clock,
        on_change=transitions.append,
        **KUEUE_TIMINGS,
    )
    await a.tick()
    api.down = True
    clock.now += 9.0
    await a.tick()
    assert a.is_leader  # within the renew deadline a transient error is tolerated
    clock.now += 1.0
    await a.tick()
    assert not a.is_leader  # 10 s renew deadline < 15 s lease duration: no overlap with a successor
    assert transitions == [True, False]


async def test_leader_seeing_another_holder_steps_down_at_once() -> None:
    api, clock = MemoryApi(), Clock()
    a = elector(api, clock, "a")
    await a.tick()
    record = api.objects[("leases", "kueue-system", "kueue-webhook-leader")]
    record["spec"]["holderIdentity"] = "intruder"
    record["metadata"]["resourceVersion"] = "999"
    await a.tick()
    assert not a.is_leader


async def test_cancelled_leader_releases_the_lease_so_failover_is_immediate() -> None:
    api, clock = MemoryApi(), Clock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    task = asyncio.create_task(a.run())
    await a.leading.wait()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert lease(api)["holderIdentity"] == ""
    await b.tick()
    assert b.is_leader


async def test_lease_is_created_in_the_coordination_group() -> None:
    api, clock = MemoryApi(), Clock()
    await elector(api, clock, "a").tick()
    created = api.created[0]
    assert created["apiVersion"] == "coordination.k8s.io/v1"
    assert created["kind"] == "Lease"
    assert LEASES.path(namespace="kueue-system", name="x") == (
        "/apis/coordination.k8s.io/v1/namespaces/kueue-system/leases/x"
    )


async def test_a_fractional_lease_duration_is_published_rounded_up_never_shorter() -> None:
    """The Lease carries whole seconds; rounding 2.5 down to 2 would let a standby take over while the
    leader still believes it leads (its renew deadline may be up to the configured duration)."""
    api, clock = MemoryApi(), Clock()
    a = LeaderElector(
        client=api,
        namespace="kueue-system",
        name="kueue-webhook-leader",
        identity="a",
        clock=clock,
        lease_duration=2.5,
        renew_deadline=2.4,
        retry_period=0.5,
    )
    await a.tick()
    assert lease(api)["leaseDurationSeconds"] == 3


# -- a stalled API server: requests that are never answered ------------------------------------------------
# These run on looptime's fake event-loop clock: timeouts and sleeps take no real time, and every instant
# below is exact. Timings are FAST_LEASE's (lease 1.5 s, renew deadline 1 s, retry period 0.2 s).

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 1.5, 1.0, 0.2


class Partitionable:
    """One replica's connection to a shared ``MemoryApi``. Once ``cut``, its requests are never answered.
    Without ``lands`` none of them arrives; with it reads are still answered and writes still reach the
    server and are applied, but their answers are lost. ``renewals`` records when each of its Lease writes
    was applied (the loop's clock)."""

    def __init__(self, api: MemoryApi, *, lands: bool = False) -> None:
        self.api = api
        self.lands = lands
        self.cut = False
        self.renewals: list[float] = []

    async def _stall(self) -> None:
        await asyncio.Event().wait()

    async def get(self, kind: Kind, *, name: str, namespace: str | None = None) -> JSON:
        if self.cut and not self.lands:
            await self._stall()
        return await self.api.get(kind, name=name, namespace=namespace)

    async def create(self, kind: Kind, body: JSON, *, namespace: str | None = None) -> JSON:
        if self.cut and not self.lands:
            await self._stall()
        created = await self.api.create(kind, body, namespace=namespace)
        self.renewals.append(asyncio.get_running_loop().time())
        if self.cut:
            await self._stall()
        return created

    async def replace(self, kind: Kind, body: JSON, *, subresource: str = "") -> JSON:
        if self.cut and not self.lands:
            await self._stall()
        replaced = await self.api.replace(kind, body, subresource=subresource)
        self.renewals.append(asyncio.get_running_loop().time())
        if self.cut:
            await self._stall()
        return replaced


class Timeline:
    """Every leadership transition of every replica, at the loop's clock."""

    def __init__(self) -> None:
        self.entries: list[tuple[float, str, bool]] = []
        self.changed = asyncio.Event()

    def listener(self, identity: str) -> Callable[[bool], None]:
        def record(leading: bool) -> None:
            self.entries.append((asyncio.get_running_loop().time(), identity, leading))
            self.changed.set()

        return record

    def at(self, identity: str, leading: bool) -> float:
        return next(t for t, who, now in self.entries if who == identity and now is leading)

    def most_leaders_at_once(self) -> int:
        leaders: set[str] = set()
        most = 0
        for _, identity, leading in self.entries:
            (leaders.add if leading else leaders.discard)(identity)
            most = max(most, len(leaders))
        return most

    async def until(self, identity: str, leading: bool) -> float:
        while not any(who == identity and now is leading for _, who, now in self.entries):
            self.changed.clear()
            await self.changed.wait()
        return self.at(identity, leading)


def fast_elector(client: Partitionable, identity: str, timeline: Timeline) -> LeaderElector:
    return LeaderElector(
        client=client,
        namespace="kueue-system",
        name="kueue-webhook-leader",
        identity=identity,
        lease_duration=LEASE_DURATION,
        renew_deadline=RENEW_DEADLINE,
        retry_period=RETRY_PERIOD,
        on_change=timeline.listener(identity),
    )


async def stop(*tasks: asyncio.Task[None]) -> None:
    """Cancel the electors and wait for them; releasing the lease is bounded too, even when stalled."""
    for task in tasks:
        task.cancel()
    _, still_running = await asyncio.wait(tasks, timeout=RENEW_DEADLINE + 1)
    assert not still_running, "shutting down hung on a stalled lease release"


@pytest.mark.looptime
@pytest.mark.parametrize("lands", [False, True], ids=["requests-lost", "write-answers-lost"])
async def test_a_leader_whose_renewal_hangs_steps_down_within_the_renew_deadline(lands: bool) -> None:
    """client-go bounds each renewal by the renew deadline; a request that is never answered must not keep
    a replica leading past it."""
    api, timeline = MemoryApi(), Timeline()
    connection = Partitionable(api, lands=lands)
    a = fast_elector(connection, "a", timeline)
    task = asyncio.create_task(a.run())
    try:
        await timeline.until("a", True)
        await asyncio.sleep(0.5)  # a few renewals go through
        known_renewals = len(connection.renewals)
        assert known_renewals >= 3
        last_answered = connection.renewals[-1]
        connection.cut = True
        stepped_down = await asyncio.wait_for(timeline.until("a", False), LEASE_DURATION)
        assert not a.is_leader
        # the deadline runs from the last renewal the leader saw answered (sent at that same instant here)
        assert stepped_down - last_answered <= RENEW_DEADLINE
        # whatever reached the server, the record last changed no later than the step-down, so any other
        # replica must wait a whole lease duration beyond it
        assert stepped_down < connection.renewals[-1] + LEASE_DURATION
        assert len(connection.renewals) == known_renewals + (1 if lands else 0)
    finally:
        await stop(task)


@pytest.mark.looptime
async def test_a_standby_takes_over_from_a_stalled_leader_only_after_it_stepped_down() -> None:
    api, timeline = MemoryApi(), Timeline()
    to_a, to_b = Partitionable(api), Partitionable(api)
    a, b = fast_elector(to_a, "a", timeline), fast_elector(to_b, "b", timeline)
    tasks = [asyncio.create_task(a.run())]
    try:
        await timeline.until("a", True)
        tasks.append(asyncio.create_task(b.run()))
        await asyncio.sleep(1.0)  # b watches a renew, and stays a follower
        assert timeline.entries == [(timeline.at("a", True), "a", True)]
        to_a.cut = True  # a can no longer reach the API server; b still can
        b_took_over = await asyncio.wait_for(timeline.until("b", True), 2 * LEASE_DURATION + RETRY_PERIOD * 2)
        a_stepped_down = timeline.at("a", False)
        assert timeline.most_leaders_at_once() == 1
        assert a_stepped_down < b_took_over
        # b waited a whole lease duration after the last change of the record it could see
        assert b_took_over >= to_a.renewals[-1] + LEASE_DURATION
        assert lease(api)["holderIdentity"] == "b"
    finally:
        await stop(*tasks)


@pytest.mark.looptime
async def test_a_leader_whose_renewals_fail_fast_still_steps_down_at_the_deadline_not_a_retry_later() -> None:
    """Failed attempts are retried every retry period; the step-down must not wait for the next one."""
    api, timeline = MemoryApi(), Timeline()
    a = LeaderElector(
        client=api,
        namespace="kueue-system",
        name="kueue-webhook-leader",
        identity="a",
        lease_duration=1.5,
        renew_deadline=1.0,
        retry_period=0.3,  # retries at +0.3, +0.6, +0.9, then +1.2 would be past the deadline
        on_change=timeline.listener("a"),
    )
    task = asyncio.create_task(a.run())
    try:
        acquired = await timeline.until("a", True)
        api.down = True
        stepped_down = await timeline.until("a", False)
        assert stepped_down == pytest.approx(acquired + 1.0)
    finally:
        await stop(task)


class CountingApi(MemoryApi):
    """``MemoryApi`` that counts the Lease reads."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def get(self, kind: Kind, *, name: str, namespace: str | None = None) -> JSON:
        self.reads += 1
        return await super().get(kind, name=name, namespace=namespace)


async def test_a_leader_renews_in_one_write_and_reads_the_lease_only_when_that_write_conflicts() -> None:
    """client-go's fast path: under load each request costs the API server's latency, and the renew
    deadline is counted in them. The write carries the resourceVersion it last saw, so a Lease changed
    by anyone else is never overwritten: the conflict sends the leader back to reading it."""
    api, clock = CountingApi(), Clock()
    a = elector(api, clock, "a")
    await a.tick()  # a read (not found) and a create
    for _ in range(3):
        clock.now += KUEUE_TIMINGS["retry_period"]
        await a.tick()
    assert api.reads == 1  # renewed three times, never read again
    assert a.is_leader

    # someone else holds it now (an operator's edit, a replica that judged it expired)
    taken = copy.deepcopy(api.objects[("leases", "kueue-system", "kueue-webhook-leader")])
    taken["spec"]["holderIdentity"] = "b"
    await api.replace(LEASES, taken)
    clock.now += KUEUE_TIMINGS["retry_period"]
    await a.tick()
    assert api.reads == 2  # the renewal conflicted: read, and seeing "b" stepped down
    assert not a.is_leader
    assert lease(api)["holderIdentity"] == "b"


class SlowWrites(MemoryApi):
    """``MemoryApi`` whose Lease writes are each answered ``latency`` seconds after they are sent;
    ``sent`` records when (the loop's clock)."""

    def __init__(self, latency: float) -> None:
        super().__init__()
        self.latency = latency
        self.sent: list[float] = []

    async def replace(self, kind: Kind, body: JSON, *, subresource: str = "") -> JSON:
        self.sent.append(asyncio.get_running_loop().time())
        await asyncio.sleep(self.latency)
        return await super().replace(kind, body, subresource=subresource)


@pytest.mark.looptime
async def test_a_leader_whose_renewals_take_half_the_renew_deadline_keeps_the_lease() -> None:
    """Under load each renewal may take seconds to be answered. The deadline runs from when the last
    successful one was sent, so the next one goes out a retry period after that, not after the answer:
    with answers taking 45 % of the deadline, a leader waiting a period (20 %) after each answer would send
    its next renewal with 35 % of the deadline left, and step down."""
    latency = 0.45 * RENEW_DEADLINE
    api, timeline = SlowWrites(latency), Timeline()
    a = fast_elector(api, "a", timeline)  # type: ignore[arg-type]
    task = asyncio.create_task(a.run())
    try:
        await timeline.until("a", True)
        await asyncio.sleep(10 * RENEW_DEADLINE)
        assert timeline.entries == [(timeline.at("a", True), "a", True)]  # never stepped down
        gaps = [later - earlier for earlier, later in itertools.pairwise(api.sent)]
        assert len(gaps) >= 10
        assert all(gap == pytest.approx(latency) for gap in gaps)  # each sent as the last was answered
    finally:
        await stop(task)
