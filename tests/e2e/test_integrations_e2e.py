"""Every built-in queued kind on a real API server, with kueue-webhook installed out of cluster.

The kinds' CRDs (tests/crds: the upstream ones when copied there, else the minimal structural ones) are
created on the API server, the integrations turned on live in the ConfigMap, and then, for each kind with a
sample in tests/crds/samples.py in turn (JobSet, the Kubeflow jobs, the Ray kinds, SparkApplication,
AppWrapper): the API server calls the webhook, which creates the object suspended; it is admitted with
Kueue's pod counts and the flavor's node label and toleration in every pod template (an AppWrapper's in its
podSetInfos); a higher-priority Job preempts it (suspended again, templates restored); it runs again once
that Job is gone; and its quota is released when the test, playing the operator, reports it finished through
the status subresource (a RayCluster or RayService never finishes: it is deleted). No operator runs, so
nothing else touches the objects.

CRDs this module created are deleted at the end (only those: a CRD that was there before is someone
else's), and the ConfigMap is put back as shipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.crds import PLURALS, crd_file, integration_crds
from tests.crds.samples import SAMPLES, Sample, dig, part
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until
from tests.e2e.conftest import ControllerSetup, with_controller
from tests.e2e.install import Running
from tests.e2e.queues import team_queue

JSON = dict[str, Any]
FRAMEWORKS = (
    "integrations:\n  frameworks: [batch/job, " + ", ".join(s.framework for s in SAMPLES.values()) + "]\n"
)
TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
HANG = 60.0


def install_crds(cluster: Cluster) -> list[str]:
    """Create the kinds' CRDs that are missing; the names of those created."""
    present = {c["metadata"]["name"] for c in cluster.items("crd")}
    created = []
    for plural, crd in zip(PLURALS, integration_crds(), strict=True):
        name = crd["metadata"]["name"]
        if name in present:
            continue
        # create, not apply: an upstream CRD is too large for apply's last-applied annotation
        cluster.kubectl("create", "-f", str(crd_file(plural)))
        created.append(name)
    for name in created:
        cluster.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")
    return created


pytestmark = [
    pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER),
    with_controller(ControllerSetup("integrations", config=FRAMEWORKS, crds=install_crds)),
]


@pytest.fixture
def queue(controller: tuple[Cluster, Running]) -> Iterator[tuple[Cluster, Running, str]]:
    """A namespace with LocalQueue ``gpus`` of a ClusterQueue (8 GPUs of one flavor with a node label and a
    toleration, preemption of lower priorities) and a WorkloadPriorityClass, all named after the namespace."""
    cluster, running = controller
    with team_queue(
        cluster,
        "e2e-kinds",
        resource="nvidia.com/gpu",
        quota="8",
        local_queue="gpus",
        node_labels={"node-pool": "gpu"},
        tolerations=[TOLERATION],
        preempting=True,
    ) as name:
        yield cluster, running, name


