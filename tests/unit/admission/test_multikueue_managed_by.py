"""Kueue's ApplyDefaultForManagedBy: a Job queued to a ClusterQueue with a MultiKueue check is made
MultiKueue's."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kueue_webhook.admission.integrations import mutate_object
from kueue_webhook.admission.jobs import mutate_job
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration, parse_configuration
from kueue_webhook.api.multikueue import dispatchable, managed_by_default_ops
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


@pytest.mark.parametrize(
    ("group", "kind", "path", "own"),
    [
        ("kubeflow.org", "XGBoostJob", "/spec/runPolicy/managedBy", "kubeflow.org/training-operator"),
        ("kubeflow.org", "PaddleJob", "/spec/runPolicy/managedBy", "kubeflow.org/training-operator"),
        ("kubeflow.org", "JAXJob", "/spec/runPolicy/managedBy", "kubeflow.org/training-operator"),
        ("ray.io", "RayService", "/spec/managedBy", "ray.io/kuberay-operator"),
        (
            "workload.codeflare.dev",
            "AppWrapper",
            "/spec/managedBy",
            "workload.codeflare.dev/appwrapper-controller",
        ),
    ],
)
def test_kinds_kueue_dispatches_are_made_multikueue_s_where_each_keeps_managed_by(
    group: str, kind: str, path: str, own: str
) -> None:
    """Kueue's CanDefaultManagedBy for each: unset or its own controller's value becomes MultiKueue's,
    another controller's is kept."""
    mk = "kueue.x-k8s.io/multikueue"
    parent, _, key = path.rpartition("/")
    holder: dict[str, Any] = {key: own}
    for part in reversed(parent.split("/")[2:]):
        holder = {part: holder}
    assert managed_by_default_ops(group, kind, {"spec": holder}) == [
        {"op": "replace", "path": path, "value": mk}
    ]
    other = copy.deepcopy(holder)
    inner = other
    for part in parent.split("/")[2:]:
        inner = inner[part]
    inner[key] = "example.com/other"
    assert managed_by_default_ops(group, kind, {"spec": other}) == []
    assert dispatchable(group, kind)
    unset = apply_patch(
        {"spec": {"suspend": True}}, managed_by_default_ops(group, kind, {"spec": {"suspend": True}})
    )
    value: Any = unset
    for part in path.split("/")[1:]:
        value = value[part]
    assert value == mk


def test_a_kubeflow_job_without_a_run_policy_is_both_suspended_and_made_multikueue_s() -> None:
    """Both defaults go into the ``spec.runPolicy`` the first one adds: neither overwrites the other."""
    review = golden_review(0)
    obj = review["request"]["object"]
    obj["apiVersion"], obj["kind"] = "kubeflow.org/v1", "PyTorchJob"
    obj["spec"] = {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": obj["spec"]["template"]}}}
    review["request"]["kind"] = {"group": "kubeflow.org", "version": "v1", "kind": "PyTorchJob"}
    review["request"]["resource"] = {"group": "kubeflow.org", "version": "v1", "resource": "pytorchjobs"}
    labels = {"kubernetes.io/metadata.name": NS}
    view = StaticClusterView(namespaces={NS: labels}, local_queues={NS: {QUEUE}})
    view.multikueue_queues.add((NS, QUEUE))
    config = parse_configuration("integrations: {frameworks: [batch/job, kubeflow.org/pytorchjob]}")
    assert isinstance(config, Configuration)
    verdict = mutate_object(request_of(review), config=config, view=view)
    assert verdict.allowed
    result = apply_patch(obj, list(verdict.patch))
    assert result["spec"]["runPolicy"] == {"managedBy": "kueue.x-k8s.io/multikueue", "suspend": True}
