"""What goes into a worker and what comes back (Kueue's cloneForCreate and the batch/Job adapter)."""

from __future__ import annotations

from kueue_webhook.control.multikueue.copies import (
    job_copy,
    mirrored_status,
    remote_spec_ops,
    stale_start_time,
    without_pods,
    workload_copy,
)


def test_a_workload_copy_keeps_the_spec_and_labels_but_the_manager_job_uid_and_carries_the_origin() -> None:
    local = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "job-train-1",
            "namespace": "ml",
            "uid": "u1",
            "resourceVersion": "7",
            "labels": {"kueue.x-k8s.io/job-uid": "j1", "team": "a"},
            "ownerReferences": [{"kind": "Job", "name": "train"}],
            "finalizers": ["kueue.x-k8s.io/resource-in-use"],
        },
        "spec": {"queueName": "team", "podSets": [{"name": "main", "count": 1}]},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}]},
    }
    copied = workload_copy(local, origin="mgr")
    assert copied["metadata"] == {
        "name": "job-train-1",
        "namespace": "ml",
        "labels": {"team": "a", "kueue.x-k8s.io/multikueue-origin": "mgr"},
    }
    assert copied["spec"] == local["spec"] and "status" not in copied


def test_a_job_copy_runs_under_the_worker_s_own_controller_and_names_its_workload() -> None:
    local = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "train",
            "namespace": "ml",
            "uid": "j1",
            "labels": {"kueue.x-k8s.io/queue-name": "team"},
        },
        "spec": {
            "suspend": True,
            "managedBy": "kueue.x-k8s.io/multikueue",
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "j1"}},
            "template": {
                "metadata": {
                    "labels": {"batch.kubernetes.io/controller-uid": "j1", "job-name": "train", "app": "x"}
                }
            },
        },
    }
    copied = job_copy(local, workload_name="job-train-1", origin="mgr")
    assert copied["metadata"]["labels"] == {
        "kueue.x-k8s.io/queue-name": "team",
        "kueue.x-k8s.io/multikueue-origin": "mgr",
        "kueue.x-k8s.io/prebuilt-workload-name": "job-train-1",
    }
    assert "managedBy" not in copied["spec"] and "selector" not in copied["spec"]
    assert copied["spec"]["template"]["metadata"]["labels"] == {"app": "x"}
    assert copied["spec"]["suspend"] is True
    assert local["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"  # the manager's is untouched


def test_a_running_worker_job_s_status_is_not_given_to_a_still_suspended_manager_job() -> None:
    running = {"kind": "Job", "spec": {"suspend": False}, "status": {"active": 1, "startTime": "t"}}
    suspended = {"kind": "Job", "spec": {"suspend": True}, "status": {}}
    assert mirrored_status(suspended, running) is None
    started = {"kind": "Job", "spec": {"suspend": False}, "status": {}}
    assert mirrored_status(started, running) == {"active": 1, "startTime": "t"}
    finished = {
        "kind": "Job",
        "spec": {"suspend": False},
        "status": {"conditions": [{"type": "Complete", "status": "True"}]},
    }
    assert mirrored_status(suspended, finished) == finished["status"]
    assert mirrored_status(started, started) is None


def test_pods_a_lost_worker_counted_are_no_longer_counted_on_the_manager() -> None:
    job = {"kind": "Job", "status": {"active": 2, "ready": 1, "succeeded": 3}}
    assert without_pods(job) == {"active": 0, "ready": 0, "succeeded": 3}
    jobset = {
        "kind": "JobSet",
        "status": {"replicatedJobsStatus": [{"name": "w", "active": 1, "succeeded": 0}]},
    }
    assert without_pods(jobset) == {"replicatedJobsStatus": [{"name": "w", "active": 0, "succeeded": 0}]}
    assert without_pods({"kind": "Job", "status": {"active": 0}}) is None


def test_a_suspended_manager_job_forgets_the_start_time_of_the_worker_that_ran_it() -> None:
    ran = {"kind": "Job", "spec": {"suspend": True}, "status": {"startTime": "t"}}
    assert stale_start_time(ran)
    assert not stale_start_time({"kind": "Job", "spec": {"suspend": False}, "status": {"startTime": "t"}})
    assert not stale_start_time({"kind": "Job", "spec": {"suspend": True}, "status": {}})


def test_a_kubeflow_job_copy_loses_the_managed_by_of_its_run_policy() -> None:
    local = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {"runPolicy": {"suspend": True, "managedBy": "kueue.x-k8s.io/multikueue"}},
    }
    assert job_copy(local, workload_name="w", origin="o")["spec"] == {"runPolicy": {"suspend": True}}


