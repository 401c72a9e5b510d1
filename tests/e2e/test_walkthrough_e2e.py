"""The seed walk-through on a real API server, once for each way docs/install.md runs kueue-webhook.

Quotas are on CPU so the scenario needs no GPU node: a ClusterQueue with 1 CPU admits two 500m Jobs, the
third waits with Kueue's insufficient-quota message, and starts when one of the first two completes.
Everything is created in a fresh namespace with uniquely named cluster-scoped objects, removed after.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until
from tests.e2e.install import can_mount_namespaces, in_cluster, out_of_cluster

JSON = dict[str, Any]

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster(Path(KUBECONFIG))


@pytest.fixture(params=["out-of-cluster", "in-cluster", "installed"])
def controller_log(
    request: pytest.FixtureRequest, cluster: Cluster, tmp_path: Path
) -> Iterator[Callable[[], str]]:
    """Run kueue-webhook as docs/install.md says (or use the queueing controller the cluster already runs)."""
    if request.param == "installed":
        if not os.environ.get("KUEUE_E2E_INSTALLED"):
            pytest.skip("KUEUE_E2E_INSTALLED is not set (a cluster whose own kueue-webhook or Kueue runs)")
        yield lambda: "(the cluster's own controller)"
        return
    if request.param == "in-cluster" and not can_mount_namespaces():
        pytest.skip("the in-cluster path mounts the service-account token with unshare, which needs root")
    install = out_of_cluster if request.param == "out-of-cluster" else in_cluster
    with install(cluster, tmp_path) as running:
        yield running.tail


@pytest.fixture
def names(cluster: Cluster) -> Iterator[dict[str, str]]:
    suffix = uuid.uuid4().hex[:6]
    chosen = {"ns": f"e2e-{suffix}", "cq": f"e2e-{suffix}", "flavor": f"e2e-{suffix}", "lq": "e2e"}
    yield chosen
    cluster.kubectl("delete", "namespace", chosen["ns"], "--wait=false", check=False)
    cluster.kubectl("delete", "clusterqueue", chosen["cq"], check=False)
    cluster.kubectl("delete", "resourceflavor", chosen["flavor"], check=False)


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


def test_walkthrough(cluster: Cluster, controller_log: Callable[[], str], names: dict[str, str]) -> None:
    n = names
    cluster.kubectl("create", "namespace", n["ns"])
    cluster.apply(f"""
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
""")
    until(
        lambda: condition(cluster.get("clusterqueue", n["cq"]), "Active").get("reason") == "FlavorNotFound",
        "FlavorNotFound",
    )
    cluster.apply(f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: {n["flavor"]}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: {n["lq"]}, namespace: {n["ns"]}}}
spec: {{clusterQueue: {n["cq"]}}}
""")
    until(
        lambda: condition(cluster.get("clusterqueue", n["cq"]), "Active").get("status") == "True",
        "Active=True Ready",
    )
    cluster.kubectl("create", "-f", "-", input="---".join(job(f"job-{i}", n) for i in (1, 2, 3)))

    def two_started_one_pending() -> bool:
        status = cluster.get("clusterqueue", n["cq"]).get("status") or {}
        started = [j for j in cluster.items("jobs", "-n", n["ns"]) if not j["spec"].get("suspend")]
        counts = (status.get("admittedWorkloads"), status.get("pendingWorkloads"), len(started))
        return counts == (2, 1, 2)

    until(two_started_one_pending, "two admitted and started Jobs and one pending", timeout=60)
    usage = cluster.get("clusterqueue", n["cq"])["status"]["flavorsUsage"][0]["resources"][0]
    assert usage["name"] == "cpu" and usage["total"] == "1"

    def waiting() -> list[JSON]:
        return [
            w
            for w in cluster.items("workloads", "-n", n["ns"])
            if condition(w, "QuotaReserved").get("status") != "True"
        ]

    assert len(waiting()) == 1, controller_log()
    # told why after it has waited a second (the pending write is debounced)
    until(
        lambda: (
            "insufficient unused quota for cpu in flavor"
            in str(condition(waiting()[0], "QuotaReserved").get("message", ""))
        ),
        "the pending Workload says why it waits",
        timeout=30,
    )

    def all_finished() -> bool:
        cluster.finish_pods(n["ns"])
        workloads = cluster.items("workloads", "-n", n["ns"])
        return len(workloads) == 3 and all(
            condition(w, "Finished").get("status") == "True" for w in workloads
        )

    until(all_finished, "all three Jobs to be admitted in turn and finish", timeout=120)
    reasons = {condition(w, "Finished").get("reason") for w in cluster.items("workloads", "-n", n["ns"])}
    assert reasons == {"Succeeded"}
