"""The CEL rules of Kueue's Workload CRD, enforced by our validating webhook with kube-apiserver's wording.

Kueue's v1beta2 Workload CRD carries rules on the whole object (one assignment per pod set while quota is
reserved; priority class, queue and time limit frozen while quota is held or the workload admitted), on
``spec`` (a priority class needs a resolved priority), on each pod set (``minCount`` within ``count``), on
``spec.priorityClassRef`` (a kind that belongs to its group) and on ``status`` (the dispatch cluster).
A rule on the object root is reported at ``<nil>``, as kube-apiserver does.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kueue_webhook.admission.kueue import validate_kueue_object
from kueue_webhook.admission.review import Verdict
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration
from tests.unit.admission.golden import golden_review, request_of
from tests.unit.admission.servers import golden_object, review_for

RESERVED = {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "reserved"}
ADMITTED = {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "admitted"}
WPC_REF = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}
POD_REF = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "critical"}


def validate(obj: dict[str, Any], old: dict[str, Any] | None = None) -> Verdict:
    review = review_for(obj, operation="UPDATE" if old else "CREATE", old=old)
    return validate_kueue_object(request_of(review), config=Configuration(), view=StaticClusterView())


def pending() -> dict[str, Any]:
    workload: dict[str, Any] = golden_object("kueue-workload-create")
    workload.pop("status", None)
    return workload


def reserved(*conditions: dict[str, Any]) -> dict[str, Any]:
    workload: dict[str, Any] = golden_review(8)["request"]["object"]
    workload["status"]["conditions"] = [copy.deepcopy(c) for c in conditions or (RESERVED,)]
    return workload


def with_spec(workload: dict[str, Any], **spec: Any) -> dict[str, Any]:
    changed = copy.deepcopy(workload)
    for key, value in spec.items():
        if value is None:
            changed["spec"].pop(key, None)
        else:
            changed["spec"][key] = value
    return changed


def test_min_count_cannot_exceed_count() -> None:
    workload = pending()
    workload["spec"]["podSets"][0].update(count=2, minCount=3)
    assert validate(workload).message == (
        'spec.podSets[0]: Invalid value: "object": minCount should be positive and less or equal to count'
    )
    workload["spec"]["podSets"][0]["minCount"] = 2
    assert validate(workload).allowed


@pytest.mark.parametrize(
    ("ref", "kind_message"),
    [
        (
            {**WPC_REF, "kind": "PriorityClass"},
            "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group",
        ),
        (
            {**POD_REF, "kind": "WorkloadPriorityClass"},
            "only the PriorityClass kind is allowed for the scheduling.k8s.io group",
        ),
    ],
)
def test_a_priority_class_kind_must_belong_to_its_group(ref: dict[str, str], kind_message: str) -> None:
    workload = with_spec(pending(), priorityClassRef=ref, priority=100)
    assert validate(workload).message == f'spec.priorityClassRef: Invalid value: "object": {kind_message}'
    for good in (WPC_REF, POD_REF):
        assert validate(with_spec(workload, priorityClassRef=good)).allowed


def test_a_priority_class_needs_a_resolved_priority() -> None:
    workload = with_spec(pending(), priorityClassRef=WPC_REF, priority=None)
    assert validate(workload).message == (
        'spec: Invalid value: "object": priority should not be nil when priorityClassRef is set'
    )
    assert validate(with_spec(workload, priority=0)).allowed


def test_an_unknown_priority_class_group_is_named_and_stops_the_rules() -> None:
    workload = with_spec(pending(), priorityClassRef={**WPC_REF, "group": "example.com"}, priority=None)
    assert validate(workload).message == (
        'spec.priorityClassRef.group: Unsupported value: "example.com": '
        'supported values: "kueue.x-k8s.io", "scheduling.k8s.io"'
    )


def test_one_pod_set_assignment_per_pod_set_while_quota_is_reserved() -> None:
    workload = reserved()
    extra = {**workload["status"]["admission"]["podSetAssignments"][0], "name": "main"}
    workload["status"]["admission"]["podSetAssignments"].append(extra)
    assert validate(workload).message == (
        '<nil>: Invalid value: "object": podSetAssignments must have the same number of podSets as the spec'
    )
    del workload["status"]["admission"]["podSetAssignments"]
    assert validate(workload).message == (
        '<nil>: Invalid value: "object": no such key: podSetAssignments evaluating rule: '
        "podSetAssignments must have the same number of podSets as the spec"
    )
    finished = reserved({**RESERVED, "type": "Finished"})  # no reservation: the rule does not apply
    finished["status"]["admission"]["podSetAssignments"] = []
    assert validate(finished).allowed


def test_priority_class_is_frozen_while_quota_is_reserved() -> None:
    old = with_spec(reserved(), priorityClassRef=WPC_REF, priority=100)
    frozen = "while workload quota reserved"
    assert validate(with_spec(old, priorityClassRef=None), old).message == (
        f'<nil>: Invalid value: "object": priorityClassRef is immutable {frozen}'
    )
    assert validate(with_spec(old, priorityClassRef=POD_REF), old).message == (
        f'[<nil>: Invalid value: "object": priorityClassRef.group is immutable {frozen}, '
        f'<nil>: Invalid value: "object": priorityClassRef.kind is immutable {frozen}, '
        '<nil>: Invalid value: "object": '
        f"priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass {frozen}]"
    )
    # a WorkloadPriorityClass may be renamed (Kueue re-reads its value), a PriorityClass may not
    assert validate(with_spec(old, priorityClassRef={**WPC_REF, "name": "low"}), old).allowed
    pod_old = with_spec(old, priorityClassRef=POD_REF)
    assert validate(with_spec(pod_old, priorityClassRef={**POD_REF, "name": "other"}), pod_old).message == (
        '<nil>: Invalid value: "object": '
        f"priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass {frozen}"
    )
    unreserved = copy.deepcopy(old)
    unreserved["status"] = {}
    assert validate(with_spec(unreserved, priorityClassRef=POD_REF), unreserved).allowed


def test_queue_name_is_frozen_while_quota_stays_reserved() -> None:
    old = reserved()
    moved = with_spec(old, queueName="team-b")
    assert validate(moved, old).message == (
        '<nil>: Invalid value: "object": queueName is immutable while workload quota reserved'
    )
    assert validate(with_spec(old, queueName=None), old).message == validate(moved, old).message
    released = copy.deepcopy(moved)
    released["status"]["conditions"] = [{**RESERVED, "status": "False", "reason": "Pending"}]
    del released["status"]["admission"]
    assert validate(released, old).allowed  # the reservation is being dropped in the same write


def test_time_limit_is_frozen_while_admitted() -> None:
    old = with_spec(reserved(RESERVED, ADMITTED), maximumExecutionTimeSeconds=600)
    message = (
        '<nil>: Invalid value: "object": '
        "maximumExecutionTimeSeconds is immutable while workload quota reserved"
    )
    assert validate(with_spec(old, maximumExecutionTimeSeconds=60), old).message == message
    assert validate(with_spec(old, maximumExecutionTimeSeconds=None), old).message == message
    reserved_only = with_spec(reserved(), maximumExecutionTimeSeconds=600)
    assert validate(with_spec(reserved_only, maximumExecutionTimeSeconds=60), reserved_only).allowed


def test_dispatch_cluster_is_kept_once_set_and_excludes_nominations() -> None:
    old = pending()
    old["status"] = {"clusterName": "worker-1"}
    new = copy.deepcopy(old)
    new["status"]["clusterName"] = "worker-2"
    assert validate(new, old).message == 'status: Invalid value: "object": clusterName is immutable once set'
    both = pending()
    both["status"] = {"clusterName": "worker-1", "nominatedClusterNames": ["worker-1", "worker-2"]}
    assert validate(both).message == (
        'status: Invalid value: "object": clusterName and nominatedClusterNames are mutually exclusive'
    )
    nominated = pending()
    nominated["status"] = {"nominatedClusterNames": ["worker-1"]}
    assert validate(nominated).allowed
    chosen = copy.deepcopy(nominated)
    chosen["status"] = {"clusterName": "worker-1", "nominatedClusterNames": []}
    assert validate(chosen, nominated).allowed
