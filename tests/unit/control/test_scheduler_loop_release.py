"""Quota passes on when the Workload says it is free (Finished), as Kueue's cache releases it: not when its
Job completes. Otherwise, for the moment between the two writes, the Workloads holding a reservation exceed
the quota as anyone watching them counts it.
"""

from __future__ import annotations

from typing import Any

from kueue_webhook.control.kube.kinds import (
    CLUSTER_QUEUES,
    JOBS,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    Kind,
)
from tests.support import builders
from tests.unit.control.scheduler_loops import admitted, feed, new_loop

JSON = dict[str, Any]
GROUP = "kueue.x-k8s.io/v1beta2"
NOW = "2026-01-01T00:00:00Z"


def meta(name: str, version: int, **extra: Any) -> JSON:
    return {"name": name, "resourceVersion": str(version), "creationTimestamp": NOW, **extra}


def job(*, complete: bool) -> JSON:
    conditions = [{"type": "Complete", "status": "True", "message": "done"}] if complete else []
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta("train", 10 + complete, namespace="team", uid="job-uid"),
        "spec": {"suspend": False},
        "status": {"conditions": conditions},
    }


def workload(name: str, version: int, *, owner: bool = False, conditions: list[JSON] | None = None) -> JSON:
    obj = builders.workload(
        name,
        uid=f"{name}-uid",
        resourceVersion=str(version),
        creationTimestamp=NOW,
        pod_sets=[builders.pod_set(requests={"cpu": "2"})],
    )
    if owner:
        obj["metadata"]["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "job-uid", "controller": True}
        ]
    if conditions is not None:
        obj["status"] = {
            "conditions": [
                {"status": "True", "reason": c["type"], "message": "", "lastTransitionTime": NOW, **c}
                for c in conditions
            ],
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {"name": "main", "flavors": {"cpu": "rf"}, "resourceUsage": {"cpu": "2"}, "count": 1}
                ],
            },
        }
    return obj


SETUP: list[tuple[Kind, JSON]] = [
    (NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": meta("team", 1)}),
    (RESOURCE_FLAVORS, {"apiVersion": GROUP, "kind": "ResourceFlavor", "metadata": meta("rf", 2)}),
    (
        CLUSTER_QUEUES,
        {
            "apiVersion": GROUP,
            "kind": "ClusterQueue",
            "metadata": meta("cq", 3, generation=1),
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": "rf", "resources": [{"name": "cpu", "nominalQuota": "2"}]}],
                    }
                ],
            },
        },
    ),
    (
        LOCAL_QUEUES,
        {
            "apiVersion": GROUP,
            "kind": "LocalQueue",
            "metadata": meta("lq", 4, namespace="team"),
            "spec": {"clusterQueue": "cq"},
        },
    ),
    (JOBS, job(complete=False)),
    (
        WORKLOADS,
        workload("running", 5, owner=True, conditions=[{"type": "QuotaReserved"}, {"type": "Admitted"}]),
    ),
    (WORKLOADS, workload("waiting", 6)),
]


def test_a_completed_job_frees_its_quota_only_once_its_workload_is_finished() -> None:
    loop, store = new_loop()
    for kind, obj in SETUP:
        feed(loop, store, kind, obj)
    assert admitted(loop) == []  # 2 cpu of 2 held by "running"

    feed(loop, store, JOBS, job(complete=True))
    assert admitted(loop) == []  # the Workload still holds its reservation: nothing to hand on yet

    finished = [{"type": "QuotaReserved"}, {"type": "Admitted"}, {"type": "Finished", "reason": "Succeeded"}]
    feed(loop, store, WORKLOADS, workload("running", 12, owner=True, conditions=finished))
    assert admitted(loop) == ["team/waiting"]


def test_a_finished_workload_frees_its_quota_even_when_the_rest_of_it_no_longer_reads() -> None:
    # Kueue's WorkloadReconciler.Update: a Finished Workload leaves the queues and the cache, whatever
    # else it says
    loop, store = new_loop()
    for kind, obj in SETUP:
        feed(loop, store, kind, obj)
    finished = [{"type": "QuotaReserved"}, {"type": "Admitted"}, {"type": "Finished", "reason": "Succeeded"}]
    damaged = workload("running", 12, owner=True, conditions=finished)
    damaged["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]["cpu"] = "lots"
    feed(loop, store, WORKLOADS, damaged)
    assert admitted(loop) == ["team/waiting"]
