"""The seed walk-through with the real kubectl, through the real webhook over HTTPS, on the fake API server.

What a user types, in order: apply the quota manifests (the ClusterQueue first, so it is inactive until its
ResourceFlavor exists), label the namespace, create GPU Jobs, then read what kubectl shows.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fakeapi import FakeApiServer
from tests.fakeapi.identity import service_account
from tests.support.fake_cluster import condition, serving_webhook

JSON = dict[str, Any]
CONTROLLER_TOKEN = "controller-token"
HANG = 60.0  # seconds: only bounds a hang; kubectl runs are slow on a loaded 2-core machine

CLUSTER_QUEUE = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: research
spec:
  namespaceSelector:
    matchLabels:
      kueue.x-k8s.io/queue: research
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: gpu-nodes
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 64
"""

FLAVOR_AND_QUEUE = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: gpu-nodes
spec:
  nodeLabels:
    nvidia.com/gpu.present: "true"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: team-a-gpu
  namespace: team-a
spec:
  clusterQueue: research
"""


def job_manifest(name: str) -> str:
    return f"""
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: team-a
  labels:
    kueue.x-k8s.io/queue-name: team-a-gpu
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: cuda
        image: nvidia/cuda:13.0.0-base-ubuntu24.04
        command: ["nvidia-smi"]
        resources:
          limits:
            nvidia.com/gpu: 2
"""


async def test_seed_walkthrough_with_kubectl(
    fake_api: FakeApiServer, kubectl: Callable[..., Any], tmp_path: Path
) -> None:
    async def run(*args: str, input: str | None = None) -> str:
        result = await asyncio.to_thread(kubectl, *args, input=input)
        assert result.returncode == 0, f"kubectl {' '.join(args)} failed: {result.stderr}"
        return str(result.stdout)

    async def get(*args: str) -> JSON:
        return dict(json.loads(await run("get", *args, "-o", "json")))

    async def until(check: Callable[[], Any], what: str, timeout: float = HANG) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while not await check():
            assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
            await asyncio.sleep(0.1)  # polling kubectl, as a user would; there is no event to await here

    identity = service_account("kueue-system", "kueue-webhook")
    fake_api.add_token(CONTROLLER_TOKEN, identity.username, identity.groups)
    async with serving_webhook(
        fake_api, tmp_path, kubeconfig=fake_api.kubeconfig_path(token=CONTROLLER_TOKEN)
    ):
        await run("create", "namespace", "team-a")
        await run("apply", "-f", "-", input=CLUSTER_QUEUE)

        async def inactive_for_missing_flavor() -> bool:
            active = condition(await get("clusterqueue", "research"), "Active")
            return active is not None and active["reason"] == "FlavorNotFound"

        await until(inactive_for_missing_flavor, "ClusterQueue Active=False FlavorNotFound")
        active = condition(await get("clusterqueue", "research"), "Active")
        assert active is not None and active["status"] == "False"
        assert (
            active["message"] == "Can't admit new workloads: references missing ResourceFlavor(s): gpu-nodes."
        )

        await run("apply", "-f", "-", input=FLAVOR_AND_QUEUE)

        async def ready() -> bool:
            active = condition(await get("clusterqueue", "research"), "Active")
            return active is not None and (active["status"], active["reason"]) == ("True", "Ready")

        await until(ready, "ClusterQueue Active=True Ready")
        await run("label", "namespace", "team-a", "kueue.x-k8s.io/queue=research")

        await run("create", "-f", "-", input=job_manifest("train-01"))

        async def admitted_one() -> bool:
            cq = await get("clusterqueue", "research")
            return (cq.get("status") or {}).get("admittedWorkloads") == 1

        await until(admitted_one, "admittedWorkloads 1")
        cq = await get("clusterqueue", "research")
        assert cq["status"]["flavorsUsage"][0]["resources"] == [
            {"name": "nvidia.com/gpu", "total": "2", "borrowed": "0"}
        ]

        # the queue's counters follow the quota ledger, charged when the admission is decided; the
        # Workload's own conditions land with its status write, possibly a moment later
        async def workload_admitted() -> bool:
            [workload] = (await get("workloads", "-n", "team-a"))["items"]
            return all(
                (condition(workload, kind) or {}).get("status") == "True"
                for kind in ("QuotaReserved", "Admitted")
            )

        await until(workload_admitted, "the Workload's QuotaReserved and Admitted conditions")
        [workload] = (await get("workloads", "-n", "team-a"))["items"]
        for kind, reason in (("QuotaReserved", "QuotaReserved"), ("Admitted", "Admitted")):
            cond = condition(workload, kind)
            assert cond is not None and (cond["status"], cond["reason"]) == ("True", reason)

        async def first_started() -> bool:
            return bool((await get("job", "-n", "team-a", "train-01"))["spec"].get("suspend") is False)

        await until(first_started, "train-01 to start")
        job = await get("job", "-n", "team-a", "train-01")
        assert job["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.present": "true"}

        await run("create", "-f", "-", input="---".join(job_manifest(f"train-{i:02d}") for i in range(2, 34)))

        async def thirty_two_admitted() -> bool:
            cq = await get("clusterqueue", "research")
            status = cq.get("status") or {}
            return status.get("admittedWorkloads") == 32 and status.get("pendingWorkloads") == 1

        await until(thirty_two_admitted, "32 admitted and 1 pending")

        async def one_shows_why_it_waits() -> bool:
            """32 Workloads show their reservation and the last one its pending condition (the pending
            reason is written in the background, behind the admissions)."""
            states = [
                (condition(w, "QuotaReserved") or {}).get("status")
                for w in (await get("workloads", "-n", "team-a"))["items"]
            ]
            return states.count("True") == 32 and states.count("False") == 1 and len(states) == 33

        await until(one_shows_why_it_waits, "32 Workloads reserved and 1 pending")
        workloads = (await get("workloads", "-n", "team-a"))["items"]
        [waiting] = [w for w in workloads if (condition(w, "QuotaReserved") or {}).get("status") != "True"]
        assert waiting["metadata"]["ownerReferences"][0]["name"] == "train-33"
        message = (condition(waiting, "QuotaReserved") or {}).get("message", "")
        assert message.startswith(
            "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
            "gpu-nodes, 2 more needed"
        )

        denied = await asyncio.to_thread(
            kubectl, "patch", "job", "-n", "team-a", "train-33", "-p", '{"spec":{"suspend":false}}'
        )
        assert denied.returncode != 0
        assert "only the queueing controller" in denied.stderr

        await fake_api.complete_job("team-a", "train-01")

        async def last_one_started() -> bool:
            return bool((await get("job", "-n", "team-a", "train-33"))["spec"].get("suspend") is False)

        await until(last_one_started, "train-33 to start after train-01 finished")

        # a finished Job frees its quota at once; its Workload's Finished condition is written alongside
        async def finished_recorded() -> bool:
            return any(condition(w, "Finished") for w in (await get("workloads", "-n", "team-a"))["items"])

        await until(finished_recorded, "train-01's Workload to show Finished")
        finished = [w for w in (await get("workloads", "-n", "team-a"))["items"] if condition(w, "Finished")]
        assert [w["metadata"]["ownerReferences"][0]["name"] for w in finished] == ["train-01"]
        assert (condition(finished[0], "Finished") or {}).get("reason") == "Succeeded"
