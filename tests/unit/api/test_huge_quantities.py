"""A quantity thousands of digits long (kube-apiserver stores it in a Job or a ClusterQueue) is a field error
wherever it is read: never an exception escaping to the caller."""

from __future__ import annotations

from typing import Any

from kueue_webhook.admission.kueue import validate_kueue_object
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration
from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.objects import parse_cluster_queue, parse_workload
from kueue_webhook.api.pods import pod_requests
from tests.support import builders
from tests.unit.admission.golden import request_of
from tests.unit.admission.servers import golden_object, review_for

HUGE = "1" * 5000


def cluster_queue(quota: str) -> dict[str, Any]:
    return builders.cluster_queue("cq", {"rf": {"cpu": quota}})


def test_a_cluster_queue_with_a_huge_quota_is_invalid_and_says_where() -> None:
    parsed = parse_cluster_queue(cluster_queue(HUGE))
    assert isinstance(parsed, list)
    [error] = parsed
    assert isinstance(error, FieldError)
    assert error.path == "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"
    assert "must not be longer than 128 characters" in error.detail


def test_a_pod_requesting_a_huge_quantity_is_invalid() -> None:
    spec = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": HUGE}, "limits": {"memory": HUGE}}}]
    }
    requests, errors = pod_requests(spec)
    assert requests == {}
    assert [e.path for e in errors] == [
        "spec.containers[0].resources.requests[cpu]",
        "spec.containers[0].resources.limits[memory]",
    ]


def test_a_workload_with_a_huge_request_is_invalid() -> None:
    container = {"name": "c", "resources": {"requests": {"cpu": HUGE}}}
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "team"},
        "spec": {
            "queueName": "lq",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}],
        },
    }
    parsed = parse_workload(workload)
    assert isinstance(parsed, list) and parsed
    assert all("must not be longer than 128 characters" in str(e) for e in parsed)


def test_the_cluster_queue_webhook_denies_a_huge_quota_naming_the_field() -> None:
    """kube-apiserver stores it; our ClusterQueue webhook (when installed) refuses it with a field error."""
    queue = golden_object("kueue-clusterqueue-create")
    queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = HUGE
    review = review_for(queue, operation="CREATE", old=None)
    verdict = validate_kueue_object(request_of(review), config=Configuration(), view=StaticClusterView())
    assert not verdict.allowed
    assert "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: Invalid value" in verdict.message
    assert "must not be longer than 128 characters" in verdict.message
