"""A Job and its Workload at each step of their life, and the reconciler's plan for a pair: the vocabulary
of the Job ⇄ Workload rule tests."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.objects import ResourceFlavor, parse_resource_flavor
from kueue_webhook.control.jobs.job_plan import plan_job
from kueue_webhook.control.output.conditions import admitted_status
from tests.support import builders

JSON = dict[str, Any]
NOW = "2026-11-22T01:00:00Z"


def job(
    *,
    suspend: bool = True,
    conditions: list[JSON] | None = None,
    node_selector: JSON | None = None,
    active: int = 0,
    succeeded: int = 0,
    parallelism: int = 1,
    completions: int = 1,
) -> JSON:
    pod_spec: JSON = {
        "containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]
    }
    if node_selector is not None:
        pod_spec["nodeSelector"] = node_selector
    return builders.job(
        "train",
        "team-a",
        queue="gpu",
        metadata={"uid": "job-uid"},
        suspend=suspend,
        parallelism=parallelism,
        completions=completions,
        pod_spec=pod_spec,
        status={
            "conditions": conditions or [],
            **({"active": active} if active else {}),
            **({"succeeded": succeeded} if succeeded else {}),
        },
    )


def workload(status: JSON | None = None) -> JSON:
    return {
        "metadata": {
            "name": "job-train-abcde",
            "namespace": "team-a",
            "generation": 1,
            "resourceVersion": "5",
        },
        "spec": {
            "podSets": [{"name": "main", "count": 1, "template": job()["spec"]["template"]}],
            "queueName": "gpu",
        },
        "status": status or {},
    }


ADMISSION = {
    "clusterQueue": "research",
    "podSetAssignments": [
        {
            "name": "main",
            "flavors": {"nvidia.com/gpu": "gpu-nodes"},
            "resourceUsage": {"nvidia.com/gpu": "2"},
            "count": 1,
        }
    ],
}


def admitted() -> JSON:
    return workload(admitted_status(workload(), admission=ADMISSION, now=NOW))


FINALIZER = "kueue.x-k8s.io/resource-in-use"


def held(w: JSON, *, deleted: bool = False, finalizers: tuple[str, ...] = (FINALIZER,)) -> JSON:
    """A copy of ``w`` with finalizers, and a deletionTimestamp when ``deleted`` (a DELETE they hold)."""
    meta: JSON = {**w["metadata"], "finalizers": list(finalizers)}
    if deleted:
        meta["deletionTimestamp"] = NOW
    return {**w, "metadata": meta}


def flavor_lookup(name: str) -> ResourceFlavor | None:
    parsed = parse_resource_flavor(
        {
            "metadata": {"name": name},
            "spec": {"nodeLabels": {"pool": "a100"}, "tolerations": [{"key": "gpu", "operator": "Exists"}]},
        }
    )
    assert isinstance(parsed, ResourceFlavor)
    return parsed if name == "gpu-nodes" else None


def plan(j: JSON, w: JSON | None) -> object:
    return plan_job(j, w, flavors=flavor_lookup)
