"""Compressed topology assignments are measured before they are expanded: Kueue's CRD rules for a v1beta2
slice, and the budget of one ConversionReview (kueue_webhook.api.conversion,
kueue_webhook.api.conversion_review)."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest

from kueue_webhook.api.bounds import MAX_DEPTH
from kueue_webhook.api.conversion import (
    MAX_DOMAINS,
    V1BETA1,
    V1BETA2,
    ConversionError,
    convert,
    expanded_domains,
)
from kueue_webhook.api.conversion_review import MAX_REVIEW_DOMAINS, MAX_REVIEW_OBJECTS, answer_review

ASSIGNMENT = "status.admission.podSetAssignments[0].topologyAssignment"


def workload(*slices: dict[str, Any], levels: list[str] | None = None) -> dict[str, Any]:
    topology = {"levels": ["rack"] if levels is None else levels, "slices": list(slices)}
    return {
        "apiVersion": V1BETA2,
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns"},
        "status": {"admission": {"podSetAssignments": [{"name": "main", "topologyAssignment": topology}]}},
    }


def universal(count: int, value: str = "rack-1", pods: int = 1) -> dict[str, Any]:
    return {"domainCount": count, "valuesPerLevel": [{"universal": value}], "podCounts": {"universal": pods}}


def review(*objects: Any, desired: str = V1BETA1) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": "u-1", "desiredAPIVersion": desired, "objects": list(objects)},
        }
    )


def test_the_domain_count_bomb_fails_the_review_with_the_reason_and_expands_nothing() -> None:
    # 600 bytes that said "a million domains" used to be answered with 27 MB after seconds
    body = review(workload(universal(1_000_000)))
    assert len(body) < 600
    answer = orjson.loads(answer_review(body))["response"]
    assert answer["uid"] == "u-1"
    assert "convertedObjects" not in answer
    assert answer["result"] == {
        "status": "Failure",
        "message": f"objects[0]: {ASSIGNMENT}.slices[0].domainCount: must be a whole number from 1 to "
        f"{MAX_DOMAINS}, got 1000000",
    }


def test_an_assignment_of_kueues_largest_size_converts() -> None:
    converted = convert(workload(universal(MAX_DOMAINS - 1), universal(1, "rack-2")), V1BETA1)
    domains = converted["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]["domains"]
    assert len(domains) == MAX_DOMAINS
    assert domains[-1] == {"values": ["rack-2"], "count": 1}


def test_slices_adding_up_to_more_than_an_assignment_may_hold_are_refused() -> None:
    expected = f"{ASSIGNMENT}: the slices add up to more than {MAX_DOMAINS} domains"
    with pytest.raises(ConversionError, match=re.escape(expected)):
        convert(workload(universal(MAX_DOMAINS), universal(1)), V1BETA1)


def test_one_workload_at_kueues_largest_assignment_converts_in_one_review() -> None:
    # 100,000 nodes, each named individually: the most one v1beta2 slice lists, read as v1beta1
    piece = {
        "domainCount": MAX_DOMAINS,
        "valuesPerLevel": [
            {"individual": {"prefix": "node-", "roots": [str(i) for i in range(MAX_DOMAINS)]}}
        ],
        "podCounts": {"universal": 1},
    }
    answer = orjson.loads(answer_review(review(workload(piece))))["response"]
    assert answer["result"] == {"status": "Success"}
    domains = answer["convertedObjects"][0]["status"]["admission"]["podSetAssignments"][0][
        "topologyAssignment"
    ]["domains"]
    assert len(domains) == MAX_REVIEW_DOMAINS == MAX_DOMAINS
    assert domains[-1] == {"values": [f"node-{MAX_DOMAINS - 1}"], "count": 1}


def test_a_review_whose_objects_together_expand_beyond_its_budget_fails_before_converting_any() -> None:
    per_object = MAX_DOMAINS
    objects = [workload(universal(per_object)) for _ in range(MAX_REVIEW_DOMAINS // per_object + 1)]
    answer = orjson.loads(answer_review(review(*objects)))["response"]
    assert answer["result"]["status"] == "Failure"
    assert "list fewer Workloads at a time (kubectl --chunk-size)" in answer["result"]["message"]


def test_a_review_of_more_objects_than_3_mib_of_real_ones_fails_before_converting_any() -> None:
    # 200,000 zeros took a tenth of a second to walk, one object at a time
    answer = orjson.loads(answer_review(review(*[0] * (MAX_REVIEW_OBJECTS + 1))))["response"]
    assert answer["result"] == {
        "status": "Failure",
        "message": f"the review holds {MAX_REVIEW_OBJECTS + 1} objects, more than the {MAX_REVIEW_OBJECTS} "
        "one review of real objects can (3 MiB); list fewer at a time (kubectl --chunk-size)",
    }
    flavors = [
        {"apiVersion": V1BETA2, "kind": "ResourceFlavor", "metadata": {"name": f"f{i}"}} for i in range(2)
    ]
    within = orjson.loads(answer_review(review(*flavors * (MAX_REVIEW_OBJECTS // 2))))["response"]
    assert within["result"] == {"status": "Success"}
    assert len(within["convertedObjects"]) == MAX_REVIEW_OBJECTS


def test_long_values_count_against_the_reviews_byte_budget() -> None:
    wide = workload(universal(MAX_DOMAINS, value="v" * 63), levels=[f"l{i}" for i in range(16)])
    wide["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]["slices"][0][
        "valuesPerLevel"
    ] = [{"universal": "v" * 63}] * 16
    answer = orjson.loads(answer_review(review(wide)))["response"]
    assert answer["result"]["status"] == "Failure"
    assert "bytes" in answer["result"]["message"]


@pytest.mark.parametrize(
    ("piece", "message"),
    [
        ({**universal(1), "domainCount": 0}, r"slices\[0\]\.domainCount: must be a whole number from 1"),
        ({**universal(1), "domainCount": "3"}, r"domainCount: must be a whole number .* got '3'"),
        ({**universal(1), "domainCount": True}, "domainCount: must be a whole number"),
        ({**universal(2), "valuesPerLevel": []}, "valuesPerLevel must have the same length as the number"),
        (
            {**universal(2), "valuesPerLevel": [{"universal": "a", "individual": {"roots": ["a", "b"]}}]},
            "exactly one of the fields in",
        ),
        (
            {**universal(3), "valuesPerLevel": [{"individual": {"roots": ["a", "b"]}}]},
            r"individual\.roots must be a list of strings of length equal to domainCount \(3\)",
        ),
        (
            {**universal(2), "valuesPerLevel": [{"individual": {"roots": ["a", 7]}}]},
            "individual.roots must be a list of strings",
        ),
        ({**universal(2), "podCounts": {"individual": [1]}}, "podCounts.individual must be a list"),
        ({**universal(2), "podCounts": {}}, "podCounts: exactly one of universal and individual"),
        ({**universal(2), "podCounts": {"universal": "1"}}, "podCounts.universal must be a whole number"),
        ({**universal(2), "valuesPerLevel": [{"universal": 5}]}, r"valuesPerLevel\[0\]\.universal must be"),
        ("slice", r"slices\[0\] must be an object"),
    ],
)
def test_a_slice_not_shaped_as_the_workload_crd_requires_is_refused_with_its_path(
    piece: Any, message: str
) -> None:
    with pytest.raises(ConversionError, match=message):
        expanded_domains(workload(piece), V1BETA1)
    with pytest.raises(ConversionError, match=message):
        convert(workload(piece), V1BETA1)


def test_more_slices_than_the_crd_allows_are_refused() -> None:
    with pytest.raises(ConversionError, match="slices must be a list of at most 1000 slices"):
        convert(workload(*[universal(1)] * 1001), V1BETA1)


def test_null_fields_read_as_absent_like_gos_decoder() -> None:
    piece = {
        "domainCount": 2,
        "valuesPerLevel": [{"universal": None, "individual": {"roots": ["a", "b"]}}],
        "podCounts": {"universal": 3, "individual": None},
    }
    domains = convert(workload(piece), V1BETA1)["status"]["admission"]["podSetAssignments"][0][
        "topologyAssignment"
    ]["domains"]
    assert domains == [{"values": ["a"], "count": 3}, {"values": ["b"], "count": 3}]


@pytest.mark.parametrize(
    "domains",
    [[{"values": []}], ["domain"], [{"count": 1}], {"values": ["a"]}],
)
def test_v1beta1_domains_not_shaped_as_domains_are_refused(domains: Any) -> None:
    old = {
        "apiVersion": V1BETA1,
        "kind": "Workload",
        "status": {
            "admission": {
                "podSetAssignments": [{"topologyAssignment": {"levels": ["rack"], "domains": domains}}]
            }
        },
    }
    with pytest.raises(ConversionError, match=r"topologyAssignment\.(domains|levels)"):
        convert(old, V1BETA2)


def test_a_review_nested_deeper_than_the_bound_fails_with_the_reason() -> None:
    deep: Any = "leaf"
    for _ in range(MAX_DEPTH - 4):  # review, request, objects, the object: the spec may nest this deep
        deep = {"a": deep}
    within = orjson.loads(
        answer_review(review({"apiVersion": V1BETA2, "kind": "ClusterQueue", "spec": deep}))
    )
    assert within["response"]["result"] == {"status": "Success"}
    beyond = {"apiVersion": V1BETA2, "kind": "ClusterQueue", "spec": {"a": deep}}
    answer = orjson.loads(answer_review(review(beyond)))["response"]
    assert answer["uid"] == "u-1"
    assert answer["result"]["status"] == "Failure"
    assert f"deeper than {MAX_DEPTH} levels" in answer["result"]["message"]


def test_podsets_and_assignments_of_the_wrong_type_are_left_as_they_are() -> None:
    obj = {"apiVersion": V1BETA2, "kind": "Workload", "spec": {"podSets": 3}, "status": {"admission": 5}}
    assert convert(obj, V1BETA1)["spec"] == {"podSets": 3}
    obj = {"apiVersion": V1BETA2, "kind": "Workload", "status": {"admission": {"podSetAssignments": "x"}}}
    assert convert(obj, V1BETA1)["status"] == {"admission": {"podSetAssignments": "x"}}
