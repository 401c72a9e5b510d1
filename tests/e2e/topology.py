"""Helpers shared by the topology e2e modules: Nodes written by hand (no kubelet) and the pods' gate.

There is no kubelet on the e2e control plane, so a Node is a plain API object whose allocatable and Ready
condition the test writes through ``nodes/status``, and pods never leave ``Pending``; what the tests watch
is the ``kueue.x-k8s.io/topology`` scheduling gate and the node selector the ungater gives each pod.
"""

from __future__ import annotations

import json

from tests.e2e.cluster import Cluster

JSON = dict[str, object]
HOST = "kubernetes.io/hostname"
RACK = "cloud.example.com/rack"
GATE = "kueue.x-k8s.io/topology"
#: the taints the node lifecycle controller puts on Nodes whose kubelet never reports: a pod set placed on
#: such Nodes tolerates them (any effect)
NO_KUBELET_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists"},
]


def rack_queues(name: str, cpu: str) -> list[JSON]:
    """Namespace, Topology (rack, host), its flavor selecting ``e2e-pool: <name>``, a ClusterQueue of ``cpu``
    and LocalQueue ``q``, all named ``name``."""
    flavors = [{"name": name, "resources": [{"name": "cpu", "nominalQuota": cpu}]}]
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": name},
            "spec": {"levels": [{"nodeLabel": RACK}, {"nodeLabel": HOST}]},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": name},
            "spec": {"nodeLabels": {"e2e-pool": name}, "topologyName": name},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}},
                "resourceGroups": [{"coveredResources": ["cpu"], "flavors": flavors}],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "q", "namespace": name},
            "spec": {"clusterQueue": name},
        },
    ]


def set_ready(cluster: Cluster, node: str, ready: bool, *, cpu: str = "8") -> None:
    """Write the Node's allocatable (``cpu``) and its Ready condition, as its kubelet would."""
    status = {
        "status": {
            "capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": "set by the test",
                }
            ],
        }
    }
    cluster.kubectl("patch", "node", node, "--subresource=status", "--type=merge", "-p", json.dumps(status))


def live_pods(cluster: Cluster, namespace: str) -> list[JSON]:
    """The namespace's pods that have not ended and are not being deleted."""
    return [
        pod
        for pod in cluster.items("pods", "-n", namespace)
        if (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded")  # type: ignore[union-attr]
        and not pod["metadata"].get("deletionTimestamp")  # type: ignore[index]
    ]


def gated(pod: JSON) -> bool:
    """Whether the pod still waits at the topology gate."""
    return any(g.get("name") == GATE for g in pod["spec"].get("schedulingGates") or [])  # type: ignore[index,union-attr]
