"""A MultiKueue worker's pods are labelled as such (Kueue's jobframework puts
``MultiKueueWorkerWorkloadPodLabel`` into the PodSetInfo of a Workload carrying the MultiKueue origin
label): the label goes into each pod template when the job starts and comes off when it is stopped."""

from __future__ import annotations

from kueue_webhook.api.admitted_pods import admitted_pod_marks
from kueue_webhook.api.integrations import JOB, engine
from kueue_webhook.api.multikueue import ORIGIN_LABEL, WORKER_POD_LABEL, worker_pod_labels
from kueue_webhook.api.topology_pods import topology_starts
from tests.fakeapi.patches import json_patch
from tests.unit.api.test_topology_start import admitted, job


def test_only_a_manager_s_copy_labels_its_pods_as_a_worker_s() -> None:
    assert worker_pod_labels({"metadata": {"labels": {ORIGIN_LABEL: "multikueue"}}}) == {
        WORKER_POD_LABEL: "true"
    }
    assert worker_pod_labels({"metadata": {"labels": {"other": "x"}}}) == {}
    assert worker_pod_labels({}) == {}


#: a manager's copy admitted in a worker: what its Job's pods are marked with
COPY = admitted_pod_marks(
    {
        "metadata": {"name": "w", "labels": {ORIGIN_LABEL: "multikueue"}},
        "spec": {"queueName": "q"},
        "status": {"admission": {"clusterQueue": "cq"}},
    }
)
QUEUES = {"kueue.x-k8s.io/local-queue-name": "q", "kueue.x-k8s.io/cluster-queue-name": "cq"}


def test_a_copy_s_job_starts_with_labelled_pods_and_stops_without_the_label() -> None:
    started = json_patch(job(), engine.start_patch(JOB, job(), {}, marks=COPY))
    template = started["spec"]["template"]
    assert template["metadata"]["labels"] == {
        "batch.kubernetes.io/job-name": "j",
        "kueue.x-k8s.io/podset": "main",
        **QUEUES,
        WORKER_POD_LABEL: "true",
    }
    assert template["metadata"]["annotations"] == {"kueue.x-k8s.io/workload": "w"}
    assert "schedulingGates" not in template["spec"]
    original = job()["spec"]["template"]
    restored = json_patch(started, engine.restore_ops(JOB, started, [original]))
    assert restored["spec"]["template"] == original


def test_a_template_without_metadata_gets_the_label() -> None:
    bare = job()
    del bare["spec"]["template"]["metadata"]
    started = json_patch(bare, engine.start_patch(JOB, bare, {}, marks=COPY))
    assert started["spec"]["template"]["metadata"] == {
        "labels": {"kueue.x-k8s.io/podset": "main", **QUEUES, WORKER_POD_LABEL: "true"},
        "annotations": {"kueue.x-k8s.io/workload": "w"},
    }


def test_the_label_joins_the_topology_marks_of_a_pod_set_placed_by_topology() -> None:
    starts = topology_starts(admitted({"name": "main", "count": 4}))
    patch = engine.start_patch(JOB, job(), {}, topology=starts, marks=COPY)
    started = json_patch(job(), patch)
    assert started["spec"]["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/job-name": "j",
        "kueue.x-k8s.io/podset": "main",
        **QUEUES,
        WORKER_POD_LABEL: "true",
    }
    restored = json_patch(started, engine.restore_ops(JOB, started, [job()["spec"]["template"]]))
    assert restored["spec"]["template"] == job()["spec"]["template"]
