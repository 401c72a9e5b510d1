"""A parked Workload's pending message stays true, at no write when nothing it says has moved.

As Kueue retries a cohort's inadmissible Workloads one batch period (1 s) after a change of usage there,
the controller tries a parked Workload again a second after others took quota in its cohort: once another
ClusterQueue borrowed the cohort's idle cpu, ``1 more needed`` becomes ``2 more needed`` on the Workload,
in one status write. A change that leaves the message as it was (an admission within a quota the cohort
cannot borrow) costs the parked Workload no write at all.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.fakeapi import FakeApiServer
from tests.support.builders import (
    cluster_queue,
    local_queue,
    manifests,
    namespace,
    queued_job,
    resource_flavor,
)
from tests.support.fake_cluster import condition, running, workload_of
from tests.support.replica import Replica, replica

JSON = dict[str, Any]
WORKLOADS = ("kueue.x-k8s.io", "workloads")
NEEDS = (
    "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, "
    "{} more needed"
)


#: team-a owns the cohort's 4 cpu; team-b owns none (it borrows); team-c keeps its 2 to itself
SETUP = manifests(
    resource_flavor("default"),
    namespace("team-a"),
    cluster_queue("team-a", {"default": {"cpu": 4}}, cohortName="org"),
    local_queue("q", "team-a", "team-a"),
    namespace("team-b"),
    cluster_queue("team-b", {"default": {"cpu": 0}}, cohortName="org"),
    local_queue("q", "team-b", "team-b"),
    namespace("team-c"),
    cluster_queue("team-c", {"default": {"cpu": {"nominalQuota": 2, "lendingLimit": 0}}}, cohortName="org"),
    local_queue("q", "team-c", "team-c"),
)


def cpu_job(namespace: str, name: str, cpu: int) -> JSON:
    return queued_job(namespace, name, queue="q", resources={"requests": {"cpu": str(cpu)}})


def shown(fake_api: FakeApiServer, namespace: str, job: str) -> tuple[str, str] | None:
    reserved = condition(workload_of(fake_api, namespace, job), "QuotaReserved")
    if reserved is None or reserved["status"] != "False":
        return None
    return reserved["reason"], reserved["message"]


def writes_since(fake_api: FakeApiServer, rv: int, namespace: str, name: str) -> int:
    return sum(
        1 for e in fake_api.store.events_after(rv, WORKLOADS) if (e.namespace, e.name) == (namespace, name)
    )


async def revisited(serving: Replica) -> None:
    """Until the scheduler has planned a revisit of the cohort and made it (read from the leader's core)."""
    loop = serving.controller.scheduler

    async def planned_then_made() -> None:
        while loop.state.next_revisit() is None:
            await asyncio.sleep(0.02)
        while loop.state.next_revisit() is not None:
            await asyncio.sleep(0.02)

    await asyncio.wait_for(planned_then_made(), 10)


async def test_a_parked_workload_is_told_two_more_are_needed_once_another_queue_borrowed(
    fake_api: FakeApiServer,
) -> None:
    await fake_api.apply_manifests(SETUP)
    async with replica(fake_api.kubeconfig_path()) as serving:
        await fake_api.create(cpu_job("team-a", "a-running", 2))
        await fake_api.wait_for(lambda: running(fake_api, "team-a", "a-running"))
        await fake_api.create(cpu_job("team-a", "a-waiting", 3))
        await fake_api.wait_for(lambda: shown(fake_api, "team-a", "a-waiting") is not None)
        assert shown(fake_api, "team-a", "a-waiting") == ("WaitingForQuota", NEEDS.format(1))
        waiting = workload_of(fake_api, "team-a", "a-waiting")
        assert waiting is not None
        name, since = waiting["metadata"]["name"], int(waiting["metadata"]["resourceVersion"])

        # team-c admits within what it keeps to itself: the parked Workload is tried again, told the same
        await fake_api.create(cpu_job("team-c", "c-own", 1))
        await fake_api.wait_for(lambda: running(fake_api, "team-c", "c-own"))
        await revisited(serving)
        assert writes_since(fake_api, since, "team-a", name) == 0

        # team-b borrows one of the two idle cpus: a second later the Workload says what is true now
        await fake_api.create(cpu_job("team-b", "b-borrower", 1))
        await fake_api.wait_for(lambda: running(fake_api, "team-b", "b-borrower"))
        await fake_api.wait_for(
            lambda: shown(fake_api, "team-a", "a-waiting") == ("WaitingForQuota", NEEDS.format(2)), timeout=10
        )
        assert writes_since(fake_api, since, "team-a", name) == 1
        reserved = condition(workload_of(fake_api, "team-a", "a-waiting"), "QuotaReserved")
        admitted = condition(workload_of(fake_api, "team-a", "a-waiting"), "Admitted")
        assert reserved is not None and admitted is not None
        assert (admitted["status"], admitted["reason"]) == ("False", "NoReservation")


async def test_every_parked_workload_of_one_shape_shows_the_message_restated_for_it(
    fake_api: FakeApiServer,
) -> None:
    await fake_api.apply_manifests(SETUP)
    waiting = [f"a-waiting-{index}" for index in range(12)]
    async with replica(fake_api.kubeconfig_path()):
        await fake_api.create(cpu_job("team-a", "a-running", 2))
        await fake_api.wait_for(lambda: running(fake_api, "team-a", "a-running"))
        for name in waiting:
            await fake_api.create(cpu_job("team-a", name, 3))
        await fake_api.wait_for(
            lambda: all(
                shown(fake_api, "team-a", n) == ("WaitingForQuota", NEEDS.format(1)) for n in waiting
            ),
            timeout=20,
        )
        # one borrower in the cohort: the first of the shape is tried again, the rest are told alike
        await fake_api.create(cpu_job("team-b", "b-borrower", 1))
        await fake_api.wait_for(lambda: running(fake_api, "team-b", "b-borrower"))
        await fake_api.wait_for(
            lambda: all(
                shown(fake_api, "team-a", n) == ("WaitingForQuota", NEEDS.format(2)) for n in waiting
            ),
            timeout=20,
        )
