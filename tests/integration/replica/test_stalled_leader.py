"""A leader whose event loop stalls past its renew deadline sends no decision write until it renews.

The stall is a blocking call inside the replica's own process (a store listener that sleeps without
yielding), so no tick of the elector can run and the ``leading`` flag still says yes when the loop resumes,
with an admission already decided. Every request the fake API server receives is kept in order with the
replica's leadership transitions; after the stall, no write other than the Lease's may arrive before the
replica has stepped down and renewed.
"""

from __future__ import annotations

import asyncio
import time

from kueue_webhook.control.cache.store import Change
from kueue_webhook.control.kube.kinds import WORKLOADS
from tests.fakeapi import FakeApiServer
from tests.support.replica import FAST_LEASE, replica
from tests.support.research import HANG, QUOTA, gpu_job, running

STALL = FAST_LEASE["renew_deadline"] + 0.5
STEPPED_DOWN, LEADING, STALL_OVER = "-- stepped down", "-- leading", "-- stall over"


class Timeline(list[str]):
    """The fake server's request log (``METHOD path?query``), with markers appended by the test."""


def writes_not_to_the_lease(lines: list[str]) -> list[str]:
    return [
        line
        for line in lines
        if not line.startswith(("GET ", "-- ")) and "/leases/" not in line.partition("?")[0]
    ]


async def test_a_leader_stalled_past_its_renew_deadline_sends_no_write_until_it_has_renewed(
    fake_api: FakeApiServer,
) -> None:
    await fake_api.apply_manifests(QUOTA)
    timeline = Timeline(fake_api.requests)
    fake_api.requests = timeline
    async with replica(fake_api.kubeconfig_path(), identity="stalling") as serving:
        controller, elector = serving.controller, serving.controller.elector
        assert elector is not None
        await asyncio.wait_for(controller.leading.wait(), HANG)
        told = elector.on_change
        assert told is not None

        def transition(leading: bool) -> None:
            timeline.append(LEADING if leading else STEPPED_DOWN)
            told(leading)

        elector.on_change = transition
        stalled: list[int] = []

        def stall_once_the_workload_is_queued(change: Change) -> None:
            if change.kind is WORKLOADS and change.old is None and not stalled:
                stalled.append(len(timeline))
                time.sleep(STALL)  # the stall itself: blocks the event loop, no tick can run
                timeline.append(STALL_OVER)

        # the stall starts with none of the term's first writes still on its way: this server shares the
        # replica's event loop, so one sent just before would only be read after the stall
        await fake_api.wait_for(
            lambda: "status" in (fake_api.get("localqueues", "team-a-gpu", "team-a") or {}), timeout=HANG
        )
        controller.store.subscribe(stall_once_the_workload_is_queued)  # after the scheduler's own listener
        await fake_api.create(gpu_job("after-the-stall"))
        await fake_api.wait_for(lambda: running(fake_api, "after-the-stall"), timeout=HANG)

    after = timeline[timeline.index(STALL_OVER) :]
    # the deadline passed during the stall: the replica stepped down before it led (and wrote) again ...
    assert STEPPED_DOWN in after and LEADING in after
    assert after.index(STEPPED_DOWN) < after.index(LEADING)
    # ... and no write reached the API server in between: the admission decided before it stepped down
    # was refused, not sent late
    assert writes_not_to_the_lease(after[: after.index(LEADING)]) == []
    # nothing lost: the next term admitted the Workload and started the Job
    later = writes_not_to_the_lease(after[after.index(LEADING) :])
    assert any("/workloads/" in line and "/status" in line for line in later)
    assert any("/jobs/after-the-stall" in line for line in later)
