"""Pod groups: pods queued together as one Workload, as Kueue's pod integration groups them.

A pod joins a group with the label (or annotation) ``kueue.x-k8s.io/pod-group-name`` and says how many pods
the group has with the annotation ``kueue.x-k8s.io/pod-group-total-count``. The Workload is named after the
group, owned by every pod in it, and created once all the pods exist (Kueue's ``validatePodGroupMetadata``),
or from the first pod when the group asks for fast admission (a StatefulSet's pods, which appear one by one).
Its pod sets are the pods' roles: pods whose specs ask for the same scheduling shape share a role hash
(Kueue's ``kueue.x-k8s.io/role-hash`` annotation, set by the webhook) and one pod set named by it, sorted by
name. The group finishes when ``total`` pods have succeeded; a serving group (a StatefulSet's) never does.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from kueue_webhook.api.admission_gates import ANNOTATION as GATES_ANNOTATION
from kueue_webhook.api.admission_gates import gates_of
from kueue_webhook.api.finalizers import RESOURCE_IN_USE
from kueue_webhook.api.integrations.builtin import MANAGED_LABEL, POD
from kueue_webhook.api.integrations.engine import (
    NO_CLASSES,
    PRIORITY_CLASS_LABEL,
    PriorityClasses,
    is_suspended,
    maximum_execution_time,
    parse_go_int,
    pods_ready,
    priority,
    queue_name,
)
from kueue_webhook.api.integrations.engine.priority import priority_fields
from kueue_webhook.api.objects import API_VERSION
from kueue_webhook.api.pod_shape import shape_hash

__all__ = [
    "FAST_ADMISSION_ANNOTATION",
    "GROUP_NAME_LABEL",
    "IS_GROUP_WORKLOAD_ANNOTATION",
    "PREBUILT_WORKLOAD",
    "ROLE_HASH_ANNOTATION",
    "SERVING_ANNOTATION",
    "TOTAL_COUNT_ANNOTATION",
    "excess_pods",
    "group_finished",
    "group_gates",
    "group_name",
    "group_pods_ready",
    "group_workload",
    "is_serving",
    "role_hash",
    "spec_role_hash",
    "terminated",
    "total_count",
]

GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"
TOTAL_COUNT_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
ROLE_HASH_ANNOTATION = "kueue.x-k8s.io/role-hash"
FAST_ADMISSION_ANNOTATION = "kueue.x-k8s.io/pod-group-fast-admission"
SERVING_ANNOTATION = "kueue.x-k8s.io/pod-group-serving"
IS_GROUP_WORKLOAD_ANNOTATION = "kueue.x-k8s.io/is-group-workload"
#: the Workload a pod belongs to, made by its owner rather than from its pods (Kueue's prebuilt Workload)
PREBUILT_WORKLOAD = "kueue.x-k8s.io/prebuilt-workload-name"

JSON = dict[str, Any]


def _meta(pod: Mapping[str, Any], field: str) -> Mapping[str, Any]:
    meta = pod.get("metadata")
    found = meta.get(field) if isinstance(meta, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def group_name(pod: Mapping[str, Any]) -> str | None:
    """The group a pod belongs to, None for a pod on its own: the annotation first, then the label, as Kueue
    reads it (``GetPodGroupName`` with its WorkloadIdentifierAnnotations gate, on by default)."""
    for field in ("annotations", "labels"):
        value = _meta(pod, field).get(GROUP_NAME_LABEL)
        if isinstance(value, str) and value:
            return value
    return None


def total_count(pod: Mapping[str, Any]) -> int | str:
    """The group's size from the pod's annotation, or why it cannot be read (Kueue's ``groupTotalCount``)."""
    raw = _meta(pod, "annotations").get(TOTAL_COUNT_ANNOTATION)
    if not isinstance(raw, str):
        return f"the annotation {TOTAL_COUNT_ANNOTATION} is required in a pod group"
    value = parse_go_int(raw)
    if value is None:
        return f"{raw!r} is not an integer"
    if value < 1:
        return "group total count should be greater than zero"
    return value


def is_serving(pod: Mapping[str, Any]) -> bool:
    return _meta(pod, "annotations").get(SERVING_ANNOTATION) == "true"


def _fast(pod: Mapping[str, Any]) -> bool:
    return _meta(pod, "annotations").get(FAST_ADMISSION_ANNOTATION) == "true"


def spec_role_hash(spec: Mapping[str, Any]) -> str:
    """The role of pods with this spec: the hash of its shape (``kueue_webhook.api.pod_shape``)."""
    return shape_hash(spec)


def role_hash(pod: Mapping[str, Any]) -> str:
    """The pod's role: the annotation the webhook set, else computed from its spec."""
    value = _meta(pod, "annotations").get(ROLE_HASH_ANNOTATION)
    if isinstance(value, str) and value:
        return value
    spec = pod.get("spec")
    return spec_role_hash(spec if isinstance(spec, Mapping) else {})


def terminated(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _runnable(pod: Mapping[str, Any]) -> bool:
    """Kueue's ``isPodRunnableOrSucceeded``: not being deleted and not Failed."""
    deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
    return not deleting and (pod.get("status") or {}).get("phase") != "Failed"


def group_workload(
    name: str,
    pods: Sequence[Mapping[str, Any]],
    classes: PriorityClasses = NO_CLASSES,
    *,
    label_keys: Sequence[str] = (),
) -> JSON | str | None:
    """The group's Workload, None while pods are still to come or when the pods' owner makes it (a
    StatefulSet's, Kueue's prebuilt Workload), or why the group is malformed. ``label_keys``
    (``labelKeysToCopy``): the pods' labels of these keys are copied onto it; pods that disagree on one
    make no Workload (Kueue's ``errPodGroupLabelsMismatch``)."""
    runnable = [p for p in pods if _runnable(p)]
    if not runnable or any(PREBUILT_WORKLOAD in _meta(p, "annotations") for p in runnable):
        return None
    first = runnable[0]
    total = total_count(first)
    if isinstance(total, str):
        return total
    for pod in runnable:
        if total_count(pod) != total:
            return f"pods of the group disagree on {TOTAL_COUNT_ANNOTATION}"
    if not _fast(first) and len(runnable) < total:
        return None
    pod_sets: dict[str, JSON] = {}
    for pod in runnable[:total]:
        role = role_hash(pod).lower()
        if role in pod_sets:
            pod_sets[role]["count"] += 1
        else:
            pod_spec = copy.deepcopy(dict(pod.get("spec") or {}))
            pod_sets[role] = {"name": role, "count": 1, "template": {"spec": pod_spec}}
    if _fast(first):
        only = pod_sets[role_hash(first).lower()]
        only["count"] = total
        pod_sets = {only["name"]: only}
    value, class_name, class_group = priority(POD, first, classes)
    spec: JSON = {
        "active": True,
        "podSets": [pod_sets[key] for key in sorted(pod_sets)],
        "queueName": queue_name(first) or "",
    }
    spec.update(priority_fields(value, class_name, class_group))
    if (limit := maximum_execution_time(first)) is not None:  # the first pod's, as Kueue's NewWorkload
        spec["maximumExecutionTimeSeconds"] = limit
    owners = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": (p.get("metadata") or {}).get("name"),
            "uid": (p.get("metadata") or {}).get("uid"),
        }
        for p in runnable
    ]
    labels: dict[str, str] = {}
    for pod in runnable[:total]:
        for key in label_keys:
            label = _meta(pod, "labels").get(key)
            if isinstance(label, str) and labels.setdefault(key, label) != label:
                return "constructing workload: pods have different label values"
    wpc = _meta(first, "labels").get(PRIORITY_CLASS_LABEL)
    if isinstance(wpc, str) and wpc:
        labels[PRIORITY_CLASS_LABEL] = wpc
    annotations = {IS_GROUP_WORKLOAD_ANNOTATION: "true"}
    if gates := gates_of(first.get("metadata")):  # Kueue's PropagateAdmissionGatedByAnnotation, first pod's
        annotations[GATES_ANNOTATION] = gates
    metadata: JSON = {
        "name": name,
        "namespace": (first.get("metadata") or {}).get("namespace") or "default",
        "annotations": annotations,
        "finalizers": [RESOURCE_IN_USE],
        "ownerReferences": owners,
    }
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": API_VERSION, "kind": "Workload", "metadata": metadata, "spec": spec}