def test_new_dispatched_kinds_lose_their_managed_by_and_keep_the_rest_of_the_spec() -> None:
    """Kueue's XGBoostJob, PaddleJob, JAXJob (kubeflowjob), RayService (ray) and AppWrapper adapters clear
    ``managedBy`` so the worker's own controller runs the copy."""
    mk = "kueue.x-k8s.io/multikueue"
    cases = [
        ("kubeflow.org/v1", "XGBoostJob", {"runPolicy": {"managedBy": mk}, "xgbReplicaSpecs": {}}),
        ("kubeflow.org/v1", "PaddleJob", {"runPolicy": {"managedBy": mk}, "paddleReplicaSpecs": {}}),
        ("kubeflow.org/v1", "JAXJob", {"runPolicy": {"managedBy": mk}, "jaxReplicaSpecs": {}}),
        ("ray.io/v1", "RayService", {"managedBy": mk, "rayClusterConfig": {"suspend": True}}),
        ("workload.codeflare.dev/v1beta2", "AppWrapper", {"managedBy": mk, "suspend": True}),
    ]
    for api_version, kind, spec in cases:
        local = {
            "apiVersion": api_version,
            "kind": kind,
            "metadata": {"name": "j", "namespace": "ml"},
            "spec": spec,
        }
        remote = job_copy(local, workload_name="w", origin="o")
        assert mk not in repr(remote["spec"]), kind
        assert remote["kind"] == kind and remote["apiVersion"] == api_version
        assert set(remote["spec"]) == set(spec) - {"managedBy"}, kind


def test_an_app_wrapper_s_and_a_ray_service_s_status_flows_back_whole() -> None:
    for api_version, kind in (("workload.codeflare.dev/v1beta2", "AppWrapper"), ("ray.io/v1", "RayService")):
        local = {"apiVersion": api_version, "kind": kind, "spec": {"suspend": True}}
        remote = {"apiVersion": api_version, "kind": kind, "status": {"phase": "Running", "conditions": []}}
        assert mirrored_status(local, remote) == {"phase": "Running", "conditions": []}


def test_a_ray_service_s_serve_config_edited_on_the_manager_is_written_into_its_copy() -> None:
    """Kueue's RayService RemoteSpecSyncer: ``serveConfigV2`` alone follows the manager."""
    local = {"apiVersion": "ray.io/v1", "kind": "RayService", "spec": {"serveConfigV2": "new", "x": 2}}
    remote = {"apiVersion": "ray.io/v1", "kind": "RayService", "spec": {"serveConfigV2": "old", "x": 1}}
    assert remote_spec_ops(local, remote) == [{"op": "add", "path": "/spec/serveConfigV2", "value": "new"}]
    assert remote_spec_ops(local, {**remote, "spec": {"serveConfigV2": "new", "x": 1}}) == []
    assert remote_spec_ops({**local, "spec": {}}, remote) == [{"op": "remove", "path": "/spec/serveConfigV2"}]
    ray_job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "spec": {"serveConfigV2": "new"}}
    assert remote_spec_ops(ray_job, {**ray_job, "spec": {}}) == []


def test_a_trainjob_copy_loses_its_managed_by_and_kueues_runtime_patch_and_keeps_the_others() -> None:
    """Kueue's TrainJob adapter: the worker's own Kueue writes its own flavors into a patch of its own."""
    kueue_patch = {
        "manager": "kueue.x-k8s.io/manager",
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{"name": "node"}]}}},
    }
    local = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {
            "runtimeRef": {"name": "torch"},
            "managedBy": "kueue.x-k8s.io/multikueue",
            "runtimePatches": [{"manager": "someone"}, kueue_patch],
        },
    }
    copy = job_copy(local, workload_name="trainjob-train-1", origin="multikueue")
    assert copy["spec"] == {"runtimeRef": {"name": "torch"}, "runtimePatches": [{"manager": "someone"}]}
    assert local["spec"]["runtimePatches"] == [{"manager": "someone"}, kueue_patch]  # the manager's untouched
