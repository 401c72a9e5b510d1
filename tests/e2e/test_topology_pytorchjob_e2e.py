"""A PyTorchJob placed by topology on a real API server: one rack, its pods by rank, a failed host.

The PyTorchJob CRD is installed (the upstream one when tests/crds has it, else the structural stand-in) and
the ``kubeflow.org/pytorchjob`` integration turned on. No training operator runs, so once the PyTorchJob is
started (``runPolicy.suspend: false``) the test plays it: it creates the 4 Worker pods from the started
Worker template as the Kubeflow operator does (owned by the PyTorchJob, with its ``training.kubeflow.org/*``
labels, ``replica-index`` 0..3). The pod set is 4 Workers and no Master, so the rank of every pod is its
replica index, the label Kueue's Kubeflow integration names as the pod index label.

Five Nodes, plain API objects: rack a with a1 (2 cpu) and a2 (1 cpu), rack b with b1, b2, b3 (2 cpu each).
The first PyTorchJob requires one rack for 4 pods: only rack b holds them, and its Workload names two hosts
of rack b, two pods each. Its pods start behind the ``kueue.x-k8s.io/topology`` gate and each is ungated
with the node selector of the host its rank has in that assignment (Kueue's rank ordering). A second such
PyTorchJob then waits with Kueue's message: the ClusterQueue's quota (10 cpu) holds it, the racks do not
(3 free in rack a, 2 in rack b). Then a host of the first job goes NotReady: as Kueue's
TASFailedNodeReplacement does, its pods are given the host left in rack b, the unsent pods there are
failed (``TerminatedByKueue``), and the pods the operator makes again go to the new host by rank. When
that host fails as well, no host of rack b has room and the pod set may not leave its rack: the Workload
is evicted (``NodeFailures``) and the PyTorchJob suspended with its template restored.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from kueue_webhook.api.topology_assignment import decode
from tests.crds import crd_file
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until
from tests.e2e.conftest import ControllerSetup, with_controller
from tests.e2e.install import Running
from tests.e2e.topology import (
    GATE,
    HOST,
    NO_KUBELET_TOLERATIONS,
    RACK,
    gated,
    live_pods,
    rack_queues,
    set_ready,
)

JSON = dict[str, Any]
INDEX = "training.kubeflow.org/replica-index"
HANG = 180.0


def install_pytorchjob_crd(cluster: Cluster) -> list[str]:
    """Create the PyTorchJob CRD when it is missing; its name when this module created it."""
    name = "pytorchjobs.kubeflow.org"
    if name in {c["metadata"]["name"] for c in cluster.items("crd")}:
        return []
    cluster.kubectl("create", "-f", str(crd_file("pytorchjobs")))
    cluster.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")
    return [name]


pytestmark = [
    pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER),
    with_controller(
        ControllerSetup(
            "topology-pytorchjob",
            config="integrations:\n  frameworks: [batch/job, kubeflow.org/pytorchjob]\n",
            crds=install_pytorchjob_crd,
        )
    ),
]

#: host suffix -> (rack, allocatable cpu)
HOSTS = {"a1": ("a", "2"), "a2": ("a", "1"), "b1": ("b", "2"), "b2": ("b", "2"), "b3": ("b", "2")}


@pytest.fixture
def racks(controller: tuple[Cluster, Running]) -> Iterator[tuple[Cluster, Running, str]]:
    """Namespace, Topology (rack, host), its flavor, ClusterQueue (10 cpu), LocalQueue ``q`` and the Nodes
    of HOSTS, all named after the namespace."""
    cluster, running = controller
    name = f"e2e-tas-pt-{uuid.uuid4().hex[:6]}"
    documents: list[JSON] = [
        *rack_queues(name, "10"),
    ]
    hosts = [f"{name}-{suffix}" for suffix in HOSTS]
    for host, (rack, _) in zip(hosts, HOSTS.values(), strict=True):
        labels = {"e2e-pool": name, RACK: rack, HOST: host}
        documents.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": host, "labels": labels}})
    cluster.apply(yaml.safe_dump_all(documents))
    for host, (_, cpu) in zip(hosts, HOSTS.values(), strict=True):
        set_ready(cluster, host, True, cpu=cpu)
    try:
        yield cluster, running, name
    finally:
        cluster.kubectl("delete", "pytorchjobs", "--all", "-n", name, "--wait=true", check=False)
        cluster.kubectl("delete", "pod", "--all", "-n", name, "--grace-period=0", "--force", check=False)
        cluster.kubectl("delete", "namespace", name, "--wait=true", "--timeout=120s", check=False)
        cluster.kubectl(
            "delete", "clusterqueue,resourceflavor,topology", name, "--ignore-not-found", check=False
        )
        cluster.kubectl("delete", "node", *hosts, "--ignore-not-found", check=False)
        assert "Traceback" not in running.log.read_text(), running.tail()


def pytorchjob(namespace: str, name: str) -> str:
    """4 Workers of 1 cpu, all required in one rack."""
    worker = {
        "replicas": 4,
        "restartPolicy": "Never",
        "template": {
            "metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": RACK}},
            "spec": {
                "tolerations": NO_KUBELET_TOLERATIONS,
                "containers": [
                    {"name": "pytorch", "image": "trainer", "resources": {"requests": {"cpu": "1"}}}
                ],
            },
        },
    }
    return json.dumps(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "q"}},
            "spec": {"pytorchReplicaSpecs": {"Worker": worker}},
        }
    )


def operator_pod(job: JSON, index: int) -> JSON:
    """The Worker pod of replica ``index`` as the Kubeflow training operator creates it from the template."""
    template = copy.deepcopy(job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"])
    name = job["metadata"]["name"]
    metadata = template.get("metadata") or {}
    metadata["labels"] = {
        **(metadata.get("labels") or {}),
        "training.kubeflow.org/job-name": name,
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/replica-type": "worker",
        INDEX: str(index),
    }
    metadata["name"] = f"{name}-worker-{index}"
    metadata["namespace"] = job["metadata"]["namespace"]
    metadata["ownerReferences"] = [
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "name": name,
            "uid": job["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    template["spec"]["restartPolicy"] = "Never"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]}


def workload_of(cluster: Cluster, namespace: str, owner: str) -> JSON:
    for item in cluster.items("workloads", "-n", namespace):
        if owner in {ref.get("name") for ref in item["metadata"].get("ownerReferences") or []}:
            return dict(item)
    return {}


def hosts_by_rank(workload: JSON) -> dict[str, str]:
    """Replica index -> the host the Workload's assignment gives that rank (one slot per pod, in order)."""
    admission = (workload.get("status") or {}).get("admission") or {}
    assignment = (admission.get("podSetAssignments") or [{}])[0].get("topologyAssignment")
    if not assignment:
        return {}
    slots = [domain.values[-1] for domain in decode(assignment) for _ in range(domain.count)]
    return {str(rank): host for rank, host in enumerate(slots)}


