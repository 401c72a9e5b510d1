"""The generic integration engine on the built-in kinds: pod sets, Workload names, suspend/start/stop patches,
finished and active, as Kueue's pkg/controller/jobs/* compute them."""

from __future__ import annotations

from typing import Any

from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration, parse_configuration
from kueue_webhook.api.integrations import BUILTIN, JOB, engine
from kueue_webhook.api.integrations.managed import ON_ITS_OWN, ancestry_of, is_managed
from kueue_webhook.api.objects import PodSet, ResourceFlavor, parse_resource_flavor

JSON = dict[str, Any]
QUEUE = "kueue.x-k8s.io/queue-name"
JOBSET, PYTORCHJOB, RAYJOB, RAYCLUSTER = (
    BUILTIN[n]
    for n in ("jobset.x-k8s.io/jobset", "kubeflow.org/pytorchjob", "ray.io/rayjob", "ray.io/raycluster")
)


def flavor(name: str, pool: str) -> ResourceFlavor:
    parsed = parse_resource_flavor({"metadata": {"name": name}, "spec": {"nodeLabels": {"pool": pool}}})
    assert isinstance(parsed, ResourceFlavor)
    return parsed


def pod(gpus: int) -> JSON:
    return {"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}


def jobset() -> JSON:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": "train",
            "namespace": "ns",
            "uid": "u-1",
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
        },
        "spec": {
            "replicatedJobs": [
                {"name": "Driver", "replicas": 1, "template": {"spec": {"template": pod(1)}}},
                {
                    "name": "workers",
                    "replicas": 3,
                    "template": {"spec": {"parallelism": 4, "completions": 2, "template": pod(2)}},
                },
            ]
        },
    }


def test_jobset_pod_sets_are_its_replicated_jobs_of_replicas_times_pods_per_job() -> None:
    sets = engine.pod_sets(JOBSET, jobset())
    assert isinstance(sets, tuple)
    # podsCount: replicas x min(parallelism, completions); names lowercased (NewPodSetReference)
    assert [(s.name, s.count) for s in sets] == [("driver", 1), ("workers", 6)]


def test_workload_names_follow_kueue_for_every_kind() -> None:
    # GetWorkloadNameForOwnerWithGVK: "<kind>-<name>-" and 5 hex of sha1(kind, group, name, uid)
    workload = engine.workload_for(JOBSET, jobset())
    assert workload["metadata"]["name"] == engine.workload_name(
        "train", "u-1", kind="JobSet", group="jobset.x-k8s.io"
    )
    assert workload["metadata"]["name"].startswith("jobset-train-")
    assert workload["metadata"]["ownerReferences"][0]["kind"] == "JobSet"
    assert [p["name"] for p in workload["spec"]["podSets"]] == ["driver", "workers"]


def test_a_kubeflow_job_without_run_policy_is_suspended_by_creating_it() -> None:
    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {}}}
    assert engine.suspend_ops(PYTORCHJOB, job) == [
        {"op": "add", "path": "/spec/runPolicy", "value": {"suspend": True}}
    ]
    job["spec"]["runPolicy"] = {"suspend": False}
    assert engine.suspend_ops(PYTORCHJOB, job) == [
        {"op": "replace", "path": "/spec/runPolicy/suspend", "value": True}
    ]


def test_kubeflow_pod_sets_follow_kueues_replica_type_order() -> None:
    job = {
        "spec": {
            "pytorchReplicaSpecs": {
                "Worker": {"replicas": 3, "template": pod(1)},
                "Master": {"template": pod(1)},
            }
        }
    }
    sets = engine.pod_sets(PYTORCHJOB, job)
    assert isinstance(sets, tuple) and [(s.name, s.count) for s in sets] == [("master", 1), ("worker", 3)]


