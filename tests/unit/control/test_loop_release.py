"""Quota passes on when the Workload says it is free (Finished), as Kueue's cache releases it: not when its
Job completes. Otherwise, for the moment between the two writes, the Workloads holding a reservation exceed
the quota as anyone watching them counts it.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.unit.control.fakes import control_context
from webhook.control.kinds import (
    CLUSTER_QUEUES,
    JOBS,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    Kind,
)
from webhook.control.loop import AdmissionLoop
from webhook.control.store import Change, Store, key_of
from webhook.core.scheduler import Admit

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
    obj: JSON = {
        "apiVersion": GROUP,
        "kind": "Workload",
        "metadata": meta(name, version, namespace="team", uid=f"{name}-uid"),
        "spec": {
            "queueName": "lq",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}
                    },
                }
            ],
        },
    }
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


def feed(loop: AdmissionLoop, store: Store, kind: Kind, obj: JSON) -> None:
    old = store.get(kind, key_of(obj)[1], key_of(obj)[0])
    store.upsert(kind, obj)
    loop.on_change(Change(kind, key_of(obj), old, copy.deepcopy(obj)))


def admitted(loop: AdmissionLoop) -> list[str]:
    decisions: list[Any] = []
    while loop.state.has_work():
        decisions.extend(loop.state.cycle())
    return [d.workload for d in decisions if isinstance(d, Admit)]


def test_a_completed_job_frees_its_quota_only_once_its_workload_is_finished() -> None:
    store = Store()
    loop = AdmissionLoop(control_context(store))
    for kind, obj in SETUP:
        feed(loop, store, kind, obj)
    assert admitted(loop) == []  # 2 cpu of 2 held by "running"

    feed(loop, store, JOBS, job(complete=True))
    assert admitted(loop) == []  # the Workload still holds its reservation: nothing to hand on yet

    finished = [{"type": "QuotaReserved"}, {"type": "Admitted"}, {"type": "Finished", "reason": "Succeeded"}]
    feed(loop, store, WORKLOADS, workload("running", 12, owner=True, conditions=finished))
    assert admitted(loop) == ["team/waiting"]
