"""ClusterQueue rules kube-apiserver applies with Kueue's CRD and Kueue's ClusterQueue webhook adds.

The admission-check strategy is a list keyed by check name whose ``onFlavors`` are a set of the queue's own
flavors (pkg/webhooks/clusterqueue_webhook.go, validateAdmissionCheckOnFlavors); the quota table is bounded
as a whole (validateTotalCoveredResources, validateFlavorResourceCombinations).
"""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.objects import ClusterQueue, parse_cluster_queue

STRATEGY = "spec.admissionChecksStrategy.admissionChecks"


def cluster_queue(**spec: Any) -> dict[str, Any]:
    groups = [
        {
            "coveredResources": ["cpu"],
            "flavors": [
                {"name": "on-demand", "resources": [{"name": "cpu", "nominalQuota": 4}]},
                {"name": "spot", "resources": [{"name": "cpu", "nominalQuota": 8}]},
            ],
        }
    ]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "team-a"},
        "spec": {"resourceGroups": groups, **spec},
    }


def messages(result: object) -> list[str]:
    assert isinstance(result, list), f"expected errors, got {result!r}"
    return [str(error) for error in result]


def test_admission_checks_on_the_queues_flavors_are_accepted() -> None:
    strategy = {"admissionChecks": [{"name": "finance", "onFlavors": ["spot"]}, {"name": "capacity"}]}
    parsed = parse_cluster_queue(cluster_queue(admissionChecksStrategy=strategy))
    assert isinstance(parsed, ClusterQueue)
    assert parsed.admission_checks == ("finance", "capacity")


def test_on_flavors_must_name_the_queues_flavors() -> None:
    strategy = {"admissionChecks": [{"name": "finance", "onFlavors": ["spot", "reserved"]}]}
    assert messages(parse_cluster_queue(cluster_queue(admissionChecksStrategy=strategy))) == [
        f'{STRATEGY}[0].onFlavors[1]: Unsupported value: "reserved": supported values: "on-demand", "spot"'
    ]


def test_on_flavors_is_a_set_and_checks_are_keyed_by_name() -> None:
    strategy = {
        "admissionChecks": [
            {"name": "finance", "onFlavors": ["spot", "spot"]},
            {"name": "finance", "onFlavors": ["on-demand"]},
        ]
    }
    result = parse_cluster_queue(cluster_queue(admissionChecksStrategy=strategy))
    assert messages(result) == [
        f'{STRATEGY}[0].onFlavors[1]: Duplicate value: "spot"',
        f'{STRATEGY}[1]: Duplicate value: {{"name":"finance"}}',
    ]
    assert isinstance(result, list) and {e.reason for e in result} == {"FieldValueDuplicate"}


def test_a_strategy_needs_its_list_of_checks_and_names_within_316_bytes() -> None:
    assert messages(parse_cluster_queue(cluster_queue(admissionChecksStrategy={}))) == [
        "spec.admissionChecksStrategy.admissionChecks: Required value"
    ]
    strategy = {"admissionChecks": [{"name": "c" * 317}]}
    result = parse_cluster_queue(cluster_queue(admissionChecksStrategy=strategy))
    assert messages(result) == [f"{STRATEGY}[0].name: Too long: may not be more than 316 bytes"]
    assert isinstance(result, list) and result[0].reason == "FieldValueTooLong"
    assert isinstance(
        parse_cluster_queue(
            cluster_queue(admissionChecksStrategy={"admissionChecks": [{"name": "c" * 316}]})
        ),
        ClusterQueue,
    )


def test_at_most_256_covered_resources_over_all_groups() -> None:
    def group(first: int) -> dict[str, Any]:
        names = [f"example.com/r{first + i}" for i in range(64)]
        quotas = [{"name": n, "nominalQuota": 1} for n in names]
        return {"coveredResources": names, "flavors": [{"name": f"f{first}", "resources": quotas}]}

    spec = cluster_queue()["spec"]
    spec["resourceGroups"] = [group(64 * g) for g in range(4)]
    assert isinstance(parse_cluster_queue({**cluster_queue(), "spec": spec}), ClusterQueue)
    spec["resourceGroups"].append(group(256))
    assert messages(parse_cluster_queue({**cluster_queue(), "spec": spec})) == [
        "spec.resourceGroups: Invalid value: 320: "
        "total number of covered resources across all resourceGroups must be ≤ 256, got 320"
    ]


def test_at_most_512_flavor_resource_combinations_in_a_group() -> None:
    names = [f"example.com/r{i}" for i in range(9)]
    quotas = [{"name": n, "nominalQuota": 1} for n in names]
    flavors = [{"name": f"f{i}", "resources": quotas} for i in range(57)]  # 57 * 9 = 513
    spec = {"resourceGroups": [{"coveredResources": names, "flavors": flavors}]}
    assert messages(parse_cluster_queue({**cluster_queue(), "spec": spec})) == [
        "spec.resourceGroups[0]: Invalid value: 513: "
        "number of flavor-resource combinations in a resourceGroup must be ≤ 512, got 513"
    ]
    spec["resourceGroups"][0]["flavors"] = flavors[:56]  # 504
    assert isinstance(parse_cluster_queue({**cluster_queue(), "spec": spec}), ClusterQueue)
