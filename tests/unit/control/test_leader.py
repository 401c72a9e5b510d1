"""Lease election: one leader at a time, failover after the lease duration, immediate step-down on loss."""

from __future__ import annotations

import asyncio

from tests.unit.control.fakes import Clock, MemoryApi
from webhook.control.kinds import LEASES
from webhook.control.leader import LeaderElector


def elector(api: MemoryApi, clock: Clock, identity: str) -> LeaderElector:
    return LeaderElector(
        client=api, namespace="kueue-system", name="kueue-webhook-leader", identity=identity, clock=clock
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
