"""Kueue's ApplyDefaultForManagedBy: a Job queued to a ClusterQueue with a MultiKueue check is made
MultiKueue's."""

from __future__ import annotations

from typing import Any

from kueue_webhook.admission.jobs import mutate_job
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration
from kueue_webhook.api.multikueue import managed_by_default_ops
from tests.unit.admission.golden import apply_patch, golden_review, request_of

NS = "golden-hooked"
QUEUE = "team-a-gpu"


def mutated(review: dict[str, Any], *, multikueue: bool) -> dict[str, Any]:
    labels = {"kubernetes.io/metadata.name": NS}
    view = StaticClusterView(namespaces={NS: labels}, local_queues={NS: {QUEUE}})
    if multikueue:
        view.multikueue_queues.add((NS, QUEUE))
    verdict = mutate_job(request_of(review), config=Configuration(), view=view)
    assert verdict.allowed
    result: dict[str, Any] = apply_patch(review["request"]["object"], list(verdict.patch))
    return result


def test_a_job_queued_for_the_workers_is_created_managed_by_multikueue() -> None:
    assert mutated(golden_review(0), multikueue=True)["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"


def test_a_job_of_a_local_cluster_queue_keeps_its_own_controller() -> None:
    assert "managedBy" not in mutated(golden_review(0), multikueue=False)["spec"]


def test_the_job_controller_s_own_value_is_replaced_but_another_controller_s_is_kept() -> None:
    review = golden_review(0)
    review["request"]["object"]["spec"]["managedBy"] = "kubernetes.io/job-controller"
    assert mutated(review, multikueue=True)["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    review = golden_review(0)
    review["request"]["object"]["spec"]["managedBy"] = "example.com/other"
    assert mutated(review, multikueue=True)["spec"]["managedBy"] == "example.com/other"


def test_each_kind_is_defaulted_where_it_keeps_managed_by_and_kinds_without_an_adapter_are_not() -> None:
    mk = "kueue.x-k8s.io/multikueue"
    assert managed_by_default_ops("jobset.x-k8s.io", "JobSet", {"spec": {}}) == [
        {"op": "add", "path": "/spec/managedBy", "value": mk}
    ]
    assert managed_by_default_ops("kubeflow.org", "PyTorchJob", {"spec": {}}) == [
        {"op": "add", "path": "/spec/runPolicy", "value": {"managedBy": mk}}
    ]
    assert managed_by_default_ops("kubeflow.org", "MPIJob", {"spec": {"runPolicy": {"suspend": True}}}) == [
        {"op": "add", "path": "/spec/runPolicy/managedBy", "value": mk}
    ]
    owned = {"spec": {"managedBy": "ray.io/kuberay-operator"}}
    assert managed_by_default_ops("ray.io", "RayJob", owned) == [
        {"op": "replace", "path": "/spec/managedBy", "value": mk}
    ]
    assert managed_by_default_ops("apps", "Deployment", {"spec": {}}) == []
