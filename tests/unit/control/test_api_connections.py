"""``serve --api-connections``: the decision writes never wait behind the watches held open.

Each watch occupies one HTTP/1.1 connection for as long as it runs; watches have a pool of their own, so
the default request pool gives every decision write in flight a connection however many kinds are watched
(a heavy admission burst on a real API server, where each write takes tens of milliseconds, waited behind
them when both shared one pool).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.kinds import WATCHED, WORKLOADS
from kueue_webhook.control.replica.main import add_arguments, api_connections, build_replica
from kueue_webhook.control.replica.wiring import API_CONNECTIONS
from kueue_webhook.control.scheduling.decision_writes import DECISION_WRITES_IN_FLIGHT
from tests.support.local_http import serving
from tests.unit.control.kubeconfigs import write

#: every watched kind, the ConfigMap and a few integrations' kinds
WATCHES = len(WATCHED) + 1 + 6


class SlowServer:
    """Watches that stay open without a word; PATCHes that answer only once enough are in flight."""

    def __init__(self, writes_expected: int) -> None:
        self.writes_expected = writes_expected
        self.writes_in_flight = 0
        self.enough_writes = asyncio.Event()
        self.watches_open = 0
        self.all_watching = asyncio.Event()
        self.stop = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.method == "GET" and request.query.get("watch") == "true":
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            await response.prepare(request)
            self.watches_open += 1
            if self.watches_open == WATCHES:
                self.all_watching.set()
            await self.stop.wait()
            return response
        self.writes_in_flight += 1
        if self.writes_in_flight >= self.writes_expected:
            self.enough_writes.set()
        await self.enough_writes.wait()
        return web.json_response({"metadata": {"name": request.match_info["name"]}})


@pytest.fixture
async def slow_server() -> AsyncIterator[tuple[SlowServer, str]]:
    server = SlowServer(DECISION_WRITES_IN_FLIGHT)
    app = web.Application()
    app.router.add_route("*", "/apis/{group}/{version}/workloads", server.handle)
    app.router.add_route(
        "*", "/apis/{group}/{version}/namespaces/{ns}/workloads/{name}/status", server.handle
    )
    async with serving(app) as url:
        yield server, url
        server.stop.set()
        server.enough_writes.set()


async def _watch(client: KubeClient) -> None:
    async for _ in client.watch(WORKLOADS, resource_version="1"):
        pass


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


async def test_with_the_default_pool_every_decision_write_is_in_flight_beside_all_watches(
    slow_server: tuple[SlowServer, str],
) -> None:
    server, url = slow_server
    client = KubeClient(host=url, connections=parse().api_connections)
    watches = [asyncio.create_task(_watch(client)) for _ in range(WATCHES)]
    try:
        await asyncio.wait_for(server.all_watching.wait(), timeout=10)
        writes = [
            client.patch(WORKLOADS, name=f"w{i}", namespace="ns", patch={}, subresource="status")
            for i in range(DECISION_WRITES_IN_FLIGHT)
        ]
        # the server answers none of them until all are in flight: with too few connections this hangs
        answers = await asyncio.wait_for(asyncio.gather(*writes), timeout=10)
        assert [a["metadata"]["name"] for a in answers] == [f"w{i}" for i in range(DECISION_WRITES_IN_FLIGHT)]
    finally:
        for task in watches:
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)
        await client.close()


def test_no_connection_for_requests_is_refused_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse("--api-connections", "0")
    assert exit_info.value.code == 2
    assert "requests need at least one connection" in capsys.readouterr().err


def test_the_default_pool_passes_the_same_check_as_a_given_one() -> None:
    assert api_connections(str(API_CONNECTIONS)) == parse().api_connections == API_CONNECTIONS


async def test_serve_connects_with_the_pool_it_was_given(tmp_path: Path) -> None:
    kubeconfig = write(tmp_path, {"token": "t"})
    replica = await build_replica(parse("--kubeconfig", str(kubeconfig), "--api-connections", "27"))
    try:
        assert replica.client.connections == 27
    finally:
        await replica.stop()
