"""Kueue's deployment and statefulset webhooks' update rules (``ValidateUpdate``), as pure functions."""

from __future__ import annotations

import copy
from typing import Any

from kueue_webhook.admission.through_pods import through_pods_update_errors
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.integrations import Integration
from kueue_webhook.api.integrations.builtin import DEPLOYMENT, STATEFULSET
from kueue_webhook.api.integrations.statefulsets import statefulset_workload_name

JSON = dict[str, Any]


def obj(kind: str, *, queue: str = "q", replicas: int = 2, ready: int = 0, cpu: str = "1") -> JSON:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {
            "name": "web",
            "namespace": "team",
            "uid": "u1",
            "labels": {"kueue.x-k8s.io/queue-name": queue},
        },
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}},
        },
        "status": {"readyReplicas": ready, "replicas": 0},
    }


def errors(
    integration: Integration, old: JSON, new: JSON, view: StaticClusterView | None = None
) -> list[str]:
    found = through_pods_update_errors(
        integration,
        old,
        new,
        old_queue=old["metadata"]["labels"].get("kueue.x-k8s.io/queue-name", ""),
        new_queue=new["metadata"]["labels"].get("kueue.x-k8s.io/queue-name", ""),
        queued=True,
        view=view or StaticClusterView(),
    )
    return [f"{e.path}: {e.detail}" for e in found]


def test_the_queue_label_changes_only_while_no_replica_is_ready() -> None:
    for integration in (DEPLOYMENT, STATEFULSET):
        kind = integration.kind
        assert errors(integration, obj(kind), obj(kind, queue="other")) == []
        assert errors(integration, obj(kind, ready=1), obj(kind, ready=1, queue="other")) == [
            "metadata.labels[kueue.x-k8s.io/queue-name]: field is immutable"
        ]
        assert errors(integration, obj(kind), obj(kind, queue="")) == [
            "metadata.labels[kueue.x-k8s.io/queue-name]: field is immutable"
        ]


def test_a_queued_statefulset_scales_only_to_and_from_zero() -> None:
    assert errors(STATEFULSET, obj("StatefulSet"), obj("StatefulSet", replicas=3)) == [
        "spec.replicas: field is immutable"
    ]
    assert errors(STATEFULSET, obj("StatefulSet"), obj("StatefulSet", replicas=0)) == []
    assert errors(DEPLOYMENT, obj("Deployment"), obj("Deployment", replicas=3)) == []
    scaling_down = obj("StatefulSet", replicas=5)
    scaling_down["status"]["replicas"] = 1
    assert errors(STATEFULSET, obj("StatefulSet", replicas=0), scaling_down) == [
        "spec.replicas: scaling down is still in progress"
    ]


def test_scaling_up_waits_for_the_workload_of_the_scale_down_to_be_on_hold() -> None:
    name = statefulset_workload_name("web", "u1")
    reserved = {
        "status": {"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}]}
    }
    held = copy.deepcopy(reserved)
    held["status"]["conditions"][0].update(status="False", reason="OnHold")
    old, new = obj("StatefulSet", replicas=0), obj("StatefulSet", replicas=2)
    assert errors(STATEFULSET, old, new, StaticClusterView(workloads={("team", name): reserved})) == [
        "spec.replicas: workload from previous scale-down is still being deleted"
    ]
    assert errors(STATEFULSET, old, new, StaticClusterView(workloads={("team", name): held})) == []


def test_the_template_shape_is_frozen_but_equal_quantities_are_equal() -> None:
    assert errors(STATEFULSET, obj("StatefulSet"), obj("StatefulSet", cpu="1000m")) == []
    assert errors(STATEFULSET, obj("StatefulSet"), obj("StatefulSet", cpu="2")) == [
        "spec.template.spec.containers[0].resources.requests: field is immutable"
    ]
