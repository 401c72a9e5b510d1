"""A flood of ConversionReview bombs at a replica's HTTPS port, from a process of its own (so the sender
never shares the replica's event loop or interpreter): ``python -m tests.e2e.bombs URL CA_FILE``.

Each bomb is ~600 bytes: a v1beta2 Workload read as v1beta1 whose topology slice says ``domainCount:
1000000``. The flood runs on :data:`SENDERS` keep-alive connections; it prints ``flooding`` once the first
answers are in, stops when a line arrives on stdin (each sender sends at least :data:`AT_LEAST` bombs), and
prints one JSON line: ``[seconds, HTTP status, result status, result message]`` per answer.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
import time
from typing import Any

import aiohttp
import orjson

SENDERS = 8
AT_LEAST = 20


def domain_bomb(uid: str) -> bytes:
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "bomb", "namespace": "default"},
        "spec": {"podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]},
        "status": {
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {
                        "name": "main",
                        "topologyAssignment": {
                            "levels": ["kubernetes.io/hostname"],
                            "slices": [
                                {
                                    "domainCount": 1_000_000,
                                    "valuesPerLevel": [{"universal": "node-1"}],
                                    "podCounts": {"universal": 1},
                                }
                            ],
                        },
                    }
                ],
            }
        },
    }
    return orjson.dumps(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": "kueue.x-k8s.io/v1beta1", "objects": [workload]},
        }
    )


async def flood(url: str, ca: str) -> list[list[Any]]:
    answers: list[list[Any]] = []
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    async def wait_for_stop() -> None:
        await reader.readline()
        stop.set()

    async def sender(session: aiohttp.ClientSession, number: int) -> None:
        sent = 0
        while sent < AT_LEAST or not stop.is_set():
            started = time.perf_counter()
            headers = {"Content-Type": "application/json"}
            async with session.post(url, data=domain_bomb(f"bomb-{number}-{sent}"), headers=headers) as r:
                body = await r.read()
            seconds = time.perf_counter() - started
            result = (orjson.loads(body).get("response") or {}).get("result") or {} if r.status == 200 else {}
            answers.append([seconds, r.status, result.get("status"), result.get("message")])
            sent += 1
            if len(answers) == SENDERS:
                print("flooding", flush=True)

    watcher = asyncio.create_task(wait_for_stop())
    connector = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=ca), limit=SENDERS)
    async with aiohttp.ClientSession(connector=connector) as session:
        await asyncio.gather(*(sender(session, n) for n in range(SENDERS)))
    watcher.cancel()
    return answers


def main() -> None:
    url, ca = sys.argv[1:3]
    print(json.dumps(asyncio.run(flood(url, ca))), flush=True)


if __name__ == "__main__":
    main()