def urgent_job(namespace: str, priority_class: str) -> JSON:
    """A Job of the WorkloadPriorityClass that asks for all 8 GPUs."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "urgent",
            "namespace": namespace,
            "labels": {"kueue.x-k8s.io/queue-name": "gpus", "kueue.x-k8s.io/priority-class": priority_class},
        },
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "8"}}}
                    ],
                }
            }
        },
    }


def flavored(obj: JSON, sample: Sample) -> bool:
    return all(
        dig(obj, path).get("nodeSelector") == {"node-pool": "gpu"}
        and dig(obj, path).get("tolerations") == [TOLERATION]
        for path in sample.templates
    )


def restored(obj: JSON, sample: Sample) -> bool:
    return not any({"nodeSelector", "tolerations"} & set(part(obj, path)) for path in sample.templates)


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_a_queued_kind_on_a_real_api_server(queue: tuple[Cluster, Running, str], kind: str) -> None:
    cluster, running, namespace = queue
    sample = SAMPLES[kind]
    resource = sample.resource

    def obj() -> JSON:
        return cluster.get(resource, "train", "-n", namespace)

    def workload() -> JSON:
        owned = [
            w
            for w in cluster.items("workloads", "-n", namespace)
            if (w["metadata"].get("ownerReferences") or [{}])[0].get("kind") == kind
        ]
        return owned[0] if owned else {}

    def cluster_queue() -> JSON:
        return dict(cluster.get("clusterqueue", namespace).get("status") or {})

    created = json.loads(
        cluster.kubectl(
            "create", "-o", "json", "-f", "-", input=json.dumps(sample.manifest("train", namespace, "gpus"))
        ).stdout
    )
    assert dig(created, sample.suspend) is True, "the webhook did not suspend it"

    until(lambda: dig(obj(), sample.suspend) is False, f"the {kind} to start", HANG)
    assert flavored(obj(), sample), (obj()["spec"], running.tail())
    admitted = workload()
    assert [(p["name"], p["count"]) for p in admitted["spec"]["podSets"]] == sample.pod_sets_of("train")
    assert [(a["name"], a["count"]) for a in admitted["status"]["admission"]["podSetAssignments"]] == (
        sample.pod_sets_of("train")
    )
    until(lambda: cluster_queue().get("admittedWorkloads") == 1, "the ClusterQueue to count it", HANG)

    cluster.kubectl("create", "-f", "-", input=json.dumps(urgent_job(namespace, namespace)))
    until(lambda: dig(obj(), sample.suspend) is True, f"the {kind} to be preempted", HANG)
    assert restored(obj(), sample), obj()["spec"]
    evicted = workload()
    assert condition(evicted, "Preempted").get("status") == "True", evicted["status"]
    until(
        lambda: cluster.get("job", "urgent", "-n", namespace)["spec"].get("suspend") is False,
        "the urgent Job to start",
        HANG,
    )

    cluster.kubectl("-n", namespace, "delete", "job", "urgent", "--wait=false")
    until(lambda: dig(obj(), sample.suspend) is False, f"the {kind} to start again", HANG)
    assert flavored(obj(), sample), obj()["spec"]

    if sample.done is not None:
        status = json.dumps({"status": sample.done})
        cluster.kubectl(
            "-n", namespace, "patch", resource, "train", "--subresource=status", "--type=merge", "-p", status
        )
        until(
            lambda: condition(workload(), "Finished").get("status") == "True", "its Workload to finish", HANG
        )
    else:
        cluster.kubectl("-n", namespace, "delete", resource, "train")
        until(lambda: not workload(), "its Workload to go", HANG)
    until(lambda: cluster_queue().get("admittedWorkloads") == 0, "its quota to be released", HANG)
    assert not [
        u for u in cluster_queue().get("flavorsUsage") or [] for r in u["resources"] if r["total"] != "0"
    ]


#: where a user adds one replica to each sample, and the pod set that grows by how many pods
GROWTH: dict[str, tuple[tuple[str | int, ...], str, int]] = {
    "JobSet": (("spec", "replicatedJobs", 1, "replicas"), "workers", 2),  # a replica is 2 pods
    "PyTorchJob": (("spec", "pytorchReplicaSpecs", "Worker", "replicas"), "worker", 1),
    "TFJob": (("spec", "tfReplicaSpecs", "Worker", "replicas"), "worker", 1),
    "MPIJob": (("spec", "mpiReplicaSpecs", "Worker", "replicas"), "worker", 1),
    "XGBoostJob": (("spec", "xgbReplicaSpecs", "Worker", "replicas"), "worker", 1),
    "PaddleJob": (("spec", "paddleReplicaSpecs", "Worker", "replicas"), "worker", 1),
    "JAXJob": (("spec", "jaxReplicaSpecs", "Worker", "replicas"), "worker", 1),
    "RayJob": (("spec", "rayClusterSpec", "workerGroupSpecs", 0, "replicas"), "gpu", 1),
    "RayCluster": (("spec", "workerGroupSpecs", 0, "replicas"), "gpu", 2),  # a replica is 2 hosts
    "RayService": (("spec", "rayClusterConfig", "workerGroupSpecs", 0, "replicas"), "gpu", 1),
    "SparkApplication": (("spec", "executor", "instances"), "executor", 1),
    "AppWrapper": (("spec", "components", 1, "podSets", 1, "replicas"), "grow-2", 1),  # a declared pod set
}


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_a_queued_kind_scaled_up_while_running_is_queued_again_for_its_new_shape(
    queue: tuple[Cluster, Running, str], kind: str
) -> None:
    """Kueue's jobframework: a running object that no longer matches its admitted Workload is stopped
    (``NoMatchingWorkload``), its Workload deleted, and a new one queued; here the new shape fits the 8 GPUs,
    so it is admitted for the new counts and started again."""
    cluster, _, namespace = queue
    sample = SAMPLES[kind]
    path, grown, more = GROWTH[kind]

    def workload() -> JSON:
        owned = [
            w
            for w in cluster.items("workloads", "-n", namespace)
            if (w["metadata"].get("ownerReferences") or [{}])[0].get("kind") == kind
        ]
        return owned[0] if len(owned) == 1 else {}

    cluster.kubectl("create", "-f", "-", input=json.dumps(sample.manifest("grow", namespace, "gpus")))
    until(lambda: dig(cluster.get(sample.resource, "grow", "-n", namespace), sample.suspend) is False,
          f"the {kind} to start", HANG)  # fmt: skip
    first = workload()
    replicas = dig(cluster.get(sample.resource, "grow", "-n", namespace), path)
    pointer = "/" + "/".join(str(step) for step in path)
    patch = json.dumps([{"op": "replace", "path": pointer, "value": replicas + 1}])
    cluster.kubectl("-n", namespace, "patch", sample.resource, "grow", "--type=json", "-p", patch)

    def admitted_again() -> bool:
        current = workload()
        return (
            bool(current)
            and current["metadata"]["uid"] != first["metadata"]["uid"]
            and condition(current, "Admitted").get("status") == "True"
            and dig(cluster.get(sample.resource, "grow", "-n", namespace), sample.suspend) is False
        )

    until(admitted_again, f"the scaled {kind} to be admitted again", HANG)
    expected = [(name, count + (more if name == grown else 0)) for name, count in sample.pod_sets_of("grow")]
    second = workload()
    assert [(p["name"], p["count"]) for p in second["spec"]["podSets"]] == expected
    assert [(a["name"], a["count"]) for a in second["status"]["admission"]["podSetAssignments"]] == expected
    old = f"{namespace}/{first['metadata']['name']}"
    wanted = {
        ("Stopped", "No matching Workload; restoring pod templates according to existent Workload"),
        ("DeletedWorkload", f"Deleted not matching Workload: {old}"),
    }

    def said() -> bool:
        found = cluster.items("events", "-n", namespace, "--field-selector", "involvedObject.name=grow")
        return wanted <= {(e["reason"], e["message"]) for e in found}

    until(said, "the Stopped and DeletedWorkload Events", HANG)  # Events are written in the background
    cluster.kubectl("-n", namespace, "delete", sample.resource, "grow")
    until(lambda: not workload(), "its Workload to go", HANG)


def test_kueues_refusals_of_a_queued_spark_application_and_ray_cluster_reach_kubectl(
    queue: tuple[Cluster, Running, str],
) -> None:
    """Kueue's SparkApplication webhook (cluster mode only) and raycluster.ValidateCreate (no autoscaler: it
    would grow the cluster beyond its quota), as kubectl prints them; nothing is created."""
    cluster, _, namespace = queue
    spark = SAMPLES["SparkApplication"].manifest("client-mode", namespace, "gpus")
    spark["spec"]["mode"] = "client"
    refused = cluster.kubectl("create", "-f", "-", input=json.dumps(spark), check=False)
    assert refused.returncode != 0
    assert 'spec.mode: Invalid value: "client": only cluster mode is supported' in refused.stderr, (
        refused.stderr
    )
    ray = SAMPLES["RayCluster"].manifest("autoscaling", namespace, "gpus")
    ray["spec"]["enableInTreeAutoscaling"] = True
    refused = cluster.kubectl("create", "-f", "-", input=json.dumps(ray), check=False)
    assert refused.returncode != 0
    assert "spec.enableInTreeAutoscaling: Invalid value: true: a queued Ray cluster cannot autoscale" in (
        refused.stderr
    ), refused.stderr
    assert not cluster.items("sparkapplications.sparkoperator.k8s.io,rayclusters.ray.io", "-n", namespace)