def group_gates(pods: Sequence[Mapping[str, Any]]) -> str | None:
    """The admission gates the group's Workload should carry: those of its first runnable pod, as its
    Workload was made from (None: no runnable pod left to say, or the Workload is its owner's, a
    StatefulSet's or LeaderWorkerSet's, whose gates are the owner's)."""
    runnable = [p for p in pods if _runnable(p)]
    if not runnable or any(PREBUILT_WORKLOAD in _meta(p, "annotations") for p in runnable):
        return None
    return gates_of(runnable[0].get("metadata"))


def group_finished(pods: Sequence[Mapping[str, Any]]) -> tuple[bool, bool, str]:
    """(finished, succeeded, message): ``total`` pods Succeeded (Kueue's ``Finished`` for a group); a
    serving group never finishes."""
    if not pods or is_serving(pods[0]):
        return False, True, ""
    total = total_count(pods[0])
    if isinstance(total, str):
        return False, True, ""
    succeeded = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
    if succeeded >= total:
        return True, True, f"Pods succeeded: {succeeded}/{total}."
    return False, True, ""


def group_pods_ready(pods: Sequence[Mapping[str, Any]]) -> bool:
    """Kueue's ``PodsReady`` of a group: as many pods as its total count, every one of them Ready."""
    if not pods:
        return False
    total = total_count(pods[0])
    if not isinstance(total, int) or len(pods) < total:
        return False
    return all(pods_ready(POD, pod) for pod in pods)


