"""JobSet, PyTorchJob and RayJob queued like Jobs, on the fake API server with their CRDs installed
(tests/crds: the upstream schemas when present) and the shipped webhook configurations: created suspended
by the webhook, admitted with Kueue's pod counts and the flavor injected into each pod set, quota released
when the operator (played by the test) reports them finished, suspended again and restored when preempted."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.crds import integration_crds
from tests.e2e.support import certificates, replica, webhook_configurations
from tests.fakeapi import DEFAULT_CRDS, FakeApiServer, load_crds
from tests.integration.controller_harness import condition, controller_config, gpu_limits, queued_job, running
from webhook.certs import ca_bundle

JSON = dict[str, Any]
HANG = 30.0

SETUP = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu-nodes}
spec: {nodeLabels: {node-pool: gpu}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: urgent}
value: 1000
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: research}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: gpu-nodes
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: gpus, namespace: team}
spec: {clusterQueue: research}
"""
FRAMEWORKS = (
    "integrations:\n  frameworks: [batch/job, jobset.x-k8s.io/jobset, kubeflow.org/pytorchjob, ray.io/rayjob]"
)


def template(gpus: int) -> JSON:
    return {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "resources": gpu_limits(gpus)}],
        }
    }


def jobset(name: str) -> JSON:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": "gpus"}},
        "spec": {
            "replicatedJobs": [
                {"name": "driver", "template": {"spec": {"template": template(1)}}},
                {
                    "name": "workers",
                    "replicas": 2,
                    "template": {"spec": {"parallelism": 2, "template": template(1)}},
                },
            ]
        },
    }


def pytorchjob(name: str) -> JSON:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": "gpus"}},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template(1)},
                "Worker": {"replicas": 4, "restartPolicy": "OnFailure", "template": template(1)},
            }
        },
    }


def rayjob(name: str) -> JSON:
    head = {
        "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray", "resources": gpu_limits(1)}]}
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": "gpus"}},
        "spec": {
            "entrypoint": "python train.py",
            "submissionMode": "HTTPMode",
            "rayClusterSpec": {
                "headGroupSpec": {"rayStartParams": {}, "template": head},
                "workerGroupSpecs": [
                    {
                        "groupName": "gpu",
                        "replicas": 5,
                        "minReplicas": 0,
                        "maxReplicas": 5,
                        "rayStartParams": {},
                        "template": template(1),
                    }
                ],
            },
        },
    }


