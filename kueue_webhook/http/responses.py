"""The answers every path shares: a Kubernetes ``Status`` body for errors, JSON bodies for the rest.

A large body (a conversion answer may be megabytes) is sent in pieces of :data:`PIECE_BYTES`, yielding to
the event loop between them: TLS encrypts what is written on the loop, and one write of 8 MiB would hold it
for ~10 ms while the probes and the other reviews wait.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from aiohttp import web

__all__ = [
    "JSON_CONTENT_TYPE",
    "PIECE_BYTES",
    "json_response",
    "send_json",
    "status_body",
    "status_response",
]

JSON_CONTENT_TYPE = "application/json"
#: the most of a body written to the transport (and encrypted) before other work on the loop gets a turn
PIECE_BYTES = 256 * 1024


def status_body(code: int, reason: str, message: str) -> bytes:
    """A ``metav1.Status`` failure, as kube-apiserver writes it."""
    return orjson.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    )


def status_response(code: int, reason: str, message: str) -> web.Response:
    return web.Response(status=code, body=status_body(code, reason, message), content_type=JSON_CONTENT_TYPE)


def json_response(body: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(body), content_type=JSON_CONTENT_TYPE)


async def send_json(request: web.Request, body: bytes) -> web.StreamResponse:
    """A 200 answer of the JSON ``body``; a body over :data:`PIECE_BYTES` is written a piece at a time."""
    if len(body) <= PIECE_BYTES:
        return web.Response(body=body, content_type=JSON_CONTENT_TYPE)
    response = web.StreamResponse(headers={"Content-Type": JSON_CONTENT_TYPE})
    response.content_length = len(body)
    await response.prepare(request)
    view = memoryview(body)
    for start in range(0, len(body), PIECE_BYTES):
        await response.write(view[start : start + PIECE_BYTES])
        await asyncio.sleep(0)  # the write waits only when the transport's buffer is full
    await response.write_eof()
    return response
