"""A MultiKueue worker's pods are labelled as such (Kueue's jobframework puts
``MultiKueueWorkerWorkloadPodLabel`` into the PodSetInfo of a Workload carrying the MultiKueue origin
label): the label goes into each pod template when the job starts and comes off when it is stopped."""

from __future__ import annotations

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


def test_a_copy_s_job_starts_with_labelled_pods_and_stops_without_the_label() -> None:
    labels = {WORKER_POD_LABEL: "true"}
    started = json_patch(job(), engine.start_patch(JOB, job(), {}, pod_labels=labels))
    template = started["spec"]["template"]
    assert template["metadata"]["labels"] == {"batch.kubernetes.io/job-name": "j", WORKER_POD_LABEL: "true"}
    assert "annotations" not in template["metadata"] and "schedulingGates" not in template["spec"]
    original = job()["spec"]["template"]
    restored = json_patch(started, engine.restore_ops(JOB, started, [original]))
    assert restored["spec"]["template"] == original


def test_a_template_without_metadata_gets_the_label() -> None:
    bare = job()
    del bare["spec"]["template"]["metadata"]
    started = json_patch(bare, engine.start_patch(JOB, bare, {}, pod_labels={WORKER_POD_LABEL: "true"}))
    assert started["spec"]["template"]["metadata"] == {"labels": {WORKER_POD_LABEL: "true"}}


def test_the_label_joins_the_topology_marks_of_a_pod_set_placed_by_topology() -> None:
    starts = topology_starts(admitted({"name": "main", "count": 4}))
    patch = engine.start_patch(JOB, job(), {}, topology=starts, pod_labels={WORKER_POD_LABEL: "true"})
    started = json_patch(job(), patch)
    assert started["spec"]["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/job-name": "j",
        "kueue.x-k8s.io/podset": "main",
        WORKER_POD_LABEL: "true",
    }
    restored = json_patch(started, engine.restore_ops(JOB, started, [job()["spec"]["template"]]))
    assert restored["spec"]["template"] == job()["spec"]["template"]
