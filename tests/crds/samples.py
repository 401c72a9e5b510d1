"""One queued object of each built-in integration, and what a user should then see: the pod sets of its
Workload (Kueue's names, order and counts), where its pod templates are (each must get the flavor), and the
status its operator writes when it is done (the tests play the operator; none runs).

The fake API server tests (tests/integration) and the real control plane tests (tests/e2e) share these, so
both check the same outcome for the same manifests. Every pod asks for one GPU (as a limit, as GPUs are
set): a sample's pod count is its GPU count, and 8 GPUs hold any one of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["SAMPLES", "Sample", "dig", "part"]

JSON = dict[str, Any]
Path = tuple[str | int, ...]
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
DONE_AT = "2026-01-01T00:00:00Z"


def dig(obj: Any, path: Path) -> Any:
    for step in path:
        obj = obj[step]
    return obj


def part(obj: Any, path: Path) -> Any:
    """What is at ``path``, {} when it is not there (a place the flavor went to and was taken back from)."""
    try:
        return dig(obj, path)
    except (KeyError, IndexError):
        return {}


def pod(gpus: int = 1, *, container: str = "c", image: str = "busybox") -> JSON:
    return {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": container, "image": image, "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
            ],
        }
    }


def _meta(name: str, namespace: str, queue: str) -> JSON:
    return {"name": name, "namespace": namespace, "labels": {QUEUE_LABEL: queue}}


def jobset(name: str, namespace: str, queue: str) -> JSON:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": _meta(name, namespace, queue),
        "spec": {
            "replicatedJobs": [
                {"name": "driver", "template": {"spec": {"template": pod()}}},
                {
                    "name": "workers",
                    "replicas": 2,
                    "template": {"spec": {"parallelism": 2, "template": pod()}},
                },
            ]
        },
    }


def _kubeflow(
    kind: str, version: str, specs: str, replicas: dict[str, int]
) -> Callable[[str, str, str], JSON]:
    def make(name: str, namespace: str, queue: str) -> JSON:
        return {
            "apiVersion": f"kubeflow.org/{version}",
            "kind": kind,
            "metadata": _meta(name, namespace, queue),
            "spec": {
                specs: {
                    t: {"replicas": n, "restartPolicy": "OnFailure", "template": pod()}
                    for t, n in replicas.items()
                }
            },
        }

    return make


def _ray_cluster_spec(workers: int, hosts: int) -> JSON:
    group: JSON = {
        "groupName": "gpu",
        "replicas": workers,
        "minReplicas": 0,
        "maxReplicas": workers,
        "rayStartParams": {},
        "template": pod(container="ray-worker", image="rayproject/ray"),
    }
    if hosts != 1:
        group["numOfHosts"] = hosts
    return {
        "headGroupSpec": {
            "rayStartParams": {},
            "template": pod(container="ray-head", image="rayproject/ray"),
        },
        "workerGroupSpecs": [group],
    }


def rayjob(name: str, namespace: str, queue: str) -> JSON:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": _meta(name, namespace, queue),
        "spec": {
            "entrypoint": "python train.py",
            "shutdownAfterJobFinishes": True,  # a queued RayJob must free its cluster (Kueue's webhook)
            "submissionMode": "HTTPMode",  # no submitter pod (K8sJobMode would add one)
            "rayClusterSpec": _ray_cluster_spec(5, 1),
        },
    }


def raycluster(name: str, namespace: str, queue: str) -> JSON:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": _meta(name, namespace, queue),
        "spec": _ray_cluster_spec(2, 2),
    }


def rayservice(name: str, namespace: str, queue: str) -> JSON:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": _meta(name, namespace, queue),
        "spec": {"serveConfigV2": "applications: []\n", "rayClusterConfig": _ray_cluster_spec(3, 1)},
    }


def _spark_role(**extra: Any) -> JSON:
    """A Spark role of one GPU per pod, described by the role's own fields (no pod template)."""
    return {"gpu": {"name": "nvidia.com/gpu", "quantity": 1}, **extra}


def sparkapplication(name: str, namespace: str, queue: str) -> JSON:
    return {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": _meta(name, namespace, queue),
        "spec": {
            "type": "Scala",
            "mode": "cluster",
            "sparkVersion": "3.5.0",
            "image": "spark:3.5.0",
            "mainClass": "org.apache.spark.examples.SparkPi",
            "mainApplicationFile": "local:///opt/spark/examples/jars/spark-examples.jar",
            "driver": _spark_role(serviceAccount="spark"),
            "executor": _spark_role(instances=3),
        },
    }


