"""Hypothesis material for damaging golden AdmissionReviews: any JSON value, and one field below
``request`` deleted or replaced by such a value."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=8,
)


def damage_one_field(draw: st.DrawFn, review: dict[str, Any]) -> None:
    """Walk down from ``review["request"]`` to a drawn field and delete it or replace it, in place."""
    parent: Any = review["request"]
    while True:
        keys = sorted(parent) if isinstance(parent, dict) else list(range(len(parent)))
        if not keys:
            return
        key = draw(st.sampled_from(keys))
        child = parent[key]
        if isinstance(child, dict | list) and child and draw(st.booleans()):
            parent = child
            continue
        if draw(st.booleans()):
            del parent[key]
        else:
            parent[key] = draw(JSON_VALUES)
        return
