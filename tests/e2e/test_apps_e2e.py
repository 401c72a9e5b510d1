"""Deployments and StatefulSets queued through their pods on a real control plane: kube-apiserver and
kube-controller-manager make the pods from the templates the webhook marked (no scheduler or kubelet runs,
so admitted pods stay Pending, ungated, with the flavor's nodeSelector).

A Deployment's pods are a Workload each (Kueue's deployment integration); a StatefulSet is one Workload of
``replicas`` pods, put on hold when scaled to zero and admitted again when scaled up (Kueue's statefulset
integration).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from kueue_webhook.api.integrations.statefulsets import statefulset_workload_name
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until
from tests.e2e.conftest import ControllerSetup, with_controller
from tests.e2e.install import Running
from tests.e2e.queues import team_queue
from tests.e2e.test_pods_e2e import gated

CONTROLLER = ControllerSetup(
    "apps", config="integrations:\n  frameworks: [batch/job, pod, deployment, statefulset]\n"
)
pytestmark = [pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER), with_controller(CONTROLLER)]
JSON = dict[str, object]
WAIT = 90.0


@pytest.fixture
def namespace(controller: tuple[Cluster, Running]) -> Iterator[tuple[Cluster, str]]:
    """A namespace with LocalQueue ``q`` of a ClusterQueue of one CPU in a flavor with a node label."""
    cluster, running = controller
    with team_queue(cluster, "e2e-apps") as name:
        try:
            yield cluster, name
        finally:
            cluster.kubectl(
                "-n", name, "delete", "deployment,statefulset", "--all", "--wait=false", check=False
            )
            assert "Traceback" not in running.log.read_text(), running.tail()


def template(app: str) -> str:
    return f"""
    metadata: {{labels: {{app: {app}}}}}
    spec:
      containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: 500m}}}}}}]"""


def pods_of(cluster: Cluster, namespace: str, app: str) -> list[JSON]:
    return cluster.items("pods", "-n", namespace, "-l", f"app={app}")


def all_started(cluster: Cluster, namespace: str, app: str, count: int) -> bool:
    pods = pods_of(cluster, namespace, app)
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]  # type: ignore[union-attr]
    return len(live) == count and not any(gated(p) for p in live)


def cpu_in_use(cluster: Cluster, name: str) -> str:
    status = cluster.get("clusterqueue", name).get("status") or {}
    for flavor in status.get("flavorsUsage") or []:  # type: ignore[union-attr]
        for resource in flavor.get("resources") or []:
            if resource.get("name") == "cpu":
                return str(resource.get("total"))
    return "0"


def test_a_deployment_pods_are_gated_and_admitted_one_workload_each(namespace: tuple[Cluster, str]) -> None:
    """Three pods of 500m for 1 cpu of quota: two are admitted, the third stays gated."""
    cluster, ns = namespace
    cluster.apply(f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {ns}, labels: {{kueue.x-k8s.io/queue-name: q}}}}
spec:
  replicas: 3
  selector: {{matchLabels: {{app: web}}}}
  template:{template("web")}
""")
    deployment = cluster.get("deployment", "web", "-n", ns)
    labels = deployment["spec"]["template"]["metadata"]["labels"]  # type: ignore[index]
    assert labels["kueue.x-k8s.io/queue-name"] == "q"

    def two_started_one_gated() -> bool:
        pods = pods_of(cluster, ns, "web")
        return len(pods) == 3 and sum(1 for p in pods if gated(p)) == 1

    until(two_started_one_gated, "two of the Deployment's pods to be ungated, the third to wait", WAIT)
    for made in pods_of(cluster, ns, "web"):
        assert made["metadata"]["labels"]["kueue.x-k8s.io/managed"] == "true"  # type: ignore[index]
        if not gated(made):
            assert made["spec"]["nodeSelector"] == {"node-pool": ns}  # type: ignore[index]
    workloads = cluster.items("workloads", "-n", ns)
    assert len(workloads) == 3
    assert sum(1 for w in workloads if condition(w, "Admitted").get("status") == "True") == 2
    assert {w["metadata"]["ownerReferences"][0]["kind"] for w in workloads} == {"Pod"}  # type: ignore[index]
    until(lambda: cpu_in_use(cluster, ns) == "1", "the ClusterQueue to report 1 cpu in use", WAIT)

    def counted() -> bool:
        status = cluster.get("clusterqueue", ns).get("status") or {}
        return (status.get("admittedWorkloads"), status.get("pendingWorkloads")) == (2, 1)  # type: ignore[union-attr]

    until(counted, "the ClusterQueue to count 2 admitted Workloads and 1 pending", WAIT)


