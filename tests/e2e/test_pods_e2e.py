"""Plain Pods queued through the scheduling gate on a real API server, kueue-webhook installed out of
cluster with the ``pod`` integration turned on through its ConfigMap (live).

kube-apiserver's own rules for gated pods (gates only removed, nodeSelector only added to while gated) are
the ones the controller must live with: a queued pod is created gated by the webhook, admitted by removing
the gate with the flavor's nodeSelector set in the same write, and when the test reports it Succeeded
through ``pods/status`` (no kubelet runs here) the next gated pod gets its quota.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until
from tests.e2e.conftest import ControllerSetup, with_controller
from tests.e2e.install import Running
from tests.e2e.queues import MANAGED_FINALIZER, team_queue

CONTROLLER = ControllerSetup("pods", config="integrations:\n  frameworks: [batch/job, pod]\n")
pytestmark = [pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER), with_controller(CONTROLLER)]
JSON = dict[str, object]
GATE = "kueue.x-k8s.io/admission"
FINALIZER = MANAGED_FINALIZER


@pytest.fixture
def namespace(controller: tuple[Cluster, Running]) -> Iterator[tuple[Cluster, str]]:
    """A namespace with LocalQueue ``q`` of a ClusterQueue of one CPU that preempts lower priorities, and a
    WorkloadPriorityClass named after the namespace."""
    cluster, running = controller
    with team_queue(cluster, "e2e-pods", preempting=True) as name:
        try:
            yield cluster, name
        finally:
            assert "Traceback" not in running.log.read_text(), running.tail()


def create_pod(
    cluster: Cluster, namespace: str, name: str, *, cpu: str = "1", labels: str = "", annotations: str = "{}"
) -> JSON:
    cluster.apply(f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {namespace}
  labels: {{kueue.x-k8s.io/queue-name: q{labels}}}
  annotations: {annotations}
spec:
  restartPolicy: Never
  containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
""")
    return cluster.get("pod", name, "-n", namespace)


def pod(cluster: Cluster, namespace: str, name: str) -> JSON:
    return cluster.get("pod", name, "-n", namespace)


def gated(obj: JSON) -> bool:
    gates = (obj.get("spec") or {}).get("schedulingGates") or []  # type: ignore[union-attr]
    return any(g.get("name") == GATE for g in gates)


def workload_of(cluster: Cluster, namespace: str, owner: str) -> JSON:
    for item in cluster.items("workloads", "-n", namespace):
        if owner in {ref.get("name") for ref in item["metadata"].get("ownerReferences") or []}:
            return dict(item)
    return {}


def test_a_gated_pod_is_admitted_with_its_flavor_and_its_end_lets_the_next_one_in(
    namespace: tuple[Cluster, str],
) -> None:
    cluster, ns = namespace
    first = create_pod(cluster, ns, "first")
    meta = first["metadata"]
    assert meta["labels"]["kueue.x-k8s.io/managed"] == "true" and FINALIZER in meta["finalizers"]  # type: ignore[index]
    until(lambda: not gated(pod(cluster, ns, "first")), "the first pod's gate to be removed")
    admitted = pod(cluster, ns, "first")
    assert admitted["spec"]["nodeSelector"] == {"node-pool": ns}  # type: ignore[index]
    workload = workload_of(cluster, ns, "first")
    assert condition(workload, "Admitted").get("status") == "True", workload

    second = create_pod(cluster, ns, "second")
    assert gated(second)  # created gated by the webhook; no quota left while the first runs
    until(lambda: bool(workload_of(cluster, ns, "second")), "the second pod's Workload")
    assert condition(workload_of(cluster, ns, "second"), "QuotaReserved").get("status") != "True"
    assert gated(pod(cluster, ns, "second"))

    cluster.kubectl(
        "-n", ns, "patch", "pod", "first", "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": {"phase": "Succeeded"}}),
    )  # fmt: skip
    until(lambda: not gated(pod(cluster, ns, "second")), "the second pod's gate to be removed")
    assert pod(cluster, ns, "second")["spec"]["nodeSelector"] == {"node-pool": ns}  # type: ignore[index]
    assert condition(workload_of(cluster, ns, "first"), "Finished").get("status") == "True"
    until(
        lambda: FINALIZER not in (pod(cluster, ns, "first")["metadata"].get("finalizers") or []),  # type: ignore[union-attr]
        "the finished pod's finalizer to be released",
    )


def report_phase(cluster: Cluster, namespace: str, name: str, phase: str) -> None:
    cluster.kubectl(
        "-n", namespace, "patch", "pod", name, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": {"phase": phase}}),
    )  # fmt: skip


def test_a_pod_group_is_admitted_together_once_both_pods_exist(namespace: tuple[Cluster, str]) -> None:
    cluster, ns = namespace
    group = ", kueue.x-k8s.io/pod-group-name: pair"
    total = '{kueue.x-k8s.io/pod-group-total-count: "2"}'
    create_pod(cluster, ns, "pair-0", cpu="500m", labels=group, annotations=total)
    assert not cluster.items("workloads", "-n", ns)  # one of two: no Workload yet
    assert gated(pod(cluster, ns, "pair-0"))
    create_pod(cluster, ns, "pair-1", cpu="500m", labels=group, annotations=total)
    until(
        lambda: not gated(pod(cluster, ns, "pair-0")) and not gated(pod(cluster, ns, "pair-1")),
        "both pods of the group to be ungated",
    )
    workload = cluster.get("workload", "pair", "-n", ns)
    assert condition(workload, "Admitted").get("status") == "True"
    for name in ("pair-0", "pair-1"):
        assert pod(cluster, ns, name)["spec"]["nodeSelector"] == {"node-pool": ns}  # type: ignore[index]
    # waitForPodsReady (on by default): the group is ready once both pods are, as a kubelet reports them
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    for name in ("pair-0", "pair-1"):
        cluster.kubectl(
            "-n", ns, "patch", "pod", name, "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": {"phase": "Running", "conditions": [ready]}}),
        )  # fmt: skip
    until(
        lambda: condition(cluster.get("workload", "pair", "-n", ns), "PodsReady").get("status") == "True",
        "the group's PodsReady=True",
    )


def test_a_running_pod_preempted_by_a_higher_priority_one_is_deleted(namespace: tuple[Cluster, str]) -> None:
    cluster, ns = namespace
    create_pod(cluster, ns, "low")
    until(lambda: not gated(pod(cluster, ns, "low")), "the low-priority pod to start")
    report_phase(cluster, ns, "low", "Running")
    create_pod(cluster, ns, "urgent", labels=f", kueue.x-k8s.io/priority-class: {ns}")
    until(lambda: not gated(pod(cluster, ns, "urgent")), "the urgent pod to start")
    gone = cluster.kubectl("-n", ns, "get", "pod", "low", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr, gone.stdout
