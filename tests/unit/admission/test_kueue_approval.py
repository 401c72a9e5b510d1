"""The Workload webhook guards the manual-approval annotation: only the configured approvers may set it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kueue_webhook.admission.kueue import validate_kueue_object
from kueue_webhook.admission.review import Verdict
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration, parse_configuration_mapping
from tests.unit.admission.golden import request_of
from tests.unit.admission.servers import golden_object, review_for

KEY = "approval.kueue-webhook.io/budget"


def update(old: dict[str, Any], new: dict[str, Any], *, user: str, groups: list[str]) -> Verdict:
    review = review_for(new, operation="UPDATE", old=old)
    review["request"]["userInfo"] = {"username": user, "groups": groups}
    config = parse_configuration_mapping({"manualApproval": {"approvers": ["alice", "group:ml-leads"]}})
    assert isinstance(config, Configuration)
    return validate_kueue_object(request_of(review), config=config, view=StaticClusterView())


def approved(workload: dict[str, Any], value: str = "approved") -> dict[str, Any]:
    new = copy.deepcopy(workload)
    new["metadata"].setdefault("annotations", {})[KEY] = value
    return new


@pytest.mark.parametrize(("user", "groups"), [("alice", []), ("bob", ["ml-leads"])])
def test_an_approver_by_name_or_group_may_approve(user: str, groups: list[str]) -> None:
    workload = golden_object("kueue-workload-create")
    assert update(workload, approved(workload), user=user, groups=groups).allowed


def test_anyone_else_is_denied_with_the_annotation_named() -> None:
    workload = golden_object("kueue-workload-create")
    verdict = update(workload, approved(workload), user="mallory", groups=["system:authenticated"])
    assert not verdict.allowed
    assert verdict.message == (
        f"metadata.annotations[{KEY}]: Forbidden: user mallory may not approve or reject admission checks"
    )


def test_removing_an_approval_is_an_approval_change_too() -> None:
    workload = approved(golden_object("kueue-workload-create"))
    bare = copy.deepcopy(workload)
    del bare["metadata"]["annotations"][KEY]
    assert not update(workload, bare, user="mallory", groups=[]).allowed
    assert update(workload, bare, user="alice", groups=[]).allowed


def test_other_annotation_changes_need_no_approver() -> None:
    workload = approved(golden_object("kueue-workload-create"))
    edited = copy.deepcopy(workload)
    edited["metadata"]["annotations"]["team"] = "vision"
    assert update(workload, edited, user="mallory", groups=[]).allowed


def test_a_workload_cannot_be_created_approved() -> None:
    review = review_for(approved(golden_object("kueue-workload-create")), operation="CREATE")
    review["request"]["userInfo"] = {"username": "mallory", "groups": []}
    verdict = validate_kueue_object(request_of(review), config=Configuration(), view=StaticClusterView())
    assert not verdict.allowed and KEY in (verdict.message or "")
