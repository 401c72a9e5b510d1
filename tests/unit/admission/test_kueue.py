"""Kueue objects: spec rules from the object model, update rules and Workload status rules from Kueue."""

from __future__ import annotations

import copy
from typing import Any

from kueue_webhook.admission.kueue import validate_kueue_object
from kueue_webhook.admission.review import Verdict
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration
from tests.unit.admission.golden import golden_review, request_of
from tests.unit.admission.servers import golden_object, review_for

RESERVED = [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "reserved"}]


def validate(obj: dict[str, Any], old: dict[str, Any] | None = None, operation: str | None = None) -> Verdict:
    review = review_for(obj, operation=operation or ("UPDATE" if old else "CREATE"), old=old)
    return validate_kueue_object(request_of(review), config=Configuration(), view=StaticClusterView())


def admitted_workload() -> dict[str, Any]:
    workload: dict[str, Any] = golden_review(8)["request"]["object"]
    workload["status"]["conditions"] = copy.deepcopy(RESERVED)
    return workload


def test_admitted_golden_workload_is_valid() -> None:
    assert validate(admitted_workload()).allowed


def test_pods_is_a_reserved_resource_name() -> None:
    workload = golden_object("kueue-workload-create")
    workload["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"] = {
        "pods": "1"
    }
    assert validate(workload).message == (
        'spec.podSets[0].template.spec.containers[0].resources.requests[pods]: Invalid value: "pods": '
        "the key is reserved for internal kueue use"
    )


def test_admission_must_name_existing_pod_sets() -> None:
    workload = admitted_workload()
    workload["status"]["admission"]["podSetAssignments"][0]["name"] = "workers"
    assert validate(workload).message == 'status.admission.podSetAssignments[0].name: Not found: "workers"'


def test_reclaimable_pods_must_fit_their_pod_set() -> None:
    workload = admitted_workload()
    workload["status"]["reclaimablePods"] = [{"name": "main", "count": 2}, {"name": "other", "count": 1}]
    assert validate(workload).message == (
        "[status.reclaimablePods[main].count: Invalid value: 2: should be less or equal to 1, "
        'status.reclaimablePods[other].name: Unsupported value: "other": supported values: "main"]'
    )


def test_quota_reservation_needs_an_admission() -> None:
    workload = admitted_workload()
    del workload["status"]["admission"]
    assert validate(workload).message == (
        "status.admission: Required value: must be set while the QuotaReserved condition is true"
    )


def test_pod_sets_are_frozen_while_quota_is_reserved_but_not_before() -> None:
    old = admitted_workload()
    new = copy.deepcopy(old)
    new["spec"]["podSets"][0]["count"] = 3
    message = validate(new, old).message
    assert message.startswith('spec.podSets.0: Invalid value: {"count":3,') and message.endswith(
        ": field is immutable"
    )
    old["status"] = {}
    new["status"] = {}
    assert validate(new, old).allowed


def test_eviction_clearing_the_reservation_is_allowed() -> None:
    old = admitted_workload()
    new = copy.deepcopy(old)
    new["status"]["conditions"] = [{**RESERVED[0], "status": "False", "reason": "Pending"}]
    del new["status"]["admission"]
    assert validate(new, old).allowed


def test_local_queue_cluster_queue_is_immutable_but_other_fields_are_not() -> None:
    old = golden_object("kueue-localqueue-create")
    new = copy.deepcopy(old)
    new["spec"]["stopPolicy"] = "Hold"
    assert validate(new, old).allowed
    new["spec"]["clusterQueue"] = "other"
    assert validate(new, old).message == 'spec.clusterQueue: Invalid value: "other": field is immutable'


def test_delete_is_not_validated() -> None:
    review = review_for(golden_object("kueue-clusterqueue-create"), operation="DELETE")
    review["request"]["object"] = None
    verdict = validate_kueue_object(request_of(review), config=Configuration(), view=StaticClusterView())
    assert verdict.allowed


def test_resource_flavor_taints_are_checked_by_the_object_model() -> None:
    flavor = golden_object("kueue-resourceflavor-create")
    flavor["spec"]["nodeTaints"] = [{"key": "gpu", "value": "yes", "effect": "Sometimes"}]
    verdict = validate(flavor)
    assert not verdict.allowed and verdict.code == 403
    assert verdict.message.startswith('spec.nodeTaints[0].effect: Unsupported value: "Sometimes"')


def test_resource_flavor_toleration_rules_deny_with_kueues_crd_message() -> None:
    flavor = golden_object("kueue-resourceflavor-create")
    flavor["spec"]["tolerations"] = [{"operator": "Equal", "value": "x"}]
    assert validate(flavor).message == (
        'spec.tolerations: Invalid value: "array": '
        "operator must be Exists when 'key' is empty, which means 'match all values and all keys'"
    )


