"""A LeaderWorkerSet queued one Workload per group on a real control plane (Kueue's leaderworkerset
integration). Its CRD (tests/crds: the upstream one when copied there, else the minimal structural one) is
created when missing and deleted at the end if this module created it. No LWS controller runs: the test makes
a group's pods as it would (labels with the set's name, group and worker index, the leader's name on the
workers, the marked templates' metadata) and kube-apiserver calls the webhook for them; no scheduler or
kubelet runs, so admitted pods stay Pending, ungated, with the flavor's nodeSelector.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

import pytest

from kueue_webhook.api.integrations.leaderworkersets import workload_name_of_group
from tests.crds import crd_file
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until
from tests.e2e.conftest import ControllerSetup, with_controller
from tests.e2e.install import Running
from tests.e2e.queues import team_queue
from tests.e2e.test_pods_e2e import gated

CRD = "leaderworkersets.leaderworkerset.x-k8s.io"
JSON = dict[str, object]
WAIT = 90.0


def install_crd(cluster: Cluster) -> Sequence[str]:
    if CRD in {c["metadata"]["name"] for c in cluster.items("crd")}:  # type: ignore[index]
        return ()
    cluster.kubectl("create", "-f", str(crd_file("leaderworkersets")))
    cluster.kubectl("wait", "--for=condition=Established", f"crd/{CRD}", "--timeout=60s")
    return (CRD,)


CONTROLLER = ControllerSetup(
    "leaderworkersets",
    config="integrations:\n  frameworks: [batch/job, pod, leaderworkerset.x-k8s.io/leaderworkerset]\n",
    crds=install_crd,
)
pytestmark = [pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER), with_controller(CONTROLLER)]


@pytest.fixture
def namespace(controller: tuple[Cluster, Running]) -> Iterator[tuple[Cluster, str]]:
    """A namespace with LocalQueue ``q`` of a ClusterQueue of 1.5 CPU in a flavor with a node label."""
    cluster, running = controller
    with team_queue(cluster, "e2e-lws", quota="1500m") as name:
        try:
            yield cluster, name
        finally:
            cluster.kubectl(
                "-n", name, "delete", "leaderworkersets,pods", "--all", "--wait=false", check=False
            )
            assert "Traceback" not in running.log.read_text(), running.tail()


def template() -> JSON:
    return {
        "metadata": {"labels": {"app": "serve"}},
        "spec": {
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "500m"}}}]
        },
    }


def make_group(cluster: Cluster, namespace: str, lws: JSON, group: int) -> list[str]:
    """The pods the LWS controller makes for one group, created through kube-apiserver; their names."""
    spec = lws["spec"]
    assert isinstance(spec, dict)
    lwt, name = spec["leaderWorkerTemplate"], lws["metadata"]["name"]  # type: ignore[index]
    leader = f"{name}-{group}"
    names = []
    for worker in range(lwt["size"]):
        source = lwt["leaderTemplate"] if worker == 0 else lwt["workerTemplate"]
        annotations = dict(source["metadata"].get("annotations", {}))
        if worker:
            annotations["leaderworkerset.sigs.k8s.io/leader-name"] = leader
        pod_name = leader if worker == 0 else f"{leader}-{worker}"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name,
                "namespace": namespace,
                "labels": {
                    **source["metadata"].get("labels", {}),
                    "leaderworkerset.sigs.k8s.io/name": name,
                    "leaderworkerset.sigs.k8s.io/group-index": str(group),
                    "leaderworkerset.sigs.k8s.io/worker-index": str(worker),
                },
                "annotations": annotations,
            },
            "spec": source["spec"],
        }
        cluster.kubectl("create", "-f", "-", input=json.dumps(pod))
        names.append(pod_name)
    return names


def test_a_leaderworkerset_is_a_workload_per_group_admitted_whole_with_the_flavor(
    namespace: tuple[Cluster, str],
) -> None:
    """Two groups of a leader and a worker (500m each) for 1.5 CPU: one group is admitted and its pods
    ungated with the flavor's nodeSelector; the other's pods stay gated. Scaled down to one group, the
    second group's Workload is deleted."""
    cluster, ns = namespace
    manifest = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "serve", "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {
            "replicas": 2,
            "leaderWorkerTemplate": {"size": 2, "leaderTemplate": template(), "workerTemplate": template()},
        },
    }
    lws = json.loads(cluster.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(manifest)).stdout)
    marked = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["annotations"]
    assert marked["kueue.x-k8s.io/pod-suspending-parent"] == "leaderworkerset.x-k8s.io/leaderworkerset"
    uid = lws["metadata"]["uid"]
    names = [workload_name_of_group("serve", uid, g) for g in (0, 1)]

    def workloads() -> dict[str, JSON]:
        return {str(w["metadata"]["name"]): w for w in cluster.items("workloads", "-n", ns)}  # type: ignore[index]

    until(lambda: set(names) <= set(workloads()), "a Workload per group", WAIT)
    first = workloads()[names[0]]
    assert [(p["name"], p["count"]) for p in first["spec"]["podSets"]] == [("leader", 1), ("worker", 1)]  # type: ignore[index]

    group0 = make_group(cluster, ns, lws, 0)
    group1 = make_group(cluster, ns, lws, 1)

    def pod(name: str) -> JSON:
        return cluster.get("pod", name, "-n", ns)

    until(lambda: not any(gated(pod(p)) for p in group0), "the first group to be ungated", WAIT)
    for name in group0:
        assert pod(name)["spec"].get("nodeSelector") == {"node-pool": ns}  # type: ignore[union-attr]
    assert condition(workloads()[names[0]], "Admitted").get("status") == "True"
    until(
        lambda: all(
            (pod(p)["metadata"].get("annotations") or {}).get("kueue.x-k8s.io/pod-group-name") == names[1]  # type: ignore[union-attr]
            for p in group1
        ),
        "the second group's pods to join their group",
        WAIT,
    )
    assert all(gated(pod(p)) for p in group1)  # 1 cpu of 1.5 is taken: the whole second group waits
    assert condition(workloads()[names[1]], "QuotaReserved").get("status") != "True"

    cluster.kubectl(
        "-n", ns, "patch", "leaderworkerset", "serve", "--type=merge", "-p", '{"spec":{"replicas":1}}'
    )
    until(lambda: names[1] not in workloads(), "the second group's Workload to be deleted", WAIT)
    assert names[0] in workloads()
