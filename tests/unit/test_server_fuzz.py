"""Fuzzing the webhook over HTTPS: whatever arrives, the answer is a review or a documented 400/413.

Bodies are random bytes, truncated golden reviews, golden reviews with a field deleted or replaced by any
JSON value (wrong kinds, missing fields, objects where strings belong), and huge labels. The server runs on
its own thread so hypothesis can drive it synchronously through a real TLS connection.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.admission.damage import damage_one_field
from tests.unit.admission.golden import golden_review
from tests.unit.admission.servers import Webhook, webhook_in_thread
from webhook.admission.routes import ROUTES

PATHS = sorted(ROUTES)


class Client:
    """One keep-alive HTTPS connection, reopened when the server closes it."""

    def __init__(self, webhook: Webhook) -> None:
        self.webhook = webhook
        self.connection = self._connect()

    def _connect(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(
            "127.0.0.1", self.webhook.server.port, context=self.webhook.client_context(), timeout=30
        )

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        for attempt in range(2):
            try:
                self.connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
                response = self.connection.getresponse()
                return response.status, response.read()
            except (ConnectionError, http.client.HTTPException):
                self.connection.close()
                self.connection = self._connect()
                if attempt:
                    raise
        raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    directory: Path = tmp_path_factory.mktemp("fuzz-certs")
    with webhook_in_thread(directory) as webhook:
        yield Client(webhook)


def check(status: int, body: bytes, sent: Any) -> None:
    """The contract: a valid review for the sender's uid, or a Status explaining a 400/413."""
    assert status in (200, 400, 413), (status, body[:300])
    document = orjson.loads(body)
    if status != 200:
        assert document["kind"] == "Status" and document["code"] == status and document["message"]
        return
    assert (document["apiVersion"], document["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    response = document["response"]
    assert response["uid"] == sent["request"]["uid"]
    assert isinstance(response["allowed"], bool)
    assert response["status"]["code"] in (200, 400, 403)
    if not response["allowed"]:
        assert response["status"]["message"]


@st.composite
def damaged_reviews(draw: st.DrawFn) -> dict[str, Any]:
    """A golden review with one field, somewhere below ``request``, deleted or replaced."""
    review = golden_review(draw(st.sampled_from(range(9))))
    damage_one_field(draw, review)
    return review


@given(path=st.sampled_from(PATHS), body=st.binary(max_size=512))
def test_random_bytes(client: Client, path: str, body: bytes) -> None:
    status, answer = client.post(path, body)
    assert status == 400, answer
    assert orjson.loads(answer)["kind"] == "Status"


@given(number=st.sampled_from(range(9)), cut=st.floats(min_value=0, max_value=1, exclude_max=True))
def test_truncated_reviews(client: Client, number: int, cut: float) -> None:
    body = json.dumps(golden_review(number)).encode()
    status, answer = client.post("/validate", body[: int(len(body) * cut)])
    assert status == 400, answer


@given(path=st.sampled_from(PATHS), review=damaged_reviews())
def test_damaged_reviews(client: Client, path: str, review: dict[str, Any]) -> None:
    status, answer = client.post(path, orjson.dumps(review))
    if status == 200:
        check(status, answer, review)
    else:
        assert status == 400, answer


@given(
    number=st.sampled_from([0, 1, 5, 6, 7]),
    key=st.text(min_size=1, max_size=300),
    size=st.integers(min_value=0, max_value=200_000),
)
def test_huge_labels(client: Client, number: int, key: str, size: int) -> None:
    review = golden_review(number)
    review["request"]["object"]["metadata"].setdefault("labels", {})[key] = "v" * size
    review["request"]["object"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "q" * (size // 100)
    status, answer = client.post("/validate-batch-v1-job", orjson.dumps(review))
    check(status, answer, review)
