"""ResourceFlavor rules as kube-apiserver applies them with Kueue's CRD, and as Kueue's webhook adds them.

Kueue's CRD (apis/kueue/v1beta2/resourceflavor_types.go) puts CEL rules on ``spec``, ``spec.nodeTaints`` and
``spec.tolerations``; its webhook (pkg/webhooks/resourceflavor_webhook.go) checks label keys and values,
taint keys and values, duplicate taints and toleration keys. A flavor's tolerations end up in every pod
admitted on it, so whatever a pod would refuse must be refused when the flavor is applied.
"""

from __future__ import annotations

from typing import Any

import pytest

from kueue_webhook.api.objects import ResourceFlavor, parse_resource_flavor

KEY_EMPTY = "operator must be Exists when 'key' is empty, which means 'match all values and all keys'"
SECONDS = "effect must be 'NoExecute' when 'tolerationSeconds' is set"
EXISTS_VALUE = "a value must be empty when 'operator' is 'Exists'"
NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def flavor(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "gpu"},
        "spec": {"nodeLabels": {"pool": "gpu"}, **spec},
    }


def messages(result: object) -> list[str]:
    assert isinstance(result, list), f"expected errors, got {result!r}"
    return [str(error) for error in result]


def test_a_flavor_using_every_field_well_is_accepted() -> None:
    parsed = parse_resource_flavor(
        flavor(
            nodeLabels={"cloud.example.com/pool": "a100", "zone": "eu-1"},
            nodeTaints=[
                {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                {"key": "nvidia.com/gpu", "value": "present", "effect": "NoExecute"},
            ],
            tolerations=[
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "spot", "operator": "Equal", "value": "true"},
                {"key": "maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
                {"operator": "Exists"},
                {"key": "", "operator": "Equal"},
            ],
            topologyName="default",
        )
    )
    assert isinstance(parsed, ResourceFlavor)
    assert parsed.topology_name == "default"
    assert len(parsed.tolerations) == 5 and len(parsed.node_taints) == 2


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        ({"operator": "Equal", "value": "x"}, KEY_EMPTY),
        ({"value": "x"}, f"no such key: operator evaluating rule: {KEY_EMPTY}"),
        ({"key": "a", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}, SECONDS),
        (
            {"key": "a", "operator": "Exists", "tolerationSeconds": 5},
            f"no such key: effect evaluating rule: {SECONDS}",
        ),
        ({"key": "a", "operator": "Exists", "value": "x"}, EXISTS_VALUE),
        ({"key": "a", "operator": "Exists", "value": ""}, EXISTS_VALUE),
    ],
)
def test_toleration_rules_of_kueues_crd_name_the_list_and_say_why(
    toleration: dict[str, Any], expected: str
) -> None:
    assert messages(
        parse_resource_flavor(flavor(tolerations=[{"key": "ok", "operator": "Exists"}, toleration]))
    ) == [f'spec.tolerations: Invalid value: "array": {expected}']


def test_a_toleration_list_breaking_several_rules_reports_each_rule_once() -> None:
    tolerations = [
        {"operator": "Equal"},
        {"key": "a", "operator": "Exists", "value": "x", "effect": "NoSchedule", "tolerationSeconds": 1},
        {"value": "y"},
    ]
    assert messages(parse_resource_flavor(flavor(tolerations=tolerations))) == [
        f'spec.tolerations: Invalid value: "array": {KEY_EMPTY}',
        f'spec.tolerations: Invalid value: "array": {SECONDS}',
        f'spec.tolerations: Invalid value: "array": {EXISTS_VALUE}',
    ]


def test_an_unsupported_operator_or_effect_is_named_and_stops_the_rules() -> None:
    # kube-apiserver checks enums first and skips CEL rules on an object that failed them
    tolerations = [{"operator": "Equals"}, {"key": "a", "effect": "NoScheduling", "tolerationSeconds": 1}]
    assert messages(parse_resource_flavor(flavor(tolerations=tolerations))) == [
        'spec.tolerations[0].operator: Unsupported value: "Equals": supported values: "Equal", "Exists"',
        'spec.tolerations[1].effect: Unsupported value: "NoScheduling": supported values: "NoSchedule", '
        '"PreferNoSchedule", "NoExecute"',
    ]


