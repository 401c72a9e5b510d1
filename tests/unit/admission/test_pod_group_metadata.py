"""Kueue's pod webhook checks of group metadata (pkg/controller/jobs/pod/pod_webhook.go), as users read them:
field paths Kueue uses, apimachinery's field-error format."""

from __future__ import annotations

from typing import Any

from kueue_webhook.admission.pod_groups import pod_metadata_errors
from tests.support import builders

JSON = dict[str, Any]
NAME = "kueue.x-k8s.io/pod-group-name"
TOTAL = "kueue.x-k8s.io/pod-group-total-count"
TOTAL_PATH = f"metadata.annotations[{TOTAL}]"
NAME_LABEL_PATH = f"metadata.labels[{NAME}]"
NAME_ANNOTATION_PATH = f"metadata.annotations[{NAME}]"


def pod(labels: JSON | None = None, annotations: JSON | None = None) -> JSON:
    return builders.pod(
        "p",
        "ns",
        labels=labels or {},
        metadata={"annotations": annotations or {}},
        pod_spec={"containers": [{"name": "c"}]},
    )


def messages(new: JSON, old: JSON | None = None) -> list[str]:
    return [str(error) for error in pod_metadata_errors(new, old)]


def test_a_pod_with_a_whole_group_or_none_passes() -> None:
    assert messages(pod()) == []
    assert messages(pod({NAME: "g"}, {TOTAL: "3"})) == []
    assert messages(pod(annotations={NAME: "g", TOTAL: "3"})) == []


def test_a_total_count_without_a_group_name_requires_the_name_where_kueue_reads_it() -> None:
    (message,) = messages(pod(annotations={TOTAL: "2"}))
    assert message.startswith(f"{NAME_LABEL_PATH}: Required value: ")
    assert TOTAL in message and NAME in message


def test_a_group_name_without_a_total_count_requires_the_count() -> None:
    (message,) = messages(pod({NAME: "g"}))
    assert message.startswith(f"{TOTAL_PATH}: Required value: ")
    (by_annotation,) = messages(pod(annotations={NAME: "g"}))
    assert by_annotation.startswith(f"{TOTAL_PATH}: Required value: ")
    assert "annotation" in by_annotation.split("Required value: ")[1].split(TOTAL)[1]


def test_the_total_count_must_be_a_positive_integer() -> None:
    (zero,) = messages(pod({NAME: "g"}, {TOTAL: "0"}))
    assert zero.startswith(f'{TOTAL_PATH}: Invalid value: "0": ') and "positive integer" in zero
    assert messages(pod({NAME: "g"}, {TOTAL: "-2"}))[0].startswith(f'{TOTAL_PATH}: Invalid value: "-2": ')
    assert messages(pod({NAME: "g"}, {TOTAL: "two"})) == [
        f'{TOTAL_PATH}: Invalid value: "two": strconv.Atoi: parsing "two": invalid syntax'
    ]
    assert messages(pod({NAME: "g"}, {TOTAL: "99999999999999999999"})) == [
        f'{TOTAL_PATH}: Invalid value: "99999999999999999999": strconv.Atoi: parsing '
        '"99999999999999999999": value out of range'
    ]
    assert messages(pod({NAME: "g"}, {TOTAL: "+2"})) == []  # Go's Atoi takes a sign


def test_the_group_name_must_be_able_to_name_a_workload() -> None:
    (message,) = messages(pod({NAME: "Team_A"}, {TOTAL: "2"}))
    assert message.startswith(f'{NAME_LABEL_PATH}: Invalid value: "Team_A": a lowercase RFC 1123 subdomain')
    # the annotation wins over the label, and is the one checked
    (annotated,) = messages(pod({NAME: "fine"}, {NAME: "Bad!", TOTAL: "2"}))
    assert annotated.startswith(f'{NAME_ANNOTATION_PATH}: Invalid value: "Bad!": ')


def test_a_bad_name_and_a_missing_count_are_both_reported() -> None:
    assert [m.split(":")[0] for m in messages(pod({NAME: "Bad"}))] == [NAME_LABEL_PATH, TOTAL_PATH]


def test_the_group_name_is_immutable_once_set_but_may_be_added() -> None:
    old = pod({NAME: "g"}, {TOTAL: "2"})
    assert messages(pod({NAME: "h"}, {TOTAL: "2"}), old) == [
        f'{NAME_LABEL_PATH}: Invalid value: "h": field is immutable'
    ]
    removed = messages(pod(annotations={}), old)
    assert f'{NAME_LABEL_PATH}: Invalid value: "": field is immutable' in removed
    assert messages(pod({NAME: "g"}, {TOTAL: "2"}), pod()) == []


def test_the_total_count_may_change_as_in_kueue() -> None:
    assert messages(pod({NAME: "g"}, {TOTAL: "3"}), pod({NAME: "g"}, {TOTAL: "2"})) == []


def test_a_prebuilt_workload_on_a_grouped_pod_must_be_the_groups() -> None:
    prebuilt = "kueue.x-k8s.io/prebuilt-workload-name"
    (message,) = messages(pod({NAME: "g", prebuilt: "other"}, {TOTAL: "2"}))
    assert message.startswith(f'metadata.labels[{prebuilt}]: Invalid value: "other": ')
    (annotated,) = messages(pod({NAME: "g"}, {TOTAL: "2", prebuilt: "w"}))
    assert annotated.startswith(f'metadata.annotations[{prebuilt}]: Invalid value: "w": ')
    assert messages(pod({NAME: "g", prebuilt: "g"}, {TOTAL: "2"})) == []
    assert messages(pod({prebuilt: "other"})) == []  # a pod on its own may name any Workload


def test_the_managed_label_only_says_true() -> None:
    (message,) = messages(pod({"kueue.x-k8s.io/managed": "yes"}))
    assert message.startswith("metadata.labels[kueue.x-k8s.io/managed]: Forbidden: ")


def test_an_unretriable_group_stays_unretriable() -> None:
    key = "kueue.x-k8s.io/retriable-in-group"
    old = pod({NAME: "g"}, {TOTAL: "2", key: "false"})
    (message,) = messages(pod({NAME: "g"}, {TOTAL: "2"}), old)
    assert message.startswith(f"metadata.annotations[{key}]: Forbidden: ")
    assert messages(pod({NAME: "g"}, {TOTAL: "2", key: "false"}), pod({NAME: "g"}, {TOTAL: "2"})) == []
