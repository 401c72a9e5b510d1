"""Pods of a topology-aware Workload on a real API server: gated, ungated onto their hosts, and a failed node.

No scheduler places Workloads on a topology here, so the test plays it: a ClusterQueue's manual-approval
check holds the 4-pod indexed Job's Workload reserved but not admitted, the test writes a
``topologyAssignment`` of two hosts (2 pods each, Kueue's v1beta2 encoding) into its admission, then
approves. The Job starts with its pods behind the ``kueue.x-k8s.io/topology`` gate; the ungater gives each
its host's ``kubernetes.io/hostname`` node selector in completion-index order (Kueue's rank ordering:
indexes 0 and 1 on the first host, 2 and 3 on the second) and removes the gate. Nodes are plain API
objects (no kubelet: pods stay Pending), their Ready condition written by the test through ``nodes/status``.

A host turning NotReady while none of the Workload's pods runs on it is recorded in the Workload's
``status.unhealthyNodes``; its pods that were sent there but never bound are failed (``TerminatedByKueue``)
so the Job makes new ones, which wait at the gate while the node is unhealthy and go back to it once it is
Ready again. A second failed node evicts the Workload (``NodeFailures``).

The second test takes the whole path: a Topology (rack, host), its flavor and three Nodes; the
topology-aware scheduler places a 4-pod Job requiring one rack in the rack with room, and the ungater sends
each pod to the host its rank has in that assignment. A host of that rank then fails and a new one in the
same rack takes its pods (the replacement search).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml

from kueue_webhook.api.topology_assignment import Domain, decode, encode
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until
from tests.e2e.conftest import ControllerSetup, with_controller
from tests.e2e.install import Running
from tests.e2e.queues import team_queue
from tests.e2e.topology import GATE, HOST, gated, live_pods, set_ready

CONTROLLER = ControllerSetup(
    "topology-pods", config='manualApproval:\n  approvers: ["group:system:masters"]\n'
)
pytestmark = [pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER), with_controller(CONTROLLER)]
JSON = dict[str, object]
INDEX = "batch.kubernetes.io/job-completion-index"
HANG = 180.0


@pytest.fixture
def namespace(controller: tuple[Cluster, Running]) -> Iterator[tuple[Cluster, str]]:
    """A namespace whose ClusterQueue (4 CPU) has a manual-approval admission check, and two Ready nodes
    ``<namespace>-a`` and ``<namespace>-b`` of its flavor."""
    cluster, running = controller
    with team_queue(cluster, "e2e-tas", quota="4") as name:
        check = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "AdmissionCheck",
            "metadata": {"name": name},
            "spec": {"controllerName": "kueue-webhook.io/manual-approval"},
        }
        cluster.apply(yaml.safe_dump(check))
        strategy = {"spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": name}]}}}
        cluster.kubectl("patch", "clusterqueue", name, "--type=merge", "-p", json.dumps(strategy))
        for host in (f"{name}-a", f"{name}-b"):
            node = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": host, "labels": {HOST: host, "node-pool": name}},
            }
            cluster.apply(yaml.safe_dump(node))
            set_ready(cluster, host, True)
        try:
            yield cluster, name
        finally:
            cluster.kubectl("delete", "node", f"{name}-a", f"{name}-b", "--ignore-not-found", check=False)
            cluster.kubectl("patch", "clusterqueue", name, "--type=merge", "-p",
                            '{"spec":{"admissionChecksStrategy":null}}', check=False)  # fmt: skip
            cluster.kubectl("delete", "admissioncheck", name, "--ignore-not-found", check=False)
            assert "Traceback" not in running.log.read_text(), running.tail()


def indexed_job(namespace: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "ranks",
                "namespace": namespace,
                "labels": {"kueue.x-k8s.io/queue-name": "q"},
            },
            "spec": {
                "completionMode": "Indexed",
                "completions": 4,
                "parallelism": 4,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                        ],
                    }
                },
            },
        }
    )


def the_workload(cluster: Cluster, namespace: str) -> JSON:
    found = cluster.items("workloads", "-n", namespace)
    return dict(found[0]) if found else {}


def placement(pods: list[JSON]) -> dict[str, str]:
    """Completion index -> the host its node selector names, for the ungated pods."""
    return {
        pod["metadata"]["labels"][INDEX]: (pod["spec"].get("nodeSelector") or {}).get(HOST, "")  # type: ignore[index,union-attr]
        for pod in pods
        if not gated(pod)
    }


def test_an_indexed_jobs_pods_are_placed_by_rank_and_a_failed_node_is_handled(
    namespace: tuple[Cluster, str],
) -> None:
    cluster, ns = namespace
    host_a, host_b = f"{ns}-a", f"{ns}-b"
    cluster.apply(indexed_job(ns))
    until(
        lambda: condition(the_workload(cluster, ns), "QuotaReserved").get("status") == "True",
        "the reservation",
        HANG,
    )
    workload = the_workload(cluster, ns)
    name = str(workload["metadata"]["name"])  # type: ignore[index]

    # the scheduler's part, played by the test: two hosts, two pods each
    topology = encode([HOST], [Domain((host_a,), 2), Domain((host_b,), 2)])
    add = [
        {"op": "add", "path": "/status/admission/podSetAssignments/0/topologyAssignment", "value": topology}
    ]
    cluster.kubectl(
        "-n", ns, "patch", "workload", name, "--subresource=status", "--type=json", "-p", json.dumps(add)
    )
    cluster.kubectl("-n", ns, "annotate", "workload", name, f"approval.kueue-webhook.io/{ns}=approved")
    until(
        lambda: condition(the_workload(cluster, ns), "Admitted").get("status") == "True",
        "the admission",
        HANG,
    )

    template = cluster.get("job", "ranks", "-n", ns)["spec"]["template"]  # type: ignore[index]
    assert template["spec"]["schedulingGates"] == [{"name": GATE}]
    assert template["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"
    assert template["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == name

    expected = {"0": host_a, "1": host_a, "2": host_b, "3": host_b}
    until(
        lambda: placement(live_pods(cluster, ns)) == expected, "every pod ungated onto its rank's host", HANG
    )
    pods = live_pods(cluster, ns)
    assert len(pods) == 4
    assert all(
        pod["spec"]["nodeSelector"] == {"node-pool": ns, HOST: expected[pod["metadata"]["labels"][INDEX]]}
        for pod in pods
    )  # type: ignore[index]

    # host b fails: none of the Workload's pods runs there (they are not bound), so it is unhealthy at once
    set_ready(cluster, host_b, False)
    until(
        lambda: the_workload(cluster, ns).get("status", {}).get("unhealthyNodes") == [{"name": host_b}],  # type: ignore[union-attr]
        "host b recorded as unhealthy",
        HANG,
    )

    def terminated_by_kueue() -> set[str]:
        return {
            str(pod["metadata"]["labels"][INDEX])  # type: ignore[index]
            for pod in cluster.items("pods", "-n", ns)
            if condition(pod, "TerminatedByKueue").get("reason") == "UnschedulableOnAssignedNode"
        }

    until(lambda: terminated_by_kueue() == {"2", "3"}, "the pods sent to host b failed", HANG)
    # the Job replaces them; the new ones wait at the gate while host b is unhealthy
    until(
        lambda: (
            sorted(p["metadata"]["labels"][INDEX] for p in live_pods(cluster, ns) if gated(p)) == ["2", "3"]
        ),  # type: ignore[index]
        "the replacements of indexes 2 and 3, gated",
        HANG,
    )
    assert placement(live_pods(cluster, ns)) == {"0": host_a, "1": host_a}

    # host b is back: taken off the list, and the waiting pods go to it, by rank
    set_ready(cluster, host_b, True)
    until(lambda: "unhealthyNodes" not in the_workload(cluster, ns).get("status", {}), "host b cleared", HANG)  # type: ignore[operator]
    until(lambda: placement(live_pods(cluster, ns)) == expected, "the replacements ungated onto host b", HANG)

    # two nodes failing: host a deleted (failed at once), then host b NotReady -> the Workload is evicted
    cluster.kubectl("delete", "node", host_a)
    until(
        lambda: the_workload(cluster, ns).get("status", {}).get("unhealthyNodes") == [{"name": host_a}],  # type: ignore[union-attr]
        "host a recorded as unhealthy",
        HANG,
    )
    set_ready(cluster, host_b, False)
    multiple = "Workload eviction triggered due to multiple TAS assigned node failures, including:"
    evicted = ("EvictedDueToNodeFailures", f"{multiple} {host_a}, {host_b}")
    # the Evicted condition lasts only until the Workload is reserved again: its Event stays
    until(lambda: evicted in events(cluster, ns, name), "the NodeFailures eviction", HANG)
    assert "unhealthyNodes" not in the_workload(cluster, ns).get("status", {})  # type: ignore[operator]


def events(cluster: Cluster, namespace: str, name: str) -> list[tuple[str, str]]:
    found = cluster.items("events", "-n", namespace, "--field-selector", f"involvedObject.name={name}")
    return [(str(e["reason"]), str(e["message"])) for e in found]


def test_a_job_placed_by_the_topology_scheduler_has_its_pods_ungated_onto_the_assigned_hosts(
    controller: tuple[Cluster, Running],
) -> None:
    # the whole path: a Topology and its flavor, the scheduler writes the assignment, the ungater follows it
    cluster, running = controller
    rack = "cloud.example.com/rack"
    with team_queue(cluster, "e2e-tas-sched", quota="8") as ns:
        topology = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": ns},
            "spec": {"levels": [{"nodeLabel": rack}, {"nodeLabel": HOST}]},
        }
        cluster.apply(yaml.safe_dump(topology))
        flavor = {"nodeLabels": {"node-pool": ns}, "topologyName": ns}
        cluster.kubectl("patch", "resourceflavor", ns, "--type=merge", "-p", json.dumps({"spec": flavor}))
        # rack r1 has room for 2 pods, rack r2 for 4 (2 per host): a 4-pod Job requiring one rack goes to r2
        hosts = {f"{ns}-1a": ("r1", "2"), f"{ns}-2a": ("r2", "2"), f"{ns}-2b": ("r2", "2")}
        try:
            for host, (rack_name, cpu) in hosts.items():
                labels = {HOST: host, rack: rack_name, "node-pool": ns}
                node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": host, "labels": labels}}
                cluster.apply(yaml.safe_dump(node))
                set_ready(cluster, host, True, cpu=cpu)
            job = yaml.safe_load(indexed_job(ns))
            job["spec"]["template"]["metadata"] = {
                "annotations": {"kueue.x-k8s.io/podset-required-topology": rack}
            }
            # no kubelet renews these nodes' leases: the node lifecycle controller taints them
            job["spec"]["template"]["spec"]["tolerations"] = [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoSchedule"},
            ]
            cluster.apply(yaml.safe_dump(job))
            until(
                lambda: condition(the_workload(cluster, ns), "Admitted").get("status") == "True",
                "the admission",
                HANG,
            )
            admission = the_workload(cluster, ns)["status"]["admission"]  # type: ignore[index]
            assigned = decode(admission["podSetAssignments"][0]["topologyAssignment"])
            slots = [domain.values[-1] for domain in assigned for _ in range(domain.count)]
            by_rank = {str(rank): host for rank, host in enumerate(slots)}
            assert set(by_rank.values()) == {f"{ns}-2a", f"{ns}-2b"}
            until(lambda: placement(live_pods(cluster, ns)) == by_rank, "every pod on its rank's host", HANG)

            # a third host joins rack r2, then the second one fails: its pods are given the new host (same
            # rack, as the pod set requires), the list is cleared, and the Job's new pods go there by rank
            spare = f"{ns}-2c"
            hosts[spare] = ("r2", "2")
            labels = {HOST: spare, rack: "r2", "node-pool": ns}
            cluster.apply(
                yaml.safe_dump(
                    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": spare, "labels": labels}}
                )
            )
            set_ready(cluster, spare, True, cpu="2")
            set_ready(cluster, f"{ns}-2b", False, cpu="2")

            def hosts_assigned() -> set[str]:
                found = the_workload(cluster, ns)
                admission = (found.get("status") or {}).get("admission") or {}  # type: ignore[attr-defined]
                assignments = admission.get("podSetAssignments") or [{}]
                topology = assignments[0].get("topologyAssignment")
                return {d.values[-1] for d in decode(topology)} if topology else set()

            until(
                lambda: hosts_assigned() == {f"{ns}-2a", spare}, "the failed host replaced in its rack", HANG
            )
            assert "unhealthyNodes" not in the_workload(cluster, ns).get("status", {})  # type: ignore[operator]
            moved = {rank: spare if host == f"{ns}-2b" else host for rank, host in by_rank.items()}
            until(lambda: placement(live_pods(cluster, ns)) == moved, "the moved pods on the new host", HANG)
        finally:
            cluster.kubectl(
                "delete", "job", "ranks", "-n", ns, "--ignore-not-found", "--wait=true", check=False
            )
            cluster.kubectl("delete", "node", *hosts, "--ignore-not-found", check=False)
            cluster.kubectl("delete", "topology", ns, "--ignore-not-found", check=False)
    assert "Traceback" not in running.log.read_text(), running.tail()
