"""Flavor assignment: group-wise flavors, fungibility, node compatibility, Kueue's exact pending messages."""

from __future__ import annotations

from kueue_webhook.core.scheduler import Admit, SchedulerState

from .builders import (
    admitted,
    cluster_queue,
    flavor,
    last_wait,
    local_queue,
    run_until_quiet,
    state_with,
    workload,
)


def flavors_of(state: SchedulerState, key: str) -> dict[str, str]:
    info = state.workload(key)
    assert info is not None and info.admission is not None
    return dict(info.admission.pod_set_assignments[0].flavors)


def test_all_resources_of_a_group_land_on_one_flavor_and_the_next_flavor_is_tried() -> None:
    queue = cluster_queue("cq", {"small": {"cpu": 2, "memory": "4Gi"}, "big": {"cpu": 8, "memory": "4Gi"}})
    state = state_with(queue, flavors=("small", "big"))
    state.upsert_workload(workload("w", {"cpu": "3", "memory": "1Gi"}))
    run_until_quiet(state)
    assert flavors_of(state, "ns/w") == {"cpu": "big", "memory": "big"}


def test_admission_records_usage_per_pod_set_in_kueue_format() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 8, "memory": "16Gi"}}))
    state.upsert_workload(workload("w", {"cpu": "500m", "memory": "1536Mi"}, count=3))
    decisions = run_until_quiet(state)
    admit = decisions[0]
    assert isinstance(admit, Admit)
    assert admit.admission.to_dict() == {
        "clusterQueue": "cq",
        "podSetAssignments": [
            {
                "name": "main",
                "flavors": {"cpu": "default", "memory": "default"},
                "resourceUsage": {"cpu": "1500m", "memory": "4608Mi"},
                "count": 3,
            }
        ],
    }


def test_insufficient_unused_quota_message_and_reason() -> None:
    state = state_with(cluster_queue("cq", {"gpu-nodes": {"nvidia.com/gpu": 4}}), flavors=("gpu-nodes",))
    state.upsert_workload(workload("first", {"nvidia.com/gpu": "3"}, created=1))
    state.upsert_workload(workload("second", {"nvidia.com/gpu": "2"}, created=2))
    decisions = run_until_quiet(state)
    wait = last_wait(decisions, "ns/second")
    assert wait.reason == "WaitingForQuota"
    assert wait.message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
        "gpu-nodes, 1 more needed"
    )


def test_request_beyond_maximum_capacity_is_exceeds_max_quota() -> None:
    state = state_with(cluster_queue("cq", {"default": {"memory": "8Gi"}}))
    state.upsert_workload(workload("w", {"memory": "6Gi"}, count=2))
    wait = last_wait(run_until_quiet(state), "ns/w")
    assert wait.reason == "ExceedsMaxQuota"
    assert wait.message == (
        "couldn't assign flavors to pod set main: insufficient quota for memory in flavor default, "
        "previously considered podsets requests (0) + current podset request (12Gi) > maximum capacity (8Gi)"
    )


def test_previous_pod_sets_count_against_the_same_flavor() -> None:
    pod = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}]}}
    pod_sets = [
        {"name": "driver", "count": 1, "template": pod},
        {"name": "workers", "count": 1, "template": pod},
    ]
    state = state_with(cluster_queue("cq", {"default": {"cpu": 4}}))
    state.upsert_workload(workload("w", pod_sets=pod_sets))
    wait = last_wait(run_until_quiet(state), "ns/w")
    assert wait.message == (
        "couldn't assign flavors to pod set workers: insufficient quota for cpu in flavor default, "
        "previously considered podsets requests (3) + current podset request (3) > maximum capacity (4)"
    )


def test_messages_of_all_tried_flavors_are_sorted_and_joined() -> None:
    queue = cluster_queue("cq", {"b-flavor": {"cpu": 1}, "a-flavor": {"cpu": 2}})
    state = state_with(queue, flavors=("a-flavor", "b-flavor"))
    state.upsert_workload(workload("w", {"cpu": "3"}))
    wait = last_wait(run_until_quiet(state), "ns/w")
    assert wait.message == (
        "couldn't assign flavors to pod set main: "
        "insufficient quota for cpu in flavor a-flavor, previously considered podsets requests (0) + current "
        "podset request (3) > maximum capacity (2), "
        "insufficient quota for cpu in flavor b-flavor, previously considered podsets requests (0) + current "
        "podset request (3) > maximum capacity (1)"
    )


