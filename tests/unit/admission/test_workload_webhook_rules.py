"""Kueue's Workload webhook checks beyond its CRD (pkg/webhooks/workload_webhook.go), with its messages.

What an admission check asks to change in the pods (``podSetUpdates``) is checked as a pod would check it;
only one pod set may shrink under partial admission; while quota stays reserved, reclaimable pods only
grow; a dispatch cluster is one of those nominated.
"""

from __future__ import annotations

import copy
from typing import Any

from kueue_webhook.admission.kueue import validate_kueue_object
from kueue_webhook.admission.review import Verdict
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration
from kueue_webhook.api.topology_assignment import Domain, encode
from tests.unit.admission.golden import golden_review, request_of
from tests.unit.admission.servers import golden_object, review_for

RESERVED = {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "reserved"}
UPDATES = "status.admissionChecks[0].podSetUpdates[0]"


def validate(obj: dict[str, Any], old: dict[str, Any] | None = None) -> Verdict:
    review = review_for(obj, operation="UPDATE" if old else "CREATE", old=old)
    return validate_kueue_object(request_of(review), config=Configuration(), view=StaticClusterView())


def reserved() -> dict[str, Any]:
    workload: dict[str, Any] = golden_review(8)["request"]["object"]
    workload["status"]["conditions"] = [copy.deepcopy(RESERVED)]
    return workload


def with_update(**update: Any) -> dict[str, Any]:
    workload = reserved()
    check = {
        "name": "capacity",
        "state": "Ready",
        "message": "ok",
        "podSetUpdates": [{"name": "main", **update}],
    }
    workload["status"]["admissionChecks"] = [check]
    return workload


def test_a_well_formed_pod_set_update_is_accepted() -> None:
    workload = with_update(
        labels={"provisioned": "true"},
        annotations={"example.com/Request": "r-1"},
        nodeSelector={"cloud.example.com/pool": "spot"},
        tolerations=[{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
    )
    assert validate(workload).allowed


def test_a_pod_set_update_must_name_a_pod_set() -> None:
    assert validate(with_update(name="workers")).message == (
        f'{UPDATES}.name: Unsupported value: "workers": supported values: "main"'
    )


def test_pod_set_update_tolerations_follow_the_crd_rules_without_enums() -> None:
    tolerations = [{"key": "spot", "operator": "Equals", "effect": "NoScheduling"}]
    assert validate(with_update(tolerations=tolerations)).message == (
        f"[{UPDATES}.tolerations: Invalid value: \"array\": supported toleration values: 'Equal'(default), "
        f"'Exists', {UPDATES}.tolerations: Invalid value: \"array\": supported taint effect values: "
        "'NoSchedule', 'PreferNoSchedule', 'NoExecute']"
    )
    assert validate(with_update(tolerations=[{"value": "x"}])).message == (
        f'{UPDATES}.tolerations: Invalid value: "array": no such key: operator evaluating rule: '
        "operator must be Exists when 'key' is empty, which means 'match all values and all keys'"
    )


def test_pod_set_update_labels_node_selector_and_annotations_are_checked() -> None:
    workload = with_update(labels={"ok": "not ok"}, nodeSelector={"bad key": "x"}, annotations={"/x": "y"})
    message = validate(workload).message
    assert f'{UPDATES}.annotations: Invalid value: "/x": prefix part must be non-empty' in message
    assert f'{UPDATES}.nodeSelector: Invalid value: "bad key": name part must consist of' in message
    assert f'{UPDATES}.labels: Invalid value: "not ok": a valid label must be an empty string' in message


def test_only_one_pod_set_may_use_min_count() -> None:
    workload = golden_object("kueue-workload-create")
    first = workload["spec"]["podSets"][0]
    first.update(count=4, minCount=2)
    workload["spec"]["podSets"].append({**copy.deepcopy(first), "name": "workers"})
    assert validate(workload).message == "spec.podSets: Invalid value: 2: at most one podSet can use minCount"
    del workload["spec"]["podSets"][1]["minCount"]
    assert validate(workload).allowed


def test_reclaimable_pods_only_grow_while_quota_stays_reserved() -> None:
    old = reserved()
    old["spec"]["podSets"][0]["count"] = 4
    old["status"]["admission"]["podSetAssignments"][0].update(count=4, resourceUsage={"nvidia.com/gpu": "8"})
    old["status"]["reclaimablePods"] = [{"name": "main", "count": 2}]
    grown = copy.deepcopy(old)
    grown["status"]["reclaimablePods"][0]["count"] = 3
    assert validate(grown, old).allowed
    shrunk = copy.deepcopy(old)
    shrunk["status"]["reclaimablePods"][0]["count"] = 1
    assert (
        validate(shrunk, old).message
        == "status.reclaimablePods[main].count: Invalid value: 1: cannot be less than 2"
    )
    dropped = copy.deepcopy(old)
    del dropped["status"]["reclaimablePods"]
    assert validate(dropped, old).message == "status.reclaimablePods[main]: Required value: cannot be removed"
    released = copy.deepcopy(dropped)
    released["status"]["conditions"][0]["status"] = "False"
    del released["status"]["admission"]
    assert validate(released, old).allowed  # quota released in the same write: nothing left to protect


def test_a_dispatch_cluster_is_one_of_the_nominated() -> None:
    old = golden_object("kueue-workload-create")
    old["status"] = {"nominatedClusterNames": ["worker-1", "worker-2"]}
    new = copy.deepcopy(old)
    new["status"] = {"clusterName": "worker-3"}
    assert validate(new, old).message == (
        'status.clusterName: Invalid value: "worker-3": '
        "when setting clusterName it must be one of the nominatedClusterNames"
    )
    new["status"] = {"clusterName": "worker-2"}
    assert validate(new, old).allowed


def test_a_partial_admission_records_whole_pods_worth_of_usage() -> None:
    """validateAdmission: each resourceUsage is a multiple of the admitted count (milli-units for CPU)."""
    workload = reserved()
    workload["spec"]["podSets"][0].update(count=4, minCount=2)
    assignment = workload["status"]["admission"]["podSetAssignments"][0]
    assignment.update(count=2, resourceUsage={"nvidia.com/gpu": "4", "cpu": "500m"})
    assert validate(workload).allowed
    assignment["resourceUsage"] = {"nvidia.com/gpu": "3", "cpu": "501m"}
    assert validate(workload).message == (
        '[status.admission.podSetAssignments[0].resourceUsage[nvidia.com/gpu]: Invalid value: "3": '
        "is not a multiple of 2, status.admission.podSetAssignments[0].resourceUsage[cpu]: "
        'Invalid value: "501m": is not a multiple of 2]'
    )


def test_only_the_placement_of_a_recorded_admission_may_change() -> None:
    # Kueue's validateAdmissionUpdate with TopologyAwareScheduling: a topology assignment may be set or
    # replaced (a failed node swapped out); anything else in the admission stays as it was
    old = reserved()
    placed = copy.deepcopy(old)
    topology = encode(["kubernetes.io/hostname"], [Domain(("h",), 1)])
    placed["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] = topology
    assert validate(placed, old).allowed
    moved = copy.deepcopy(placed)
    moved["status"]["admission"]["clusterQueue"] = "elsewhere"
    assert "status.admission: Invalid value" in validate(moved, placed).message
    recounted = copy.deepcopy(placed)
    recounted["status"]["admission"]["podSetAssignments"][0]["count"] = 99
    assert "field is immutable" in validate(recounted, placed).message
