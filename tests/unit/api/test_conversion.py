"""v1beta1 <-> v1beta2 conversion, rule by rule as Kueue's apis/kueue/v1beta1/*_conversion.go converts."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueue_webhook.api.conversion import V1BETA1, V1BETA2, ConversionError, convert, to_v1beta1, to_v1beta2


def _obj(kind: str, api_version: str, spec: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}
    if spec is not None:
        obj["spec"] = spec
    obj.update(extra)
    return obj


def test_cluster_queue_cohort_becomes_cohort_name_and_back() -> None:
    old = _obj("ClusterQueue", V1BETA1, {"cohort": "team", "queueingStrategy": "StrictFIFO"})
    new = convert(old, V1BETA2)
    assert new["apiVersion"] == V1BETA2
    assert new["spec"] == {"cohortName": "team", "queueingStrategy": "StrictFIFO"}
    assert convert(new, V1BETA1) == old


def test_cluster_queue_admission_check_names_become_a_strategy_that_replaces_any_given() -> None:
    old = _obj(
        "ClusterQueue",
        V1BETA1,
        {
            "admissionChecks": ["prov", "manual"],
            "admissionChecksStrategy": {"admissionChecks": [{"name": "ignored"}]},
        },
    )
    assert to_v1beta2(old)["spec"] == {
        "admissionChecksStrategy": {"admissionChecks": [{"name": "prov"}, {"name": "manual"}]}
    }


def test_cluster_queue_deprecated_fungibility_values_become_may_stop_search() -> None:
    old = _obj(
        "ClusterQueue",
        V1BETA1,
        {"flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}},
    )
    assert to_v1beta2(old)["spec"]["flavorFungibility"] == {
        "whenCanBorrow": "MayStopSearch",
        "whenCanPreempt": "MayStopSearch",
    }


def test_cluster_queue_fields_the_other_version_lacks_are_dropped_as_kueue_does() -> None:
    new = _obj("ClusterQueue", V1BETA2, {"cohortName": "c", "concurrentAdmissionPolicy": {"x": 1}})
    assert to_v1beta1(new)["spec"] == {"cohort": "c"}
    old = _obj(
        "ClusterQueue",
        V1BETA1,
        {},
        status={
            "pendingWorkloadsStatus": {"head": []},
            "fairSharing": {"weightedShare": 3, "admissionFairSharingStatus": {"consumedResources": {}}},
        },
    )
    assert to_v1beta2(old)["status"] == {"fairSharing": {"weightedShare": 3}}


def test_local_queue_flavor_usage_is_renamed_and_v1beta1_flavors_dropped() -> None:
    usage = [{"name": "gpu", "resources": [{"name": "cpu", "total": "1"}]}]
    old = _obj("LocalQueue", V1BETA1, {"clusterQueue": "cq"}, status={"flavorUsage": usage, "flavors": []})
    new = to_v1beta2(old)
    assert new["status"] == {"flavorsUsage": usage}
    assert new["spec"] == {"clusterQueue": "cq"}
    assert to_v1beta1(new)["status"] == {"flavorUsage": usage}


@pytest.mark.parametrize(
    ("source", "group", "kind"),
    [
        ("kueue.x-k8s.io/workloadpriorityclass", "kueue.x-k8s.io", "WorkloadPriorityClass"),
        ("scheduling.k8s.io/priorityclass", "scheduling.k8s.io", "PriorityClass"),
    ],
)
def test_workload_priority_class_source_and_name_become_a_reference(
    source: str, group: str, kind: str
) -> None:
    old = _obj(
        "Workload",
        V1BETA1,
        {"priorityClassSource": source, "priorityClassName": "high", "priority": 100, "queueName": "q"},
    )
    new = to_v1beta2(old)
    assert new["spec"] == {
        "priorityClassRef": {"group": group, "kind": kind, "name": "high"},
        "priority": 100,
        "queueName": "q",
    }
    assert to_v1beta1(new) == old


def test_workload_without_a_priority_source_gets_no_reference() -> None:
    old = _obj("Workload", V1BETA1, {"priorityClassSource": "", "priorityClassName": "high"})
    assert to_v1beta2(old)["spec"] == {}


def test_workload_execution_time_misspelling_and_v1beta2_only_gates() -> None:
    new = _obj(
        "Workload",
        V1BETA2,
        {
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "topologyRequest": {"podsetSliceRequiredTopologyConstraints": []},
                }
            ],
            "preemptionGates": [{"name": "g"}],
        },
        status={"accumulatedPastExecutionTimeSeconds": 7, "preemptionGates": [{"name": "g"}]},
    )
    old = to_v1beta1(new)
    assert old["status"] == {"accumulatedPastExexcutionTimeSeconds": 7}
    assert old["spec"] == {"podSets": [{"name": "main", "count": 1, "topologyRequest": {}}]}
    assert to_v1beta2(old)["status"] == {"accumulatedPastExecutionTimeSeconds": 7}


def test_workload_topology_slices_expand_to_domains_and_back() -> None:
    slices = [
        {
            "domainCount": 2,
            "valuesPerLevel": [
                {"universal": "rack-1"},
                {"individual": {"prefix": "node-", "roots": ["a", "b"]}},
            ],
            "podCounts": {"individual": [3, 1]},
        }
    ]
    new = _obj(
        "Workload",
        V1BETA2,
        {},
        status={
            "admission": {
                "podSetAssignments": [
                    {"name": "main", "topologyAssignment": {"levels": ["rack", "host"], "slices": slices}}
                ]
            }
        },
    )
    old = to_v1beta1(new)
    assert old["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] == {
        "levels": ["rack", "host"],
        "domains": [
            {"values": ["rack-1", "node-a"], "count": 3},
            {"values": ["rack-1", "node-b"], "count": 1},
        ],
    }
    again = to_v1beta1(to_v1beta2(old))
    assert again == old


def test_admission_check_retry_delay_is_dropped() -> None:
    old = _obj("AdmissionCheck", V1BETA1, {"controllerName": "c", "retryDelayMinutes": 15})
    assert to_v1beta2(old)["spec"] == {"controllerName": "c"}


@pytest.mark.parametrize("kind", ["ResourceFlavor", "Cohort", "WorkloadPriorityClass"])
def test_kinds_with_identical_fields_change_only_api_version(kind: str) -> None:
    old = _obj(kind, V1BETA1, {"nodeLabels": {"a": "b"}}, value=5)
    new = convert(old, V1BETA2)
    assert new == dict(old, apiVersion=V1BETA2)
    assert convert(new, V1BETA1) == old


def test_input_is_never_modified() -> None:
    old = _obj("ClusterQueue", V1BETA1, {"cohort": "c", "admissionChecks": ["a"]})
    kept = copy.deepcopy(old)
    to_v1beta2(old)
    assert old == kept


@pytest.mark.parametrize(
    ("obj", "desired", "message"),
    [
        ({"apiVersion": "batch/v1", "kind": "Job"}, V1BETA2, "'Job' is not a kueue.x-k8s.io kind"),
        (
            {"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "Cohort"},
            V1BETA2,
            "apiVersion 'kueue.x-k8s.io/v1alpha1'",
        ),
        (
            {"apiVersion": V1BETA1, "kind": "Cohort"},
            "kueue.x-k8s.io/v2",
            "desiredAPIVersion 'kueue.x-k8s.io/v2'",
        ),
    ],
)
def test_what_cannot_be_converted_is_refused_with_the_reason(
    obj: dict[str, Any], desired: str, message: str
) -> None:
    with pytest.raises(ConversionError, match=message):
        convert(obj, desired)


# ---- round trip: every v1beta2 object v1beta1 can express comes back unchanged ---------------------------
_names = st.text(alphabet="abcdefghij-", min_size=1, max_size=8)
_quantity = st.sampled_from(["1", "500m", "4Gi", 3])
_cluster_queue_spec = st.fixed_dictionaries(
    {},
    optional={
        "cohortName": _names,
        "queueingStrategy": st.sampled_from(["BestEffortFIFO", "StrictFIFO"]),
        "namespaceSelector": st.just({}),
        "resourceGroups": st.lists(
            st.fixed_dictionaries(
                {
                    "coveredResources": st.lists(_names, min_size=1, max_size=3),
                    "flavors": st.lists(
                        st.fixed_dictionaries(
                            {
                                "name": _names,
                                "resources": st.lists(
                                    st.fixed_dictionaries(
                                        {"name": _names, "nominalQuota": _quantity},
                                        optional={"borrowingLimit": _quantity, "lendingLimit": _quantity},
                                    ),
                                    max_size=2,
                                ),
                            }
                        ),
                        max_size=2,
                    ),
                }
            ),
            max_size=2,
        ),
        "flavorFungibility": st.fixed_dictionaries(
            {},
            optional={
                "whenCanBorrow": st.sampled_from(["MayStopSearch", "TryNextFlavor"]),
                "whenCanPreempt": st.sampled_from(["MayStopSearch", "TryNextFlavor"]),
            },
        ),
        "admissionChecksStrategy": st.fixed_dictionaries(
            {"admissionChecks": st.lists(st.fixed_dictionaries({"name": _names}), max_size=2)}
        ),
        "stopPolicy": st.sampled_from(["None", "Hold", "HoldAndDrain"]),
        "fairSharing": st.fixed_dictionaries({"weight": _quantity}),
    },
)
_workload_spec = st.fixed_dictionaries(
    {"podSets": st.lists(st.fixed_dictionaries({"name": _names, "count": st.integers(0, 9)}), max_size=2)},
    optional={
        "queueName": _names,
        "priority": st.integers(-5, 5),
        "active": st.booleans(),
        "priorityClassRef": st.one_of(
            st.fixed_dictionaries(
                {"group": st.just("kueue.x-k8s.io"), "kind": st.just("WorkloadPriorityClass"), "name": _names}
            ),
            st.fixed_dictionaries(
                {"group": st.just("scheduling.k8s.io"), "kind": st.just("PriorityClass"), "name": _names}
            ),
        ),
    },
)
_objects = st.one_of(
    st.builds(lambda s: _obj("ClusterQueue", V1BETA2, s), _cluster_queue_spec),
    st.builds(
        lambda s, u: _obj("LocalQueue", V1BETA2, {"clusterQueue": s}, status={"flavorsUsage": u}),
        _names,
        st.lists(st.fixed_dictionaries({"name": _names}), max_size=2),
    ),
    st.builds(
        lambda s, t: _obj("Workload", V1BETA2, s, status={"accumulatedPastExecutionTimeSeconds": t}),
        _workload_spec,
        st.integers(0, 1000),
    ),
    st.builds(lambda s: _obj("ResourceFlavor", V1BETA2, {"nodeLabels": {"pool": s}}), _names),
    st.builds(lambda s: _obj("AdmissionCheck", V1BETA2, {"controllerName": s}), _names),
)


@settings(max_examples=150, deadline=None)
@given(_objects)
def test_v1beta2_to_v1beta1_and_back_is_the_same_object(obj: dict[str, Any]) -> None:
    assert convert(convert(obj, V1BETA1), V1BETA2) == obj
