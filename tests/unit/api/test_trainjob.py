"""A Kubeflow Trainer TrainJob as Kueue's pkg/controller/jobs/trainjob reads it: pod sets from the referenced
training runtime's JobSet template with the TrainJob's overrides, the Workload's name, the flavors written
into Kueue's runtime patch and taken back, and when it is finished, active and ready."""

from __future__ import annotations

import copy
from typing import Any

from kueue_webhook.admission.kind_rules import KIND_RULES
from kueue_webhook.api.admitted_pods import admitted_pod_marks
from kueue_webhook.api.integrations import BUILTIN, engine
from kueue_webhook.api.integrations.model import Dependency
from kueue_webhook.api.integrations.trainjob import (
    ANCESTOR_LABEL,
    CLUSTER_TRAINING_RUNTIMES,
    RUNTIME_PATCH_MANAGER,
    TRAINING_RUNTIMES,
    strategic_merge,
    without_kueue_patch,
)
from kueue_webhook.api.objects import ResourceFlavor, parse_resource_flavor
from kueue_webhook.api.topology_pods import TopologyStart
from tests.fakeapi.patches import json_patch

JSON = dict[str, Any]
TRAINJOB = BUILTIN["trainer.kubeflow.org/trainjob"]
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
WAITS = "the TrainJob gets its Workload once it exists"
#: requests are counted in nano units
NANO = 10**9
RUNTIME_TOLERATION = {"key": "training", "operator": "Exists", "effect": "NoSchedule"}


def gpu_flavor() -> ResourceFlavor:
    parsed = parse_resource_flavor(
        {
            "metadata": {"name": "gpu"},
            "spec": {"nodeLabels": {"pool": "gpu"}, "tolerations": [GPU_TOLERATION]},
        }
    )
    assert isinstance(parsed, ResourceFlavor)
    return parsed


def replicated_job(name: str, *, ancestor: str | None = None, cpu: str = "1", **job: Any) -> JSON:
    labels = {ANCESTOR_LABEL: ancestor} if ancestor else {}
    container = {"name": "node" if ancestor == "trainer" else name, "image": "img",
                 "resources": {"requests": {"cpu": cpu}}}  # fmt: skip
    return {
        "name": name,
        **job,
        "template": {
            "metadata": {"labels": labels},
            "spec": {"template": {"spec": {"containers": [container], "tolerations": [RUNTIME_TOLERATION]}}},
        },
    }


def torch_runtime(name: str = "torch", *, num_nodes: int = 2, namespace: str | None = None) -> JSON:
    meta: JSON = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime" if namespace else "ClusterTrainingRuntime",
        "metadata": meta,
        "spec": {
            "mlPolicy": {"numNodes": num_nodes, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        replicated_job("dataset-initializer", ancestor="dataset-initializer", replicas=3),
                        replicated_job("node", ancestor="trainer", cpu="2"),
                    ]
                }
            },
        },
    }


def trainjob(**spec: Any) -> JSON:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "train", "namespace": "team-a", "uid": "uid-1", "labels": {}},
        "spec": {"runtimeRef": {"name": "torch"}, "suspend": True, **spec},
    }


def lookup_of(*runtimes: JSON) -> Any:
    def lookup(dependency: Dependency, name: str, namespace: str) -> JSON | None:
        for runtime in runtimes:
            meta = runtime["metadata"]
            if (
                runtime["kind"] == dependency.kind
                and meta["name"] == name
                and meta.get("namespace", "") == namespace
            ):
                return runtime
        return None

    return lookup


def view(obj: JSON, *runtimes: JSON) -> JSON:
    assert TRAINJOB.resolver is not None
    resolved = TRAINJOB.resolver.resolve(obj, lookup_of(*(runtimes or (torch_runtime(),))))
    assert not isinstance(resolved, str), resolved
    return resolved


def pod_sets(obj: JSON) -> list[tuple[str, int, dict[str, Any]]]:
    sets = engine.pod_sets(TRAINJOB, obj)
    assert isinstance(sets, tuple), sets
    return [(s.name, s.count, dict(s.requests)) for s in sets]


def test_pod_sets_are_the_runtimes_replicated_jobs_the_trainer_step_counted_by_the_runtimes_num_nodes() -> (
    None
):
    """Kueue reads the JobSet Trainer would build: the initializer runs one replica whatever the runtime
    says, the trainer step one replica of mlPolicy.numNodes pods."""
    sets = pod_sets(view(trainjob()))
    assert [(name, count) for name, count, _ in sets] == [("dataset-initializer", 1), ("node", 2)]
    assert sets[1][2]["cpu"] == 2 * NANO


