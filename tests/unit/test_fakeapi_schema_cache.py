"""The fake API server remembers subtrees it already pruned, defaulted and validated; what it answers must
not change because of it: the same bytes under another schema node, or a changed value, are checked anew."""

from __future__ import annotations

import copy
from typing import Any

from tests.fakeapi import schema

CONDITION = {
    "type": "object",
    "required": ["type", "status"],
    "properties": {
        "type": {"type": "string"},
        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "reason": {"type": "string", "default": "Unset"},
    },
}
STRICTER = {**CONDITION, "required": ["type", "status", "message"]}


def status_schema(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "status": {"type": "object", "properties": {"conditions": {"type": "array", "items": item}}}
        },
    }


def test_a_cached_clean_subtree_is_still_refused_under_a_stricter_schema_node() -> None:
    obj = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "R"}]}}
    assert schema.validate_fields(obj, status_schema(CONDITION), ("status",)) == []
    assert schema.validate_fields(obj, status_schema(CONDITION), ("status",)) == []  # from the cache
    causes = schema.validate_fields(obj, status_schema(STRICTER), ("status",))
    assert [c["field"] for c in causes] == ["status.conditions[0].message"]


def test_a_changed_value_is_validated_and_defaulted_again() -> None:
    root = status_schema(CONDITION)
    good = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    schema.apply_defaults(good, root)
    assert good["status"]["conditions"][0]["reason"] == "Unset"
    again = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    schema.apply_defaults(again, root)  # same input as before defaulting: defaulted again, not skipped
    assert again == good
    bad = copy.deepcopy(good)
    bad["status"]["conditions"][0]["status"] = "Maybe"
    causes = schema.validate_fields(bad, root, ("status",))
    assert [c["reason"] for c in causes] == ["FieldValueNotSupported"]


def test_unknown_fields_are_reported_every_time_not_only_the_first() -> None:
    root = status_schema(CONDITION)
    for _ in range(2):
        obj = {"status": {"conditions": [{"type": "Ready", "status": "True", "extra": 1}]}}
        assert schema.prune(obj, root) == ["status.conditions[0].extra"]
        assert obj["status"]["conditions"][0] == {"type": "Ready", "status": "True"}
