"""Kubeflow Trainer objects for tests: a torch ClusterTrainingRuntime whose nodes each ask for one GPU, a
TrainJob naming it, and what Kueue's runtime patch of a TrainJob says of its ``node`` pods. The fake API
server tests, the MultiKueue ones and the e2e tests play the same story with them (the tests play the
Trainer: none runs)."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.integrations.trainjob import ANCESTOR_LABEL, RUNTIME_PATCH_MANAGER

__all__ = ["TRAINER_CRDS", "cluster_runtime", "complete", "kueue_patch", "trainjob"]

JSON = dict[str, Any]
#: the plurals of the Trainer CRDs in tests/crds
TRAINER_CRDS = ("trainjobs", "trainingruntimes", "clustertrainingruntimes")


def cluster_runtime(name: str, *, resources: JSON | None = None) -> JSON:
    """A torch ClusterTrainingRuntime: one node unless the TrainJob says otherwise, each asking for a GPU
    (or ``resources``)."""
    node = {"name": "node", "image": "busybox", "resources": resources or {"limits": {"nvidia.com/gpu": "1"}}}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {ANCESTOR_LABEL: "trainer"}},
                                "spec": {
                                    "template": {"spec": {"restartPolicy": "Never", "containers": [node]}}
                                },
                            },
                        }
                    ]
                }
            },
        },
    }


def trainjob(name: str, namespace: str, queue: str, runtime: str, *, nodes: int) -> JSON:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {"runtimeRef": {"name": runtime}, "trainer": {"numNodes": nodes}},
    }


def kueue_patch(obj: JSON | None) -> JSON:
    """What Kueue's runtime patch says of the ``node`` pod spec ({} when nothing)."""
    for patch in ((obj or {}).get("spec") or {}).get("runtimePatches") or []:
        if patch.get("manager") == RUNTIME_PATCH_MANAGER:
            jobs = patch["trainingRuntimeSpec"]["template"]["spec"].get("replicatedJobs") or []
            for job in jobs:
                if job["name"] == "node":
                    return dict(job["template"]["spec"]["template"]["spec"])
    return {}


def complete(nodes: int) -> JSON:
    """The status the Trainer writes when a TrainJob's JobSet completed."""
    return {
        "conditions": [
            {
                "type": "Complete",
                "status": "True",
                "reason": "JobsCompleted",
                "message": "jobset completed",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
        "jobsStatus": [
            {"name": "node", "succeeded": nodes, "active": 0, "ready": 0, "failed": 0, "suspended": 0}
        ],
    }
