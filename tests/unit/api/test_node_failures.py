"""A failed node and the topology-aware Workloads placed on it (kueue_webhook.api.node_failures), as Kueue's
TAS node controller decides with its default feature gates."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.node_failures import (
    AddUnhealthyNode,
    Evict,
    NodeState,
    RemoveUnhealthyNode,
    assigned_nodes,
    decide,
    node_state,
    stranded_pods,
)
from kueue_webhook.api.topology_assignment import Domain, encode
from kueue_webhook.api.topology_pods import TOPOLOGY_GATE

HOST = "kubernetes.io/hostname"
NOT_READY = NodeState(exists=True, ready=False)
READY = NodeState(exists=True, ready=True)


def workload(*hosts: tuple[str, int], unhealthy: tuple[str, ...] = ()) -> dict[str, Any]:
    topology = encode([HOST], [Domain((host,), count) for host, count in hosts])
    status: dict[str, Any] = {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "main", "topologyAssignment": topology}],
        }
    }
    if unhealthy:
        status["unhealthyNodes"] = [{"name": name} for name in unhealthy]
    return {"metadata": {"name": "w", "namespace": "ns"}, "status": status}


def test_the_nodes_of_an_assignment_are_its_hosts_with_pods() -> None:
    assert assigned_nodes(workload(("a", 2), ("b", 0), ("c", 1))) == {"a", "c"}
    rack_level = {
        "status": {"admission": {"podSetAssignments": [{"topologyAssignment": encode(["rack"], [])}]}}
    }
    assert assigned_nodes(rack_level) == set()


def test_a_not_ready_node_without_running_pods_is_recorded_as_unhealthy() -> None:
    assert decide(
        workload(("a", 2)), "a", NOT_READY, progressing_pods=False, evicted=False
    ) == AddUnhealthyNode("a")


def test_a_not_ready_node_still_running_a_pod_of_the_workload_waits_for_the_pod_to_end() -> None:
    # Kueue's TASReplaceNodeOnPodTermination (on by default)
    assert decide(workload(("a", 2)), "a", NOT_READY, progressing_pods=True, evicted=False) is None


def test_a_deleted_node_or_one_without_a_ready_condition_fails_at_once() -> None:
    for state in (NodeState(exists=False, ready=None), NodeState(exists=True, ready=None)):
        assert decide(
            workload(("a", 1)), "a", state, progressing_pods=True, evicted=False
        ) == AddUnhealthyNode("a")


def test_a_second_failed_node_evicts_the_workload_naming_both() -> None:
    action = decide(
        workload(("a", 1), ("b", 1), unhealthy=("a",)), "b", NOT_READY, progressing_pods=False, evicted=False
    )
    assert action == Evict(
        "NodeFailures",
        "Workload eviction triggered due to multiple TAS assigned node failures, including: a, b",
    )


def test_a_node_ready_again_leaves_unhealthy_nodes_and_nothing_is_written_twice() -> None:
    marked = workload(("a", 1), unhealthy=("a",))
    assert decide(marked, "a", READY, progressing_pods=False, evicted=False) == RemoveUnhealthyNode("a")
    assert decide(marked, "a", NOT_READY, progressing_pods=False, evicted=False) is None
    assert decide(workload(("a", 1)), "a", READY, progressing_pods=False, evicted=False) is None


def test_node_state_reads_the_ready_condition() -> None:
    assert node_state(None) == NodeState(False, None)
    assert node_state({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}) == NOT_READY
    assert node_state({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}) == READY
    assert node_state({"status": {}}) == NodeState(True, None)


def test_stranded_pods_are_ungated_pending_and_unbound_on_the_node() -> None:
    def pod(name: str, **spec: Any) -> dict[str, Any]:
        return {
            "metadata": {"name": name},
            "spec": {"nodeSelector": {HOST: "a"}, **spec},
            "status": {"phase": "Pending"},
        }

    pods = [
        pod("stranded"),
        pod("gated", schedulingGates=[{"name": TOPOLOGY_GATE}]),
        pod("bound", nodeName="a"),
        {**pod("elsewhere"), "spec": {"nodeSelector": {HOST: "b"}}},
    ]
    assert [p["metadata"]["name"] for p in stranded_pods(pods, "a")] == ["stranded"]