def test_start_injects_each_pod_sets_own_flavor_and_stop_restores_it() -> None:
    obj = jobset()
    obj["spec"]["suspend"] = True
    a, b = flavor("a", "a"), flavor("b", "b")
    patch = engine.start_patch(JOBSET, obj, {"driver": [a], "workers": [b]})
    assert patch[:2] == [
        {"op": "test", "path": "/spec/suspend", "value": True},
        {"op": "replace", "path": "/spec/suspend", "value": False},
    ]
    assert patch[2:] == [
        {
            "op": "add",
            "path": "/spec/replicatedJobs/0/template/spec/template/spec/nodeSelector",
            "value": {"pool": "a"},
        },
        {
            "op": "add",
            "path": "/spec/replicatedJobs/1/template/spec/template/spec/nodeSelector",
            "value": {"pool": "b"},
        },
    ]
    started = jobset()
    started["spec"]["suspend"] = False
    for item, pool in zip(started["spec"]["replicatedJobs"], ("a", "b"), strict=True):
        item["template"]["spec"]["template"]["spec"]["nodeSelector"] = {"pool": pool}
    (stop,) = engine.stop_patches(JOBSET, started, [pod(1), pod(2)])
    assert stop == [
        {"op": "replace", "path": "/spec/suspend", "value": True},
        {"op": "remove", "path": "/spec/replicatedJobs/0/template/spec/template/spec/nodeSelector"},
        {"op": "remove", "path": "/spec/replicatedJobs/1/template/spec/template/spec/nodeSelector"},
    ]


def running_job(node_selector: dict[str, str] | None) -> JSON:
    spec: JSON = {"containers": [{"name": "c", "image": "busybox"}]}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    return {
        "metadata": {"name": "train", "namespace": "ns", "annotations": {}},
        "spec": {"suspend": False, "parallelism": 1, "template": {"spec": spec}},
        "status": {"startTime": "2026-11-24T00:00:00Z", "active": 1},
    }


def test_a_running_jobs_template_is_restored_only_after_a_first_patch_suspends_it() -> None:
    """kube-apiserver (pkg/registry/batch/job/strategy.go) lets a Job's nodeSelector change only while the
    stored Job is suspended and never started, so the stop is staged as Kueue's Job.Stop stages it."""
    job = running_job({"pool": "a"})
    suspend, restore = engine.stop_patches(JOB, job, [{"spec": {"containers": []}}])
    assert suspend == [
        {"op": "replace", "path": "/spec/suspend", "value": True},
        {"op": "add", "path": "/metadata/annotations/kueue.x-k8s.io~1stopping", "value": "true"},
    ]
    assert {"op": "remove", "path": "/spec/template/spec/nodeSelector"} in restore
    assert restore[-1] == {"op": "remove", "path": "/metadata/annotations/kueue.x-k8s.io~1stopping"}
    assert engine.start_time_blocks_restore(JOB, job)
    job["status"].pop("startTime")
    assert not engine.start_time_blocks_restore(JOB, job)


def test_a_running_job_with_nothing_to_restore_is_stopped_in_one_patch() -> None:
    (stop,) = engine.stop_patches(JOB, running_job(None), [{"spec": {"containers": []}}])
    assert stop == [{"op": "replace", "path": "/spec/suspend", "value": True}]


def test_rayjob_counts_head_workers_times_hosts_and_kuberays_default_submitter() -> None:
    rayjob = {
        "spec": {
            "rayClusterSpec": {
                "headGroupSpec": {"template": pod(0)},
                "workerGroupSpecs": [
                    {"groupName": "GPU", "replicas": 2, "numOfHosts": 2, "template": pod(1)}
                ],
            }
        }
    }
    sets = engine.pod_sets(RAYJOB, rayjob)
    assert isinstance(sets, tuple)
    assert [(s.name, s.count) for s in sets] == [("head", 1), ("gpu", 4), ("submitter", 1)]
    submitter: PodSet = sets[2]
    assert submitter.requests["cpu"] == 500_000_000  # KubeRay's default submitter requests 500m
    rayjob["spec"]["submissionMode"] = "HTTPMode"
    assert [s.name for s in engine.pod_sets(RAYJOB, rayjob)] == ["head", "gpu"]  # type: ignore[union-attr]


