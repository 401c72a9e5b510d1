"""XGBoostJob, PaddleJob, JAXJob, RayService, SparkApplication and AppWrapper as Kueue's
pkg/controller/jobs/<kind> reads them: pod set names, order and counts, where the suspend field and the
flavor go, and when each is finished, active and ready."""

from __future__ import annotations

from typing import Any

from kueue_webhook.admission.kind_rules import KIND_RULES
from kueue_webhook.api.integrations import BUILTIN, engine
from kueue_webhook.api.integrations.appwrapper import parse_template_path
from kueue_webhook.api.integrations.spark import java_memory
from kueue_webhook.api.objects import ResourceFlavor, parse_resource_flavor

JSON = dict[str, Any]
XGBOOST, PADDLE, JAX, RAYSERVICE, SPARK, APPWRAPPER = (
    BUILTIN[n]
    for n in (
        "kubeflow.org/xgboostjob",
        "kubeflow.org/paddlejob",
        "kubeflow.org/jaxjob",
        "ray.io/rayservice",
        "sparkoperator.k8s.io/sparkapplication",
        "workload.codeflare.dev/appwrapper",
    )
)
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def gpu_flavor() -> ResourceFlavor:
    parsed = parse_resource_flavor(
        {
            "metadata": {"name": "gpu"},
            "spec": {"nodeLabels": {"pool": "gpu"}, "tolerations": [GPU_TOLERATION]},
        }
    )
    assert isinstance(parsed, ResourceFlavor)
    return parsed


def pod(gpus: int = 1) -> JSON:
    return {"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}


def counts(integration: Any, obj: JSON) -> list[tuple[str, int]]:
    sets = engine.pod_sets(integration, obj)
    assert isinstance(sets, tuple), sets
    return [(s.name, s.count) for s in sets]


# -- Kubeflow --------------------------------------------------------------------------------------------


def test_xgboost_and_paddle_jobs_queue_master_before_workers_whatever_order_they_are_written_in() -> None:
    """Kueue's OrderedReplicaTypes for both: Master, Worker."""
    xgb = {
        "spec": {
            "xgbReplicaSpecs": {"Worker": {"replicas": 3, "template": pod()}, "Master": {"template": pod()}}
        }
    }
    assert counts(XGBOOST, xgb) == [("master", 1), ("worker", 3)]
    paddle = {
        "spec": {
            "paddleReplicaSpecs": {
                "Worker": {"replicas": 2, "template": pod()},
                "Master": {"template": pod()},
            }
        }
    }
    assert counts(PADDLE, paddle) == [("master", 1), ("worker", 2)]


def test_a_jaxjob_has_workers_only_and_a_replica_type_jax_does_not_know_asks_no_quota() -> None:
    jax = {
        "spec": {
            "jaxReplicaSpecs": {"Worker": {"replicas": 4, "template": pod()}, "Master": {"template": pod(8)}}
        }
    }
    assert counts(JAX, jax) == [("worker", 4)]


def test_the_new_kubeflow_jobs_suspend_through_run_policy_and_take_their_priority_class_from_it() -> None:
    job: JSON = {
        "spec": {
            "runPolicy": {"schedulingPolicy": {"priorityClass": "high"}},
            "jaxReplicaSpecs": {"Worker": {"template": pod()}},
        }
    }
    assert engine.suspend_ops(JAX, job) == [{"op": "add", "path": "/spec/runPolicy/suspend", "value": True}]
    assert engine.priority(JAX, job, engine.PriorityClasses(pod={"high": 7})) == (
        7,
        "high",
        "scheduling.k8s.io",
    )


# -- RayService -----------------------------------------------------------------------------------------


def rayservice(**cluster: Any) -> JSON:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "serve", "namespace": "ns", "uid": "u-1"},
        "spec": {
            "rayClusterConfig": {
                "headGroupSpec": {"template": pod(0)},
                "workerGroupSpecs": [{"groupName": "GPU", "replicas": 2, "numOfHosts": 2, "template": pod()}],
                **cluster,
            }
        },
    }


