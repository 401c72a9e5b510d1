"""Removing the queue label of a suspended queued object of a kind other than Job (Kueue's jobframework
``validateUpdateForQueueName``, the same for every kind): allowed where nothing requires the label, refused
where the namespace has a default LocalQueue or the label policy requires it, never while it runs."""

from __future__ import annotations

import copy
from typing import Any

from kueue_webhook.admission.integrations import validate_object
from kueue_webhook.admission.review import Verdict
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration, parse_configuration
from tests.unit.admission.golden import request_of

NS = "team"
JOBSETS = parse_configuration("integrations:\n  frameworks: [batch/job, jobset.x-k8s.io/jobset]\n")
assert isinstance(JOBSETS, Configuration)
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def jobset(*, suspend: bool, queue: str | None) -> dict[str, Any]:
    labels = {QUEUE_LABEL: queue} if queue else {}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": NS, "uid": "u", "labels": labels},
        "spec": {"suspend": suspend, "replicatedJobs": []},
    }


def update(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "1",
            "kind": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"},
            "resource": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "resource": "jobsets"},
            "name": "js",
            "namespace": NS,
            "operation": "UPDATE",
            "userInfo": {"username": "alice"},
            "object": new,
            "oldObject": old,
        },
    }


def validate(review: dict[str, Any], *queues: str) -> Verdict:
    view = StaticClusterView(
        namespaces={NS: {"kubernetes.io/metadata.name": NS}}, local_queues={NS: set(queues)}
    )
    return validate_object(request_of(review), config=JOBSETS, view=view)


def test_the_label_of_a_suspended_object_may_go_where_nothing_requires_it() -> None:
    old = jobset(suspend=True, queue="q")
    assert validate(update(old, jobset(suspend=True, queue=None)), "q").allowed


def test_not_where_the_namespace_has_a_default_local_queue() -> None:
    old = jobset(suspend=True, queue="q")
    verdict = validate(update(old, jobset(suspend=True, queue=None)), "q", "default")
    assert verdict.message == (
        'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "": '
        "queue-name must not be empty in namespace with default queue"
    )


def test_never_while_the_object_runs() -> None:
    old = jobset(suspend=False, queue="q")
    verdict = validate(update(old, copy.deepcopy(jobset(suspend=False, queue=None))), "q")
    assert not verdict.allowed
    assert (
        'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "": field is immutable' in verdict.message
    )
