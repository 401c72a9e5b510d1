"""The controller asks the API server who it is; a server that will not say leaves the configured name alone.

The answers are the shapes of the golden ``selfsubjectreview-*.json`` captures (kube-apiserver v1.36.2); the
refusals are what older or locked-down servers answer (404 before v1.28, 403 without the default role).
"""

from __future__ import annotations

import logging
import random
from typing import Any

import aiohttp
import pytest

from kueue_webhook.control.kube.backoff import Backoff
from kueue_webhook.control.kube.client import ApiError
from kueue_webhook.control.kube.identity import REVIEW, SELF_SUBJECT_REVIEWS, own_username
from tests.fakeapi.golden import load

JSON = dict[str, Any]
NOT_FOUND = load("selfsubjectreview-v1beta1-not-found.json")["response"]["body"]
FORBIDDEN = {
    "kind": "Status",
    "code": 403,
    "reason": "Forbidden",
    "message": 'selfsubjectreviews.authentication.k8s.io is forbidden: User "bot" cannot create resource '
    '"selfsubjectreviews" in API group "authentication.k8s.io" at the cluster scope',
}
UNAVAILABLE = {"kind": "Status", "code": 503, "reason": "ServiceUnavailable", "message": "etcd is down"}


class ReviewApi:
    """Answers each POST with the next of ``answers``: a body, an error Status, or an exception to raise."""

    def __init__(self, *answers: JSON | BaseException) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[str, str, Any]] = []

    async def request(self, method: str, path: str, *, body: Any = None, timeout: float = 30.0) -> JSON:
        self.requests.append((method, path, body))
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        if answer.get("kind") == "Status":
            raise ApiError.from_status(answer)
        return answer


def quick() -> Backoff:
    return Backoff(base=0.001, cap=0.002, rng=random.Random(1))


@pytest.mark.parametrize(
    ("capture", "username"),
    [
        ("selfsubjectreview-create.json", "kubernetes-admin"),
        ("selfsubjectreview-create-serviceaccount.json", "system:serviceaccount:idcap-18754:kueue-webhook"),
    ],
)
async def test_the_api_server_names_the_controllers_user(capture: str, username: str) -> None:
    api = ReviewApi(load(capture)["response"]["body"])
    assert await own_username(api) == username
    assert api.requests == [("POST", SELF_SUBJECT_REVIEWS, REVIEW)]
    assert load(capture)["request"]["path"] == SELF_SUBJECT_REVIEWS


@pytest.mark.parametrize("refusal", [NOT_FOUND, FORBIDDEN], ids=["before-v1.28", "forbidden"])
async def test_a_refusal_keeps_the_configured_identity_and_says_why(
    refusal: JSON, caplog: pytest.LogCaptureFixture
) -> None:
    api = ReviewApi(refusal)
    with caplog.at_level(logging.WARNING, logger="kueue_webhook.identity"):
        assert await own_username(api) is None
    assert len(api.requests) == 1
    [record] = caplog.records
    assert "only controllerIdentity.username may start queued Jobs" in record.getMessage()
    assert record.__dict__["status"] == refusal["code"]
    assert record.__dict__["error"] == refusal["message"]


async def test_an_answer_without_a_user_name_keeps_the_configured_identity() -> None:
    assert await own_username(ReviewApi({"kind": "SelfSubjectReview", "status": {}})) is None


async def test_a_server_in_trouble_is_asked_again() -> None:
    answer = load("selfsubjectreview-create.json")["response"]["body"]
    api = ReviewApi(UNAVAILABLE, aiohttp.ClientConnectionError("connection refused"), answer)
    assert await own_username(api, backoff=quick()) == "kubernetes-admin"
    assert len(api.requests) == 3
