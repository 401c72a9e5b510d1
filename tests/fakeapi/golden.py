"""The captures of a real kube-apiserver v1.36.2 (tests/golden), for tests that compare with them.

Replaying a capture sends its request unchanged; `normalise` hides what differs on every run (uids,
timestamps, resourceVersions, managedFields) so the remaining comparison is exact.
"""

from __future__ import annotations

import json
import re
from typing import Any

import aiohttp
import orjson

from tests.golden import GOLDEN

_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
_VOLATILE_KEYS = frozenset({"managedFields", "resourceVersion", "storageVersionHash"})


def load(name: str) -> Any:
    return json.loads((GOLDEN / name).read_text())


def text(name: str) -> str:
    return (GOLDEN / name).read_text()


def normalise(value: Any) -> Any:
    """Replace uids/timestamps with placeholders (also inside label values) and drop volatile keys."""
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items() if k not in _VOLATILE_KEYS}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, str):
        if _TIME.match(value):
            return "<time>"
        return _UID.sub("<uid>", value)
    return value


async def replay(session: aiohttp.ClientSession, capture: dict[str, Any]) -> tuple[int, Any]:
    """Send a captured request as captured (method, path, body, content type, Accept)."""
    request = capture["request"]
    headers = {"Content-Type": request.get("contentType", "application/json")}
    if request.get("accept"):
        headers["Accept"] = request["accept"]
    data = orjson.dumps(request["body"]) if request.get("body") is not None else None
    async with session.request(request["method"], request["path"], data=data, headers=headers) as response:
        return response.status, orjson.loads(await response.read())


async def replay_file(session: aiohttp.ClientSession, name: str) -> tuple[Any, Any]:
    """(expected, actual) normalised bodies of a capture; asserts the status codes match."""
    capture = load(name)
    status, body = await replay(session, capture)
    assert status == capture["response"]["status"], body
    return normalise(capture["response"]["body"]), normalise(body)


def kubectl_stdout(name: str) -> str:
    """What kubectl printed in a `kubectl-*.log` capture."""
    content = text(name)
    return content.split("--- stdout\n", 1)[1].split("--- stderr", 1)[0]
