"""Our CRDs carry the list markers and rules of Kueue's v1beta2 CRDs.

``x-kubernetes-list-type`` decides how server-side apply merges a list (``map`` merges entries by key,
``set`` by value, ``atomic`` replaces the whole list) and refuses duplicate keys; the CEL rules
(``x-kubernetes-validations``) are what kube-apiserver answers with before any webhook runs. A manifest
that works with Kueue must merge and fail the same way with ours, so the rule expressions and messages are
Kueue's own wire strings (config/components/crd/bases in Kueue's repository).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_webhook.api.objects import (
    MAX_POD_SETS,
    parse_resource_flavor,
    parse_workload_priority_class,
)

CRDS = Path(__file__).resolve().parents[3] / "manifests" / "crds"


def schema(kind: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / f"{kind}.yaml").read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta2"]
    root: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return root


def node(kind: str, path: str) -> dict[str, Any]:
    """The schema node at a dotted path; ``[]`` steps into list items, ``{}`` into map values."""
    current = schema(kind)
    for part in path.split(".") if path else []:
        while part.endswith(("[]", "{}")):
            name, suffix = part[:-2], part[-2:]
            if name:
                current = current["properties"][name]
            current = current["items"] if suffix == "[]" else current["additionalProperties"]
            part = ""
        if part:
            current = current["properties"][part]
    return current


def rules(kind: str, path: str) -> list[tuple[str, str]]:
    return [(r["rule"], r["message"]) for r in node(kind, path).get("x-kubernetes-validations", [])]


@pytest.mark.parametrize(
    ("kind", "path", "list_type", "keys"),
    [
        ("clusterqueues", "spec.resourceGroups[].coveredResources", "atomic", None),
        ("clusterqueues", "spec.resourceGroups[].flavors", "map", ["name"]),
        ("clusterqueues", "spec.resourceGroups[].flavors[].resources", "map", ["name"]),
        ("clusterqueues", "spec.admissionChecksStrategy.admissionChecks", "map", ["name"]),
        ("clusterqueues", "spec.admissionChecksStrategy.admissionChecks[].onFlavors", "set", None),
        ("cohorts", "spec.resourceGroups[].coveredResources", "atomic", None),
        ("workloads", "spec.podSets", "map", ["name"]),
        ("workloads", "spec.preemptionGates", "map", ["name"]),
        ("workloads", "status.conditions", "map", ["type"]),
        ("workloads", "status.admission.podSetAssignments", "map", ["name"]),
        ("workloads", "status.admissionChecks", "map", ["name"]),
        ("workloads", "status.admissionChecks[].podSetUpdates", "atomic", None),
        ("workloads", "status.admissionChecks[].podSetUpdates[].tolerations", "atomic", None),
        ("workloads", "status.schedulingStats.evictions", "map", ["reason", "underlyingCause"]),
        ("workloads", "status.unhealthyNodes", "map", ["name"]),
        ("workloads", "status.preemptionGates", "map", ["name"]),
        ("workloads", "status.nominatedClusterNames", "atomic", None),
        ("resourceflavors", "spec.nodeTaints", "atomic", None),
        ("resourceflavors", "spec.tolerations", "atomic", None),
    ],
)
def test_lists_merge_as_in_kueue(kind: str, path: str, list_type: str, keys: list[str] | None) -> None:
    list_node = node(kind, path)
    assert list_node["x-kubernetes-list-type"] == list_type
    assert list_node.get("x-kubernetes-list-map-keys") == keys
    for key in keys or ():  # kube-apiserver refuses a map list whose keys may be missing
        item = list_node["items"]
        assert key in item.get("required", []) or "default" in item["properties"][key]


def test_resource_flavor_node_labels_are_replaced_whole() -> None:
    labels = node("resourceflavors", "spec.nodeLabels")
    assert labels["x-kubernetes-map-type"] == "atomic" and labels["maxProperties"] == 8


TOLERATION_RULES = [
    (
        "self.all(x, !has(x.key) ? x.operator == 'Exists' : true)",
        "operator must be Exists when 'key' is empty, which means 'match all values and all keys'",
    ),
    (
        "self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)",
        "effect must be 'NoExecute' when 'tolerationSeconds' is set",
    ),
    (
        "self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])",
        "supported toleration values: 'Equal'(default), 'Exists'",
    ),
    (
        "self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)",
        "a value must be empty when 'operator' is 'Exists'",
    ),
    (
        "self.all(x, !has(x.effect) || x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
        "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
    ),
]


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("resourceflavors", "spec.tolerations"),
        ("workloads", "status.admissionChecks[].podSetUpdates[].tolerations"),
    ],
)
def test_tolerations_carry_kueues_rules(kind: str, path: str) -> None:
    assert rules(kind, path) == TOLERATION_RULES
    assert node(kind, path)["maxItems"] == 8


def test_resource_flavor_rules() -> None:
    assert rules("resourceflavors", "spec.nodeTaints") == [
        (
            "self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])",
            "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
        )
    ]
    assert [message for _, message in rules("resourceflavors", "spec")] == [
        "at least one nodeLabel is required when topology is set",
        "topologyName is immutable when topologyName is set",
    ]
    assert node("resourceflavors", "spec.nodeTaints")["maxItems"] == 8


def test_cluster_queue_rules() -> None:
    assert rules("clusterqueues", "spec.flavorFungibility") == [
        (
            "!has(self.preference) || "
            "(self.whenCanBorrow == 'TryNextFlavor' && self.whenCanPreempt == 'TryNextFlavor')",
            "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
        )
    ]
    check_name = node("clusterqueues", "spec.admissionChecksStrategy.admissionChecks[].name")
    assert (check_name["minLength"], check_name["maxLength"], "pattern" in check_name) == (1, 316, False)
    assert node("clusterqueues", "spec.admissionChecksStrategy")["required"] == ["admissionChecks"]


def test_workload_rules() -> None:
    root = [message for _, message in rules("workloads", "")]
    assert root == [
        "podSetAssignments must have the same number of podSets as the spec",
        "priorityClassRef is immutable while workload quota reserved",
        "priorityClassRef.group is immutable while workload quota reserved",
        "priorityClassRef.kind is immutable while workload quota reserved",
        "priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass "
        "while workload quota reserved",
        "queueName is immutable while workload quota reserved",
        "maximumExecutionTimeSeconds is immutable while workload quota reserved",
    ]
    assert rules("workloads", "spec") == [
        (
            "!has(self.priorityClassRef) || has(self.priority)",
            "priority should not be nil when priorityClassRef is set",
        )
    ]
    assert rules("workloads", "spec.podSets[]") == [
        (
            "has(self.minCount) ? self.minCount <= self.count : true",
            "minCount should be positive and less or equal to count",
        )
    ]
    assert [message for _, message in rules("workloads", "spec.priorityClassRef")] == [
        "only the PriorityClass kind is allowed for the scheduling.k8s.io group",
        "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group",
    ]
    assert [message for _, message in rules("workloads", "status")] == [
        "clusterName is immutable once set",
        "clusterName and nominatedClusterNames are mutually exclusive",
    ]
    assert node("workloads", "spec.podSets")["maxItems"] == MAX_POD_SETS
    assert node("workloads", "spec.podSets[]")["required"] == ["template"]


def test_flavor_and_priority_class_limits_match_the_object_model() -> None:
    """The object model (what simulate and the webhook read) refuses what the CRD refuses."""
    assert node("workloadpriorityclasses", "description")["maxLength"] == 2048
    long = parse_workload_priority_class(
        {"metadata": {"name": "high"}, "value": 1, "description": "x" * 2049}
    )
    assert isinstance(long, list)
    assert [str(e) for e in long] == ["description: Too long: may not be more than 2048 bytes"]
    limit = node("resourceflavors", "spec.tolerations")["maxItems"]
    too_many = [{"key": f"k{i}", "operator": "Exists"} for i in range(limit + 1)]
    refused = parse_resource_flavor({"metadata": {"name": "f"}, "spec": {"tolerations": too_many}})
    assert isinstance(refused, list)
    assert [str(e) for e in refused] == [
        f"spec.tolerations: Too many: {limit + 1}: must have at most {limit} items"
    ]


@pytest.mark.parametrize("field", ["apiGroup", "kind", "name"])
def test_admission_check_parameters_may_not_be_empty(field: str) -> None:
    assert node("admissionchecks", f"spec.parameters.{field}")["minLength"] == 1