def test_a_rayservice_is_queued_for_its_ray_cluster_and_suspended_through_it() -> None:
    """Kueue's RayService: raycluster.BuildPodSets of spec.rayClusterConfig, suspend in that spec."""
    service = rayservice()
    assert counts(RAYSERVICE, service) == [("head", 1), ("gpu", 4)]
    assert engine.suspend_ops(RAYSERVICE, service) == [
        {"op": "add", "path": "/spec/rayClusterConfig/suspend", "value": True}
    ]
    suspended = rayservice(suspend=True)
    assert engine.is_suspended(RAYSERVICE, suspended)
    patch = engine.start_patch(RAYSERVICE, suspended, {"head": [gpu_flavor()], "gpu": [gpu_flavor()]})
    assert patch[:2] == [
        {"op": "test", "path": "/spec/rayClusterConfig/suspend", "value": True},
        {"op": "replace", "path": "/spec/rayClusterConfig/suspend", "value": False},
    ]
    assert {
        "op": "add",
        "path": "/spec/rayClusterConfig/workerGroupSpecs/0/template/spec/nodeSelector",
        "value": {"pool": "gpu"},
    } in patch


def test_a_rayservice_never_finishes_and_runs_and_is_ready_while_its_ready_condition_holds() -> None:
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    not_ready = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    assert engine.finished(RAYSERVICE, ready)[0] is False
    assert engine.has_active_pods(RAYSERVICE, ready) and engine.pods_ready(RAYSERVICE, ready)
    assert not engine.has_active_pods(RAYSERVICE, not_ready) and not engine.pods_ready(RAYSERVICE, not_ready)


# -- SparkApplication -----------------------------------------------------------------------------------


def spark(**spec: Any) -> JSON:
    return {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": {
            "name": "pi",
            "namespace": "ns",
            "uid": "u-2",
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
        },
        "spec": {
            "mode": "cluster",
            "driver": {"coreRequest": "500m", "memory": "512m", "labels": {"team": "a"}},
            "executor": {
                "instances": 3,
                "coreRequest": "1",
                "coreLimit": "2",
                "memory": "2g",
                "gpu": {"name": "nvidia.com/gpu", "quantity": 1},
                "priorityClassName": "batch",
            },
            **spec,
        },
    }


def test_spark_pod_sets_are_the_driver_and_its_executors_built_from_the_roles_fields() -> None:
    """Kueue's SparkApplication.PodSets: driver of 1, executor of instances, each pod made from the role's
    coreRequest, coreLimit, memory (a JVM size, 512m = 512Mi) and gpu as the Spark operator makes it."""
    sets = engine.pod_sets(SPARK, spark())
    assert isinstance(sets, tuple)
    driver, executor = sets
    assert (driver.name, driver.count, executor.name, executor.count) == ("driver", 1, "executor", 3)
    assert driver.requests == {"cpu": 500_000_000, "memory": 512 * 2**20 * 10**9}
    assert executor.requests == {"cpu": 10**9, "memory": 2 * 2**30 * 10**9, "nvidia.com/gpu": 10**9}
    workload = engine.workload_for(SPARK, spark(), engine.PriorityClasses(pod={"batch": 5}))
    first = workload["spec"]["podSets"][0]["template"]
    assert first["metadata"] == {"labels": {"team": "a"}}
    assert first["spec"]["containers"][0]["name"] == "spark-kubernetes-driver"
    # Kueue's ExtractPriority: the first pod template naming a class (the executor's here)
    assert (workload["spec"]["priority"], workload["spec"]["priorityClassRef"]["name"]) == (5, "batch")


def test_a_spark_executor_without_instances_asks_for_no_executor_pods() -> None:
    app = spark()
    del app["spec"]["executor"]["instances"]
    assert counts(SPARK, app) == [("driver", 1), ("executor", 0)]


