"""Queue status writes: the core's computed status merged with condition semantics, written only on change."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.objects import ClusterQueue, ResourceFlavor, parse_cluster_queue, parse_resource_flavor
from kueue_webhook.control.output.queue_status import merge_status, status_differs
from kueue_webhook.core.scheduler import SchedulerState
from kueue_webhook.core.status import cluster_queue_status

JSON = dict[str, Any]
NOW = "2026-11-22T01:00:00Z"
LATER = "2030-01-01T00:00:00Z"

CQ: JSON = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ClusterQueue",
    "metadata": {"name": "research", "generation": 1},
    "spec": {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["nvidia.com/gpu"],
                "flavors": [
                    {"name": "gpu-nodes", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "64"}]}
                ],
            }
        ],
    },
}


def state_with(*, flavor: bool) -> SchedulerState:
    state = SchedulerState()
    if flavor:
        parsed_flavor = parse_resource_flavor(
            {"kind": "ResourceFlavor", "metadata": {"name": "gpu-nodes"}, "spec": {}}
        )
        assert isinstance(parsed_flavor, ResourceFlavor)
        state.upsert_resource_flavor(parsed_flavor)
    parsed = parse_cluster_queue(CQ)
    assert isinstance(parsed, ClusterQueue)
    state.upsert_cluster_queue(parsed)
    return state


def test_flavor_arriving_flips_active_and_stamps_a_new_transition_time() -> None:
    missing = merge_status(
        None, cluster_queue_status(state_with(flavor=False), "research"), generation=1, now=NOW
    )
    [active] = missing["conditions"]
    assert (active["status"], active["reason"]) == ("False", "FlavorNotFound")
    assert active["message"] == "Can't admit new workloads: references missing ResourceFlavor(s): gpu-nodes."
    ready = merge_status(
        missing, cluster_queue_status(state_with(flavor=True), "research"), generation=1, now=LATER
    )
    [active] = ready["conditions"]
    assert (active["status"], active["reason"], active["lastTransitionTime"]) == ("True", "Ready", LATER)
    assert active["observedGeneration"] == 1
    assert status_differs(missing, ready)


def test_recomputing_an_unchanged_queue_needs_no_write() -> None:
    first = merge_status(
        None, cluster_queue_status(state_with(flavor=True), "research"), generation=1, now=NOW
    )
    again = merge_status(
        first, cluster_queue_status(state_with(flavor=True), "research"), generation=1, now=LATER
    )
    assert not status_differs(first, again)
    assert again["conditions"][0]["lastTransitionTime"] == NOW


def test_a_count_change_is_a_visible_change() -> None:
    first = merge_status(
        None, cluster_queue_status(state_with(flavor=True), "research"), generation=1, now=NOW
    )
    assert status_differs(first, {**first, "pendingWorkloads": 1})
    assert status_differs(first, {**first, "flavorsUsage": []})
