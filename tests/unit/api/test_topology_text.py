"""The v1beta1 domains written as text (kueue_webhook.api.topology_text) are the very bytes the domain objects
serialise to, and their size is known exactly before they are written: what a v1beta1 reader of a
Workload gets does not depend on which way the ConversionReview answer was built."""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from kueue_webhook.api.conversion import V1BETA1, V1BETA2, convert, convert_for_answer, expanded_size
from kueue_webhook.api.conversion_review import answer_review

# values a node label could hold, and what else JSON strings carry: quotes, backslashes, control
# characters, non-ASCII (escaped or written as UTF-8 by orjson)
_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=8)
_count = st.integers(min_value=1, max_value=2**31 - 1)


@st.composite
def topologies(draw: st.DrawFn) -> dict[str, Any]:
    """A v1beta2 topology assignment shaped as the Workload CRD requires."""
    levels = draw(st.lists(st.sampled_from(["block", "rack", "host", "zone"]), min_size=1, max_size=4))
    slices = []
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        count = draw(st.integers(min_value=1, max_value=6))
        per_level = []
        for _ in levels:
            if draw(st.booleans()):
                per_level.append({"universal": draw(_text)})
                continue
            individual: dict[str, Any] = {"roots": draw(st.lists(_text, min_size=count, max_size=count))}
            for affix in ("prefix", "suffix"):
                value = draw(st.none() | _text)
                if value is not None:
                    individual[affix] = value
            per_level.append({"individual": individual})
        pods = (
            {"universal": draw(_count)}
            if draw(st.booleans())
            else {"individual": draw(st.lists(_count, min_size=count, max_size=count))}
        )
        slices.append({"domainCount": count, "valuesPerLevel": per_level, "podCounts": pods})
    return {"levels": levels, "slices": slices}


def workload(topology: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": V1BETA2,
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns"},
        "status": {"admission": {"podSetAssignments": [{"name": "main", "topologyAssignment": topology}]}},
    }


@given(topology=topologies())
def test_domains_written_as_text_are_the_bytes_of_the_domain_objects(topology: dict[str, Any]) -> None:
    obj = workload(topology)
    as_objects = orjson.dumps(convert(obj, V1BETA1))
    assert orjson.dumps(convert_for_answer(copy.deepcopy(obj), V1BETA1)) == as_objects
    domains = orjson.loads(as_objects)["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert expanded_size(obj, V1BETA1) == len(orjson.dumps(domains["domains"]))


def test_a_conversion_review_answers_the_domains_a_v1beta1_reader_expects() -> None:
    # the example of Kueue's TAS design (KEP 2724): block-1 / rack-1 with 4 pods, block-1 / rack-2 with 2
    topology = {
        "levels": ["cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"],
        "slices": [
            {
                "domainCount": 2,
                "valuesPerLevel": [
                    {"universal": "block-1"},
                    {"individual": {"prefix": "rack-", "roots": ["1", "2"]}},
                ],
                "podCounts": {"individual": [4, 2]},
            }
        ],
    }
    review = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "u", "desiredAPIVersion": V1BETA1, "objects": [workload(topology)]},
    }
    answer = orjson.loads(answer_review(orjson.dumps(review)))["response"]
    converted = answer["convertedObjects"][0]["status"]["admission"]["podSetAssignments"][0]
    assert converted["topologyAssignment"]["domains"] == [
        {"values": ["block-1", "rack-1"], "count": 4},
        {"values": ["block-1", "rack-2"], "count": 2},
    ]
