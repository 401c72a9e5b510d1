"""Topology-aware admission on a real API server, with kueue-webhook installed out of cluster.

Nodes are plain API objects here (no kubelet): four of them in two racks, created with their labels and
allocatable CPU, and a pod bound to one of them outside any queue (its usage counts, as Kueue's non-TAS
usage does). A 4-pod Job whose template asks for one rack (``kueue.x-k8s.io/podset-required-topology``)
is admitted into the one rack with room: its Workload's ``topologyAssignment`` (Kueue's v1beta2
encoding) names hosts of that rack. A second such Job stays pending with Kueue's message while the racks
are fragmented, though the ClusterQueue's quota would hold both. Nodes, the Topology and the ResourceFlavor
are named after the test's namespace and deleted afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_webhook.api.topology_assignment import Domain, decode
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until, workload_of
from tests.e2e.install import Running, out_of_cluster
from tests.e2e.topology import HOST, RACK, rack_queues

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, Any]
REQUIRED = "kueue.x-k8s.io/podset-required-topology"


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Running]]:
    cluster = Cluster(Path(KUBECONFIG))
    with out_of_cluster(cluster, tmp_path_factory.mktemp("topology")) as running:
        yield cluster, running


def node(name: str, pool: str, rack: str, cpu: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"e2e-pool": pool, RACK: rack, HOST: name}},
        "status": {
            "capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}],
        },
    }


@pytest.fixture
def racks(controller: tuple[Cluster, Running]) -> Iterator[tuple[Cluster, Running, str]]:
    """Namespace, Topology, TAS flavor, ClusterQueue (8 cpu) and LocalQueue ``q``, and nodes: rack a with
    a1 (2 cpu), a2 (2), rack b with b1 (2), b2 (2); a pod outside any queue bound to a2 uses 1 cpu."""
    cluster, running = controller
    name = f"e2e-tas-{uuid.uuid4().hex[:6]}"
    nodes = [(f"{name}-a1", "a"), (f"{name}-a2", "a"), (f"{name}-b1", "b"), (f"{name}-b2", "b")]
    documents: list[JSON] = [
        *rack_queues(name, "8"),
        *(node(host, name, rack, "2") for host, rack in nodes),
    ]
    cluster.apply(yaml.safe_dump_all(documents))
    for host, _ in nodes:
        # the API server taints a new Node not-ready; on a cluster the node lifecycle controller lifts the
        # taint once the kubelet reports Ready, which nobody does here
        cluster.kubectl("taint", "node", host, "node.kubernetes.io/not-ready:NoSchedule-", check=False)
    cluster.apply(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "outside", "namespace": name},
                "spec": {
                    "nodeName": f"{name}-a2",
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                    ],
                },
            }
        )
    )
    try:
        yield cluster, running, name
    finally:
        # a pod bound to a node goes only when its kubelet says so: there is none, so it is forced
        cluster.kubectl("delete", "pod", "--all", "-n", name, "--grace-period=0", "--force", check=False)
        cluster.kubectl("delete", "namespace", name, "--wait=true", "--timeout=120s", check=False)
        cluster.kubectl(
            "delete", "clusterqueue,resourceflavor,topology", name, "--ignore-not-found", check=False
        )
        cluster.kubectl("delete", "node", *(host for host, _ in nodes), "--ignore-not-found", check=False)


def rack_job(cluster: Cluster, namespace: str, name: str, pods: int) -> None:
    cluster.apply(f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}, namespace: {namespace}, labels: {{kueue.x-k8s.io/queue-name: q}}}}
spec:
  parallelism: {pods}
  completions: {pods}
  template:
    metadata:
      annotations: {{{REQUIRED}: {RACK}}}
    spec:
      restartPolicy: Never
      containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "1"}}}}}}]
""")


def reserved(workload: JSON) -> JSON | None:
    conditions = (workload.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "QuotaReserved"), None)


def test_a_required_rack_job_gets_the_rack_with_room_and_the_next_waits_while_racks_are_fragmented(
    racks: tuple[Cluster, Running, str],
) -> None:
    cluster, running, ns = racks
    rack_job(cluster, ns, "first", 4)  # rack a has 3 cpus free (the outside pod), rack b has 4
    until(
        lambda: (reserved(workload_of(cluster, ns, "first")) or {}).get("status") == "True",
        "the first Job's Workload to be admitted",
        timeout=120,
    )
    admission = workload_of(cluster, ns, "first")["status"]["admission"]
    assignment = admission["podSetAssignments"][0]["topologyAssignment"]
    assert assignment["levels"] == [HOST], running.tail()
    assert decode(assignment) == [Domain((f"{ns}-b1",), 2), Domain((f"{ns}-b2",), 2)]
    assert condition(workload_of(cluster, ns, "first"), "Admitted")["status"] == "True"

    # 3 cpus free in rack a, none in rack b; quota (8) would hold 4 more
    rack_job(cluster, ns, "second", 4)

    def second_message() -> str:
        found = reserved(workload_of(cluster, ns, "second")) or {}
        return str(found.get("message") or "") if found.get("status") == "False" else ""

    until(lambda: "topology" in second_message(), "the second Job to wait for the topology", timeout=120)
    waiting = reserved(workload_of(cluster, ns, "second"))
    assert waiting is not None
    assert (waiting["reason"], waiting["message"]) == (
        "WaitingForQuota",
        f'couldn\'t assign flavors to pod set main: topology "{ns}" allows to fit only 3 out of 4 pod(s). '
        'Total nodes: 4; excluded: resource "cpu": 2',
    ), running.tail()
    assert cluster.get("job", "second", "-n", ns)["spec"]["suspend"] is True


def test_a_job_keeps_to_the_nodes_its_required_node_affinity_allows(
    racks: tuple[Cluster, Running, str],
) -> None:
    """Rack a has 3 cpus free and rack b 4: two pods fit best in rack a, but the template's required node
    affinity allows rack b only, so its hosts are rack b's (as the kube-scheduler will require)."""
    cluster, running, ns = racks
    cluster.apply(f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: picky, namespace: {ns}, labels: {{kueue.x-k8s.io/queue-name: q}}}}
spec:
  parallelism: 2
  completions: 2
  template:
    metadata:
      annotations: {{{REQUIRED}: {RACK}}}
    spec:
      restartPolicy: Never
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions: [{{key: {RACK}, operator: In, values: [b]}}]
      containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "1"}}}}}}]
""")
    until(
        lambda: (reserved(workload_of(cluster, ns, "picky")) or {}).get("status") == "True",
        "the Job's Workload to be admitted",
        timeout=120,
    )
    assignment = workload_of(cluster, ns, "picky")["status"]["admission"]["podSetAssignments"][0]
    hosts = {domain.values[0] for domain in decode(assignment["topologyAssignment"])}
    assert hosts <= {f"{ns}-b1", f"{ns}-b2"}, running.tail()