def test_a_resource_the_queue_does_not_cover_is_no_matching_flavor() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 4}}))
    state.upsert_workload(workload("w", {"cpu": "1", "nvidia.com/gpu": "1"}))
    wait = last_wait(run_until_quiet(state), "ns/w")
    assert (wait.reason, wait.message) == (
        "NoMatchingFlavor",
        "couldn't assign flavors to pod set main: resource nvidia.com/gpu unavailable in ClusterQueue",
    )


def test_untolerated_taint_skips_a_flavor() -> None:
    state = state_with(cluster_queue("cq", {"tainted": {"cpu": 4}, "plain": {"cpu": 4}}), flavors=())
    state.upsert_resource_flavor(
        flavor("tainted", taints=[{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}])
    )
    state.upsert_resource_flavor(flavor("plain"))
    state.upsert_workload(workload("w"))
    tolerating = {
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}]
    }
    state.upsert_workload(workload("t", pod_spec=tolerating))
    run_until_quiet(state)
    assert flavors_of(state, "ns/w") == {"cpu": "plain"}
    assert flavors_of(state, "ns/t") == {"cpu": "tainted"}


def test_only_incompatible_flavors_give_no_matching_flavor_with_the_taint_named() -> None:
    state = state_with(cluster_queue("cq", {"tainted": {"cpu": 4}}), flavors=())
    state.upsert_resource_flavor(
        flavor("tainted", taints=[{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}])
    )
    state.upsert_workload(workload("w"))
    wait = last_wait(run_until_quiet(state), "ns/w")
    assert (wait.reason, wait.message) == (
        "NoMatchingFlavor",
        "couldn't assign flavors to pod set main: "
        "untolerated taint dedicated=ml:NoSchedule in flavor tainted",
    )


def test_node_selector_picks_the_flavor_whose_labels_match() -> None:
    state = state_with(cluster_queue("cq", {"zone-a": {"cpu": 4}, "zone-b": {"cpu": 4}}), flavors=())
    state.upsert_resource_flavor(flavor("zone-a", labels={"zone": "a"}))
    state.upsert_resource_flavor(flavor("zone-b", labels={"zone": "b"}))
    state.upsert_workload(workload("w", pod_spec={"nodeSelector": {"zone": "b", "unrelated": "x"}}))
    affinity = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}
                    ]
                }
            }
        }
    }
    state.upsert_workload(workload("aff", pod_spec=affinity))
    run_until_quiet(state)
    assert flavors_of(state, "ns/w") == {"cpu": "zone-b"}
    assert flavors_of(state, "ns/aff") == {"cpu": "zone-b"}


def _borrowing_world(when_can_borrow: str) -> SchedulerState:
    fungibility = {"whenCanBorrow": when_can_borrow, "whenCanPreempt": "TryNextFlavor"}
    team = cluster_queue(
        "team", {"spot": {"cpu": 2}, "on-demand": {"cpu": 4}}, cohortName="org", flavorFungibility=fungibility
    )
    lender = cluster_queue("lender", {"spot": {"cpu": 8}, "on-demand": {"cpu": 0}}, cohortName="org")
    state = state_with(team, lender, flavors=("spot", "on-demand"))
    return state


def test_may_stop_search_takes_the_first_flavor_even_when_it_borrows() -> None:
    state = _borrowing_world("MayStopSearch")
    state.upsert_workload(workload("w", {"cpu": "3"}))
    run_until_quiet(state)
    assert flavors_of(state, "ns/w") == {"cpu": "spot"}


def test_try_next_flavor_prefers_a_flavor_that_fits_without_borrowing() -> None:
    state = _borrowing_world("TryNextFlavor")
    state.upsert_workload(workload("w", {"cpu": "3"}))
    decisions = run_until_quiet(state)
    assert flavors_of(state, "ns/w") == {"cpu": "on-demand"}
    assert admitted(decisions) == ["ns/w"]


def test_try_next_flavor_still_borrows_when_no_flavor_fits_otherwise() -> None:
    state = _borrowing_world("TryNextFlavor")
    state.upsert_workload(workload("w", {"cpu": "5"}))
    decisions = run_until_quiet(state)
    assert flavors_of(state, "ns/w") == {"cpu": "spot"}
    admit = next(d for d in decisions if isinstance(d, Admit))
    assert admit.borrowing


def test_missing_flavor_is_reported_when_the_queue_references_one_that_is_not_there() -> None:
    state = state_with(cluster_queue("cq", {"gone": {"cpu": 4}}), flavors=())
    state.upsert_local_queue(local_queue("lq", "cq"))
    state.upsert_workload(workload("w"))
    wait = last_wait(run_until_quiet(state), "ns/w")
    assert (wait.reason, wait.message) == ("Suspended", "ClusterQueue cq is inactive")
