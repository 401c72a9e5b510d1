"""ClusterQueue/LocalQueue status as `kubectl get -o yaml` shows it in Kueue (seed walk-through shapes)."""

from __future__ import annotations

from typing import Any

from webhook.control.conditions import admitted_status
from webhook.control.queue_status import cluster_queue_status, local_queue_status, status_differs

JSON = dict[str, Any]
NOW = "2026-11-22T01:00:00Z"

CQ: JSON = {
    "metadata": {"name": "research", "generation": 1},
    "spec": {
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                "flavors": [
                    {
                        "name": "gpu-nodes",
                        "resources": [
                            {"name": "cpu", "nominalQuota": "64"},
                            {"name": "memory", "nominalQuota": "256Gi"},
                            {"name": "nvidia.com/gpu", "nominalQuota": "8"},
                        ],
                    }
                ],
            }
        ]
    },
}


def admitted_workload(gpus: str) -> JSON:
    admission = {
        "clusterQueue": "research",
        "podSetAssignments": [
            {
                "name": "main",
                "count": 1,
                "flavors": {"cpu": "gpu-nodes", "memory": "gpu-nodes", "nvidia.com/gpu": "gpu-nodes"},
                "resourceUsage": {"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": gpus},
            }
        ],
    }
    return {
        "metadata": {"name": "w"},
        "status": admitted_status({"metadata": {}}, admission=admission, now=NOW),
    }


def test_missing_flavor_makes_the_queue_inactive_naming_it() -> None:
    status = cluster_queue_status(CQ, existing_flavors=set(), workloads=[], pending=0, now=NOW)
    [active] = status["conditions"]
    assert (active["status"], active["reason"]) == ("False", "FlavorNotFound")
    assert active["message"] == "Can't admit new workloads: references missing ResourceFlavor(s): gpu-nodes."


def test_ready_queue_reports_usage_of_admitted_workloads_per_flavor() -> None:
    status = cluster_queue_status(
        CQ, existing_flavors={"gpu-nodes"}, workloads=[admitted_workload("2")], pending=3, now=NOW
    )
    [active] = status["conditions"]
    assert (active["status"], active["reason"], active["message"]) == (
        "True",
        "Ready",
        "Can admit new workloads",
    )
    assert status["flavorsUsage"] == [
        {
            "name": "gpu-nodes",
            "resources": [
                {"name": "cpu", "total": "1", "borrowed": "0"},
                {"name": "memory", "total": "4Gi", "borrowed": "0"},
                {"name": "nvidia.com/gpu", "total": "2", "borrowed": "0"},
            ],
        }
    ]
    assert (status["admittedWorkloads"], status["reservingWorkloads"], status["pendingWorkloads"]) == (
        1,
        1,
        3,
    )


def test_usage_above_nominal_is_reported_as_borrowed() -> None:
    status = cluster_queue_status(
        CQ, existing_flavors={"gpu-nodes"}, workloads=[admitted_workload("10")], pending=0, now=NOW
    )
    gpu = status["flavorsUsage"][0]["resources"][2]
    assert gpu == {"name": "nvidia.com/gpu", "total": "10", "borrowed": "2"}


def test_recomputing_an_unchanged_queue_needs_no_write() -> None:
    first = cluster_queue_status(CQ, existing_flavors={"gpu-nodes"}, workloads=[], pending=0, now=NOW)
    again = cluster_queue_status(
        {**CQ, "status": first},
        existing_flavors={"gpu-nodes"},
        workloads=[],
        pending=0,
        now="2030-01-01T00:00:00Z",
    )
    assert not status_differs(first, again)
    busier = cluster_queue_status(
        {**CQ, "status": first}, existing_flavors={"gpu-nodes"}, workloads=[], pending=1, now=NOW
    )
    assert status_differs(first, busier)


def test_local_queue_follows_its_cluster_queue() -> None:
    lq: JSON = {"metadata": {"name": "gpu", "namespace": "team-a"}, "spec": {"clusterQueue": "research"}}
    missing = local_queue_status(lq, cluster_queue=None, workloads=[], pending=0, now=NOW)
    assert missing["conditions"][0]["reason"] == "ClusterQueueDoesNotExist"
    cq_status = cluster_queue_status(CQ, existing_flavors={"gpu-nodes"}, workloads=[], pending=0, now=NOW)
    ready = local_queue_status(
        lq, cluster_queue={**CQ, "status": cq_status}, workloads=[admitted_workload("2")], pending=0, now=NOW
    )
    assert ready["conditions"][0]["message"] == "Can submit new workloads to localQueue"
    assert ready["flavorsUsage"][0]["resources"][2] == {"name": "nvidia.com/gpu", "total": "2"}
