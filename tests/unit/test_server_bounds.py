"""Bounds over real HTTPS: a request beyond them is refused as its protocol says, and a large review that is
within them is answered from the worker thread exactly as it would be inline (kueue_webhook.http.limits)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from kueue_webhook.api.bounds import MAX_DEPTH
from kueue_webhook.http.limits import INLINE_BODY_BYTES, Busy, OffLoop
from tests.unit.admission.golden import apply_patch, decode_patch, golden_capture
from tests.unit.admission.servers import Webhook

JSON = {"Content-Type": "application/json"}


async def post(http: aiohttp.ClientSession, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
    async with http.post(path, data=body, headers=JSON) as response:
        return response.status, orjson.loads(await response.read())


def domain_bomb(count: int) -> bytes:
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns"},
        "status": {
            "admission": {
                "podSetAssignments": [
                    {
                        "name": "main",
                        "topologyAssignment": {
                            "levels": ["rack"],
                            "slices": [
                                {
                                    "domainCount": count,
                                    "valuesPerLevel": [{"universal": "r"}],
                                    "podCounts": {"universal": 1},
                                }
                            ],
                        },
                    }
                ]
            }
        },
    }
    return orjson.dumps(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": "bomb", "desiredAPIVersion": "kueue.x-k8s.io/v1beta1", "objects": [workload]},
        }
    )


async def test_the_convert_domain_count_bomb_gets_a_failure_review_kube_apiserver_shows(
    http: aiohttp.ClientSession,
) -> None:
    status, body = await post(http, "/convert", domain_bomb(1_000_000))
    assert status == 200
    assert body["kind"] == "ConversionReview"
    assert body["response"]["uid"] == "bomb"
    assert body["response"]["result"]["status"] == "Failure"
    assert "domainCount: must be a whole number from 1 to 100000" in body["response"]["result"]["message"]


@pytest.mark.parametrize("domains", [1000, 100_000])  # on the loop; in the worker, megabytes sent in pieces
async def test_a_conversion_within_the_bounds_still_expands(
    http: aiohttp.ClientSession, domains: int
) -> None:
    status, body = await post(http, "/convert", domain_bomb(domains))
    assert status == 200
    (converted,) = body["response"]["convertedObjects"]
    assignment = converted["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert len(assignment["domains"]) == domains


async def test_a_review_nested_too_deep_is_denied_with_a_400_kube_apiserver_shows(
    http: aiohttp.ClientSession,
) -> None:
    review = golden_capture(1)["review"]
    deep: Any = "x"
    for _ in range(MAX_DEPTH):
        deep = [deep]
    review["request"]["object"]["spec"]["template"]["metadata"]["annotations"] = {"a": deep}
    status, body = await post(http, "/validate", orjson.dumps(review))
    assert status == 200
    response = body["response"]
    assert (response["uid"], response["allowed"]) == (review["request"]["uid"], False)
    assert response["status"]["code"] == 400
    assert f"deeper than {MAX_DEPTH} levels" in response["status"]["message"]


async def test_a_body_nested_too_deep_that_is_no_review_is_a_400_status(http: aiohttp.ClientSession) -> None:
    status, body = await post(http, "/validate", b"[" * 150 + b"]" * 150)
    assert status == 400
    assert (body["kind"], body["code"]) == ("Status", 400)
    assert f"deeper than {MAX_DEPTH} levels" in body["message"]


async def test_a_body_of_empty_objects_is_a_400_before_it_is_decoded(http: aiohttp.ClientSession) -> None:
    status, body = await post(http, "/validate", b"[" + b"{}," * 300_000 + b"{}]")
    assert status == 400
    assert "JSON objects and arrays" in body["message"]


async def test_a_large_review_is_answered_like_a_small_one_reading_the_cluster_view(
    webhook: Webhook, http: aiohttp.ClientSession
) -> None:
    # a Job without the queue label in a namespace with a default LocalQueue: the rule reads the view
    webhook.view.add_local_queue("golden-hooked", "default")
    capture = golden_capture(6)
    small = capture["review"]
    large = orjson.loads(orjson.dumps(small))
    large["request"]["object"]["metadata"]["annotations"] = {"note": "n" * (2 * INLINE_BODY_BYTES)}
    _, small_answer = await post(http, "/mutate-batch-v1-job", orjson.dumps(small))
    _, large_answer = await post(http, "/mutate-batch-v1-job", orjson.dumps(large))
    assert decode_patch(large_answer["response"]) == decode_patch(small_answer["response"])
    job = apply_patch(large["request"]["object"], decode_patch(large_answer["response"]))
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    assert job["spec"]["suspend"] is True


async def test_a_chunked_body_without_a_length_is_answered(http: aiohttp.ClientSession) -> None:
    body = orjson.dumps(golden_capture(1)["review"])

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 1000):
            yield body[start : start + 1000]

    async with http.post("/validate", data=chunks(), headers=JSON) as response:
        assert response.status == 200
        assert orjson.loads(await response.read())["response"]["allowed"] is True


async def test_the_line_for_the_worker_is_bounded_and_freed_as_requests_finish() -> None:
    off_loop = OffLoop(max_waiting=1)
    try:
        async with off_loop.slot():
            with pytest.raises(Busy):
                async with off_loop.slot():
                    pass
            assert await off_loop.run(lambda: 41 + 1) == 42
        async with off_loop.slot():  # freed
            pass
    finally:
        off_loop.close()


async def test_a_cancelled_request_keeps_its_place_until_its_work_is_done() -> None:
    off_loop = OffLoop(max_waiting=1)
    release = asyncio.Event()
    loop = asyncio.get_running_loop()
    started = asyncio.Event()

    def work() -> None:
        loop.call_soon_threadsafe(started.set)
        asyncio.run_coroutine_threadsafe(release.wait(), loop).result()

    async def request() -> None:
        async with off_loop.slot():
            await off_loop.run(work)

    task = asyncio.create_task(request())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(Busy):  # the cancelled request's work still runs: its place is taken
        async with off_loop.slot():
            pass
    release.set()
    await off_loop.run(lambda: None)  # one worker, first in first out: the cancelled work is done
    async with off_loop.slot():  # and its place is free again
        pass
    off_loop.close()
