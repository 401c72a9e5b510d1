"""Typed views of Kueue objects: defaults, aliases and the create-time rules of Kueue's webhook and CRDs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.objects import (
    AdmissionCheck,
    ClusterQueue,
    Cohort,
    LocalQueue,
    ResourceFlavor,
    Workload,
    WorkloadPriorityClass,
    parse_cluster_queue,
    parse_cohort,
    parse_local_queue,
    parse_object,
    parse_resource_flavor,
    parse_workload,
    parse_workload_priority_class,
)
from kueue_webhook.api.quantity import parse_quantity
from tests.golden import GOLDEN


def golden_body(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((GOLDEN / name).read_text())["response"]["body"]
    return body


def cluster_queue(spec: dict[str, Any], name: str = "cq") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }


def one_group(**quota: Any) -> list[dict[str, Any]]:
    return [
        {
            "coveredResources": ["cpu"],
            "flavors": [{"name": "default", "resources": [{"name": "cpu", **quota}]}],
        }
    ]


def messages(result: object) -> list[str]:
    assert isinstance(result, list), f"expected errors, got {result!r}"
    return [str(e) for e in result]


def test_golden_cluster_queue_parses_with_server_defaults() -> None:
    queue = parse_cluster_queue(golden_body("kueue-clusterqueue-create.json"))
    assert isinstance(queue, ClusterQueue)
    assert queue.name == "research"
    assert queue.queueing_strategy == "BestEffortFIFO"
    assert queue.flavor_fungibility.when_can_borrow == "MayStopSearch"
    assert queue.resource_groups[0].flavors[0].resources[0].nominal == parse_quantity("64")
    assert queue.namespace_selector is not None
    assert queue.namespace_selector.matches({"kueue.x-k8s.io/queue": "research"})
    assert not queue.namespace_selector.matches({"kueue.x-k8s.io/queue": "other"})


def test_golden_workload_local_queue_and_flavor_parse() -> None:
    workload = parse_workload(golden_body("kueue-workload-create.json"))
    assert isinstance(workload, Workload)
    assert workload.key == "golden/job-sample-abcde"
    assert workload.queue_name == "team-a-gpu"
    assert workload.pod_sets[0].requests == {"nvidia.com/gpu": 2 * 10**9}  # limit used as request
    local_queue = parse_local_queue(golden_body("kueue-localqueue-create.json"))
    assert isinstance(local_queue, LocalQueue) and local_queue.cluster_queue == "research"
    flavor = parse_resource_flavor(golden_body("kueue-resourceflavor-create.json"))
    assert isinstance(flavor, ResourceFlavor) and flavor.node_labels == {"nvidia.com/gpu.present": "true"}


def test_defaults_when_fields_are_absent() -> None:
    queue = parse_cluster_queue(cluster_queue({"resourceGroups": one_group(nominalQuota="4")}))
    assert isinstance(queue, ClusterQueue)
    assert queue.namespace_selector is None  # absent selector: no namespace may submit
    assert (queue.queueing_strategy, queue.stop_policy) == ("BestEffortFIFO", "None")
    assert queue.flavor_fungibility.when_can_preempt == "TryNextFlavor"
    assert queue.preemption.within_cluster_queue == "Never"


def test_v1beta1_cohort_is_an_alias_of_cohort_name() -> None:
    queue = parse_cluster_queue(
        cluster_queue({"cohort": "shared", "resourceGroups": one_group(nominalQuota=1)})
    )
    assert isinstance(queue, ClusterQueue) and queue.cohort_name == "shared"


def test_lending_limit_above_nominal_is_refused_with_the_field_path() -> None:
    result = parse_cluster_queue(
        cluster_queue({"cohortName": "c", "resourceGroups": one_group(nominalQuota="4", lendingLimit="5")})
    )
    assert messages(result) == [
        'spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "5": '
        "must be less than or equal to the nominalQuota"
    ]


def test_limits_without_a_cohort_are_refused() -> None:
    """Kueue's CRD rule on spec (what kube-apiserver answers first), then its webhook's per-quota check."""
    result = parse_cluster_queue(
        cluster_queue({"resourceGroups": one_group(nominalQuota="4", borrowingLimit="2")})
    )
    assert messages(result) == [
        'spec: Invalid value: "object": borrowingLimit must be nil when cohort is empty',
        'spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: Invalid value: "2": '
        "must be nil when cohort is empty",
    ]
    # an empty cohortName satisfies the CRD rule (has() is true) but not the webhook
    empty = cluster_queue(
        {"cohortName": "", "resourceGroups": one_group(nominalQuota="4", borrowingLimit="2")}
    )
    assert messages(parse_cluster_queue(empty)) == [
        'spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit: Invalid value: "2": '
        "must be nil when cohort is empty"
    ]


def test_a_resource_in_two_groups_and_a_repeated_flavor_are_duplicates() -> None:
    groups = [
        {
            "coveredResources": ["cpu"],
            "flavors": [{"name": "a", "resources": [{"name": "cpu", "nominalQuota": 1}]}],
        },
        {
            "coveredResources": ["cpu"],
            "flavors": [{"name": "a", "resources": [{"name": "cpu", "nominalQuota": 1}]}],
        },
    ]
    assert messages(parse_cluster_queue(cluster_queue({"resourceGroups": groups}))) == [
        'spec.resourceGroups[1].coveredResources[0]: Duplicate value: "cpu"',
        'spec.resourceGroups[1].flavors[0].name: Duplicate value: "a"',
    ]


def test_flavor_resources_must_follow_covered_resources() -> None:
    groups = [
        {
            "coveredResources": ["cpu", "memory"],
            "flavors": [
                {
                    "name": "a",
                    "resources": [{"name": "memory", "nominalQuota": 1}, {"name": "cpu", "nominalQuota": 1}],
                },
                {"name": "b", "resources": [{"name": "cpu", "nominalQuota": 1}]},
            ],
        }
    ]
    errors = messages(parse_cluster_queue(cluster_queue({"resourceGroups": groups})))
    assert (
        'spec.resourceGroups[0].flavors[0].resources[0].name: Invalid value: "memory": '
        "must match the name in coveredResources" in errors
    )
    assert (
        'spec.resourceGroups[0]: Invalid value: "object": '
        "flavors must have the same number of resources as the coveredResources" in errors
    )


def test_bad_quantities_and_enums_are_all_reported_at_once() -> None:
    spec = {"queueingStrategy": "Sometimes", "resourceGroups": one_group(nominalQuota="lots")}
    errors = messages(parse_cluster_queue(cluster_queue(spec)))
    assert len(errors) == 2
    assert errors[0].startswith(
        'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value: "lots"'
    )
    assert (
        errors[1] == 'spec.queueingStrategy: Unsupported value: "Sometimes": '
        'supported values: "StrictFIFO", "BestEffortFIFO"'
    )


def test_negative_quota_is_refused() -> None:
    errors = messages(parse_cluster_queue(cluster_queue({"resourceGroups": one_group(nominalQuota="-1")})))
    assert errors == [
        'spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value: "-1": '
        "must be greater than or equal to 0"
    ]


def test_preemption_rule_reclaim_never_with_borrowing_is_refused() -> None:
    spec = {
        "resourceGroups": one_group(nominalQuota=1),
        "preemption": {"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}},
    }
    assert messages(parse_cluster_queue(cluster_queue(spec))) == [
        'spec.preemption: Invalid value: "object": '
        "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"
    ]


def test_field_errors_carry_status_cause_reasons() -> None:
    errors = parse_cluster_queue(cluster_queue({"queueingStrategy": "x"}))
    assert isinstance(errors, list)
    error = errors[0]
    assert isinstance(error, FieldError)
    assert (error.reason, error.path) == ("FieldValueNotSupported", "spec.queueingStrategy")
    assert error.message.startswith('Unsupported value: "x"')


def test_cohort_allows_lending_above_its_nominal_but_needs_a_parent_for_limits() -> None:
    base = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "org"}}
    ok = parse_cohort(
        {**base, "spec": {"parentName": "root", "resourceGroups": one_group(nominalQuota=1, lendingLimit=3)}}
    )
    assert isinstance(ok, Cohort) and ok.parent_name == "root"
    bad = parse_cohort({**base, "spec": {"resourceGroups": one_group(nominalQuota=1, lendingLimit=3)}})
    assert messages(bad) == [
        'spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "3": '
        "must be nil when parent is empty"
    ]


def test_local_queue_needs_a_namespace_and_a_cluster_queue() -> None:
    result = parse_local_queue({"kind": "LocalQueue", "metadata": {"name": "q"}, "spec": {}})
    assert messages(result) == ["metadata.namespace: Required value", "spec.clusterQueue: Required value"]


def test_workload_priority_class_value_must_be_int32() -> None:
    meta = {"metadata": {"name": "high"}}
    good = parse_workload_priority_class({**meta, "value": 1000})
    assert isinstance(good, WorkloadPriorityClass) and good.value == 1000
    assert messages(parse_workload_priority_class({**meta, "value": 2**40})) == [
        f"value: Invalid value: {2**40}: must be a 32-bit integer"
    ]


def test_workload_status_admission_and_conditions_are_read() -> None:
    workload = parse_workload(
        {
            "metadata": {"name": "w", "namespace": "ns"},
            "spec": {
                "queueName": "q",
                "priority": 5,
                "podSets": [
                    {"name": "main", "count": 3, "template": {"spec": {"containers": [{"name": "c"}]}}}
                ],
            },
            "status": {
                "conditions": [
                    {"type": "QuotaReserved", "status": "True"},
                    {"type": "Admitted", "status": "True"},
                ],
                "admission": {
                    "clusterQueue": "cq",
                    "podSetAssignments": [
                        {"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "3"}, "count": 3}
                    ],
                },
            },
        }
    )
    assert isinstance(workload, Workload)
    assert workload.has_quota_reservation and workload.is_admitted and not workload.is_finished
    assert workload.admission is not None
    assert workload.admission.to_dict() == {
        "clusterQueue": "cq",
        "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "f"}, "resourceUsage": {"cpu": "3"}, "count": 3}
        ],
    }


def test_workload_with_bad_request_names_the_container_field() -> None:
    result = parse_workload(
        {
            "metadata": {"name": "w", "namespace": "ns"},
            "spec": {
                "podSets": [
                    {
                        "name": "main",
                        "count": 1,
                        "template": {
                            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "x"}}}]}
                        },
                    }
                ]
            },
        }
    )
    errors = messages(result)
    assert len(errors) == 1
    assert errors[0].startswith(
        'spec.podSets[0].template.spec.containers[0].resources.requests[cpu]: Invalid value: "x"'
    )


def test_parse_object_dispatches_on_kind_and_refuses_others() -> None:
    assert isinstance(
        parse_object(cluster_queue({"resourceGroups": one_group(nominalQuota=1)})), ClusterQueue
    )
    assert messages(parse_object({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Provisioning"}))[
        0
    ].startswith('kind: Unsupported value: "Provisioning"')
    assert messages(parse_object({"apiVersion": "v1", "kind": "Pod"}))[0].startswith(
        'apiVersion: Invalid value: "v1"'
    )


def test_parsing_never_raises_on_garbage() -> None:
    for garbage in (
        {},
        {"spec": 5},
        {"metadata": "x", "spec": {"resourceGroups": "nope"}},
        {"spec": {"podSets": [1]}},
    ):
        for parse in (
            parse_cluster_queue,
            parse_workload,
            parse_local_queue,
            parse_cohort,
            parse_resource_flavor,
        ):
            assert isinstance(parse(garbage), list)


def test_fungibility_preference_defaults_and_rejects_unknown_values() -> None:
    parsed = parse_cluster_queue(cluster_queue({"resourceGroups": one_group(nominalQuota=1)}))
    assert isinstance(parsed, ClusterQueue)
    assert parsed.flavor_fungibility.preference == "BorrowingOverPreemption"
    spec = {
        "resourceGroups": one_group(nominalQuota=1),
        "flavorFungibility": {
            "whenCanBorrow": "TryNextFlavor",
            "whenCanPreempt": "TryNextFlavor",
            "preference": "PreemptionOverBorrowing",
        },
    }
    parsed = parse_cluster_queue(cluster_queue(spec))
    assert isinstance(parsed, ClusterQueue)
    assert parsed.flavor_fungibility.preference == "PreemptionOverBorrowing"
    spec["flavorFungibility"] = {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}
    spec["flavorFungibility"]["preference"] = "Whatever"
    assert messages(parse_cluster_queue(cluster_queue(spec))) == [
        'spec.flavorFungibility.preference: Unsupported value: "Whatever": '
        'supported values: "BorrowingOverPreemption", "PreemptionOverBorrowing"'
    ]


def test_workload_admission_check_states_are_read_and_checked() -> None:
    body = {
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}]},
        "status": {
            "admissionChecks": [
                {"name": "finance", "state": "Ready", "message": "ok"},
                {"name": "capacity", "state": "Maybe"},
            ]
        },
    }
    assert messages(parse_workload(body)) == [
        'status.admissionChecks[1].state: Unsupported value: "Maybe": '
        'supported values: "Pending", "Ready", "Retry", "Rejected"'
    ]
    body["status"] = {"admissionChecks": [{"name": "finance", "state": "Ready", "message": "ok"}]}
    parsed = parse_workload(body)
    assert isinstance(parsed, Workload)
    assert [(c.name, c.state, c.message) for c in parsed.admission_checks] == [("finance", "Ready", "ok")]


def test_admission_check_kind_is_dispatched() -> None:
    parsed = parse_object(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "AdmissionCheck",
            "metadata": {"name": "finance"},
            "spec": {"controllerName": "kueue-webhook.io/manual-approval"},
        }
    )
    assert isinstance(parsed, AdmissionCheck) and parsed.controller_name == "kueue-webhook.io/manual-approval"


def test_fungibility_preference_needs_both_policies_to_try_the_next_flavor() -> None:
    """Kueue (clusterqueue_webhook.go and the CRD's rule): with whenCanBorrow left at MayStopSearch the
    preference could never apply, so it is refused rather than silently ignored."""
    spec = {
        "resourceGroups": one_group(nominalQuota=1),
        "flavorFungibility": {"preference": "BorrowingOverPreemption"},
    }
    assert messages(parse_cluster_queue(cluster_queue(spec))) == [
        'spec.flavorFungibility: Invalid value: "object": '
        "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
        'spec.flavorFungibility.preference: Invalid value: "BorrowingOverPreemption": preference '
        '"BorrowingOverPreemption" requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor',
    ]


def test_a_workload_may_have_up_to_eighteen_pod_sets() -> None:
    """Kueue v1beta2's CRD allows 18 pod sets (v1beta1 allowed 8)."""

    def workload(pod_sets: int) -> dict[str, Any]:
        sets = [
            {"name": f"p{i}", "count": 1, "template": {"spec": {"containers": []}}} for i in range(pod_sets)
        ]
        return {"metadata": {"name": "w", "namespace": "ns"}, "spec": {"podSets": sets}}

    parsed = parse_workload(workload(18))
    assert isinstance(parsed, Workload) and len(parsed.pod_sets) == 18
    result = parse_workload(workload(19))
    assert messages(result) == ["spec.podSets: Too many: 19: must have at most 18 items"]
    assert isinstance(result, list) and result[0].reason == "FieldValueTooMany"


@pytest.mark.parametrize(
    ("group", "field"),
    [
        ({"coveredResources": 5, "flavors": []}, "spec.resourceGroups[0].coveredResources"),
        (
            {"coveredResources": ["cpu"], "flavors": [{"name": "f", "resources": True}]},
            "spec.resourceGroups[0].flavors[0].resources",
        ),
    ],
)
def test_a_list_field_given_a_scalar_is_a_field_error_not_a_crash(group: dict[str, Any], field: str) -> None:
    errors = parse_cluster_queue(cluster_queue({"resourceGroups": [group]}))
    assert isinstance(errors, list)
    assert any(str(e).startswith(f"{field}: Invalid value") for e in errors), errors
