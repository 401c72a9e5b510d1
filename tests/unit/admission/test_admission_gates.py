"""The webhook's rules for admission gates (Kueue's ValidateAdmissionGatedByAnnotationOnCreate/OnUpdate,
wording verbatim): names are domain-prefixed paths, set at creation and afterwards only removed."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_webhook.api.admission_gates import ANNOTATION
from tests.unit.admission.golden import golden_review
from tests.unit.admission.test_jobs import job, update_review, validate

PATH = f"metadata.annotations[{ANNOTATION}]"


def gated(review: dict[str, Any], value: str | None, which: str = "object") -> dict[str, Any]:
    annotations = job(review, which)["metadata"].setdefault("annotations", {})
    if value is None:
        annotations.pop(ANNOTATION, None)
    else:
        annotations[ANNOTATION] = value
    return review


def test_a_job_created_with_gates_is_allowed() -> None:
    assert validate(gated(golden_review(1), "example.com/quota-check, example.com/image-scan")).allowed


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "nodomain",
            f'{PATH}: Invalid value: "nodomain": must be a domain-prefixed path (such as "acme.io/foo")',
        ),
        ("a.io/x,,b.io/y", f'{PATH}: Invalid value: "a.io/x,,b.io/y": cannot contain empty gate names'),
        ("a.io/x, a.io/x", f'{PATH}: Invalid value: "a.io/x, a.io/x": duplicate gate name: a.io/x'),
        ("example.com/" + "x" * 60, f"{PATH}: Too long: may not be more than 63 bytes"),
    ],
)
def test_malformed_gates_are_refused_at_creation(value: str, message: str) -> None:
    verdict = validate(gated(golden_review(1), value))
    assert not verdict.allowed
    assert verdict.message == message


def test_a_gate_cannot_be_added_after_creation() -> None:
    review = gated(update_review(old_suspend=True, new_suspend=True, user="alice"), "example.com/late")
    assert validate(review).message == f"{PATH}: Forbidden: cannot add admission gate after creation"


def test_gates_may_only_be_removed() -> None:
    review = update_review(old_suspend=True, new_suspend=True, user="alice")
    gated(review, "a.io/one,b.io/two", "oldObject")
    assert validate(gated(review, "b.io/two")).allowed
    assert validate(gated(review, None)).allowed
    verdict = validate(gated(review, "b.io/two,c.io/three"))
    assert verdict.message == f"{PATH}: Forbidden: can only remove gates, not add new ones"
