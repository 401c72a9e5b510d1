"""A Workload whose flavor search stopped at a flavor where its topology did not fit moves on to the next
flavor (Kueue's flavor scan progress, FlavorFungibilityPreserveScanProgress, on by default since v0.20), on
a real API server with kueue-webhook installed out of cluster.

Two topology-aware flavors of one ClusterQueue (4 cpu of quota each), each with one 2-cpu Node (plain API
objects, no kubelet). A Job held to the first flavor by its node selector fills that Node; a second Job asks
for a whole host with no selector. Quota fits on the first flavor, so its search stops there, but no host
holds it and nobody of lower priority can be preempted: it is tried again from the second flavor and
admitted there, as Kueue does (before, it waited on the first flavor for good).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, until, workload_of
from tests.e2e.install import Running
from tests.e2e.topology import HOST

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, Any]
REQUIRED = "kueue.x-k8s.io/podset-required-topology"


def _objects(name: str) -> list[JSON]:
    flavors = [f"{name}-f1", f"{name}-f2"]
    documents: list[JSON] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": name},
            "spec": {"levels": [{"nodeLabel": HOST}]},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}},
                "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": f, "resources": [{"name": "cpu", "nominalQuota": "4"}]} for f in flavors
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "q", "namespace": name},
            "spec": {"clusterQueue": name},
        },
    ]
    for flavor in flavors:
        documents.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor",
                "metadata": {"name": flavor},
                "spec": {"nodeLabels": {"e2e-pool": flavor}, "topologyName": name},
            }
        )
        documents.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": flavor, "labels": {"e2e-pool": flavor, HOST: flavor}},
                "status": {
                    "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"},
                    "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"},
                    "conditions": [
                        {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}
                    ],
                },
            }
        )
    return documents


@pytest.fixture
def two_flavors(controller: tuple[Cluster, Running]) -> Iterator[tuple[Cluster, Running, str]]:
    cluster, running = controller
    name = f"e2e-scan-{uuid.uuid4().hex[:6]}"
    cluster.apply(yaml.safe_dump_all(_objects(name)))
    nodes = [f"{name}-f1", f"{name}-f2"]
    for node in nodes:
        # no kubelet lifts the not-ready taint a new Node gets
        cluster.kubectl("taint", "node", node, "node.kubernetes.io/not-ready:NoSchedule-", check=False)
    try:
        yield cluster, running, name
    finally:
        cluster.kubectl("delete", "namespace", name, "--wait=true", "--timeout=120s", check=False)
        cluster.kubectl("delete", "clusterqueue,topology", name, "--ignore-not-found", check=False)
        cluster.kubectl("delete", "resourceflavor,node", *nodes, "--ignore-not-found", check=False)


def host_job(cluster: Cluster, namespace: str, name: str, *, selector: str | None = None) -> None:
    spec: JSON = {
        "restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "2"}}}],
    }
    if selector is not None:
        spec["nodeSelector"] = {"e2e-pool": selector}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {"template": {"metadata": {"annotations": {REQUIRED: HOST}}, "spec": spec}},
    }
    cluster.apply(yaml.safe_dump(job))


def admitted_flavor(cluster: Cluster, namespace: str, job: str) -> str:
    admission = (workload_of(cluster, namespace, job).get("status") or {}).get("admission") or {}
    assignments = admission.get("podSetAssignments") or [{}]
    return str((assignments[0].get("flavors") or {}).get("cpu", ""))


def test_a_job_whose_host_is_taken_on_the_first_flavor_is_admitted_on_the_next(
    two_flavors: tuple[Cluster, Running, str],
) -> None:
    cluster, running, ns = two_flavors
    host_job(cluster, ns, "blocker", selector=f"{ns}-f1")
    until(lambda: admitted_flavor(cluster, ns, "blocker") == f"{ns}-f1", "the blocker on f1", timeout=120)
    host_job(cluster, ns, "pending")
    until(
        lambda: admitted_flavor(cluster, ns, "pending") != "",
        "the second Job to be admitted",
        timeout=120,
    )
    assert admitted_flavor(cluster, ns, "pending") == f"{ns}-f2", running.tail()
    assert cluster.get("job", "pending", "-n", ns)["spec"]["suspend"] is False