def appwrapper(name: str, namespace: str, queue: str) -> JSON:
    """An AppWrapper of a Job of 2 pods (pod sets inferred) and a PyTorchJob whose pod sets are declared."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"{name}-job"},
        "spec": {"parallelism": 2, "completions": 2, "template": pod()},
    }
    pytorch = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": f"{name}-pytorch"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": pod()},
                "Worker": {"replicas": 2, "template": pod()},
            }
        },
    }
    return {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": _meta(name, namespace, queue),
        "spec": {
            "components": [
                {"template": job},
                {
                    "template": pytorch,
                    "podSets": [
                        {"path": "template.spec.pytorchReplicaSpecs.Master.template", "replicas": 1},
                        {"path": "template.spec.pytorchReplicaSpecs.Worker.template", "replicas": 2},
                    ],
                },
            ]
        },
    }


def _kubeflow_done(kind: str) -> JSON:
    """A Kubeflow operator's status once the job succeeded (its JobCondition, Succeeded=True)."""
    return {
        "conditions": [
            {
                "type": "Succeeded",
                "status": "True",
                "reason": f"{kind}Succeeded",
                "message": f"{kind} train successfully completed.",
                "lastUpdateTime": DONE_AT,
                "lastTransitionTime": DONE_AT,
            }
        ],
        "replicaStatuses": {},
    }


@dataclass(frozen=True)
class Sample:
    """A queued object of one kind; ``done`` is the status its operator writes when it succeeds, None for a
    kind that never finishes (a RayCluster: its quota goes when it is deleted, as in Kueue)."""

    kind: str
    plural: str
    framework: str
    make: Callable[[str, str, str], JSON]
    suspend: Path
    #: (name, count); ``{name}`` in a name stands for the object's name
    pod_sets: list[tuple[str, int]]
    #: where each pod set's flavor goes (its pod template's spec, or the kind's own field for it)
    templates: list[Path]
    done: JSON | None

    def manifest(self, name: str, namespace: str, queue: str) -> JSON:
        return self.make(name, namespace, queue)

    def pod_sets_of(self, name: str) -> list[tuple[str, int]]:
        """The pod sets of the object called ``name`` (an AppWrapper's are named after it)."""
        return [(pod_set.format(name=name), count) for pod_set, count in self.pod_sets]

    @property
    def resource(self) -> str:
        """kubectl's unambiguous name of the kind: ``<plural>.<group>``."""
        return f"{self.plural}.{self.framework.partition('/')[0]}"


_RAY_HEAD = ("headGroupSpec", "template", "spec")
_RAY_WORKERS = ("workerGroupSpecs", 0, "template", "spec")

