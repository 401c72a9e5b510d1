"""A watch stream is read as it arrives, not one line per read: every event comes out once and in order
wherever the network splits the stream (mid-event, several events in one read, blank keep-alive lines),
a last event without its newline is kept, and an event past the size limit ends the watch with an error
instead of growing without bound."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import orjson
import pytest
from aiohttp import web

from kueue_webhook.control.kube import client as client_module
from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.kinds import WORKLOADS
from tests.support.local_http import serving

EVENTS = [
    {
        "type": "ADDED",
        "object": {"metadata": {"name": f"w{i}", "resourceVersion": str(i)}, "pad": "x" * (i * 37)},
    }
    for i in range(40)
]
STREAM = b"".join(
    orjson.dumps(event) + b"\n" + (b"\n" if i % 7 == 0 else b"") for i, event in enumerate(EVENTS)
)


def streaming(pieces: Callable[[bytes], list[bytes]]) -> web.Application:
    """An API server whose watch sends ``pieces(STREAM)``, each flushed on its own, then closes."""

    async def watch(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        for piece in pieces(STREAM):
            await response.write(piece)
            await asyncio.sleep(0)  # each piece reaches the client apart from the next
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_get("/apis/{group}/{version}/workloads", watch)
    return app


def every(size: int) -> Callable[[bytes], list[bytes]]:
    return lambda data: [data[i : i + size] for i in range(0, len(data), size)]


async def watched(app: web.Application) -> list[object]:
    async with serving(app) as url:
        client = KubeClient(host=url)
        try:
            return [event async for event in client.watch(WORKLOADS, resource_version="0")]
        finally:
            await client.close()


@pytest.mark.parametrize("size", [1, 5, 64, 1000, len(STREAM)])
async def test_every_event_comes_out_once_in_order_however_the_stream_is_split(size: int) -> None:
    assert await watched(streaming(every(size))) == EVENTS


async def test_a_last_event_without_its_newline_is_kept() -> None:
    assert await watched(streaming(lambda data: [data.rstrip(b"\n")])) == EVENTS


async def test_an_event_past_the_limit_ends_the_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "WATCH_EVENT_LIMIT", 500)
    with pytest.raises(ValueError, match="longer than 500 bytes"):
        await watched(
            streaming(lambda data: [b'{"type": "ADDED", "object": {"pad": "', b"y" * 400, b"y" * 400])
        )