def statefulset(cluster: Cluster, namespace: str, name: str, replicas: int) -> JSON:
    cluster.apply(f"""
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: {name}, namespace: {namespace}, labels: {{kueue.x-k8s.io/queue-name: q}}}}
spec:
  replicas: {replicas}
  serviceName: {name}
  podManagementPolicy: Parallel
  selector: {{matchLabels: {{app: {name}}}}}
  template:{template(name)}
""")
    return cluster.get("statefulset", name, "-n", namespace)


def workload_of(cluster: Cluster, namespace: str, sts: JSON) -> JSON:
    meta = sts["metadata"]
    name = statefulset_workload_name(str(meta["name"]), str(meta["uid"]))  # type: ignore[index]
    found = cluster.kubectl("-n", namespace, "get", "workload", name, "-o", "json", check=False)
    return dict(json.loads(found.stdout)) if found.returncode == 0 else {}


def test_a_statefulset_is_one_workload_held_at_zero_and_admitted_again_when_scaled_up(
    namespace: tuple[Cluster, str],
) -> None:
    cluster, ns = namespace
    sts = statefulset(cluster, ns, "db", 2)
    until(lambda: all_started(cluster, ns, "db", 2), "the StatefulSet's two pods to be ungated", WAIT)
    workload = workload_of(cluster, ns, sts)
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("main", 2)]  # type: ignore[index]
    assert condition(workload, "Admitted").get("status") == "True"
    assert len(cluster.items("workloads", "-n", ns)) == 1
    for made in pods_of(cluster, ns, "db"):
        assert made["spec"]["nodeSelector"] == {"node-pool": ns}  # type: ignore[index]
    until(lambda: cpu_in_use(cluster, ns) == "1", "the ClusterQueue to report 1 cpu in use", WAIT)

    cluster.kubectl("-n", ns, "scale", "statefulset", "db", "--replicas=0")
    until(
        lambda: condition(workload_of(cluster, ns, sts), "QuotaReserved").get("reason") == "OnHold",
        "the Workload to be put on hold",
        WAIT,
    )
    held = condition(workload_of(cluster, ns, sts), "QuotaReserved")
    assert (held.get("status"), held.get("message")) == (
        "False",
        "StatefulSet scaled to zero; workload on hold",
    )
    until(lambda: cpu_in_use(cluster, ns) == "0", "the quota to be released", WAIT)
    until(lambda: not pods_of(cluster, ns, "db"), "the scaled-down pods to be gone", WAIT)
    until(
        lambda: (cluster.get("statefulset", "db", "-n", ns).get("status") or {}).get("replicas") == 0,  # type: ignore[union-attr]
        "the StatefulSet to report no replicas",
        WAIT,
    )

    cluster.kubectl("-n", ns, "patch", "statefulset", "db", "--type=merge", "-p", '{"spec":{"replicas":2}}')
    until(lambda: all_started(cluster, ns, "db", 2), "the scaled-up pods to be ungated", WAIT)
    assert condition(workload_of(cluster, ns, sts), "QuotaReserved").get("status") == "True"
    refused = cluster.kubectl(
        "-n", ns, "patch", "statefulset", "db", "--type=merge", "-p", '{"spec":{"replicas":3}}', check=False
    )
    assert refused.returncode != 0 and "spec.replicas: Invalid value: 3: field is immutable" in refused.stderr


def test_a_statefulset_with_a_long_name_is_queued(namespace: tuple[Cluster, str]) -> None:
    """Its Workload's name passes 63 characters: the pods name it in annotations, as Kueue does."""
    cluster, ns = namespace
    name = "a-statefulset-named-long-enough-to-pass-sixty-three"
    sts = statefulset(cluster, ns, name, 1)
    until(lambda: all_started(cluster, ns, name, 1), "the pod to be ungated", WAIT)
    workload = workload_of(cluster, ns, sts)
    assert len(workload["metadata"]["name"]) > 63  # type: ignore[index, arg-type]
    (made,) = pods_of(cluster, ns, name)
    annotations = made["metadata"]["annotations"]  # type: ignore[index]
    assert annotations["kueue.x-k8s.io/pod-group-name"] == workload["metadata"]["name"]  # type: ignore[index]
