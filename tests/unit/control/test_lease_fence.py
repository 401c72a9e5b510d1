"""A leader's writes are checked against the Lease's renew deadline when they are sent, not against the
``leading`` flag its last tick set: an event loop stalled past the deadline sends nothing afterwards.

The clock the elector reads is a fake one advanced by hand, which is what a stalled loop looks like from the
inside: the flag still says "leading" while the monotonic clock has passed the deadline.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.control.kube.leader import LeaderElector, NotLeader
from kueue_webhook.control.replica.controller import Controller
from kueue_webhook.control.replica.controller_settings import ControllerSettings
from tests.unit.control.fakes import Clock, MemoryApi
from tests.unit.control.small_cluster import RecordingApi, cluster, install

JSON = dict[str, Any]
GROUP = "kueue.x-k8s.io/v1beta2"
TIMINGS = {"lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0}


def refusals(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "kueue_webhook.leader" and "write refused" in r.message]


async def test_past_the_renew_deadline_the_fence_refuses_though_no_tick_has_stepped_down(
    caplog: pytest.LogCaptureFixture,
) -> None:
    api, clock = MemoryApi(), Clock()
    transitions: list[bool] = []
    elector = LeaderElector(
        client=api,
        namespace="kueue-system",
        name="lease",
        identity="a",
        clock=clock,
        on_change=transitions.append,
        **TIMINGS,
    )
    await elector.tick()
    assert elector.fence() == 10.0
    clock.now += 9.5
    assert elector.fence() == 0.5
    clock.now += 0.5  # the loop stalled: no tick ran, the flag still says leading
    assert elector.is_leader
    with pytest.raises(NotLeader):
        elector.fence()
    with pytest.raises(NotLeader):
        elector.fence()
    assert not elector.is_leader  # stepped down at the refusal, as the next tick would have
    assert transitions == [True, False]
    assert len(refusals(caplog)) == 1  # said once, however many writes were refused
    await elector.tick()  # campaigns again: the record is still ours, so it is renewed at once
    assert elector.fence() == 10.0
    assert transitions == [True, False, True]


async def test_a_replica_that_never_led_has_every_write_refused() -> None:
    elector = LeaderElector(
        client=MemoryApi(), namespace="kueue-system", name="lease", identity="a", clock=Clock(), **TIMINGS
    )
    with pytest.raises(NotLeader):
        elector.fence()


class Recorder:
    """An API server that answers every request and keeps its method and path; the first write with
    ``hold`` set waits until released, holding its connection."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.hold = False
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append(f"{request.method} {request.path}")
        if request.method != "GET" and self.hold:
            self.hold = False
            self.holding.set()
            await self.release.wait()
        return web.json_response({"metadata": {"name": request.match_info.get("name", "x")}})


@pytest.fixture
async def recorder() -> AsyncIterator[tuple[Recorder, str]]:
    server = Recorder()
    app = web.Application()
    app.router.add_route("*", "/apis/{group}/{version}/namespaces/{ns}/workloads/{name}", server.handle)
    app.router.add_route(
        "*", "/apis/{group}/{version}/namespaces/{ns}/workloads/{name}/status", server.handle
    )
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield server, f"http://127.0.0.1:{runner.addresses[0][1]}"
    server.release.set()
    await runner.cleanup()


def refusing() -> float:
    raise NotLeader("deadline passed")


async def test_a_fenced_client_sends_no_write_the_fence_refuses_and_still_reads(
    recorder: tuple[Recorder, str],
) -> None:
    server, url = recorder
    client = KubeClient(host=url)
    try:
        fenced = client.fenced(refusing)
        for write in (
            fenced.patch(WORKLOADS, name="w", namespace="ns", patch={}, subresource="status"),
            fenced.delete(WORKLOADS, name="w", namespace="ns"),
            fenced.create(WORKLOADS, {"metadata": {"name": "w"}}, namespace="ns"),
        ):
            with pytest.raises(NotLeader):
                await write
        assert server.seen == []
        await fenced.get(WORKLOADS, name="w", namespace="ns")  # reads are never fenced
        await client.patch(WORKLOADS, name="w", namespace="ns", patch={})  # nor is the client itself
        assert server.seen == [
            "GET /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w",
            "PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w",
        ]
    finally:
        await fenced.close()  # a view: closes nothing
        assert not client._session.closed
        await client.close()