def test_the_trainjobs_num_nodes_and_resources_per_node_override_the_runtime() -> None:
    obj = trainjob(trainer={"numNodes": 4, "resourcesPerNode": {"requests": {"nvidia.com/gpu": "1"}}})
    sets = pod_sets(view(obj))
    assert sets[1][:2] == ("node", 4)
    assert sets[1][2] == {"cpu": 2 * NANO, "nvidia.com/gpu": NANO}  # merged into the runtime's requests
    assert sets[0][2] == {"cpu": NANO}  # the initializer is not a node


def test_a_job_of_no_trainer_step_keeps_its_replicas_and_runs_parallelism_pods_each() -> None:
    """Kueue's TrainJob test: replicas 2, parallelism 4, completions 8 -> 8 pods (completions follow the
    parallelism Trainer sets)."""
    runtime = torch_runtime()
    runtime["spec"]["template"]["spec"]["replicatedJobs"] = [
        {**replicated_job("node-1", replicas=2), "template": {
            **replicated_job("node-1")["template"],
            "spec": {**replicated_job("node-1")["template"]["spec"], "parallelism": 4, "completions": 8},
        }},
    ]  # fmt: skip
    assert [(n, c) for n, c, _ in pod_sets(view(trainjob(), runtime))] == [("node-1", 8)]


def test_an_mpi_launcher_running_as_a_node_takes_one_of_the_nodes() -> None:
    runtime = torch_runtime()
    runtime["spec"]["mlPolicy"] = {"numNodes": 1, "mpi": {"runLauncherAsNode": True}}
    runtime["spec"]["template"]["spec"]["replicatedJobs"] = [
        replicated_job("launcher", ancestor="trainer"),
        replicated_job("node", parallelism=1),
    ]
    sets = pod_sets(view(trainjob(trainer={"numNodes": 4}), runtime))
    assert [(n, c) for n, c, _ in sets] == [("launcher", 1), ("node", 3)]


def test_other_managers_runtime_patches_are_merged_and_kueues_own_is_not() -> None:
    """A strategic merge: the container is matched by name, its requests merged; Kueue's patch holds the
    flavors, not what the TrainJob asks for."""
    user_patch = {
        "manager": "someone",
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{
            "name": "node",
            "template": {"spec": {"template": {"spec": {
                "containers": [{"name": "node", "resources": {"requests": {"memory": "1Gi"}}}],
            }}}},
        }]}}},
    }  # fmt: skip
    kueue_patch = {
        "manager": RUNTIME_PATCH_MANAGER,
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{
            "name": "node", "template": {"spec": {"template": {"spec": {"nodeSelector": {"pool": "gpu"}}}}},
        }]}}},
    }  # fmt: skip
    obj = view(trainjob(runtimePatches=[user_patch, kueue_patch]))
    assert pod_sets(obj)[1][2] == {"cpu": 2 * NANO, "memory": 1024**3 * NANO}
    workload = engine.workload_for(TRAINJOB, obj)
    node_template = workload["spec"]["podSets"][1]["template"]
    assert "nodeSelector" not in node_template["spec"]


def test_strategic_merge_replaces_lists_without_a_merge_key_and_removes_nulls() -> None:
    base = {"a": {"tolerations": [1, 2], "nodeSelector": {"x": "1", "y": "2"}}}
    merged = strategic_merge(base, {"a": {"tolerations": [3], "nodeSelector": {"y": None, "z": "3"}}})
    assert merged == {"a": {"tolerations": [3], "nodeSelector": {"x": "1", "z": "3"}}}


def test_the_workload_is_named_as_kueue_names_a_trainjobs_and_owned_by_it() -> None:
    workload = engine.workload_for(TRAINJOB, view(trainjob()))
    meta = workload["metadata"]
    assert meta["name"].startswith("trainjob-train-") and len(meta["name"]) == len("trainjob-train-") + 5
    assert meta["name"] == engine.workload_name(
        "train", "uid-1", kind="TrainJob", group="trainer.kubeflow.org"
    )
    assert meta["ownerReferences"][0]["kind"] == "TrainJob"
    assert [p["name"] for p in workload["spec"]["podSets"]] == ["dataset-initializer", "node"]


def test_a_namespaced_runtime_is_looked_up_in_the_trainjobs_namespace() -> None:
    obj = trainjob(
        runtimeRef={"name": "torch", "kind": "TrainingRuntime", "apiGroup": "trainer.kubeflow.org"}
    )
    elsewhere = torch_runtime(namespace="team-b", num_nodes=5)
    assert TRAINJOB.resolver is not None
    missing = TRAINJOB.resolver.resolve(obj, lookup_of(elsewhere, torch_runtime()))
    assert missing == f"TrainingRuntime 'team-a/torch' not found (spec.runtimeRef): {WAITS}"
    here = torch_runtime(namespace="team-a", num_nodes=3)
    assert pod_sets(view(obj, here))[1][:2] == ("node", 3)
    assert TRAINJOB.resolver.refers_to(obj, TRAINING_RUNTIMES, "torch", "team-a")
    assert not TRAINJOB.resolver.refers_to(obj, TRAINING_RUNTIMES, "torch", "team-b")
    assert not TRAINJOB.resolver.refers_to(obj, CLUSTER_TRAINING_RUNTIMES, "torch", "")