def test_spark_sidecars_and_init_containers_count_towards_the_quota() -> None:
    app = spark()
    app["spec"]["driver"]["sidecars"] = [
        {"name": "log", "image": "fluent", "resources": {"requests": {"cpu": "250m"}}}
    ]
    app["spec"]["driver"]["initContainers"] = [
        {"name": "fetch", "image": "curl", "resources": {"requests": {"cpu": "2"}}}
    ]
    sets = engine.pod_sets(SPARK, app)
    assert isinstance(sets, tuple)
    assert sets[0].requests["cpu"] == 2 * 10**9  # the init container's peak over 500m + 250m


def test_jvm_memory_sizes_become_kubernetes_quantities() -> None:
    assert [java_memory(m) for m in ("512m", "2g", "1024k", "3gb", "1Gi", "1000")] == [
        "512Mi",
        "2Gi",
        "1024Ki",
        "3Gi",
        "1Gi",
        "1000",
    ]


def test_spark_flavor_goes_into_each_roles_own_node_selector_and_tolerations_and_is_taken_back() -> None:
    """Kueue's RunWithPodSetsInfo / RestorePodSetsInfo write the role's nodeSelector and tolerations; the
    object-wide nodeSelector is kept (Spark lets a role's selector override it key by key)."""
    app = spark(suspend=True, nodeSelector={"zone": "a"})
    app["spec"]["executor"]["tolerations"] = [{"key": "spot", "operator": "Exists"}]
    patch = engine.start_patch(SPARK, app, {"driver": [gpu_flavor()], "executor": [gpu_flavor()]})
    assert patch == [
        {"op": "test", "path": "/spec/suspend", "value": True},
        {"op": "replace", "path": "/spec/suspend", "value": False},
        {"op": "add", "path": "/spec/driver/nodeSelector", "value": {"pool": "gpu"}},
        {"op": "add", "path": "/spec/driver/tolerations", "value": [GPU_TOLERATION]},
        {"op": "add", "path": "/spec/executor/nodeSelector", "value": {"pool": "gpu"}},
        {
            "op": "add",
            "path": "/spec/executor/tolerations",
            "value": [{"key": "spot", "operator": "Exists"}, GPU_TOLERATION],
        },
    ]
    running = spark(suspend=False, nodeSelector={"zone": "a"})
    for role in ("driver", "executor"):
        running["spec"][role]["nodeSelector"] = {"pool": "gpu"}
        running["spec"][role]["tolerations"] = [GPU_TOLERATION]
    originals = [p["template"] for p in engine.workload_for(SPARK, app)["spec"]["podSets"]]
    (stop,) = engine.stop_patches(SPARK, running, originals)
    assert stop == [
        {"op": "replace", "path": "/spec/suspend", "value": True},
        {"op": "remove", "path": "/spec/driver/nodeSelector"},
        {"op": "remove", "path": "/spec/driver/tolerations"},
        {"op": "remove", "path": "/spec/executor/nodeSelector"},
        {"op": "add", "path": "/spec/executor/tolerations", "value": [{"key": "spot", "operator": "Exists"}]},
    ]


def test_spark_is_finished_by_its_application_state_and_ready_once_its_executors_run() -> None:
    """Kueue's SparkApplication Finished, IsActive and PodsReady."""

    def with_status(state: str, executors: dict[str, str] | None = None) -> JSON:
        app = spark()
        app["status"] = {"applicationState": {"state": state, "errorMessage": "oops"}}
        if executors is not None:
            app["status"]["executorState"] = executors
        return app

    assert engine.finished(SPARK, with_status("COMPLETED"))[:2] == (True, True)
    assert engine.finished(SPARK, with_status("FAILED")) == (True, False, "oops")
    assert engine.finished(SPARK, with_status("SUBMISSION_FAILED"))[:2] == (True, False)
    assert engine.finished(SPARK, with_status("RUNNING"))[0] is False
    assert engine.has_active_pods(SPARK, with_status("RUNNING"))
    assert not engine.has_active_pods(SPARK, with_status("SUBMITTED"))
    two = {"e-1": "RUNNING", "e-2": "COMPLETED", "e-3": "PENDING"}
    assert not engine.pods_ready(SPARK, with_status("RUNNING", two))
    assert engine.pods_ready(SPARK, with_status("RUNNING", {**two, "e-3": "RUNNING"}))
    assert not engine.pods_ready(SPARK, with_status("SUBMITTED", {**two, "e-3": "RUNNING"}))


