"""Fuzzing the whole HTTPS port: whatever arrives, no 5xx, and the answer is the protocol's review (for the
sender's uid) or a ``Status`` saying why, in proportion to the request.

Requests come from :mod:`bench.http_surface` (every admission path, ``/convert``, the visibility API,
``/metrics`` and the probes; golden reviews and sample objects of every kind, damaged with huge counts, long
strings, deep nesting, wide lists, truncation, random bytes), with hypothesis drawing the random source. The
long form, 100,000 requests with timings and memory, is ``python -m bench.http_fuzz``. The server runs on
its own thread so hypothesis can drive it synchronously through a real TLS connection.
"""

from __future__ import annotations

import gc
import http.client
import json
import logging
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.http_surface import ADMISSION_PATHS, FuzzRequest, draw_request, problems, visibility_of_research
from tests.unit.admission.damage import damage_one_field
from tests.unit.admission.golden import golden_review
from tests.unit.admission.servers import Webhook, webhook_in_thread


class Client:
    """One keep-alive HTTPS connection, reopened when the server closes it."""

    def __init__(self, webhook: Webhook) -> None:
        self.webhook = webhook
        self.connection = self._connect()

    def _connect(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(
            "127.0.0.1", self.webhook.server.port, context=self.webhook.client_context(), timeout=60
        )

    def send(self, request: FuzzRequest) -> tuple[int, bytes]:
        headers = {"Content-Type": request.content_type} if request.method == "POST" else {}
        for attempt in range(2):
            try:
                self.connection.request(request.method, request.path, body=request.body, headers=headers)
                response = self.connection.getresponse()
                return response.status, response.read()
            except (ConnectionError, http.client.HTTPException):
                self.connection.close()
                self.connection = self._connect()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def post(self, path: str, body: bytes, uid: str | None = None) -> tuple[int, bytes]:
        return self.send(FuzzRequest("POST", path, body, uid=uid))


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    directory: Path = tmp_path_factory.mktemp("fuzz-certs")
    with webhook_in_thread(directory, visibility=visibility_of_research(20)) as webhook:
        yield Client(webhook)


def assert_answer_is_sound(client: Client, request: FuzzRequest) -> None:
    status, body = client.send(request)
    assert not problems(request, status, body), (
        request.method,
        request.path,
        request.what,
        status,
        body[:400],
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=st.randoms(use_true_random=False))
def test_any_request_to_any_path_gets_a_sound_answer(client: Client, source: random.Random) -> None:
    # sizes at a tenth of the benchmark's: long strings of 100 KB, wide lists of 10,000, nesting to 400
    assert_answer_is_sound(client, draw_request(source, scale=0.1))


@given(path=st.sampled_from([*ADMISSION_PATHS, "/convert"]), body=st.binary(max_size=512))
def test_random_bytes(client: Client, path: str, body: bytes) -> None:
    status, answer = client.post(path, body)
    assert status == 400, answer
    assert orjson.loads(answer)["kind"] == "Status"


@given(number=st.sampled_from(range(9)), cut=st.floats(min_value=0, max_value=1, exclude_max=True))
def test_truncated_reviews(client: Client, number: int, cut: float) -> None:
    body = json.dumps(golden_review(number)).encode()
    status, answer = client.post("/validate", body[: int(len(body) * cut)])
    assert status == 400, answer


@st.composite
def damaged_reviews(draw: st.DrawFn) -> dict[str, Any]:
    """A golden review with one field, somewhere below ``request``, deleted or replaced."""
    review = golden_review(draw(st.sampled_from(range(9))))
    damage_one_field(draw, review)
    return review


@given(path=st.sampled_from(ADMISSION_PATHS), review=damaged_reviews())
def test_damaged_reviews(client: Client, path: str, review: dict[str, Any]) -> None:
    uid = review["request"].get("uid")
    request = FuzzRequest("POST", path, orjson.dumps(review), uid=uid if isinstance(uid, str) else None)
    assert_answer_is_sound(client, request)


@given(
    number=st.sampled_from([0, 1, 5, 6, 7]),
    key=st.text(min_size=1, max_size=300),
    size=st.integers(min_value=0, max_value=200_000),
)
def test_huge_labels(client: Client, number: int, key: str, size: int) -> None:
    review = golden_review(number)
    review["request"]["object"]["metadata"].setdefault("labels", {})[key] = "v" * size
    review["request"]["object"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "q" * (size // 100)
    request = FuzzRequest(
        "POST", "/validate-batch-v1-job", orjson.dumps(review), uid=review["request"]["uid"]
    )
    status, answer = client.send(request)
    assert status == 200
    assert not problems(request, status, answer)


def test_the_contract_notices_what_a_user_would() -> None:
    sent = FuzzRequest("POST", "/validate", b"{}", uid="u-1")

    def review(uid: str, code: int) -> bytes:
        response = {"uid": uid, "allowed": code == 200, "status": {"code": code, "message": "m"}}
        return orjson.dumps(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
        )

    assert not problems(sent, 200, review("u-1", 200))
    assert problems(sent, 500, b"500 Internal Server Error") == [
        "HTTP 500",
        "HTTP 500 with a body that is not JSON: b'500 Internal Server Error'",
    ]
    assert problems(sent, 200, review("u-2", 200)) == ["review answered for uid 'u-2', sent 'u-1'"]
    assert problems(sent, 200, review("u-1", 500)) == ["review with status code 500: m"]
    assert problems(sent, 400, b'{"kind":"Status","code":400}') == [
        'HTTP 400 without a Status saying why: b\'{"kind":"Status","code":400}\''
    ]
    assert problems(sent, 200, b"x" * (2 * 1024 * 1024))[0].startswith("answer of 2097152 bytes")
    convert = FuzzRequest("POST", "/convert", b"{}", uid="c")
    failure = {"uid": "c", "result": {"status": "Failure"}}
    body = orjson.dumps(
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": failure}
    )
    assert problems(convert, 200, body) == ["conversion failure without a message"]


def strangers(first: int, count: int) -> list[FuzzRequest]:
    """Requests naming what nobody named before: unknown paths and methods, unknown queues and namespaces,
    odd query strings. A cache keyed by what a caller sends would keep a little of each."""
    base = "/apis/visibility.kueue.x-k8s.io/v1beta2"
    shapes = (
        lambda n: FuzzRequest("GET", f"/nowhere/{n}"),
        lambda n: FuzzRequest("PUT", f"/validate?attempt={n}"),
        lambda n: FuzzRequest("GET", f"{base}/clusterqueues/queue-{n}/pendingworkloads?limit={n}"),
        lambda n: FuzzRequest("GET", f"{base}/namespaces/team-{n}/localqueues/q/pendingworkloads"),
        lambda n: FuzzRequest("DELETE", f"/metrics/{n}"),
    )
    return [shapes[n % len(shapes)](n) for n in range(first, first + count)]


def test_answering_leaves_nothing_behind(client: Client, caplog: pytest.LogCaptureFixture) -> None:
    # Once the code paths have run and the bounded caches are warm (aiohttp's and yarl's hold 128 URLs
    # each), answering more requests must neither leave reference cycles (work for the collector, whose
    # pauses stop the loop) nor keep anything (a cache keyed by what callers send, a metric labelled with
    # it): counted in objects and in allocated memory blocks, which are deterministic, unlike a process's
    # resident size. The fuzzed requests are drawn again with new uids, so they take the same paths.
    # pytest keeps every log record it captures, which the server's denials would add to: none is made.
    caplog.set_level(logging.WARNING)
    caplog.set_level(logging.WARNING, logger="kueue_webhook")

    def send(requests: list[FuzzRequest]) -> None:
        for request in requests:
            assert_answer_is_sound(client, request)

    def fuzzed(serial: int) -> list[FuzzRequest]:
        return [draw_request(random.Random(seed), scale=0.1, serial=serial + seed) for seed in range(150)]

    send(strangers(0, 300) + fuzzed(0))
    measured = strangers(1000, 150) + fuzzed(1000)
    gc.collect()
    objects, blocks = len(gc.get_objects()), sys.getallocatedblocks()
    gc.disable()
    try:
        send(measured)
        cycles = gc.collect()
    finally:
        gc.enable()
    assert cycles == 0, "answering left reference cycles for the garbage collector"
    assert len(gc.get_objects()) - objects < len(measured) // 10, "answering keeps objects"
    assert sys.getallocatedblocks() - blocks < len(measured) // 4, "answering keeps memory"
