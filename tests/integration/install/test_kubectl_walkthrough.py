"""The real kubectl (v1.32) against the fake API server: the seed walk-through a user would type.

kubectl exercises discovery (aggregated), OpenAPI v3 (apply), protobuf bodies (`create namespace|job`),
Tables (`get`), full objects (`-o jsonpath`, `describe`), merge patches (`label`) and deletion with
garbage collection. The Workload a controller would create is created in-process here, owned by the Job.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fakeapi import FakeApiServer

SEED = Path(__file__).resolve().parents[3] / "manifests" / "examples" / "seed.yaml"


async def run(kubectl: Callable[..., Any], *args: str, input: str | None = None) -> str:
    result = await asyncio.to_thread(kubectl, *args, input=input)
    assert result.returncode == 0, f"kubectl {' '.join(args)} failed: {result.stderr}"
    return str(result.stdout)


def workload_for(job: dict[str, Any]) -> dict[str, Any]:
    meta = job["metadata"]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": f"job-{meta['name']}-abcde",
            "namespace": meta["namespace"],
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "queueName": "team-a-gpu",
            "podSets": [{"name": "main", "count": 1, "template": job["spec"]["template"]}],
        },
    }


async def test_seed_walkthrough_with_real_kubectl(
    fake_api: FakeApiServer, kubectl: Callable[..., Any]
) -> None:
    assert "namespace/walk created" in await run(kubectl, "create", "namespace", "walk")

    applied = await run(kubectl, "apply", "-f", str(SEED))
    assert "clusterqueue.kueue.x-k8s.io/research created" in applied
    assert "localqueue.kueue.x-k8s.io/team-a-gpu created" in applied
    assert "job.batch/train-01 created" in applied
    # Server-side CRD defaults are visible to kubectl like on a real cluster.
    strategy = await run(
        kubectl, "get", "clusterqueue", "research", "-o", "jsonpath={.spec.preemption.withinClusterQueue}"
    )
    assert strategy == "Never"
    # Re-applying unchanged manifests is a no-op.
    assert "clusterqueue.kueue.x-k8s.io/research unchanged" in await run(kubectl, "apply", "-f", str(SEED))

    created = await run(kubectl, "-n", "team-a", "create", "job", "kc-job", "--image=busybox", "--", "true")
    assert "job.batch/kc-job created" in created
    job = fake_api.get("jobs", "kc-job", "team-a")
    assert job is not None and job["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Always"
    await fake_api.create(workload_for(job))

    table = await run(kubectl, "-n", "team-a", "get", "workloads")
    header, row = table.splitlines()[:2]
    assert header.split() == ["NAME", "QUEUE", "RESERVED", "IN", "ADMITTED", "FINISHED", "AGE"]
    assert row.split()[:2] == ["job-kc-job-abcde", "team-a-gpu"]

    wide = await run(kubectl, "get", "clusterqueue", "research", "-o", "wide")
    assert wide.splitlines()[0].split() == [
        "NAME",
        "COHORT",
        "STRATEGY",
        "PENDING",
        "WORKLOADS",
        "ADMITTED",
        "WORKLOADS",
    ]
    assert "BestEffortFIFO" in wide

    quota = await run(
        kubectl,
        "get",
        "clusterqueue",
        "research",
        "-o",
        "jsonpath={.spec.resourceGroups[0].flavors[0].resources[0].nominalQuota}",
    )
    assert quota == "64"

    described = await run(kubectl, "-n", "team-a", "describe", "workload", "job-kc-job-abcde")
    assert "Queue Name:" in described and "team-a-gpu" in described
    assert "Kind:         Workload" in described

    assert "labeled" in await run(kubectl, "-n", "team-a", "label", "job", "kc-job", "a=b")
    assert fake_api.get("jobs", "kc-job", "team-a")["metadata"]["labels"]["a"] == "b"  # type: ignore[index]

    assert 'job.batch "kc-job" deleted' in await run(kubectl, "-n", "team-a", "delete", "job", "kc-job")
    # The owned Workload is garbage-collected with its Job.
    assert fake_api.get("workloads", "job-kc-job-abcde", "team-a") is None
    listed = await asyncio.to_thread(kubectl, "-n", "team-a", "get", "workloads")
    assert "No resources found" in listed.stderr


async def test_kubectl_create_sends_protobuf_for_built_in_kinds(
    fake_api: FakeApiServer, kubectl: Callable[..., Any]
) -> None:
    await run(kubectl, "create", "namespace", "pb")
    await run(kubectl, "-n", "pb", "create", "configmap", "settings", "--from-literal=mode=strict")
    await run(kubectl, "-n", "pb", "create", "secret", "generic", "token", "--from-literal=key=s3cr3t")
    await run(kubectl, "-n", "pb", "create", "serviceaccount", "robot")
    config_map = fake_api.get("configmaps", "settings", "pb")
    secret = fake_api.get("secrets", "token", "pb")
    assert config_map is not None and config_map["data"] == {"mode": "strict"}
    assert secret is not None and secret["data"] == {"key": "czNjcjN0"} and secret["type"] == "Opaque"
    assert fake_api.get("serviceaccounts", "robot", "pb") is not None
    namespace = fake_api.get("namespaces", "pb")
    assert namespace is not None and namespace["status"] == {"phase": "Active"}


async def test_kubectl_status_patch_wait_and_explain(
    fake_api: FakeApiServer, kubectl: Callable[..., Any]
) -> None:
    await run(kubectl, "create", "namespace", "team-a")
    job = await fake_api.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j", "namespace": "team-a"},
            "spec": {
                "template": {"spec": {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Never"}}
            },
        }
    )
    await fake_api.create(workload_for(job))
    admitted = (
        '{"status":{"conditions":[{"type":"Admitted","status":"True","reason":"Admitted",'
        '"message":"The workload is admitted","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}'
    )
    patch_args = ("--subresource=status", "--type=merge", "-p", admitted)
    await run(kubectl, "-n", "team-a", "patch", "workload", "job-j-abcde", *patch_args)
    waited = await run(
        kubectl, "-n", "team-a", "wait", "--for=condition=Admitted", "workload/job-j-abcde", "--timeout=5s"
    )
    assert "condition met" in waited
    explained = await run(kubectl, "explain", "clusterqueue.spec.queueingStrategy")
    assert "StrictFIFO" in explained and "BestEffortFIFO" in explained


async def test_kubectl_get_events_prints_the_event_columns(
    fake_api: FakeApiServer, kubectl: Callable[..., Any]
) -> None:
    await run(kubectl, "create", "namespace", "team-a")
    await fake_api.create(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "w.1", "namespace": "team-a"},
            "involvedObject": {"kind": "Workload", "name": "job-a", "namespace": "team-a"},
            "reason": "Pending",
            "message": "couldn't assign flavors to pod set main",
            "type": "Normal",
            "source": {"component": "kueue-admission"},
            "count": 1,
        }
    )
    header, row = (await run(kubectl, "-n", "team-a", "get", "events")).splitlines()
    assert header.split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert row.split()[1:4] == ["Normal", "Pending", "workload/job-a"]
    assert row.endswith("couldn't assign flavors to pod set main")


async def test_kubectl_apply_k_installs_the_shipped_manifests(
    fake_api: FakeApiServer, kubectl: Callable[..., Any]
) -> None:
    manifests = Path(__file__).resolve().parents[3] / "manifests"
    applied = await run(kubectl, "apply", "-k", str(manifests))
    assert "customresourcedefinition.apiextensions.k8s.io/workloads.kueue.x-k8s.io" in applied
    assert "deployment.apps/" in applied
    assert "validatingwebhookconfiguration.admissionregistration.k8s.io/" in applied
    # A second apply changes nothing: every object round-trips through the server unchanged. kubectl always
    # re-sends a PodDisruptionBudget's selector (its patch strategy is "replace") and so prints "configured";
    # the server sees a no-op and keeps the resourceVersion.
    pdb_before = fake_api.get("poddisruptionbudgets", "kueue-webhook", "kueue-system")
    again = await run(kubectl, "apply", "-k", str(manifests))
    lines = again.splitlines()
    assert all(line.endswith("unchanged") for line in lines if "poddisruptionbudget" not in line), again
    pdb_after = fake_api.get("poddisruptionbudgets", "kueue-webhook", "kueue-system")
    assert pdb_before is not None and pdb_after is not None
    assert pdb_after["metadata"]["resourceVersion"] == pdb_before["metadata"]["resourceVersion"]
