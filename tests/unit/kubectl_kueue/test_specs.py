"""``kubectl kueue create`` builds kueuectl's objects from the same flags, and refuses what it refuses."""

from __future__ import annotations

import pytest

from kueue_webhook.kubectl_kueue.specs import (
    SpecError,
    cluster_queue,
    local_queue,
    resource_flavor,
    taints,
    tolerations,
)


def test_a_bare_cluster_queue_is_best_effort_fifo_without_preemption_for_every_namespace() -> None:
    assert cluster_queue("cq")["spec"] == {
        "queueingStrategy": "BestEffortFIFO",
        "namespaceSelector": {},
        "preemption": {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never"},
    }


def test_quotas_of_a_flavor_merge_across_flags_and_flavors_of_the_same_resources_share_a_group() -> None:
    spec = cluster_queue(
        "cq",
        cohort="all",
        queuing_strategy="StrictFIFO",
        namespace_selector="team=a,tier=gold",
        reclaim_within_cohort="Any",
        preemption_within_cluster_queue="LowerPriority",
        nominal_quota=["on-demand:cpu=9;memory=36Gi,spot:cpu=18;memory=72Gi", "gpu:nvidia.com/gpu=8"],
        borrowing_limit=["on-demand:cpu=1;memory=1Gi"],
        lending_limit=["spot:cpu=2;memory=2Gi"],
    )["spec"]
    assert spec["cohortName"] == "all"
    assert spec["queueingStrategy"] == "StrictFIFO"
    assert spec["namespaceSelector"] == {"matchLabels": {"team": "a", "tier": "gold"}}
    assert spec["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    assert spec["resourceGroups"] == [
        {
            "coveredResources": ["cpu", "memory"],
            "flavors": [
                {
                    "name": "on-demand",
                    "resources": [
                        {"name": "cpu", "nominalQuota": "9", "borrowingLimit": "1"},
                        {"name": "memory", "nominalQuota": "36Gi", "borrowingLimit": "1Gi"},
                    ],
                },
                {
                    "name": "spot",
                    "resources": [
                        {"name": "cpu", "nominalQuota": "18", "lendingLimit": "2"},
                        {"name": "memory", "nominalQuota": "72Gi", "lendingLimit": "2Gi"},
                    ],
                },
            ],
        },
        {
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [{"name": "gpu", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "8"}]}],
        },
    ]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"nominal_quota": ["alpha"]}, "invalid resources specification"),
        ({"nominal_quota": ["Alpha:cpu=1"]}, "invalid resources specification"),
        ({"nominal_quota": ["alpha:cpu=1x"]}, "invalid resource quota"),
        ({"nominal_quota": ["alpha:cpu=1"], "borrowing_limit": ["alpha:memory=1"]}, "invalid flavor"),
        ({"nominal_quota": ["alpha:cpu=1;memory=1", "beta:cpu=1"]}, "invalid resource group"),
    ],
)
def test_bad_quota_flags_are_refused_in_kueuectls_words(flags: dict[str, list[str]], message: str) -> None:
    with pytest.raises(SpecError) as caught:
        cluster_queue("cq", **flags)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_a_local_queue_in_the_namespace_in_effect() -> None:
    assert local_queue("lq", "team-a", "research") == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "lq", "namespace": "team-a"},
        "spec": {"clusterQueue": "research"},
    }


def test_resource_flavor_labels_taints_and_tolerations() -> None:
    spec = resource_flavor(
        "rf",
        node_labels="kubernetes.io/arch=arm64,kubernetes.io/os=linux",
        node_taints=["key1=value:NoSchedule,key1=value:PreferNoSchedule"],
        extra=["key1=value:NoSchedule,key2:NoExecute", ":PreferNoSchedule", "key4"],
    )["spec"]
    assert spec["nodeLabels"] == {"kubernetes.io/arch": "arm64", "kubernetes.io/os": "linux"}
    assert spec["nodeTaints"] == [
        {"key": "key1", "value": "value", "effect": "NoSchedule"},
        {"key": "key1", "value": "value", "effect": "PreferNoSchedule"},
    ]
    assert spec["tolerations"] == [
        {"operator": "Equal", "key": "key1", "value": "value", "effect": "NoSchedule"},
        {"operator": "Exists", "key": "key2", "effect": "NoExecute"},
        {"operator": "Exists", "effect": "PreferNoSchedule"},
        {"operator": "Exists", "key": "key4"},
    ]
    assert resource_flavor("bare")["spec"] == {}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ([""], "invalid taint spec"),
        (["NoSchedule"], "invalid taint spec: NoSchedule"),
        (["=value:NoSchedule"], "invalid taint spec: =value:NoSchedule, not a valid label key"),
        (["key=value"], "invalid taint spec: key=value"),
        (["key=value:NoSchedule:NoSchedule"], "invalid taint spec: key=value:NoSchedule:NoSchedule"),
        (["key=value=value:NoSchedule"], "invalid taint spec: key=value=value:NoSchedule"),
        (["key=value:Invalid"], "invalid taint effect: Invalid, unsupported taint effect"),
        (
            ["k=v:NoSchedule", "k=w:NoSchedule"],
            "duplicated taints with the same key and effect: k=w:NoSchedule",
        ),
    ],
)
def test_bad_taints(spec: list[str], message: str) -> None:
    with pytest.raises(SpecError) as caught:
        taints(spec)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ([""], "invalid toleration spec"),
        (["=value:NoSchedule"], "invalid toleration spec: =value:NoSchedule"),
        (["key:Invalid"], "invalid taint effect: Invalid, unsupported taint effect"),
        (["@=value:NoSchedule"], "invalid toleration spec: @=value:NoSchedule, not a valid label key"),
    ],
)
def test_bad_tolerations(spec: list[str], message: str) -> None:
    with pytest.raises(SpecError) as caught:
        tolerations(spec)
    assert str(caught.value) == message
