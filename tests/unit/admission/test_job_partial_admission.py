"""Kueue's Job webhook rules for partial admission (job_webhook.go validatePartialAdmissionCreate,
validateSyncCompletionCreate, validatePartialAdmissionUpdate), with Kueue's words."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_webhook.admission.jobs import validate_job
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration
from tests.unit.admission.golden import CONTROLLER, golden_review, request_of

MIN = "kueue.x-k8s.io/job-min-parallelism"
SYNC = "kueue.x-k8s.io/job-completions-equal-parallelism"
MIN_PATH = f"metadata.annotations[{MIN}]"
SYNC_PATH = f"metadata.annotations[{SYNC}]"


def message(review: dict[str, Any]) -> str:
    verdict = validate_job(request_of(review), config=Configuration(), view=StaticClusterView())
    return "" if verdict.allowed else verdict.message


def created(parallelism: int, annotations: dict[str, str], **spec: Any) -> dict[str, Any]:
    review = golden_review(0)
    obj = review["request"]["object"]
    obj["metadata"]["annotations"] = annotations
    obj["spec"].update(parallelism=parallelism, completions=parallelism, **spec)
    return review


def updated(
    *, old_suspend: bool, new_suspend: bool, old: dict[str, Any], new: dict[str, Any]
) -> dict[str, Any]:
    review = golden_review(5)
    review["request"]["userInfo"]["username"] = CONTROLLER
    for which, suspend, changes in (("oldObject", old_suspend, old), ("object", new_suspend, new)):
        obj = review["request"][which]
        obj["spec"].update(suspend=suspend, parallelism=4, completions=4)
        obj["metadata"]["annotations"] = dict(changes.pop("annotations", {}))
        obj["spec"].update(changes)
    return review


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2", ""),
        ("3", ""),
        ("1", ""),
        ("4", f"{MIN_PATH}: Invalid value: 4: should be between 0 and 3"),
        ("0", f"{MIN_PATH}: Invalid value: 0: should be between 0 and 3"),
        ("-1", f"{MIN_PATH}: Invalid value: -1: should be between 0 and 3"),
        ("NaN", f'{MIN_PATH}: Invalid value: "NaN": strconv.Atoi: parsing "NaN": invalid syntax'),
        (" 2", f'{MIN_PATH}: Invalid value: " 2": strconv.Atoi: parsing " 2": invalid syntax'),
    ],
)
def test_min_parallelism_is_an_integer_between_one_and_the_pod_count_less_one(
    value: str, expected: str
) -> None:
    assert message(created(4, {MIN: value})) == expected


def test_min_parallelism_is_bounded_by_completions_when_they_are_fewer() -> None:
    review = created(4, {MIN: "2"})
    review["request"]["object"]["spec"]["completions"] = 2  # podsCount = min(parallelism, completions)
    assert message(review) == f"{MIN_PATH}: Invalid value: 2: should be between 0 and 1"


def test_completions_follow_parallelism_only_for_indexed_jobs_with_equal_counts() -> None:
    assert message(created(4, {SYNC: "true"}, completionMode="Indexed")) == ""
    assert message(created(4, {SYNC: "true"})) == (
        f'{SYNC_PATH}: Invalid value: "true": should not be enabled for NonIndexed jobs'
    )
    review = created(4, {SYNC: "true"}, completionMode="Indexed")
    review["request"]["object"]["spec"]["completions"] = 6
    assert message(review) == (
        f"spec.completions: Invalid value: 6: should be equal to parallelism when {SYNC} annotation is true"
    )
    assert message(created(4, {SYNC: "-"})) == (
        f'{SYNC_PATH}: Invalid value: "-": strconv.ParseBool: parsing "-": invalid syntax'
    )


def test_a_running_partially_admitted_jobs_parallelism_cannot_change() -> None:
    review = updated(
        old_suspend=False,
        new_suspend=False,
        old={"annotations": {MIN: "2"}},
        new={
            "annotations": {MIN: "2"},
            "parallelism": 3,
        },
    )
    assert message(review) == (
        "spec.parallelism: Forbidden: "
        "cannot change when partial admission is enabled and the job is not suspended"
    )


def test_a_suspended_partially_admitted_job_may_change_parallelism_as_the_start_does() -> None:
    start = updated(
        old_suspend=True,
        new_suspend=False,
        old={"annotations": {MIN: "2"}},
        new={
            "annotations": {MIN: "2"},
            "parallelism": 2,
        },
    )
    assert message(start) == ""


def test_without_the_annotation_a_running_jobs_parallelism_may_change() -> None:
    assert message(updated(old_suspend=False, new_suspend=False, old={}, new={"parallelism": 3})) == ""


def test_a_changed_min_parallelism_is_validated_again() -> None:
    review = updated(
        old_suspend=True,
        new_suspend=True,
        old={"annotations": {MIN: "2"}},
        new={
            "annotations": {MIN: "9"},
        },
    )
    assert message(review) == f"{MIN_PATH}: Invalid value: 9: should be between 0 and 3"


def test_completions_sync_is_fixed_while_the_job_runs() -> None:
    review = updated(
        old_suspend=False,
        new_suspend=False,
        old={"completionMode": "Indexed"},
        new={"completionMode": "Indexed", "annotations": {SYNC: "true"}},
    )
    assert message(review) == f"{SYNC_PATH}: Forbidden: field is immutable while the job is not suspended"
