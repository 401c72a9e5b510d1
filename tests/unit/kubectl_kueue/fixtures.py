"""Objects as the API server sends them, for the pure parts of ``kubectl kueue``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.support.builders import gpu_limits, pod_set
from tests.support.builders import workload as builders_workload

JSON = dict[str, Any]
NOW = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)


def ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def cond(kind: str, status: str, reason: str = "", message: str = "", **since: float) -> JSON:
    return {
        "type": kind,
        "status": status,
        "reason": reason or kind,
        "message": message,
        "lastTransitionTime": ago(**(since or {"seconds": 0})),
    }


def workload(
    name: str,
    *,
    namespace: str = "team-a",
    queue: str = "team-a-gpu",
    owner: tuple[str, str, str] | None = ("batch/v1", "Job", "train"),
    created: float = 3600,
    conditions: list[JSON] | None = None,
    admitted_to: str = "",
    gpus: int = 2,
    max_seconds: int | None = None,
    priority: int = 0,
) -> JSON:
    meta: JSON = {"creationTimestamp": ago(seconds=created), "uid": name}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": owner[0], "kind": owner[1], "name": owner[2], "uid": "u-" + name}
        ]
    spec: JSON = {"priority": priority}
    if max_seconds is not None:
        spec["maximumExecutionTimeSeconds"] = max_seconds
    status: JSON = {"conditions": conditions or []}
    if admitted_to:
        status["admission"] = {
            "clusterQueue": admitted_to,
            "podSetAssignments": [
                {
                    "name": "main",
                    "count": 1,
                    "flavors": {"nvidia.com/gpu": "gpu-nodes"},
                    "resourceUsage": {"nvidia.com/gpu": str(gpus)},
                }
            ],
        }
    gpu = pod_set(image="busybox", resources=gpu_limits(gpus), restartPolicy="Never")
    return builders_workload(name, namespace, queue=queue, spec=spec, pod_sets=[gpu], status=status, **meta)


def admitted(
    name: str, *, since: float, gpus: int = 2, max_seconds: int | None = None, created: float = 7200
) -> JSON:
    return workload(
        name,
        owner=("batch/v1", "Job", name),
        created=created,
        conditions=[
            cond("QuotaReserved", "True", "QuotaReserved", seconds=since),
            cond("Admitted", "True", "Admitted", seconds=since),
        ],
        admitted_to="research",
        gpus=gpus,
        max_seconds=max_seconds,
    )


def waiting(name: str, *, created: float, gpus: int = 2, max_seconds: int | None = None) -> JSON:
    return workload(
        name,
        owner=("batch/v1", "Job", name),
        created=created,
        conditions=[
            cond(
                "QuotaReserved",
                "False",
                "Pending",
                "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in "
                "flavor gpu-nodes, 2 more needed",
                seconds=created,
            )
        ],
        gpus=gpus,
        max_seconds=max_seconds,
    )


LOCAL_QUEUE: JSON = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "LocalQueue",
    "metadata": {"name": "team-a-gpu", "namespace": "team-a", "creationTimestamp": ago(hours=30)},
    "spec": {"clusterQueue": "research"},
    "status": {"pendingWorkloads": 2, "admittedWorkloads": 2},
}
CLUSTER_QUEUE: JSON = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ClusterQueue",
    "metadata": {"name": "research", "creationTimestamp": ago(days=3, hours=4)},
    "spec": {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["nvidia.com/gpu"],
                "flavors": [
                    {"name": "gpu-nodes", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "4"}]}
                ],
            }
        ],
    },
    "status": {
        "pendingWorkloads": 2,
        "admittedWorkloads": 2,
        "conditions": [cond("Active", "True", "Ready", "Can admit new workloads", hours=1)],
        "flavorsUsage": [
            {"name": "gpu-nodes", "resources": [{"name": "nvidia.com/gpu", "total": "4", "borrowed": "0"}]}
        ],
        "flavorsReservation": [
            {"name": "gpu-nodes", "resources": [{"name": "nvidia.com/gpu", "total": "4", "borrowed": "0"}]}
        ],
    },
}
FLAVOR: JSON = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ResourceFlavor",
    "metadata": {"name": "gpu-nodes", "creationTimestamp": ago(minutes=5, seconds=7)},
    "spec": {"nodeLabels": {"zone": "a", "nvidia.com/gpu.present": "true"}},
}