def test_toleration_keys_must_be_qualified_names() -> None:
    errors = messages(parse_resource_flavor(flavor(tolerations=[{"key": "gpu type", "operator": "Exists"}])))
    assert errors == [f'spec.tolerations[0].key: Invalid value: "gpu type": {NAME_PART}']


def test_taints_must_be_unique_by_key_and_effect() -> None:
    taints = [
        {"key": "gpu", "value": "a", "effect": "NoSchedule"},
        {"key": "gpu", "value": "b", "effect": "NoExecute"},
        {"key": "gpu", "value": "c", "effect": "NoSchedule"},
    ]
    result = parse_resource_flavor(flavor(nodeTaints=taints))
    assert messages(result) == [
        'spec.nodeTaints[2]: Duplicate value: v1.Taint{Key:"gpu", Value:"c", Effect:"NoSchedule", '
        "TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and effect pair"
    ]
    assert isinstance(result, list) and result[0].reason == "FieldValueDuplicate"


def test_taint_keys_and_values_follow_label_rules() -> None:
    taints = [{"key": "example.com/", "value": "not ok", "effect": "NoSchedule"}]
    assert messages(parse_resource_flavor(flavor(nodeTaints=taints))) == [
        'spec.nodeTaints[0].key: Invalid value: "example.com/": name part must be non-empty',
        f'spec.nodeTaints[0].key: Invalid value: "example.com/": {NAME_PART}',
        'spec.nodeTaints[0].value: Invalid value: "not ok": '
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
        "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
        "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ]


def test_a_taint_without_a_supported_effect_is_refused_on_the_effect() -> None:
    taints = [{"key": "gpu", "effect": "Sometimes"}]
    assert messages(parse_resource_flavor(flavor(nodeTaints=taints))) == [
        'spec.nodeTaints[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", '
        '"PreferNoSchedule", "NoExecute"'
    ]


def test_node_labels_are_validated_as_labels_on_the_map() -> None:
    errors = messages(parse_resource_flavor(flavor(nodeLabels={"pool": "a" * 64, "-bad": "ok"})))
    assert errors == [
        f'spec.nodeLabels: Invalid value: "{"a" * 64}": must be no more than 63 bytes',
        f'spec.nodeLabels: Invalid value: "-bad": {NAME_PART}',
    ]


def test_at_most_eight_node_labels_taints_and_tolerations() -> None:
    labels = {f"l{i}": "v" for i in range(9)}
    tolerations = [{"key": f"t{i}", "operator": "Exists"} for i in range(9)]
    taints = [{"key": f"t{i}", "effect": "NoSchedule"} for i in range(9)]
    result = parse_resource_flavor(flavor(nodeLabels=labels, nodeTaints=taints, tolerations=tolerations))
    assert messages(result) == [
        "spec.nodeLabels: Too many: 9: must have at most 8 items",
        "spec.nodeTaints: Too many: 9: must have at most 8 items",
        "spec.tolerations: Too many: 9: must have at most 8 items",
    ]
    assert isinstance(result, list) and {e.reason for e in result} == {"FieldValueTooMany"}


def test_a_topology_needs_node_labels() -> None:
    no_labels = flavor(topologyName="default")
    del no_labels["spec"]["nodeLabels"]
    rule = "at least one nodeLabel is required when topology is set"
    assert messages(parse_resource_flavor(no_labels)) == [
        f'spec: Invalid value: "object": no such key: nodeLabels evaluating rule: {rule}'
    ]
    assert messages(parse_resource_flavor(flavor(topologyName="default", nodeLabels={}))) == [
        f'spec: Invalid value: "object": {rule}'
    ]
    assert isinstance(parse_resource_flavor(flavor(topologyName="default")), ResourceFlavor)