SAMPLES: dict[str, Sample] = {
    s.kind: s
    for s in (
        Sample(
            "JobSet",
            "jobsets",
            "jobset.x-k8s.io/jobset",
            jobset,
            ("spec", "suspend"),
            [("driver", 1), ("workers", 4)],  # replicas * parallelism
            [("spec", "replicatedJobs", i, "template", "spec", "template", "spec") for i in (0, 1)],
            {
                "conditions": [
                    {
                        "type": "Completed",
                        "status": "True",
                        "reason": "AllJobsCompleted",
                        "message": "jobset completed successfully",
                        "lastTransitionTime": DONE_AT,
                    }
                ]
            },
        ),
        Sample(
            "PyTorchJob",
            "pytorchjobs",
            "kubeflow.org/pytorchjob",
            _kubeflow("PyTorchJob", "v1", "pytorchReplicaSpecs", {"Master": 1, "Worker": 4}),
            ("spec", "runPolicy", "suspend"),
            [("master", 1), ("worker", 4)],
            [("spec", "pytorchReplicaSpecs", t, "template", "spec") for t in ("Master", "Worker")],
            _kubeflow_done("PyTorchJob"),
        ),
        Sample(
            "TFJob",
            "tfjobs",
            "kubeflow.org/tfjob",
            # written out of Kueue's order (Chief, Master, PS, Worker, Evaluator): the pod sets follow it
            _kubeflow("TFJob", "v1", "tfReplicaSpecs", {"Worker": 3, "PS": 2, "Chief": 1}),
            ("spec", "runPolicy", "suspend"),
            [("chief", 1), ("ps", 2), ("worker", 3)],
            [("spec", "tfReplicaSpecs", t, "template", "spec") for t in ("Chief", "PS", "Worker")],
            _kubeflow_done("TFJob"),
        ),
        Sample(
            "MPIJob",
            "mpijobs",
            "kubeflow.org/mpijob",
            _kubeflow("MPIJob", "v2beta1", "mpiReplicaSpecs", {"Worker": 4, "Launcher": 1}),
            ("spec", "runPolicy", "suspend"),
            [("launcher", 1), ("worker", 4)],
            [("spec", "mpiReplicaSpecs", t, "template", "spec") for t in ("Launcher", "Worker")],
            _kubeflow_done("MPIJob"),
        ),
        Sample(
            "XGBoostJob",
            "xgboostjobs",
            "kubeflow.org/xgboostjob",
            _kubeflow("XGBoostJob", "v1", "xgbReplicaSpecs", {"Worker": 3, "Master": 1}),
            ("spec", "runPolicy", "suspend"),
            [("master", 1), ("worker", 3)],
            [("spec", "xgbReplicaSpecs", t, "template", "spec") for t in ("Master", "Worker")],
            _kubeflow_done("XGBoostJob"),
        ),
        Sample(
            "PaddleJob",
            "paddlejobs",
            "kubeflow.org/paddlejob",
            _kubeflow("PaddleJob", "v1", "paddleReplicaSpecs", {"Worker": 2, "Master": 1}),
            ("spec", "runPolicy", "suspend"),
            [("master", 1), ("worker", 2)],
            [("spec", "paddleReplicaSpecs", t, "template", "spec") for t in ("Master", "Worker")],
            _kubeflow_done("PaddleJob"),
        ),
        Sample(
            "JAXJob",
            "jaxjobs",
            "kubeflow.org/jaxjob",
            _kubeflow("JAXJob", "v1", "jaxReplicaSpecs", {"Worker": 4}),
            ("spec", "runPolicy", "suspend"),
            [("worker", 4)],
            [("spec", "jaxReplicaSpecs", "Worker", "template", "spec")],
            _kubeflow_done("JAXJob"),
        ),
        Sample(
            "RayJob",
            "rayjobs",
            "ray.io/rayjob",
            rayjob,
            ("spec", "suspend"),
            [("head", 1), ("gpu", 5)],
            [("spec", "rayClusterSpec", *_RAY_HEAD), ("spec", "rayClusterSpec", *_RAY_WORKERS)],
            {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "message": "done"},
        ),
        Sample(
            "RayCluster",
            "rayclusters",
            "ray.io/raycluster",
            raycluster,
            ("spec", "suspend"),
            [("head", 1), ("gpu", 4)],  # replicas * numOfHosts
            [("spec", *_RAY_HEAD), ("spec", *_RAY_WORKERS)],
            None,
        ),
        Sample(
            "RayService",
            "rayservices",
            "ray.io/rayservice",
            rayservice,
            ("spec", "rayClusterConfig", "suspend"),
            [("head", 1), ("gpu", 3)],
            [("spec", "rayClusterConfig", *_RAY_HEAD), ("spec", "rayClusterConfig", *_RAY_WORKERS)],
            None,  # serves until deleted, as a RayCluster
        ),
        Sample(
            "SparkApplication",
            "sparkapplications",
            "sparkoperator.k8s.io/sparkapplication",
            sparkapplication,
            ("spec", "suspend"),
            [("driver", 1), ("executor", 3)],  # the executor's instances
            [("spec", "driver"), ("spec", "executor")],  # the roles' own nodeSelector and tolerations
            {"applicationState": {"state": "COMPLETED"}, "executorState": {"train-exec-1": "COMPLETED"}},
        ),
        Sample(
            "AppWrapper",
            "appwrappers",
            "workload.codeflare.dev/appwrapper",
            appwrapper,
            ("spec", "suspend"),
            [("{name}-0", 2), ("{name}-1", 1), ("{name}-2", 2)],  # named after the AppWrapper
            # the flavor goes to the AppWrapper controller, one podSetInfos entry per pod set of a component
            [
                ("spec", "components", 0, "podSetInfos", 0),
                *(("spec", "components", 1, "podSetInfos", i) for i in (0, 1)),
            ],
            {"phase": "Succeeded"},
        ),
    )
}
