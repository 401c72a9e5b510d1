"""A StatefulSet queued as one Workload, as Kueue's statefulset integration does it (``pkg/controller/jobs/
statefulset``): the Workload is built from the StatefulSet, not from its pods.

Its name is Kueue's ``GetWorkloadNameForOwnerWithGVK`` (``statefulset-<name>-<hash>``, the prefix cut so the
whole stays within 253 characters), so it depends on the StatefulSet's UID and cannot be written into the
pod template at create time. Each pod the StatefulSet controller makes is therefore created gated (the
template's ``pod-suspending-parent`` annotation) and then given its group by the controller: the group name
and the prebuilt Workload's name as annotations (Kueue's ``WorkloadIdentifierAnnotations``, on by default,
which is how a name longer than a label value's 63 characters fits), the total count (``replicas``), and the
serving, fast-admission and role ``main`` markers. The Workload has one pod set ``main`` of ``replicas``
pods; scaling to zero releases its quota on purpose (Kueue's ``OnHold`` reason: it is not queued again while
at zero) and scaling up again queues it once more.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kueue_webhook.api.integrations.builtin import MANAGED_LABEL, POD, STATEFULSET
from kueue_webhook.api.integrations.engine import (
    NO_CLASSES,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    PriorityClasses,
    is_suspended,
    queue_name,
    workload_for,
    workload_name,
)
from kueue_webhook.api.integrations.pod_groups import (
    FAST_ADMISSION_ANNOTATION,
    GROUP_NAME_LABEL,
    IS_GROUP_WORKLOAD_ANNOTATION,
    PREBUILT_WORKLOAD,
    ROLE_HASH_ANNOTATION,
    SERVING_ANNOTATION,
    TOTAL_COUNT_ANNOTATION,
    group_name,
)
from kueue_webhook.api.multikueue import origin_uid

__all__ = [
    "JOB_OWNER_GVK_ANNOTATION",
    "JOB_OWNER_NAME_ANNOTATION",
    "POD_INDEX_LABEL_ANNOTATION",
    "PREBUILT_WORKLOAD",
    "SCALED_TO_ZERO_MESSAGE",
    "SCALED_TO_ZERO_REASON",
    "SCALED_UP_MESSAGE",
    "SUSPENDING_PARENT_ANNOTATION",
    "awaits_group",
    "controlling_statefulset",
    "group_metadata",
    "made_by_statefulset",
    "prebuilt_workload_name",
    "released_at_zero",
    "replicas",
    "statefulset_workload",
    "statefulset_workload_name",
]

#: Kueue marks the template of a kind it queues through its pods with that kind's framework name
SUSPENDING_PARENT_ANNOTATION = "kueue.x-k8s.io/pod-suspending-parent"
#: which pod label holds the pod's index in its group (Kueue's ``PodGroupPodIndexLabelAnnotation``)
POD_INDEX_LABEL_ANNOTATION = "kueue.x-k8s.io/pod-group-pod-index-label"
STATEFULSET_POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
JOB_OWNER_GVK_ANNOTATION = "kueue.x-k8s.io/job-owner-gvk"
JOB_OWNER_NAME_ANNOTATION = "kueue.x-k8s.io/job-owner-name"
#: Kueue's QuotaReserved=False reason of a Workload whose quota is released on purpose and not requeued (a
#: StatefulSet scaled to zero)
SCALED_TO_ZERO_REASON = "OnHold"
SCALED_TO_ZERO_MESSAGE = "StatefulSet scaled to zero; workload on hold"
SCALED_UP_MESSAGE = "Workload no longer on hold; waiting for quota reservation"

JSON = dict[str, Any]


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _map(obj: Mapping[str, Any], field: str) -> Mapping[str, Any]:
    found = _meta(obj).get(field)
    return found if isinstance(found, Mapping) else {}


def replicas(sts: Mapping[str, Any]) -> int:
    """``spec.replicas``, 1 when unset (the API server's default)."""
    spec = sts.get("spec")
    value = spec.get("replicas") if isinstance(spec, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def statefulset_workload_name(name: str, uid: str) -> str:
    return workload_name(name, uid, kind=STATEFULSET.kind, group=STATEFULSET.group)


def prebuilt_workload_name(pod: Mapping[str, Any]) -> str | None:
    """The Workload the pod's owner made for it (annotation first, as Kueue's ``PrebuiltWorkloadNameFor``
    with ``WorkloadIdentifierAnnotations`` on, then the label)."""
    for field in ("annotations", "labels"):
        value = _map(pod, field).get(PREBUILT_WORKLOAD)
        if isinstance(value, str) and value:
            return value
    return None


def controlling_statefulset(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod's controller ownerReference when it is an apps/v1 StatefulSet."""
    for ref in _meta(pod).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            if ref.get("kind") == STATEFULSET.kind and ref.get("apiVersion") == STATEFULSET.api_version:
                return ref
            return None
    return None


def made_by_statefulset(pod: Mapping[str, Any]) -> bool:
    """Made from a queued StatefulSet's template (marked by the webhook) by its StatefulSet."""
    marked = _map(pod, "annotations").get(SUSPENDING_PARENT_ANNOTATION) == STATEFULSET.name
    return marked and controlling_statefulset(pod) is not None


def awaits_group(pod: Mapping[str, Any]) -> bool:
    """A StatefulSet's pod not yet given its group: neither a Workload of its own nor one built from its
    pods is made for it (its StatefulSet's Workload is)."""
    return made_by_statefulset(pod) and group_name(pod) is None


def group_metadata(sts: Mapping[str, Any], pod: Mapping[str, Any], *, managed: bool) -> JSON | None:
    """The merge patch that puts ``pod`` in its StatefulSet's group (Kueue's statefulset pod reconciler
    ``setDefault``), or that brings its queue label in line with the StatefulSet's; None when it is."""
    name = statefulset_workload_name(str(_meta(sts).get("name") or ""), origin_uid(sts))
    queue = queue_name(sts)
    labels = _map(pod, "labels")
    if group_name(pod) == name:
        # a started pod's queue label is immutable (the pod webhook's rule, as Kueue's): only gated ones move
        gated = is_suspended(POD, pod)
        if queue and labels.get(QUEUE_NAME_LABEL) != queue and replicas(sts) > 0 and gated:
            return {"metadata": {"labels": {QUEUE_NAME_LABEL: queue}}}
        return None
    if not managed:
        return None
    new_labels: JSON = {MANAGED_LABEL: "true"}
    if queue:
        new_labels[QUEUE_NAME_LABEL] = queue
    priority_class = _map(sts, "labels").get(PRIORITY_CLASS_LABEL)
    if isinstance(priority_class, str) and priority_class:
        new_labels[PRIORITY_CLASS_LABEL] = priority_class
    annotations = {
        PREBUILT_WORKLOAD: name,
        GROUP_NAME_LABEL: name,
        TOTAL_COUNT_ANNOTATION: str(replicas(sts)),
        FAST_ADMISSION_ANNOTATION: "true",
        SERVING_ANNOTATION: "true",
        POD_INDEX_LABEL_ANNOTATION: STATEFULSET_POD_INDEX_LABEL,
        ROLE_HASH_ANNOTATION: "main",
    }
    return {"metadata": {"labels": new_labels, "annotations": annotations}}


def statefulset_workload(
    sts: Mapping[str, Any],
    classes: PriorityClasses = NO_CLASSES,
) -> JSON:
    """The StatefulSet's Workload (Kueue's ``constructWorkload``): owned by the StatefulSet, a group
    Workload with one pod set ``main`` of ``replicas`` pods."""
    workload = workload_for(STATEFULSET, sts, classes)
    for pod_set in workload["spec"]["podSets"]:
        template = pod_set.get("template") or {}
        pod_set["template"] = {"spec": copy.deepcopy(template.get("spec") or {})}
    metadata = workload["metadata"]
    # a MultiKueue worker's copy is named after the manager's StatefulSet, as the manager's Workload is
    metadata["name"] = statefulset_workload_name(str(_meta(sts).get("name") or ""), origin_uid(sts))
    metadata["annotations"] = {
        IS_GROUP_WORKLOAD_ANNOTATION: "true",
        JOB_OWNER_GVK_ANNOTATION: f"{STATEFULSET.api_version}, Kind={STATEFULSET.kind}",
        JOB_OWNER_NAME_ANNOTATION: str(_meta(sts).get("name") or ""),
    }
    priority_class = _map(sts, "labels").get(PRIORITY_CLASS_LABEL)
    if isinstance(priority_class, str) and priority_class:
        metadata.setdefault("labels", {})[PRIORITY_CLASS_LABEL] = priority_class
    return workload


def released_at_zero(workload: Mapping[str, Any]) -> bool:
    """QuotaReserved False with reason OnHold (Kueue's ``IsOnHold``): its StatefulSet was scaled to zero, its
    quota released on purpose, and it is not queued."""
    status = workload.get("status")
    for condition in (status.get("conditions") if isinstance(status, Mapping) else None) or []:
        if isinstance(condition, Mapping) and condition.get("type") == "QuotaReserved":
            return condition.get("status") == "False" and condition.get("reason") == SCALED_TO_ZERO_REASON
    return False