def _active(pod: Mapping[str, Any]) -> bool:
    """Kueue's ``isPodRunnableOrSucceeded``: not Failed, and not deleted before it reached a node."""
    deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
    if deleting and not (pod.get("spec") or {}).get("nodeName"):
        return False
    return (pod.get("status") or {}).get("phase") != "Failed"


def _keep_first(pod: Mapping[str, Any]) -> tuple[bool, bool, str, str]:
    """Kueue's ``sortActivePods``: pods holding the managed finalizer first, then started ones before gated
    ones, then the oldest (and, for pods created in the same second, by name)."""
    meta = pod.get("metadata") or {}
    held = MANAGED_LABEL in (meta.get("finalizers") or [])
    return (not held, is_suspended(POD, pod), str(meta.get("creationTimestamp") or ""), str(meta.get("name")))


def excess_pods(
    pods: Sequence[Mapping[str, Any]], pod_sets: Sequence[Mapping[str, Any]] | None = None
) -> list[Mapping[str, Any]]:
    """The pods of a group beyond what it asked for, which Kueue's pod reconciler deletes: before the
    Workload exists, the active pods beyond the group's total count; once it exists (``pod_sets``: its
    pod sets), for each role the active pods of that role beyond its pod set's count. The pods kept are
    those holding the managed finalizer, then started, then oldest; the rest are the excess."""
    active = [p for p in pods if _active(p)]
    if pod_sets is None:
        total = total_count(active[0]) if active else 0
        if not isinstance(total, int) or len(active) <= total:
            return []
        if any(total_count(p) != total for p in active):
            return []  # a malformed group: Kueue builds nothing from it, so judges nothing in it
        return sorted(active, key=_keep_first)[total:]
    excess: list[Mapping[str, Any]] = []
    for pod_set in pod_sets:
        count = pod_set.get("count")
        if not isinstance(count, int):
            continue
        role = str(pod_set.get("name") or "")
        mine = [p for p in active if role_hash(p).lower() == role]
        excess += sorted(mine, key=_keep_first)[count:]
    return excess
