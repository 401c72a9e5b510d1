"""The bounds every request body is measured against before any work (kueue_webhook.api.bounds)."""

from __future__ import annotations

import orjson
import pytest

from kueue_webhook.api.bounds import (
    MAX_BODY_BYTES,
    MAX_CONTAINERS,
    MAX_DEPTH,
    MAX_VALUES,
    BoundsError,
    check_body,
    check_depth,
)
from tests.unit.admission.golden import golden_review


def nested(depth: int) -> object:
    """``depth`` levels of objects and arrays, alternating, around a string."""
    value: object = "leaf"
    for level in range(depth):
        value = {"a": value} if level % 2 else [value]
    return value


@pytest.mark.parametrize("number", range(9))
def test_every_golden_review_is_within_the_bounds(number: int) -> None:
    body = orjson.dumps(golden_review(number))
    check_body(body)
    check_depth(orjson.loads(body))


def test_a_body_above_kube_apiservers_request_limit_is_too_large() -> None:
    with pytest.raises(BoundsError, match=f"exceeds {MAX_BODY_BYTES} bytes") as refused:
        check_body(b" " * (MAX_BODY_BYTES + 1))
    assert (refused.value.code, refused.value.reason) == (413, "RequestEntityTooLarge")


def test_a_body_of_empty_objects_is_refused_before_it_is_decoded() -> None:
    body = b"[" + b"{}," * MAX_CONTAINERS + b"{}]"
    assert len(body) < MAX_BODY_BYTES
    with pytest.raises(BoundsError, match=f"more than the {MAX_CONTAINERS}") as refused:
        check_body(body)
    assert refused.value.code == 400


def test_a_body_of_a_million_zeros_is_refused_before_it_is_decoded() -> None:
    with pytest.raises(BoundsError, match=f"more than the {MAX_VALUES} any review"):
        check_body(b"[" + b"0," * 1_000_000 + b"0]")


def test_as_many_objects_as_the_bound_are_accepted() -> None:
    check_body(b"[" + b"{}," * (MAX_CONTAINERS - 2) + b"{}]")


def test_nesting_up_to_the_bound_is_accepted_one_more_level_is_refused() -> None:
    check_depth(nested(MAX_DEPTH))
    with pytest.raises(BoundsError, match=f"deeper than {MAX_DEPTH} levels"):
        check_depth(nested(MAX_DEPTH + 1))


def test_depth_is_found_below_wide_siblings() -> None:
    document = {"wide": [{"x": i} for i in range(1000)], "deep": nested(MAX_DEPTH)}
    with pytest.raises(BoundsError):
        check_depth(document)