def test_resource_flavor_topology_name_stays_once_set() -> None:
    old = golden_object("kueue-resourceflavor-create")
    old["spec"]["nodeLabels"] = {"pool": "gpu"}
    named = copy.deepcopy(old)
    named["spec"]["topologyName"] = "default"
    assert validate(named, old).allowed  # naming a topology for the first time is fine
    renamed = copy.deepcopy(named)
    renamed["spec"]["topologyName"] = "racks"
    removed = copy.deepcopy(named)
    del removed["spec"]["topologyName"]
    immutable = 'spec: Invalid value: "object": topologyName is immutable when topologyName is set'
    assert validate(renamed, named).message == immutable
    assert validate(removed, named).message == immutable
    relabelled = copy.deepcopy(named)
    relabelled["spec"]["nodeLabels"] = {"pool": "a100"}
    assert validate(relabelled, named).allowed


NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def test_cluster_queue_with_a_bad_namespace_selector_key_is_denied_with_apimachinerys_message() -> None:
    """Kueue's ClusterQueue webhook runs ValidateLabelSelector on spec.namespaceSelector."""
    queue = golden_object("kueue-clusterqueue-create")
    queue["spec"]["namespaceSelector"] = {"matchLabels": {"bad key!": "x"}}
    verdict = validate(queue)
    assert not verdict.allowed
    assert verdict.message == f'spec.namespaceSelector.matchLabels: Invalid value: "bad key!": {NAME_PART}'


def test_cluster_queue_namespace_selector_expressions_are_validated_on_update_too() -> None:
    old = golden_object("kueue-clusterqueue-create")
    new = copy.deepcopy(old)
    new["spec"]["namespaceSelector"] = {
        "matchExpressions": [
            {"key": "team", "operator": "Bogus", "values": ["a"]},
            {"key": "tier", "operator": "Exists", "values": ["gold"]},
        ]
    }
    assert validate(new, old).message == (
        '[spec.namespaceSelector.matchExpressions[0].operator: Invalid value: "Bogus": not a valid selector '
        "operator, spec.namespaceSelector.matchExpressions[1].values: Forbidden: may not be specified when "
        "`operator` is 'Exists' or 'DoesNotExist']"
    )
    new["spec"]["namespaceSelector"] = {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}
    assert validate(new, old).allowed


def test_workload_pod_set_template_labels_and_annotations_are_validated_as_a_pods() -> None:
    workload = golden_object("kueue-workload-create")
    metadata = workload["spec"]["podSets"][0]["template"].setdefault("metadata", {})
    metadata["labels"] = {"bad key!": "ok"}
    metadata["annotations"] = {"a/b/c": "x"}
    assert validate(workload).message == (
        f'[spec.podSets[0].template.metadata.labels: Invalid value: "bad key!": {NAME_PART}, '
        'spec.podSets[0].template.metadata.annotations: Invalid value: "a/b/c": a valid label key must '
        "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
        "(e.g. 'example.com/MyName')]"
    )


def test_an_old_workload_whose_spec_and_status_are_not_objects_is_a_denial_not_an_internal_error() -> None:
    new = golden_object("kueue-workload-create")
    new.setdefault("status", {})["clusterName"] = ["a"]
    old = copy.deepcopy(new)
    old["spec"] = True  # a hostile caller's oldObject: the API server never sends one of the wrong shape
    old["status"] = {"conditions": copy.deepcopy(RESERVED), "nominatedClusterNames": {}}
    verdict = validate(new, old, "UPDATE")
    assert verdict.code in (200, 403), verdict


def _topology(*labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": "default"},
        "spec": {"levels": [{"nodeLabel": label} for label in labels]},
    }


def test_topology_levels_follow_kueues_crd_rules() -> None:
    assert validate(_topology("cloud.com/block", "cloud.com/rack", "kubernetes.io/hostname")).allowed
    assert (
        validate(_topology("rack", "rack")).message == 'spec.levels: Invalid value: "array": must be unique'
    )
    assert validate(_topology("kubernetes.io/hostname", "rack")).message == (
        'spec.levels: Invalid value: "array": '
        "the kubernetes.io/hostname label can only be used at the lowest level of topology"
    )
    assert "spec.levels[0].nodeLabel" in validate(_topology("not a label")).message


def test_topology_levels_change_only_above_the_hosts() -> None:
    hosts = _topology("rack", "kubernetes.io/hostname")
    assert validate(_topology("block", "rack", "kubernetes.io/hostname"), hosts).allowed
    racks = _topology("block", "rack")
    assert validate(_topology("rack"), racks).message == (
        'spec.levels: Invalid value: "array": levels are mutable only when kubernetes.io/hostname is the '
        "lowest level both before and after the change"
    )