def test_finished_and_active_per_kind() -> None:
    done = {"status": {"conditions": [{"type": "Completed", "status": "True", "message": "ok"}]}}
    assert engine.finished(JOBSET, done) == (True, True, "ok")
    ray = {"status": {"jobDeploymentStatus": "Complete", "jobStatus": "FAILED", "message": "boom"}}
    assert engine.finished(RAYJOB, ray) == (True, False, "boom")
    assert engine.finished(RAYCLUSTER, {"status": {"state": "failed"}})[0] is False  # never finishes
    assert engine.has_active_pods(
        JOBSET, {"status": {"replicatedJobsStatus": [{"active": 0}, {"active": 2}]}}
    )
    assert not engine.has_active_pods(RAYJOB, {"status": {"jobDeploymentStatus": "Suspended"}})
    assert not engine.has_active_pods(RAYJOB, {})


def test_off_integrations_are_left_alone_and_children_of_real_queued_kinds_are_not_queued() -> None:
    config = parse_configuration("integrations: {frameworks: [batch/job, jobset.x-k8s.io/jobset]}")
    assert isinstance(config, Configuration)
    assert config.integrations.for_kind("jobset.x-k8s.io", "JobSet") is JOBSET
    assert config.integrations.for_kind("ray.io", "RayJob") is None
    assert Configuration().integrations.names() == ("batch/job",)  # Kueue's default
    view = StaticClusterView()
    view.add_owner(
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "x", "namespace": "ns", "uid": "u", "labels": {QUEUE: "q"}},
        }
    )
    view.add_owner(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "metadata": {"name": "x", "namespace": "ns", "uid": "u", "labels": {QUEUE: "q"}},
        }
    )
    child = {
        "metadata": {
            "namespace": "ns",
            "labels": {QUEUE: "q"},
            "ownerReferences": [
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": "x",
                    "uid": "u",
                    "controller": True,
                }
            ],
        }
    }
    ancestry = ancestry_of(child, JOB, config=config, lookup=view)
    assert ancestry.through_owner and not is_managed(child, JOB, ancestry=ancestry, config=config)
    cluster = {
        "metadata": {
            "namespace": "ns",
            "labels": {QUEUE: "q"},
            "ownerReferences": [
                {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "x", "uid": "u", "controller": True}
            ],
        }
    }
    # RayJob is off here: its RayCluster is queued on its own, as in Kueue (the RayJob is no queued owner)
    ray_config = parse_configuration("integrations: {frameworks: [ray.io/rayjob, ray.io/raycluster]}")
    assert isinstance(ray_config, Configuration)
    ancestry = ancestry_of(cluster, RAYCLUSTER, config=ray_config, lookup=view)
    assert not is_managed(cluster, RAYCLUSTER, ancestry=ancestry, config=ray_config)
    assert is_managed(
        cluster, RAYCLUSTER, ancestry=ancestry_of(cluster, RAYCLUSTER, config=config, lookup=view)
    )
    assert not is_managed(
        {"metadata": {"labels": {QUEUE: "q"}}, "spec": {"clusterSelector": {"a": "b"}}},
        RAYJOB,
        ancestry=ON_ITS_OWN,
    )


def test_unknown_frameworks_are_refused_and_the_trainjob_framework_is_served() -> None:
    refused = parse_configuration("integrations: {frameworks: [batch/job, example.com/nope]}")
    assert str(refused).startswith("integrations.frameworks[1]: unknown framework 'example.com/nope'")
    served = parse_configuration("integrations: {frameworks: [batch/job, trainer.kubeflow.org/trainjob]}")
    assert isinstance(served, Configuration)
    assert served.warnings == ()
    assert [i.name for i in served.integrations] == ["batch/job", "trainer.kubeflow.org/trainjob"]