def test_a_queued_spark_application_must_run_in_cluster_mode_without_dynamic_allocation() -> None:
    """Kueue's SparkApplication webhook: only cluster mode; dynamic allocation would let executors come and
    go outside the admitted quota."""
    bad = spark(mode="client", dynamicAllocation={"enabled": True})
    errors = [str(e) for e in KIND_RULES.value_errors(SPARK, bad, None)]
    assert [e.split(":")[0] for e in errors] == ["spec.mode", "spec.dynamicAllocation.enabled"]
    assert KIND_RULES.value_errors(SPARK, spark(), None) == []
    conf = spark(sparkConf={"spark.executor.instances": "40", "spark.dynamicAllocation.enabled": "true"})
    assert [str(e).split(":")[0] for e in KIND_RULES.value_errors(SPARK, conf, None)] == [
        "spec.sparkConf[spark.executor.instances]",
        "spec.sparkConf[spark.dynamicAllocation.enabled]",
    ]  # stricter than Kueue: the same escapes through the Spark configuration
    unqueued = spark(mode="client")
    del unqueued["metadata"]["labels"]
    assert KIND_RULES.value_errors(SPARK, unqueued, None) == []


def test_a_running_spark_applications_resources_and_flavor_cannot_be_changed() -> None:
    old = spark(suspend=False)
    new = spark(suspend=False)
    new["spec"]["executor"]["memory"] = "4g"
    new["spec"]["driver"]["nodeSelector"] = {"pool": "cpu"}
    errors = [str(e).split(":")[0] for e in KIND_RULES.admitted_changes(SPARK, old, new)]
    assert errors == ["spec.driver.nodeSelector", "spec.executor"]


# -- AppWrapper -----------------------------------------------------------------------------------------


def wrapper(*components: JSON, **status: Any) -> JSON:
    obj: JSON = {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": {"name": "Wrap", "namespace": "ns", "uid": "u-3"},
        "spec": {"components": list(components)},
    }
    if status:
        obj["status"] = status
    return obj


def wrapped(api_version: str, kind: str, spec: JSON) -> JSON:
    return {"template": {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, "spec": spec}}


JOBSET_COMPONENT = wrapped(
    "jobset.x-k8s.io/v1alpha2",
    "JobSet",
    {
        "replicatedJobs": [
            {"name": "a", "template": {"spec": {"template": pod()}}},
            {
                "name": "b",
                "replicas": 3,
                "template": {"spec": {"parallelism": 4, "completions": 2, "template": pod()}},
            },
        ]
    },
)
RAY_COMPONENT = wrapped(
    "ray.io/v1",
    "RayCluster",
    {"headGroupSpec": {"template": pod(0)}, "workerGroupSpecs": [{"replicas": 5, "template": pod()}]},
)


def test_appwrapper_paths_are_read_from_the_component_with_indices() -> None:
    assert parse_template_path("template.spec.replicatedJobs[1].template") == (
        "template",
        "spec",
        "replicatedJobs",
        1,
        "template",
    )
    assert parse_template_path("spec.template") is None  # must start at the wrapped template
    assert parse_template_path("template.spec[x]") is None


def test_appwrapper_pod_sets_are_its_components_pod_sets_in_order_named_after_it() -> None:
    """Kueue's AppWrapper.PodSets over the AppWrapper project's InferPodSets: a JobSet's replicated jobs
    (replicas x min(parallelism, completions)), a RayCluster's head and worker groups; named <name>-<i>."""
    assert counts(APPWRAPPER, wrapper(JOBSET_COMPONENT, RAY_COMPONENT)) == [
        ("wrap-0", 1),
        ("wrap-1", 6),
        ("wrap-2", 1),
        ("wrap-3", 5),
    ]


