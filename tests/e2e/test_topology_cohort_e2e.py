"""Reclaim for topology across a cohort on a real API server, with kueue-webhook installed out of cluster.

Two ClusterQueues share a cohort and a TAS flavor of four 2-cpu Nodes in two racks; ``vision`` (4 cpu,
``reclaimWithinCohort: Any``) lends to ``nlp`` (4 cpu). ``nlp`` runs 3 pods on rack a and 2 on rack b (5
cpus, one borrowed). ``vision``'s 3-pod Job asking for one rack fits its quota but no rack: the controller
evicts ``nlp``'s Job on rack b (``Preempted``, ``InCohortReclamation``), the real Job controller deletes its
pods, and ``vision``'s Job is admitted onto rack b's hosts. Every object is named after the test and deleted
afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_webhook.api.topology_assignment import decode
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until, workload_of
from tests.e2e.install import Running, out_of_cluster
from tests.e2e.topology import HOST, NO_KUBELET_TOLERATIONS, RACK

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, Any]
KUEUE = "kueue.x-k8s.io/v1beta2"


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Running]]:
    cluster = Cluster(Path(KUBECONFIG))
    with out_of_cluster(cluster, tmp_path_factory.mktemp("topology-cohort")) as running:
        yield cluster, running


def node(name: str, pool: str, rack: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"e2e-pool": pool, RACK: rack, HOST: name}},
        "status": {
            "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}],
        },
    }


def team(name: str, flavor: str, cohort: str, preemption: JSON | None) -> list[JSON]:
    spec: JSON = {
        "cohortName": cohort,
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "4"}]}],
            }
        ],
    }
    if preemption:
        spec["preemption"] = preemption
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec},
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "q", "namespace": name},
            "spec": {"clusterQueue": name},
        },
    ]


@pytest.fixture
def cohort(controller: tuple[Cluster, Running]) -> Iterator[tuple[Cluster, Running, str]]:
    cluster, running = controller
    name = f"e2e-tasc-{uuid.uuid4().hex[:6]}"
    hosts = [(f"{name}-a1", "a"), (f"{name}-a2", "a"), (f"{name}-b1", "b"), (f"{name}-b2", "b")]
    documents: list[JSON] = [
        {
            "apiVersion": KUEUE,
            "kind": "Topology",
            "metadata": {"name": name},
            "spec": {"levels": [{"nodeLabel": RACK}, {"nodeLabel": HOST}]},
        },
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": {"name": name},
            "spec": {"nodeLabels": {"e2e-pool": name}, "topologyName": name},
        },
        *team(f"{name}-vision", name, name, {"reclaimWithinCohort": "Any"}),
        *team(f"{name}-nlp", name, name, None),
        *(node(host, name, rack) for host, rack in hosts),
    ]
    cluster.apply(yaml.safe_dump_all(documents))
    for host, _ in hosts:
        # the API server taints a new Node not-ready; nobody lifts it without a kubelet
        cluster.kubectl("taint", "node", host, "node.kubernetes.io/not-ready:NoSchedule-", check=False)
    try:
        yield cluster, running, name
    finally:
        for ns in (f"{name}-vision", f"{name}-nlp"):
            cluster.kubectl("delete", "namespace", ns, "--wait=true", "--timeout=120s", check=False)
        cluster.kubectl(
            "delete", "clusterqueue", f"{name}-vision", f"{name}-nlp", "--ignore-not-found", check=False
        )
        cluster.kubectl("delete", "resourceflavor,topology", name, "--ignore-not-found", check=False)
        cluster.kubectl("delete", "node", *(host for host, _ in hosts), "--ignore-not-found", check=False)


def rack_job(cluster: Cluster, namespace: str, name: str, pods: int, *, rack: str = "") -> None:
    pod_spec: JSON = {
        "restartPolicy": "Never",
        "tolerations": NO_KUBELET_TOLERATIONS,
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
    }
    if rack:
        pod_spec["nodeSelector"] = {RACK: rack}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "template": {
                "metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": RACK}},
                "spec": pod_spec,
            },
        },
    }
    cluster.apply(yaml.safe_dump(job))


def admitted(cluster: Cluster, namespace: str, job: str) -> bool:
    found = condition(workload_of(cluster, namespace, job), "Admitted") or {}
    return found.get("status") == "True"


def hosts(cluster: Cluster, namespace: str, job: str) -> set[str]:
    admission = workload_of(cluster, namespace, job)["status"]["admission"]
    return {domain.values[-1] for domain in decode(admission["podSetAssignments"][0]["topologyAssignment"])}


def test_a_rack_job_reclaims_a_whole_rack_from_the_borrower_in_its_cohort(
    cohort: tuple[Cluster, Running, str],
) -> None:
    cluster, running, name = cohort
    vision, nlp = f"{name}-vision", f"{name}-nlp"
    rack_job(cluster, nlp, "own", 3, rack="a")
    until(lambda: admitted(cluster, nlp, "own"), "nlp's first Job to be admitted", timeout=120)
    rack_job(cluster, nlp, "borrowed", 2, rack="b")
    until(lambda: admitted(cluster, nlp, "borrowed"), "nlp's borrowing Job to be admitted", timeout=120)
    assert hosts(cluster, nlp, "borrowed") <= {f"{name}-b1", f"{name}-b2"}, running.tail()

    # vision's quota holds 3 pods, but rack a has 1 free cpu and rack b 2
    rack_job(cluster, vision, "allreduce", 3)
    until(lambda: admitted(cluster, vision, "allreduce"), "vision's rack Job to be admitted", timeout=180)
    assert hosts(cluster, vision, "allreduce") == {f"{name}-b1", f"{name}-b2"}, running.tail()

    borrower = workload_of(cluster, nlp, "borrowed")
    preempted = condition(borrower, "Preempted")
    assert preempted.get("reason") == "InCohortReclamation", borrower
    assert str(preempted.get("message")).endswith(
        "due to reclamation within the cohort; "
        f"preemptor path: /{name}/{vision}; preemptee path: /{name}/{nlp}"
    ), borrower
    assert not admitted(cluster, nlp, "borrowed")
    assert cluster.get("job", "borrowed", "-n", nlp)["spec"]["suspend"] is True
    assert admitted(cluster, nlp, "own")