def test_a_missing_cluster_runtime_says_so_and_the_workload_stands_in_for_it() -> None:
    assert TRAINJOB.resolver is not None
    missing = TRAINJOB.resolver.resolve(trainjob(), lookup_of())
    assert missing == f"ClusterTrainingRuntime 'torch' not found (spec.runtimeRef): {WAITS}"
    workload = engine.workload_for(TRAINJOB, view(trainjob()))
    stand_in = TRAINJOB.resolver.from_workload(trainjob(), workload)
    assert [(n, c) for n, c, _ in pod_sets(stand_in)] == [("dataset-initializer", 1), ("node", 2)]


def test_flavors_go_into_kueues_runtime_patch_with_the_runtimes_tolerations_and_a_stop_empties_it() -> None:
    """Kueue's RunWithPodSetsInfo writes each pod set's nodeSelector and tolerations into its runtime patch
    (Trainer merges it strategically, so a patch's tolerations replace the runtime's: they are kept)."""
    raw = trainjob(runtimePatches=[{"manager": "someone"}])
    obj = view(raw)
    patch = engine.start_patch(TRAINJOB, obj, {"node": [gpu_flavor()]})
    started = json_patch(copy.deepcopy(raw), patch)
    assert started["spec"]["suspend"] is False
    kueue_patch = started["spec"]["runtimePatches"][1]
    assert kueue_patch["manager"] == RUNTIME_PATCH_MANAGER
    jobs = kueue_patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert jobs[0] == {"name": "dataset-initializer", "template": {"spec": {"template": {"spec": {}}}}}
    assert jobs[1]["template"]["spec"]["template"]["spec"] == {
        "nodeSelector": {"pool": "gpu"},
        "tolerations": [RUNTIME_TOLERATION, GPU_TOLERATION],
    }
    # the Workload's pod sets are unchanged by Kueue's own patch: the running TrainJob still matches
    assert pod_sets(view(started)) == pod_sets(obj)
    workload = engine.workload_for(TRAINJOB, obj)
    templates = [p["template"] for p in workload["spec"]["podSets"]]
    stop = engine.stop_patches(TRAINJOB, view(started), templates)
    assert len(stop) == 1
    stopped = json_patch(started, stop[0])
    assert stopped["spec"]["suspend"] is True
    assert stopped["spec"]["runtimePatches"][1] == {
        "manager": RUNTIME_PATCH_MANAGER,
        "trainingRuntimeSpec": {"template": {"spec": {}}},
    }
    # started again: the emptied patch is replaced in place, not added twice
    again = json_patch(stopped, engine.start_patch(TRAINJOB, view(stopped), {"node": [gpu_flavor()]}))
    assert [p["manager"] for p in again["spec"]["runtimePatches"]] == ["someone", RUNTIME_PATCH_MANAGER]


def test_finished_by_its_complete_or_failed_condition_active_and_ready_from_its_jobs_status() -> None:
    obj = view(trainjob())
    obj["status"] = {"jobsStatus": [{"name": "node", "active": 1, "ready": 0}]}
    assert engine.has_active_pods(TRAINJOB, obj)
    assert not engine.pods_ready(TRAINJOB, obj)
    obj["status"] = {
        "jobsStatus": [{"name": "dataset-initializer", "succeeded": 1}, {"name": "node", "ready": 1}]
    }
    assert engine.pods_ready(TRAINJOB, obj)  # one Job per replicated job, each ready or done
    assert not engine.finished(TRAINJOB, obj)[0]
    obj["status"]["conditions"] = [{"type": "Failed", "status": "True", "message": "node failed"}]
    assert engine.finished(TRAINJOB, obj) == (True, False, "node failed")
    obj["status"]["conditions"] = [{"type": "Complete", "status": "True", "message": "done"}]
    assert engine.finished(TRAINJOB, obj) == (True, True, "done")


def test_the_worker_copy_loses_kueues_runtime_patch_only() -> None:
    spec = {"runtimePatches": [{"manager": "someone"}, {"manager": RUNTIME_PATCH_MANAGER}]}
    without_kueue_patch(spec)
    assert spec == {"runtimePatches": [{"manager": "someone"}]}
    only_kueue: JSON = {"runtimePatches": [{"manager": RUNTIME_PATCH_MANAGER}]}
    without_kueue_patch(only_kueue)
    assert only_kueue == {}


