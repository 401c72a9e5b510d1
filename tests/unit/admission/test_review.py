"""AdmissionReview parsing and rendering, and the promise that no input makes a rule raise."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_webhook.admission.review import ReviewError, Verdict, parse_review, render_response
from kueue_webhook.admission.routes import ROUTES
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration, parse_configuration
from tests.unit.admission.damage import damage_one_field
from tests.unit.admission.golden import golden_review

CONFIGS = [
    Configuration(),
    parse_configuration("manageJobsWithoutQueueName: true\nlabelPolicy: {enforcedNamespaceSelector: {}}\n"),
]


def test_golden_update_of_workload_status_is_read_in_full() -> None:
    request = parse_review(orjson.dumps(golden_review(8)))
    assert (request.kind.group, request.kind.version, request.kind.kind) == (
        "kueue.x-k8s.io",
        "v1beta2",
        "Workload",
    )
    assert (request.operation, request.sub_resource, request.namespace) == ("UPDATE", "status", "golden")
    assert request.name == "job-sample-abcde" and request.username == "admin"
    assert request.groups == ("system:masters", "system:authenticated")
    assert request.object is not None and request.old_object is not None and request.dry_run is False


def test_allowed_response_with_patch() -> None:
    body = orjson.loads(
        render_response("u-1", Verdict.allow([{"op": "add", "path": "/spec/suspend", "value": True}]))
    )
    assert body == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {
            "uid": "u-1",
            "allowed": True,
            "status": {"code": 200},
            "patchType": "JSONPatch",
            "patch": base64.b64encode(b'[{"op":"add","path":"/spec/suspend","value":true}]').decode(),
        },
    }


def test_denied_response_carries_code_reason_and_message_but_no_patch() -> None:
    verdict = Verdict(allowed=False, message="no", code=403, reason="Forbidden", patch=({"op": "remove"},))
    response = orjson.loads(render_response("u-2", verdict))["response"]
    assert response == {
        "uid": "u-2",
        "allowed": False,
        "status": {"code": 403, "message": "no", "reason": "Forbidden"},
    }


@pytest.mark.parametrize(
    ("review", "message"),
    [
        ({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}, "request must be an object"),
        (
            {
                "kind": "AdmissionReview",
                "apiVersion": "admission.k8s.io/v1",
                "request": {"uid": "x", "operation": ["CREATE"]},
            },
            'request.operation must be one of CREATE, UPDATE, DELETE, CONNECT, got ["CREATE"]',
        ),
        (
            {
                "kind": "AdmissionReview",
                "apiVersion": "admission.k8s.io/v1",
                "request": {"uid": "x", "operation": "CREATE"},
            },
            "request.kind must be an object with group, version and kind",
        ),
    ],
)
def test_malformed_reviews_say_what_is_wrong(review: dict[str, Any], message: str) -> None:
    with pytest.raises(ReviewError) as error:
        parse_review(orjson.dumps(review))
    assert str(error.value) == message


@st.composite
def damaged_reviews(draw: st.DrawFn) -> dict[str, Any]:
    review = golden_review(draw(st.sampled_from(range(9))))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        damage_one_field(draw, review)
    return review


@settings(max_examples=400)
@given(review=damaged_reviews(), config=st.sampled_from(CONFIGS), path=st.sampled_from(sorted(ROUTES)))
def test_no_review_makes_a_rule_raise(review: dict[str, Any], config: Configuration, path: str) -> None:
    view = StaticClusterView(
        namespaces={"golden-hooked": {"kubernetes.io/metadata.name": "golden-hooked", "x": "y"}},
        local_queues={"golden-hooked": {"default", "team-a-gpu"}},
    )
    try:
        request = parse_review(orjson.dumps(review))
    except ReviewError as error:
        assert str(error)
        return
    verdict = ROUTES[path](request, config=config, view=view)
    assert verdict.allowed or (verdict.message and verdict.code in (400, 403))
    orjson.loads(render_response(request.uid, verdict))