def placement(pods: list[JSON]) -> dict[str, str]:
    """Replica index -> the host its node selector names, for the ungated pods."""
    return {
        pod["metadata"]["labels"][INDEX]: (pod["spec"].get("nodeSelector") or {}).get(HOST, "")
        for pod in pods
        if not gated(pod)
    }


def test_a_pytorchjob_requiring_a_rack_runs_its_pods_there_by_rank_and_survives_a_failed_host(
    racks: tuple[Cluster, Running, str],
) -> None:
    cluster, running, ns = racks
    rack_b = {f"{ns}-b1", f"{ns}-b2", f"{ns}-b3"}
    cluster.kubectl("create", "-f", "-", input=pytorchjob(ns, "first"))
    until(
        lambda: cluster.get("pytorchjob", "first", "-n", ns)["spec"]["runPolicy"]["suspend"] is False,
        "the first PyTorchJob to start",
        HANG,
    )
    workload = workload_of(cluster, ns, "first")
    assert condition(workload, "Admitted")["status"] == "True"
    assert workload["spec"]["podSets"][0]["topologyRequest"]["podIndexLabel"] == INDEX
    by_rank = hosts_by_rank(workload)
    # rack a holds 3 pods, rack b 6: the 4 pods go to rack b, on as few hosts as possible (2 each)
    assert sorted(by_rank) == ["0", "1", "2", "3"], running.tail()
    assert set(by_rank.values()) <= rack_b and len(set(by_rank.values())) == 2
    assert all(list(by_rank.values()).count(host) == 2 for host in by_rank.values())

    # the operator's part: the 4 Worker pods from the started template, which carries the gate
    job = cluster.get("pytorchjob", "first", "-n", ns)
    template = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    assert template["spec"]["schedulingGates"] == [{"name": GATE}]
    assert template["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == workload["metadata"]["name"]
    for index in range(4):
        created = json.loads(
            cluster.kubectl(
                "create", "-o", "json", "-f", "-", input=json.dumps(operator_pod(job, index))
            ).stdout
        )
        assert gated(created), created["spec"]
    until(
        lambda: placement(live_pods(cluster, ns)) == by_rank,
        "every Worker ungated onto its rank's host",
        HANG,
    )
    pods = live_pods(cluster, ns)
    assert len(pods) == 4 and not any(gated(pod) for pod in pods)
    assert all(
        pod["spec"]["nodeSelector"] == {"e2e-pool": ns, HOST: by_rank[pod["metadata"]["labels"][INDEX]]}
        for pod in pods
    )

    # a second one: quota (10 cpu) holds it, no rack does (3 free in rack a, 2 in rack b)
    cluster.kubectl("create", "-f", "-", input=pytorchjob(ns, "second"))

    def second_waiting() -> JSON:
        reserved = condition(workload_of(cluster, ns, "second"), "QuotaReserved")
        return (
            reserved
            if reserved.get("status") == "False" and "topology" in reserved.get("message", "")
            else {}
        )

    until(lambda: bool(second_waiting()), "the second PyTorchJob to wait for the topology", HANG)
    waiting = second_waiting()
    assert (waiting["reason"], waiting["message"]) == (
        "WaitingForQuota",
        f'couldn\'t assign flavors to pod set worker: topology "{ns}" allows to fit only 3 out of 4 pod(s). '
        'Total nodes: 5; excluded: resource "cpu": 2',
    ), running.tail()
    assert cluster.get("pytorchjob", "second", "-n", ns)["spec"]["runPolicy"]["suspend"] is True

    # the host of ranks 2 and 3 fails; the one host of rack b with room takes their place (the pod set
    # requires the rack, though rack a has more room), and the unsent pods there are failed for the operator
    failed = by_rank["2"]
    spare = (rack_b - set(by_rank.values())).pop()
    set_ready(cluster, failed, False, cpu="2")
    moved = {rank: spare if host == failed else host for rank, host in by_rank.items()}
    until(lambda: hosts_by_rank(workload_of(cluster, ns, "first")) == moved, "the failed host replaced", HANG)
    first = workload_of(cluster, ns, "first")
    assert "unhealthyNodes" not in first["status"] and condition(first, "Admitted")["status"] == "True"

    def terminated_by_kueue() -> set[str]:
        return {
            pod["metadata"]["labels"][INDEX]
            for pod in cluster.items("pods", "-n", ns)
            if condition(pod, "TerminatedByKueue").get("reason") == "UnschedulableOnAssignedNode"
        }

    until(lambda: terminated_by_kueue() == {"2", "3"}, "the Workers sent to the failed host failed", HANG)
    # the operator replaces a failed Worker by a new pod of the same replica index
    for index in (2, 3):
        cluster.kubectl("-n", ns, "delete", "pod", f"first-worker-{index}", "--grace-period=0", "--force")
        cluster.kubectl("create", "-f", "-", input=json.dumps(operator_pod(job, index)))
    until(lambda: placement(live_pods(cluster, ns)) == moved, "the new Workers on the new host", HANG)
    assert cluster.get("pytorchjob", "second", "-n", ns)["spec"]["runPolicy"]["suspend"] is True

    # the new host fails too: rack b has no other host with room, and the pod set may not leave the rack,
    # so the Workload is evicted (Kueue's TASFailedNodeReplacementFailFast) and the PyTorchJob stopped
    set_ready(cluster, spare, False, cpu="2")
    evicted = (
        "EvictedDueToNodeFailures",
        f"Workload was evicted as there was no replacement for unhealthy node(s): {spare}",
    )
    name = first["metadata"]["name"]
    until(lambda: evicted in events(cluster, ns, name), "the NodeFailures eviction", HANG)
    until(
        lambda: cluster.get("pytorchjob", "first", "-n", ns)["spec"]["runPolicy"]["suspend"] is True,
        "the first PyTorchJob to be stopped",
        HANG,
    )
    stopped = cluster.get("pytorchjob", "first", "-n", ns)["spec"]["pytorchReplicaSpecs"]["Worker"][
        "template"
    ]
    assert "schedulingGates" not in stopped["spec"], stopped["spec"]


def events(cluster: Cluster, namespace: str, name: str) -> list[tuple[str, str]]:
    found = cluster.items("events", "-n", namespace, "--field-selector", f"involvedObject.name={name}")
    return [(str(e["reason"]), str(e["message"])) for e in found]