def test_a_running_trainjobs_kueue_runtime_patch_is_the_controllers_alone_to_change() -> None:
    """Moving a running TrainJob's pods to other nodes than its flavor's would run them outside its quota;
    another manager's patch may still change (a new shape is stopped and queued again by the controller)."""
    old = json_patch(trainjob(), engine.start_patch(TRAINJOB, view(trainjob()), {"node": [gpu_flavor()]}))
    moved = copy.deepcopy(old)
    moved["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][1][
        "template"
    ]["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "cheap"}
    errors = [str(e) for e in KIND_RULES.admitted_changes(TRAINJOB, old, moved)]
    assert errors == [
        "spec.runtimePatches: Forbidden: the runtime patch of manager kueue.x-k8s.io/manager cannot be "
        "changed while the TrainJob is admitted: the queueing controller writes it from the assigned "
        "ResourceFlavors"
    ]
    dropped = copy.deepcopy(old)
    dropped["spec"]["runtimePatches"] = []
    assert len(KIND_RULES.admitted_changes(TRAINJOB, old, dropped)) == 1
    other = copy.deepcopy(old)
    other["spec"]["runtimePatches"].insert(0, {"manager": "someone"})
    assert KIND_RULES.admitted_changes(TRAINJOB, old, other) == []


def test_a_topology_request_on_the_runtimes_template_reaches_the_workloads_pod_set() -> None:
    """The runtime's JobSet template carries TAS annotations as a JobSet's would (Kueue's TrainJob reads its
    pod sets from that JobSet, so the pods' completion index ranks them)."""
    runtime = torch_runtime()
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]
    node["metadata"] = {"annotations": {"kueue.x-k8s.io/podset-required-topology": "cloud.provider.com/rack"}}
    workload = engine.workload_for(TRAINJOB, view(trainjob(), runtime))
    initializer, trainer = workload["spec"]["podSets"]
    assert "topologyRequest" not in initializer
    assert trainer["topologyRequest"] == {
        "required": "cloud.provider.com/rack",
        "podIndexLabel": "batch.kubernetes.io/job-completion-index",
    }


def test_a_pod_set_placed_by_topology_gets_kueues_marks_and_gate_through_the_runtime_patch() -> None:
    """Kueue's RunWithPodSetsInfo puts a topology assignment's pod set label, Workload annotation and
    scheduling gate into its runtime patch, with a MultiKueue worker's pod label; the stop takes them back."""
    obj = view(trainjob())
    start = TopologyStart(workload="trainjob-train-abcde", pod_set="node")
    patch = engine.start_patch(
        TRAINJOB,
        obj,
        {"node": [gpu_flavor()]},
        topology={"node": start},
        marks=admitted_pod_marks(
            {
                "metadata": {
                    "name": "trainjob-train-abcde",
                    "labels": {"kueue.x-k8s.io/multikueue-origin": "m"},
                },
                "spec": {"queueName": "q"},
                "status": {"admission": {"clusterQueue": "cq"}},
            }
        ),
    )
    started = json_patch(trainjob(), patch)
    jobs = started["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    marks = {
        "kueue.x-k8s.io/local-queue-name": "q",
        "kueue.x-k8s.io/cluster-queue-name": "cq",
        "kueue.x-k8s.io/multikueue-worker-workload-pod": "true",
    }
    workload = {"kueue.x-k8s.io/workload": "trainjob-train-abcde"}
    assert jobs[0]["template"]["spec"]["template"] == {
        "metadata": {"labels": {**marks, "kueue.x-k8s.io/podset": jobs[0]["name"]}, "annotations": workload},
        "spec": {},
    }
    node = jobs[1]["template"]["spec"]["template"]
    assert node["metadata"] == {"labels": {**marks, "kueue.x-k8s.io/podset": "node"}, "annotations": workload}
    assert node["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/topology"}]
    stopped = json_patch(started, engine.stop_patches(TRAINJOB, view(started), [])[0])
    assert stopped["spec"]["runtimePatches"][0]["trainingRuntimeSpec"] == {"template": {"spec": {}}}


def test_a_runtime_of_another_group_or_kind_is_named_as_unsupported() -> None:
    assert TRAINJOB.resolver is not None
    other = trainjob(runtimeRef={"name": "torch", "apiGroup": "example.com", "kind": "Runtime"})
    assert TRAINJOB.resolver.resolve(other, lookup_of(torch_runtime())) == (
        "spec.runtimeRef: unsupported runtime example.com/Runtime: only TrainingRuntime and "
        "ClusterTrainingRuntime of trainer.kubeflow.org"
    )