def test_appwrapper_declared_pod_sets_win_over_inference_and_recorded_ones_over_both() -> None:
    declared = {
        **RAY_COMPONENT,
        "podSets": [{"path": "template.spec.workerGroupSpecs[0].template", "replicas": 2}],
    }
    assert counts(APPWRAPPER, wrapper(declared)) == [("wrap-0", 2)]
    recorded = {"componentStatus": [{"podSets": [{"path": "template.spec.headGroupSpec.template"}]}]}
    assert counts(APPWRAPPER, wrapper(declared, **recorded)) == [("wrap-0", 1)]


def test_an_appwrapper_of_a_kind_nobody_infers_and_declares_nothing_has_no_pod_set() -> None:
    unknown = wrapped("example.com/v1", "Thing", {"template": pod()})
    errors = engine.pod_sets(APPWRAPPER, wrapper(unknown))
    assert isinstance(errors, list)  # nothing to queue it for: its Workload cannot be built
    assert [str(e) for e in errors] == ["spec.components: Required value: no pod set found"]


def test_the_appwrapper_workload_holds_the_scheduling_part_of_each_wrapped_template() -> None:
    component = wrapped(
        "batch/v1",
        "Job",
        {
            "template": {
                "metadata": {"labels": {"app": "x"}, "name": "ignored"},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "i",
                            "env": [{"name": "A"}],
                            "resources": {"limits": {"nvidia.com/gpu": "1"}},
                        }
                    ],
                    "volumes": [{"name": "v"}],
                    "tolerations": [{"key": "k", "operator": "Exists"}],
                },
            }
        },
    )
    [pod_set] = engine.workload_for(APPWRAPPER, wrapper(component))["spec"]["podSets"]
    assert pod_set["template"] == {
        "metadata": {"labels": {"app": "x"}},
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
            "tolerations": [{"key": "k", "operator": "Exists"}],
        },
    }


def test_appwrapper_flavors_go_to_its_controller_in_pod_set_infos_and_a_stop_clears_them() -> None:
    """Kueue's RunWithPodSetsInfo (SetPodSetInfos: one entry per pod set of each component) and
    RestorePodSetsInfo (ClearPodSetInfos); the wrapped templates are never written."""
    obj = wrapper(JOBSET_COMPONENT, RAY_COMPONENT)
    obj["spec"]["suspend"] = True
    flavor = gpu_flavor()
    patch = engine.start_patch(APPWRAPPER, obj, {f"wrap-{i}": [flavor] for i in range(4)})
    info = {"nodeSelector": {"pool": "gpu"}, "tolerations": [GPU_TOLERATION]}
    assert patch == [
        {"op": "test", "path": "/spec/suspend", "value": True},
        {"op": "replace", "path": "/spec/suspend", "value": False},
        {"op": "add", "path": "/spec/components/0/podSetInfos", "value": [info, info]},
        {"op": "add", "path": "/spec/components/1/podSetInfos", "value": [info, info]},
    ]
    running = wrapper(JOBSET_COMPONENT, RAY_COMPONENT)
    running["spec"]["suspend"] = False
    running["spec"]["components"][1] = {**RAY_COMPONENT, "podSetInfos": [info, info]}
    originals = [p["template"] for p in engine.workload_for(APPWRAPPER, obj)["spec"]["podSets"]]
    assert engine.stop_patches(APPWRAPPER, running, originals) == [
        [
            {"op": "replace", "path": "/spec/suspend", "value": True},
            {"op": "remove", "path": "/spec/components/1/podSetInfos"},
        ]
    ]