#: kind -> (manifest, plural, suspend path, pod sets as (name, count), pod template paths, finished status)
CASES: dict[
    str,
    tuple[Callable[[str], JSON], str, tuple[str, ...], list[tuple[str, int]], list[tuple[Any, ...]], JSON],
] = {
    "JobSet": (
        jobset,
        "jobsets",
        ("spec", "suspend"),
        [("driver", 1), ("workers", 4)],
        [("spec", "replicatedJobs", i, "template", "spec", "template", "spec") for i in (0, 1)],
        {
            "conditions": [
                {
                    "type": "Completed",
                    "status": "True",
                    "reason": "AllJobsCompleted",
                    "message": "jobset completed successfully",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ]
        },
    ),
    "PyTorchJob": (
        pytorchjob,
        "pytorchjobs",
        ("spec", "runPolicy", "suspend"),
        [("master", 1), ("worker", 4)],
        [("spec", "pytorchReplicaSpecs", t, "template", "spec") for t in ("Master", "Worker")],
        {
            "conditions": [
                {
                    "type": "Succeeded",
                    "status": "True",
                    "reason": "PyTorchJobSucceeded",
                    "message": "done",
                    "lastUpdateTime": "2026-01-01T00:00:00Z",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
            "replicaStatuses": {},
        },
    ),
    "RayJob": (
        rayjob,
        "rayjobs",
        ("spec", "suspend"),
        [("head", 1), ("gpu", 5)],
        [
            ("spec", "rayClusterSpec", "headGroupSpec", "template", "spec"),
            ("spec", "rayClusterSpec", "workerGroupSpecs", 0, "template", "spec"),
        ],
        {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "message": "done"},
    ),
}


def dig(obj: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        obj = obj[step]
    return obj


@pytest.mark.parametrize("kind", list(CASES))
async def test_a_queued_kind_is_suspended_admitted_with_its_pod_sets_released_and_preempted(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path, kind: str
) -> None:
    make, plural, suspend, pod_sets, templates, done = CASES[kind]
    fake_api = await make_fake_api(crds=load_crds(DEFAULT_CRDS) + integration_crds(plural))
    await fake_api.apply_manifests(controller_config(FRAMEWORKS) + "---\n" + SETUP)
    tls = certificates(tmp_path / "tls")
    async with replica(fake_api.kubeconfig_path(), tls=tls) as serving:
        for config in webhook_configurations(ca=ca_bundle(tls), url_base=f"https://127.0.0.1:{serving.port}"):
            await fake_api.create(config)
        created = await fake_api.create(make("train"), admit=True)
        assert dig(created, suspend) is True  # queued by the mutating webhook

        def started() -> bool:
            obj = fake_api.get(plural, "train", "team")
            return obj is not None and dig(obj, suspend) is False

        await fake_api.wait_for(started, timeout=HANG)
        obj = fake_api.get(plural, "train", "team")
        for path in templates:
            assert dig(obj, path)["nodeSelector"] == {"node-pool": "gpu"}
        [workload] = [
            w
            for w in fake_api.list("workloads", "team")
            if w["metadata"]["ownerReferences"][0]["kind"] == kind
        ]
        assert workload["metadata"]["name"].startswith(f"{kind.lower()}-train-")
        assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == pod_sets
        assert (
            "nodeSelector" not in workload["spec"]["podSets"][0]["template"]["spec"]
        )  # recorded before injection
        assert [a["name"] for a in workload["status"]["admission"]["podSetAssignments"]] == [
            n for n, _ in pod_sets
        ]

        # an urgent Job takes the whole quota: the object is suspended again with its templates restored
        urgent = queued_job(
            "team",
            "urgent",
            queue="gpus",
            resources=gpu_limits(8),
            labels={"kueue.x-k8s.io/priority-class": "urgent"},
        )
        await fake_api.create(urgent, admit=True)
        await fake_api.wait_for(lambda: running(fake_api, "team", "urgent"), timeout=HANG)
        obj = fake_api.get(plural, "train", "team")
        assert dig(obj, suspend) is True
        for path in templates:
            assert "nodeSelector" not in dig(obj, path)
        evicted = fake_api.get("workloads", workload["metadata"]["name"], "team")
        assert (
            condition(evicted, "Preempted") is not None
            and condition(evicted, "QuotaReserved")["status"] == "False"
        )

        # the urgent Job finishes: the object runs again, then finishes and frees the quota
        await fake_api.complete_job("team", "urgent")
        await fake_api.wait_for(started, timeout=HANG)
        await fake_api.patch(plural, "train", {"status": done}, namespace="team", subresource="status")

        def finished() -> bool:
            current = fake_api.get("workloads", workload["metadata"]["name"], "team")
            return current is not None and (condition(current, "Finished") or {}).get("status") == "True"

        await fake_api.wait_for(finished, timeout=HANG)
        await fake_api.wait_for(
            lambda: (
                (fake_api.get("clusterqueues", "research") or {}).get("status", {}).get("admittedWorkloads")
                == 0
            ),
            timeout=HANG,
        )


async def test_an_integration_that_is_off_leaves_its_kind_alone(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> None:
    fake_api = await make_fake_api(crds=load_crds(DEFAULT_CRDS) + integration_crds("jobsets"))
    await fake_api.apply_manifests(controller_config("logLevel: info") + "---\n" + SETUP)
    tls = certificates(tmp_path / "tls")
    async with replica(fake_api.kubeconfig_path(), tls=tls) as serving:
        for config in webhook_configurations(ca=ca_bundle(tls), url_base=f"https://127.0.0.1:{serving.port}"):
            await fake_api.create(config)
        created = await fake_api.create(jobset("free"), admit=True)
        assert created["spec"].get("suspend") is not True
        # a Job queued afterwards is admitted: the JobSet got no Workload
        await fake_api.create(queued_job("team", "after", queue="gpus", resources=gpu_limits(1)), admit=True)
        await fake_api.wait_for(lambda: running(fake_api, "team", "after"), timeout=HANG)
        assert [w["metadata"]["ownerReferences"][0]["kind"] for w in fake_api.list("workloads", "team")] == [
            "Job"
        ]