async def test_a_write_still_waiting_for_a_connection_at_the_deadline_is_never_sent(
    recorder: tuple[Recorder, str],
) -> None:
    """The pool's one connection is busy: the wait for it is bounded by the time the fence granted, and
    when it runs out the write is refused instead of going out late."""
    server, url = recorder
    client = KubeClient(host=url, connections=1)
    granted = [0.05]  # then the deadline has passed

    def fence() -> float:
        if granted:
            return granted.pop()
        raise NotLeader("deadline passed")

    try:
        busy = asyncio.create_task(client.patch(WORKLOADS, name="busy", namespace="ns", patch={}))
        server.hold = True
        await server.holding.wait()
        with pytest.raises(NotLeader):
            await client.fenced(fence).patch(WORKLOADS, name="late", namespace="ns", patch={})
        server.release.set()
        await busy
        assert server.seen == ["PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/busy"]
    finally:
        await client.close()


async def test_a_leader_whose_loop_stalled_past_the_deadline_writes_nothing_until_it_renews(
    caplog: pytest.LogCaptureFixture,
) -> None:
    api, clock = RecordingApi(), Clock()
    controller = Controller(
        client=api,  # type: ignore[arg-type]
        namespace="kueue-system",
        identity="a",
        settings=ControllerSettings(**TIMINGS),
    )
    assert controller.elector is not None
    controller.elector.clock = clock
    install(api, controller.store, cluster(3))
    admitted: list[str] = []
    all_admitted = asyncio.Event()

    def on_admitted(key: str) -> None:
        admitted.append(key)
        if len(admitted) == 3:
            all_admitted.set()

    try:
        await controller.elector.tick()  # leading: the scheduler's cycle is queued, nothing written yet
        controller.scheduler.on_admitted.append(on_admitted)
        clock.now += TIMINGS["renew_deadline"]  # ... and then the loop stalls past the renew deadline
        await asyncio.wait_for(controller.following.wait(), 10)
        await controller.scheduler.wait_writes()
        assert api.patched == []  # the admissions decided after the stall were never sent
        assert admitted == []
        assert len(refusals(caplog)) == 1

        # nothing is lost: the next term renews the lease and admits them from the cluster's state
        await controller.elector.tick()
        assert controller.is_leader()
        await asyncio.wait_for(all_admitted.wait(), 10)
        assert sorted(set(api.patched)) == ["workloads/w0", "workloads/w1", "workloads/w2"]
    finally:
        controller._stop_leading()


async def test_requests_with_their_own_connections_are_answered_while_every_shared_one_is_held(
    recorder: tuple[Recorder, str],
) -> None:
    """The Lease's client (``with_own_connections``): the shared pool's one connection is held by a write
    the server does not answer, and a renewal still goes out and comes back, as a Lease's must while
    hundreds of status writes wait for the shared pool."""
    server, url = recorder
    client = KubeClient(host=url, connections=1)
    lease_client = client.with_own_connections(1)
    try:
        busy = asyncio.create_task(client.patch(WORKLOADS, name="busy", namespace="ns", patch={}))
        server.hold = True
        await server.holding.wait()
        queued = asyncio.create_task(client.get(WORKLOADS, name="queued", namespace="ns"))
        await lease_client.replace(WORKLOADS, {"metadata": {"name": "renewed", "namespace": "ns"}})
        assert not queued.done()  # still waiting for the shared connection
        assert server.seen == [
            "PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/busy",
            "PUT /apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/renewed",
        ]
        server.release.set()
        await asyncio.gather(busy, queued)
    finally:
        await client.close()  # closes the view's connections too
        assert lease_client._session.closed