def test_a_failed_appwrapper_finishes_only_once_its_resources_are_gone() -> None:
    deployed = [{"type": "ResourcesDeployed", "status": "True"}]
    assert engine.finished(APPWRAPPER, {"status": {"phase": "Succeeded"}}) == (
        True,
        True,
        "AppWrapper finished successfully",
    )
    assert engine.finished(APPWRAPPER, {"status": {"phase": "Failed", "conditions": deployed}})[0] is False
    assert engine.finished(APPWRAPPER, {"status": {"phase": "Failed"}}) == (True, False, "AppWrapper failed")
    reserved = {"status": {"conditions": [{"type": "QuotaReserved", "status": "True"}]}}
    assert engine.has_active_pods(APPWRAPPER, reserved) and not engine.has_active_pods(APPWRAPPER, {})
    ready = {"status": {"conditions": [{"type": "PodsReady", "status": "True"}]}}
    assert engine.pods_ready(APPWRAPPER, ready) and not engine.pods_ready(APPWRAPPER, reserved)


# -- the Ray webhooks' rules ----------------------------------------------------------------------------

RAYJOB, RAYCLUSTER = BUILTIN["ray.io/rayjob"], BUILTIN["ray.io/raycluster"]
QUEUED = {"kueue.x-k8s.io/queue-name": "q"}


def paths_of(errors: list[Any]) -> list[str]:
    return [str(e).split(":")[0] for e in errors]


def test_a_queued_ray_cluster_may_not_autoscale_nor_name_a_worker_group_head() -> None:
    """Kueue's raycluster.ValidateCreate, for a RayCluster, a RayService's and a RayJob's cluster: the
    autoscaler would grow it beyond its admitted quota; "head" is the head's pod set."""
    cluster = {
        "enableInTreeAutoscaling": True,
        "headGroupSpec": {"template": pod()},
        "workerGroupSpecs": [{"groupName": "head", "template": pod()}],
    }
    as_cluster = {"metadata": {"labels": QUEUED}, "spec": cluster}
    assert paths_of(KIND_RULES.value_errors(RAYCLUSTER, as_cluster, None)) == [
        "spec.enableInTreeAutoscaling",
        "spec.workerGroupSpecs[0].groupName",
    ]
    as_service = {"metadata": {"labels": QUEUED}, "spec": {"rayClusterConfig": cluster}}
    assert paths_of(KIND_RULES.value_errors(RAYSERVICE, as_service, None)) == [
        "spec.rayClusterConfig.enableInTreeAutoscaling",
        "spec.rayClusterConfig.workerGroupSpecs[0].groupName",
    ]
    many = {"workerGroupSpecs": [{"groupName": f"g{i}", "template": pod()} for i in range(18)]}
    errors = KIND_RULES.value_errors(RAYCLUSTER, {"metadata": {"labels": QUEUED}, "spec": many}, None)
    assert [str(e) for e in errors] == ["spec.workerGroupSpecs: Too many: 19: must have at most 18 items"]
    assert KIND_RULES.value_errors(RAYCLUSTER, {"spec": cluster}, None) == []  # not queued: not checked


def test_a_queued_rayjob_brings_its_own_cluster_and_frees_it_when_done() -> None:
    """Kueue's RayJob webhook: shutdownAfterJobFinishes, its own cluster, not also an existing one."""
    cluster = {"headGroupSpec": {"template": pod()}}
    job: JSON = {"metadata": {"labels": QUEUED}, "spec": {"rayClusterSpec": cluster}}
    assert paths_of(KIND_RULES.value_errors(RAYJOB, job, None)) == ["spec.shutdownAfterJobFinishes"]
    job["spec"]["shutdownAfterJobFinishes"] = True
    assert KIND_RULES.value_errors(RAYJOB, job, None) == []
    job["spec"]["clusterSelector"] = {"ray.io/cluster": "shared"}
    assert paths_of(KIND_RULES.value_errors(RAYJOB, job, None)) == ["spec.clusterSelector"]
    del job["spec"]["rayClusterSpec"]
    assert KIND_RULES.value_errors(RAYJOB, job, None) == []  # on an existing cluster: not queued
    del job["spec"]["clusterSelector"]
    assert paths_of(KIND_RULES.value_errors(RAYJOB, job, None)) == ["spec.rayClusterSpec"]
