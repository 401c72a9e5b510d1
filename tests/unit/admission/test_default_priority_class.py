"""Kueue's WorkloadPriorityClassDefaulting (beta, on by default since v0.20): on create, an object naming no
WorkloadPriorityClass gets the label ``kueue.x-k8s.io/priority-class: default`` when a WorkloadPriorityClass
named ``default`` exists (jobframework's ``ApplyDefaultWorkloadPriorityClass``, called by every kind's
defaulter after the default LocalQueue)."""

from __future__ import annotations

from typing import Any

from kueue_webhook.admission.integrations import mutate_object
from kueue_webhook.admission.jobs import QUEUE_LABEL, mutate_job
from kueue_webhook.admission.review import Verdict
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration, parse_configuration
from tests.unit.admission.golden import apply_patch, golden_review, request_of

NS = "golden-hooked"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
JSON = dict[str, Any]
WITH_DEPLOYMENTS = parse_configuration("integrations: {frameworks: [batch/job, pod, deployment]}")
assert isinstance(WITH_DEPLOYMENTS, Configuration)


def cluster(*queues: str, classes: tuple[str, ...] = ("default",), namespace: str = NS) -> StaticClusterView:
    return StaticClusterView(
        namespaces={namespace: {"kubernetes.io/metadata.name": namespace}},
        local_queues={namespace: set(queues)},
        workload_priority_classes=set(classes),
    )


def created(
    review: JSON, view: StaticClusterView, *, through: Any = mutate_job, config: Configuration | None = None
) -> JSON:
    verdict: Verdict = through(request_of(review), config=config or Configuration(), view=view)
    assert verdict.allowed
    result: JSON = apply_patch(review["request"]["object"], list(verdict.patch))
    return result


def test_kubectl_create_job_gets_the_default_workload_priority_class_when_it_exists() -> None:
    # Kueue labels it whether or not it is queued: the label waits for a queue label to matter
    assert created(golden_review(6), cluster())["metadata"]["labels"] == {PRIORITY_LABEL: "default"}
    assert "labels" not in created(golden_review(6), cluster(classes=()))["metadata"]


def test_the_default_class_comes_after_the_default_local_queue_in_one_patch() -> None:
    job = created(golden_review(6), cluster("default"))
    assert job["metadata"]["labels"] == {QUEUE_LABEL: "default", PRIORITY_LABEL: "default"}
    assert job["spec"]["suspend"] is True


def test_a_job_naming_its_own_class_keeps_it() -> None:
    review = golden_review(6)
    review["request"]["object"]["metadata"]["labels"] = {PRIORITY_LABEL: "research"}
    assert created(review, cluster())["metadata"]["labels"] == {PRIORITY_LABEL: "research"}


def test_an_update_is_never_defaulted() -> None:
    review = golden_review(6)
    review["request"]["operation"] = "UPDATE"
    review["request"]["oldObject"] = review["request"]["object"]
    verdict = mutate_job(request_of(review), config=Configuration(), view=cluster())
    assert verdict.allowed and not verdict.patch


def test_a_queued_deployment_passes_the_default_class_to_its_pods() -> None:
    """Kueue's deployment defaulter copies the object's class label onto the pod template."""
    review = golden_review(6)
    request = review["request"]
    request["kind"] = request["requestKind"] = {"group": "apps", "kind": "Deployment", "version": "v1"}
    request["resource"] = request["requestResource"] = {
        "group": "apps",
        "resource": "deployments",
        "version": "v1",
    }
    request["object"] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NS, "labels": {QUEUE_LABEL: "q"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}},
        },
    }
    deployment = created(review, cluster("q"), through=mutate_object, config=WITH_DEPLOYMENTS)
    assert deployment["metadata"]["labels"] == {QUEUE_LABEL: "q", PRIORITY_LABEL: "default"}
    assert deployment["spec"]["template"]["metadata"]["labels"][PRIORITY_LABEL] == "default"
