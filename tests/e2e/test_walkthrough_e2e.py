"""The walk-through against a real cluster running kueue-webhook (or Kueue): ``KUEUE_E2E_KUBECONFIG``.

Install first (``kubectl apply -k manifests/`` and ``kueue-webhook certs --patch-webhook-configurations``),
then ``KUEUE_E2E_KUBECONFIG=~/.kube/config pytest tests/e2e``. Quotas are on CPU so the Jobs really run
and finish on any cluster (no GPU nodes needed): a ClusterQueue with 1 CPU admits two 500m Jobs, the
third waits with Kueue's insufficient-quota message and starts when one of the first two completes.
Everything is created in a fresh namespace and a uniquely named ClusterQueue/ResourceFlavor, removed after.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

KUBECONFIG = os.environ.get("KUEUE_E2E_KUBECONFIG", "")
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"

pytestmark = pytest.mark.skipif(
    not KUBECONFIG,
    reason="KUEUE_E2E_KUBECONFIG is not set (the kubeconfig of a cluster with kueue-webhook installed)",
)
JSON = dict[str, Any]


def kubectl(*args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [KUBECTL, "--kubeconfig", KUBECONFIG, *args], input=input, capture_output=True, text=True, timeout=120
    )
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {result.stderr}")
    return result


def get(*args: str) -> JSON:
    return dict(json.loads(kubectl("get", *args, "-o", "json").stdout))


def until(check: Callable[[], bool], what: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f}s waiting for {what}"
        time.sleep(1.0)  # a real cluster: polling is the only way to watch from a subprocess


def condition(obj: JSON, kind: str) -> JSON:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return {}


@pytest.fixture
def names() -> Iterator[dict[str, str]]:
    suffix = uuid.uuid4().hex[:6]
    chosen = {"ns": f"e2e-{suffix}", "cq": f"e2e-{suffix}", "flavor": f"e2e-{suffix}", "lq": "e2e"}
    yield chosen
    kubectl("delete", "namespace", chosen["ns"], "--wait=false", check=False)
    kubectl("delete", "clusterqueue", chosen["cq"], check=False)
    kubectl("delete", "resourceflavor", chosen["flavor"], check=False)


def job(name: str, n: dict[str, str]) -> str:
    return f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}, namespace: {n["ns"]}, labels: {{kueue.x-k8s.io/queue-name: {n["lq"]}}}}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox:1.36
        command: ["sh", "-c", "sleep 5"]
        resources: {{requests: {{cpu: 500m}}}}
"""


def test_walkthrough_on_a_real_cluster(names: dict[str, str]) -> None:
    n = names
    kubectl("create", "namespace", n["ns"])
    kubectl(
        "apply",
        "-f",
        "-",
        input=f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {n["cq"]}}}
spec:
  namespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: {n["ns"]}}}}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: {n["flavor"]}
      resources: [{{name: cpu, nominalQuota: "1"}}]
""",
    )
    until(
        lambda: condition(get("clusterqueue", n["cq"]), "Active").get("reason") == "FlavorNotFound",
        "FlavorNotFound",
    )
    kubectl(
        "apply",
        "-f",
        "-",
        input=f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: {n["flavor"]}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: {n["lq"]}, namespace: {n["ns"]}}}
spec: {{clusterQueue: {n["cq"]}}}
""",
    )
    until(
        lambda: condition(get("clusterqueue", n["cq"]), "Active").get("status") == "True", "Active=True Ready"
    )
    kubectl("create", "-f", "-", input="---".join(job(f"job-{i}", n) for i in (1, 2, 3)))

    def two_admitted_one_pending() -> bool:
        status = get("clusterqueue", n["cq"]).get("status") or {}
        return status.get("admittedWorkloads") == 2 and status.get("pendingWorkloads") == 1

    until(two_admitted_one_pending, "two admitted Jobs and one pending")
    usage = get("clusterqueue", n["cq"])["status"]["flavorsUsage"][0]["resources"][0]
    assert usage["name"] == "cpu" and usage["total"] == "1"
    waiting = [
        w
        for w in get("workloads", "-n", n["ns"])["items"]
        if condition(w, "QuotaReserved").get("status") != "True"
    ]
    assert len(waiting) == 1
    assert "insufficient unused quota for cpu in flavor" in condition(waiting[0], "QuotaReserved")["message"]

    def all_finished() -> bool:
        workloads = get("workloads", "-n", n["ns"])["items"]
        return len(workloads) == 3 and all(
            condition(w, "Finished").get("status") == "True" for w in workloads
        )

    until(all_finished, "all three Jobs to be admitted in turn and finish")
    reasons = {condition(w, "Finished").get("reason") for w in get("workloads", "-n", n["ns"])["items"]}
    assert reasons == {"Succeeded"}
