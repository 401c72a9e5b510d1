"""The Workload a queued object gets: its pod sets (``pod_sets``), its priority (``priority``), its queue,
owner and finalizer, named as Kueue names it."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kueue_webhook.api.admission_gates import ANNOTATION as GATES_ANNOTATION
from kueue_webhook.api.admission_gates import gates_of
from kueue_webhook.api.finalizers import RESOURCE_IN_USE
from kueue_webhook.api.integrations.engine.pod_sets import element_count, element_min_count, elements
from kueue_webhook.api.integrations.engine.priority import (
    NO_CLASSES,
    PriorityClasses,
    priority,
    priority_fields,
)
from kueue_webhook.api.integrations.engine.reading import (
    JOB_UID_LABEL,
    maximum_execution_time,
    metadata_of,
    queue_name,
    workload_name,
)
from kueue_webhook.api.integrations.model import Integration
from kueue_webhook.api.objects import API_VERSION
from kueue_webhook.api.owner_references import controller_owner_reference
from kueue_webhook.api.topology_request import POD_INDEX_LABELS, template_topology_request

__all__ = ["workload_for"]

JSON = dict[str, Any]


def workload_for(
    integration: Integration,
    obj: Mapping[str, Any],
    classes: PriorityClasses = NO_CLASSES,
    *,
    label_keys: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The Workload manifest for a queued object: owned by it (so it is garbage-collected) and holding
    Kueue's resource-in-use finalizer (so deleting it cannot free quota the object's pods still use). Its
    priority is ``classes``' answer (``priority``); the controller asks ``missing_class`` first. The
    object's labels named in ``label_keys`` are copied (the configuration's ``labelKeysToCopy``)."""
    meta = metadata_of(obj)
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    class_priority, class_name, class_group = priority(integration, obj, classes)
    sets: list[JSON] = []
    for element in elements(integration, obj):
        minimum = element_min_count(element)
        pod_set: JSON = {
            "name": element.name,
            "count": element_count(element),
            "template": copy.deepcopy(dict(element.quota_template())),
        }
        if minimum is not None:
            pod_set["minCount"] = minimum
        index_label = POD_INDEX_LABELS.get((integration.group, integration.kind))
        if (topology := template_topology_request(pod_set["template"], index_label)) is not None:
            pod_set["topologyRequest"] = topology  # Kueue's jobframework NewPodSetTopologyRequest
        sets.append(pod_set)
    spec: JSON = {"active": True, "podSets": sets, "queueName": queue_name(obj) or ""}
    spec.update(priority_fields(class_priority, class_name, class_group))
    if (limit := maximum_execution_time(obj)) is not None:
        spec["maximumExecutionTimeSeconds"] = limit
    metadata: JSON = {
        "name": workload_name(name, uid, kind=integration.kind, group=integration.group),
        "namespace": meta.get("namespace") or "default",
        "labels": {
            **{key: value for key, value in _labels(meta).items() if key in label_keys},
            **({JOB_UID_LABEL: uid} if uid and len(uid) <= 63 else {}),
        },
        "finalizers": [RESOURCE_IN_USE],
        "ownerReferences": [
            controller_owner_reference(
                str(obj.get("apiVersion") or integration.api_version), integration.kind, name, uid
            )
        ],
    }
    if gates := gates_of(meta):
        metadata["annotations"] = {GATES_ANNOTATION: gates}  # Kueue's PropagateAdmissionGatedByAnnotation
    return {"apiVersion": API_VERSION, "kind": "Workload", "metadata": metadata, "spec": spec}


def _labels(meta: Mapping[str, Any]) -> Mapping[str, str]:
    labels = meta.get("labels")
    return labels if isinstance(labels, Mapping) else {}
