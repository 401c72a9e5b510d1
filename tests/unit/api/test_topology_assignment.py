"""A topology assignment read and written in Kueue's v1beta2 encoding (kueue_webhook.api.topology_assignment):
the samples are the ones Kueue's own pkg/util/tas tests (tas_assignment_test.go) map both ways or decode,
so an assignment Kueue's scheduler writes places pods here exactly as Kueue's ungater would."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_webhook.api.topology_assignment import (
    MAX_DOMAINS,
    Domain,
    TooManyDomains,
    TopologyAssignmentError,
    decode,
    encode,
)


def individual(roots: list[str], prefix: str | None = None, suffix: str | None = None) -> dict[str, Any]:
    values: dict[str, Any] = {"roots": roots}
    if prefix is not None:
        values["prefix"] = prefix
    if suffix is not None:
        values["suffix"] = suffix
    return {"individual": values}


def piece(count: int, levels: list[dict[str, Any]], pods: int | list[int]) -> dict[str, Any]:
    counts = {"universal": pods} if isinstance(pods, int) else {"individual": pods}
    return {"domainCount": count, "valuesPerLevel": levels, "podCounts": counts}


def domains(*pairs: tuple[list[str], int]) -> list[Domain]:
    return [Domain(tuple(values), count) for values, count in pairs]


# Kueue's bothWaysTestCases: its encoder writes exactly these slices for these domains
BOTH_WAYS = {
    "one domain": (
        ["a", "b"],
        domains((["a1", "b1"], 1)),
        [piece(1, [{"universal": "a1"}, {"universal": "b1"}], 1)],
    ),
    "multiple domains, same counts, no common prefix": (
        ["a", "b"],
        domains((["a1", "b1"], 1), (["a2", "b2"], 1)),
        [piece(2, [individual(["1", "2"], prefix="a"), individual(["1", "2"], prefix="b")], 1)],
    ),
    "multiple domains, different counts, common prefix and suffix": (
        ["a", "b"],
        domains((["p.a1.s", "p.b1.s"], 1), (["p.a2.s", "p.b2.s"], 2)),
        [
            piece(
                2,
                [individual(["1", "2"], "p.a", ".s"), individual(["1", "2"], "p.b", ".s")],
                [1, 2],
            )
        ],
    ),
    "multiple domains, universal value": (
        ["a", "b"],
        domains((["a1", "x"], 1), (["a1", "y"], 2)),
        [piece(2, [{"universal": "a1"}, individual(["x", "y"])], [1, 2])],
    ),
    "shrinking prefix": (
        ["a"],
        domains((["a123"], 1), (["a12"], 1), (["a1"], 1), (["a13"], 1)),
        [piece(4, [individual(["23", "2", "", "3"], prefix="a1")], 1)],
    ),
    "shrinking suffix": (
        ["a"],
        domains((["123b"], 1), (["23b"], 1), (["3b"], 1), (["13b"], 1)),
        [piece(4, [individual(["12", "2", "", "1"], suffix="3b")], 1)],
    ),
    "prefix and suffix overlap partially": (
        ["a"],
        domains((["abacacada"], 1), (["abacada"], 1)),
        [piece(2, [individual(["ac", ""], prefix="ab", suffix="acada")], 1)],
    ),
    "prefix and suffix overlap fully, shrinking strings": (
        ["a"],
        domains((["ababa"], 1), (["aba"], 1)),
        [piece(2, [individual(["ab", ""], suffix="aba")], 1)],
    ),
    "prefix and suffix overlap fully, growing strings": (
        ["a"],
        domains((["aba"], 1), (["ababa"], 1)),
        [piece(2, [individual(["", "ab"], suffix="aba")], 1)],
    ),
}


@pytest.mark.parametrize("name", sorted(BOTH_WAYS))
def test_kueues_sample_assignments_decode_and_encode_both_ways(name: str) -> None:
    levels, expected_domains, slices = BOTH_WAYS[name]
    topology = {"levels": levels, "slices": slices}
    assert decode(topology) == expected_domains
    assert encode(levels, expected_domains) == topology


def test_an_empty_assignment_has_no_slices_as_kueue_writes_it() -> None:
    assert encode(["a", "b"], []) == {"levels": ["a", "b"]}
    assert decode({"levels": ["a", "b"]}) == []


def test_kueues_multi_slice_samples_decode_in_slice_order() -> None:
    # Kueue's oneWayTestCases: several slices (as its hostname-prefix encoder writes), read in order
    topology = {
        "levels": ["a", "b"],
        "slices": [
            piece(2, [{"universal": "a1"}, individual(["1", "2"], "b", "-s")], [2, 3]),
            piece(3, [individual(["2", "3", "4"], prefix="a"), individual(["x", "y", "z"], suffix="-t")], 5),
            piece(2, [{"universal": "a10"}, {"universal": "b10"}], 10),
        ],
    }
    assert decode(topology) == domains(
        (["a1", "b1-s"], 2),
        (["a1", "b2-s"], 3),
        (["a2", "x-t"], 5),
        (["a3", "y-t"], 5),
        (["a4", "z-t"], 5),
        (["a10", "b10"], 10),
        (["a10", "b10"], 10),
    )


_value = st.text(alphabet="ab-.1", max_size=6)


@given(
    level_count=st.integers(min_value=1, max_value=3),
    rows=st.lists(
        st.tuples(st.lists(_value, min_size=3, max_size=3), st.integers(min_value=1, max_value=9)),
        max_size=6,
    ),
)
def test_any_domains_survive_encode_then_decode(level_count: int, rows: list[tuple[list[str], int]]) -> None:
    levels = ["block", "rack", "host"][:level_count]
    original = [Domain(tuple(values[:level_count]), count) for values, count in rows]
    assert decode(encode(levels, original)) == original


@pytest.mark.parametrize(
    ("topology", "message"),
    [
        ({"levels": "host"}, r"topologyAssignment\.levels must be a list of strings"),
        (
            {"levels": ["host"], "slices": [piece(2, [individual(["a"])], 1)]},
            r"valuesPerLevel\[0\]\.individual\.roots must be a list of strings of length equal",
        ),
        (
            {"levels": ["rack", "host"], "slices": [piece(1, [{"universal": "a"}], 1)]},
            r"slices\[0\]\.valuesPerLevel must have the same length as the number of levels \(2\)",
        ),
        (
            {"levels": ["host"], "slices": [piece(2, [{"universal": "a"}], [1])]},
            r"podCounts\.individual must be a list of whole numbers",
        ),
        (
            {
                "levels": ["host"],
                "slices": [piece(1, [{"universal": "a", "individual": {"roots": ["b"]}}], 1)],
            },
            r"exactly one of the fields in \[universal individual\] must be set",
        ),
    ],
)
def test_a_malformed_assignment_is_refused_naming_the_field(topology: dict[str, Any], message: str) -> None:
    with pytest.raises(TopologyAssignmentError, match=message):
        decode(topology)


def test_slices_claiming_more_domains_than_kueue_lists_are_refused_before_expanding() -> None:
    bomb = piece(MAX_DOMAINS, [{"universal": "host-1"}], 1)
    with pytest.raises(TooManyDomains, match=f"more than {MAX_DOMAINS} domains"):
        decode({"levels": ["host"], "slices": [bomb, piece(1, [{"universal": "host-2"}], 1)]})


def test_the_error_names_where_the_assignment_is() -> None:
    where = "status.admission.podSetAssignments[1].topologyAssignment"
    with pytest.raises(TopologyAssignmentError, match=r"^status\.admission\.podSetAssignments\[1\]"):
        decode({"levels": [1]}, where)
