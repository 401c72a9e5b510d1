"""The Node and bound-Pod sink of topology-aware scheduling: objects reduced to what TAS reads, listeners told
only when that changed, relists dropping what is gone."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.nodes import NodeView, PodOnNode
from kueue_webhook.api.quantity import NANO
from kueue_webhook.control.kube.kinds import BOUND_PODS, NODES
from kueue_webhook.control.scheduling.topology_feed import TopologyFeed


class Recorder:
    def __init__(self) -> None:
        self.nodes: list[tuple[str, NodeView | None]] = []
        self.pods: list[tuple[str, PodOnNode | None]] = []

    def node_changed(self, name: str, node: NodeView | None) -> None:
        self.nodes.append((name, node))

    def pod_changed(self, key: str, pod: PodOnNode | None) -> None:
        self.pods.append((key, pod))


def node(name: str, *, ready: str = "True", heartbeat: str = "t0") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"rack": "r1"}, "resourceVersion": heartbeat},
        "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": {"cpu": "4", "pods": "110"},
            "conditions": [{"type": "Ready", "status": ready, "lastHeartbeatTime": heartbeat}],
            "images": [{"names": ["a very long image list nobody here reads"]}],
        },
    }


def pod(name: str, node_name: str = "n1", phase: str = "Running", **annotations: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "annotations": annotations},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
        },
        "status": {"phase": phase},
    }


def test_a_node_is_kept_as_its_view_and_heartbeats_tell_nobody() -> None:
    feed, seen = TopologyFeed(), Recorder()
    feed.subscribe(seen)
    feed.upsert(NODES, node("n1"))
    assert feed.nodes["n1"].allocatable == {"cpu": 4 * NANO, "pods": 110 * NANO}
    assert feed.nodes["n1"].schedulable and len(feed.nodes["n1"].taints) == 1
    assert not feed.upsert(NODES, node("n1", heartbeat="t1"))  # only the heartbeat moved
    feed.upsert(NODES, node("n1", ready="False"))
    assert [(name, view.schedulable if view else None) for name, view in seen.nodes] == [
        ("n1", True),
        ("n1", False),
    ]


def test_a_bound_pod_uses_its_node_until_it_ends_and_tas_pods_are_counted_elsewhere() -> None:
    feed, seen = TopologyFeed(), Recorder()
    feed.subscribe(seen)
    feed.upsert(BOUND_PODS, pod("p"))
    assert feed.pods["ns/p"] == PodOnNode("n1", {"cpu": NANO})
    assert not feed.upsert(BOUND_PODS, pod("p"))  # a status update that changes nothing TAS reads
    feed.upsert(BOUND_PODS, pod("p", phase="Succeeded"))
    assert "ns/p" not in feed.pods
    feed.upsert(BOUND_PODS, pod("t", **{"kueue.x-k8s.io/podset-required-topology": "rack"}))
    assert "ns/t" not in feed.pods  # its usage comes from its Workload's topology assignment
    assert seen.pods == [("ns/p", PodOnNode("n1", {"cpu": NANO})), ("ns/p", None)]


def test_a_relist_drops_what_is_gone_and_a_new_listener_is_replayed_everything() -> None:
    feed = TopologyFeed()
    feed.upsert(NODES, node("n1"))
    feed.upsert(NODES, node("n2"))
    feed.upsert(BOUND_PODS, pod("a"))
    feed.upsert(BOUND_PODS, pod("b", node_name="n2"))
    feed.retain_only(NODES, {("", "n1")})
    feed.retain_only(BOUND_PODS, {("ns", "b")})
    assert set(feed.nodes) == {"n1"} and set(feed.pods) == {"ns/b"}
    later = Recorder()
    feed.replay(later)
    assert [name for name, _ in later.nodes] == ["n1"] and [key for key, _ in later.pods] == ["ns/b"]
