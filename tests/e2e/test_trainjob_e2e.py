"""A Kubeflow Trainer TrainJob on a real API server, with kueue-webhook installed out of cluster.

The Trainer's CRDs (tests/crds: the upstream ones when copied there, else the structural stand-ins) are
created and the TrainJob integration turned on in the ConfigMap. A TrainJob naming a ClusterTrainingRuntime
is created suspended by the webhook, its Workload asks for the runtime's node pods as many times as the
TrainJob's numNodes, and once admitted it is started with the flavor's node label and toleration in Kueue's
runtime patch; the test, playing the Trainer, reports it Complete through the status subresource and its
quota is released. A TrainJob naming a runtime that does not exist yet gets no Workload and a Warning Event
saying which runtime it waits for, and is admitted once the runtime is created. No Trainer runs, so nothing
else touches the objects.

CRDs this module created are deleted at the end (only those), and the ConfigMap is put back as shipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.crds import crd_file, integration_crds
from tests.crds.trainer import TRAINER_CRDS, cluster_runtime, complete, kueue_patch, trainjob
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until
from tests.e2e.conftest import ControllerSetup, with_controller
from tests.e2e.install import Running
from tests.e2e.queues import team_queue

JSON = dict[str, Any]
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
HANG = 60.0


def install_crds(cluster: Cluster) -> list[str]:
    """Create the Trainer CRDs that are missing; the names of those created."""
    present = {c["metadata"]["name"] for c in cluster.items("crd")}
    created = []
    for plural, crd in zip(TRAINER_CRDS, integration_crds(*TRAINER_CRDS), strict=True):
        name = crd["metadata"]["name"]
        if name not in present:
            cluster.kubectl("create", "-f", str(crd_file(plural)))
            created.append(name)
    for name in created:
        cluster.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")
    return created


pytestmark = [
    pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER),
    with_controller(
        ControllerSetup(
            "trainjob",
            config="integrations:\n  frameworks: [batch/job, trainer.kubeflow.org/trainjob]\n",
            crds=install_crds,
        )
    ),
]


@pytest.fixture
def queue(controller: tuple[Cluster, Running]) -> Iterator[tuple[Cluster, Running, str]]:
    """A namespace with LocalQueue ``gpus`` of a ClusterQueue of 8 GPUs of one flavor with a node label and a
    toleration, all named after the namespace."""
    cluster, running = controller
    with team_queue(
        cluster,
        "e2e-trainjob",
        resource="nvidia.com/gpu",
        quota="8",
        local_queue="gpus",
        node_labels={"node-pool": "gpu"},
        tolerations=[TOLERATION],
    ) as name:
        yield cluster, running, name


@pytest.fixture
def runtimes(controller: tuple[Cluster, Running]) -> Iterator[list[str]]:
    """The names of the ClusterTrainingRuntimes a test creates: deleted afterwards."""
    cluster, _ = controller
    names: list[str] = []
    yield names
    for name in names:
        cluster.kubectl("delete", "clustertrainingruntime", name, "--ignore-not-found", check=False)


def create(cluster: Cluster, obj: JSON) -> JSON:
    created: JSON = json.loads(
        cluster.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(obj)).stdout
    )
    return created


def workloads_of(cluster: Cluster, namespace: str, name: str) -> list[JSON]:
    return [
        w
        for w in cluster.items("workloads", "-n", namespace)
        if (w["metadata"].get("ownerReferences") or [{}])[0].get("name") == name
    ]


def test_a_trainjob_is_admitted_for_its_runtimes_pods_started_with_the_flavor_and_finished(
    queue: tuple[Cluster, Running, str], runtimes: list[str]
) -> None:
    cluster, running, namespace = queue
    runtimes.append(f"{namespace}-torch")
    create(cluster, cluster_runtime(f"{namespace}-torch"))
    created = create(cluster, trainjob("train", namespace, "gpus", f"{namespace}-torch", nodes=3))
    assert created["spec"]["suspend"] is True, "the webhook did not suspend it"

    def obj() -> JSON:
        return cluster.get("trainjob", "train", "-n", namespace)

    until(lambda: obj()["spec"]["suspend"] is False, "the TrainJob to start", HANG)
    assert kueue_patch(obj()) == {"nodeSelector": {"node-pool": "gpu"}, "tolerations": [TOLERATION]}, (
        obj()["spec"],
        running.tail(),
    )
    [workload] = workloads_of(cluster, namespace, "train")
    assert workload["metadata"]["name"].startswith("trainjob-train-")
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("node", 3)]

    def cluster_queue() -> JSON:
        return dict(cluster.get("clusterqueue", namespace).get("status") or {})

    until(lambda: cluster_queue().get("admittedWorkloads") == 1, "the ClusterQueue to count it", HANG)
    usage = {r["name"]: r["total"] for u in cluster_queue()["flavorsUsage"] for r in u["resources"]}
    assert usage["nvidia.com/gpu"] == "3"

    status = json.dumps({"status": complete(3)})
    cluster.kubectl(
        "-n", namespace, "patch", "trainjob", "train", "--subresource=status", "--type=merge", "-p", status
    )
    until(
        lambda: condition(workloads_of(cluster, namespace, "train")[0], "Finished").get("status") == "True",
        "its Workload to finish",
        HANG,
    )
    until(lambda: cluster_queue().get("admittedWorkloads") == 0, "its quota to be released", HANG)
    # kubectl prints the Trainer's State column from the TrainJob's last condition
    table = cluster.kubectl("-n", namespace, "get", "trainjob", "train").stdout
    assert "Complete" in table.splitlines()[1], table


def test_a_trainjob_naming_a_missing_runtime_waits_saying_so_and_runs_once_it_exists(
    queue: tuple[Cluster, Running, str], runtimes: list[str]
) -> None:
    cluster, _, namespace = queue
    runtime = f"{namespace}-later"
    create(cluster, trainjob("early", namespace, "gpus", runtime, nodes=2))
    message = (
        f"ClusterTrainingRuntime '{runtime}' not found (spec.runtimeRef): the TrainJob gets its Workload"
    )

    def warnings() -> list[str]:
        return [
            e.get("message") or e.get("note") or ""
            for e in cluster.items("events", "-n", namespace)
            if (e.get("involvedObject") or e.get("regarding") or {}).get("name") == "early"
            and e.get("reason") == "ErrWorkloadCompose"
        ]

    until(lambda: any(m.startswith(message) for m in warnings()), "the missing runtime to be reported", HANG)
    assert workloads_of(cluster, namespace, "early") == []
    assert cluster.get("trainjob", "early", "-n", namespace)["spec"]["suspend"] is True

    runtimes.append(runtime)
    create(cluster, cluster_runtime(runtime))
    until(
        lambda: cluster.get("trainjob", "early", "-n", namespace)["spec"]["suspend"] is False,
        "the TrainJob to start once its runtime exists",
        HANG,
    )
    [workload] = workloads_of(cluster, namespace, "early")
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("node", 2)]
