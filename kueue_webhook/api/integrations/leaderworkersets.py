"""A LeaderWorkerSet queued through its pods, one Workload per group, as Kueue's leaderworkerset integration
does it (``pkg/controller/jobs/leaderworkerset``).

A LeaderWorkerSet runs ``spec.replicas`` groups of ``spec.leaderWorkerTemplate.size`` pods: a leader made
from ``leaderTemplate`` (or, without one, from the worker template) and ``size - 1`` workers. The LWS
controller makes the pods (through StatefulSets of its own) and labels each with the set's name and its
group's index. Kueue never suspends the LeaderWorkerSet itself: its webhook marks both pod templates (queue
and priority labels, the ``pod-suspending-parent`` and serving annotations), so every pod is created gated,
and its controller makes one Workload per group index (Kueue's ``GetWorkloadNameForOwnerWithGVK`` of
``<name>-<index>``, owned by the LeaderWorkerSet) with pod sets ``leader`` (1) and ``worker`` (size - 1), or
``main`` (size) without a leader template, and puts each pod in its group's pod group (group name and
prebuilt Workload, total count ``size``, its role ``leader``, ``worker`` or ``main``). The pod group
machinery then admits and ungates a group's pods together, and stops them together. Scaling down deletes the
Workloads of the groups that are gone (during a rolling update with a surge, the surge groups the LWS
controller reports keep theirs); a LeaderWorkerSet that moves to another queue moves its Workloads.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kueue_webhook.api.admission_gates import ANNOTATION as GATES_ANNOTATION
from kueue_webhook.api.admission_gates import gates_of
from kueue_webhook.api.finalizers import RESOURCE_IN_USE
from kueue_webhook.api.integrations.builtin import LEADERWORKERSET, MANAGED_LABEL, POD
from kueue_webhook.api.integrations.engine import (
    JOB_UID_LABEL,
    NO_CLASSES,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    PriorityClasses,
    is_suspended,
    queue_name,
    workload_name,
)
from kueue_webhook.api.integrations.engine.priority import (
    POD_PRIORITY_GROUP,
    class_priority,
    priority_fields,
)
from kueue_webhook.api.integrations.pod_groups import (
    GROUP_NAME_LABEL,
    IS_GROUP_WORKLOAD_ANNOTATION,
    PREBUILT_WORKLOAD,
    ROLE_HASH_ANNOTATION,
    TOTAL_COUNT_ANNOTATION,
    group_name,
)
from kueue_webhook.api.integrations.statefulsets import (
    JOB_OWNER_GVK_ANNOTATION,
    JOB_OWNER_NAME_ANNOTATION,
    SUSPENDING_PARENT_ANNOTATION,
)
from kueue_webhook.api.multikueue import origin_uid
from kueue_webhook.api.objects import API_VERSION, GROUP
from kueue_webhook.api.owner_references import controller_owner_reference
from kueue_webhook.api.topology_request import POD_INDEX_LABELS, template_topology_request

__all__ = [
    "GROUP_INDEX_LABEL",
    "LEADER_NAME_ANNOTATION",
    "SET_NAME_LABEL",
    "WORKLOAD_INDEX_ANNOTATION",
    "awaits_group",
    "group_index",
    "group_metadata",
    "group_size",
    "groups",
    "lws_of_pod",
    "made_by_leaderworkerset",
    "replicas",
    "workload_index",
    "workload_name_of_group",
    "workload_of_group",
]

JSON = dict[str, Any]

#: the LWS controller's labels and annotation on the pods it makes
SET_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
LEADER_NAME_ANNOTATION = "leaderworkerset.sigs.k8s.io/leader-name"
_LWS_PREFIX = "leaderworkerset.sigs.k8s.io"
#: the group index a Workload is for (Kueue's ``ComponentWorkloadIndexAnnotation``)
WORKLOAD_INDEX_ANNOTATION = "kueue.x-k8s.io/component-workload-index"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _map(obj: Mapping[str, Any], field: str) -> Mapping[str, Any]:
    found = _meta(obj).get(field)
    return found if isinstance(found, Mapping) else {}


def _lwt(lws: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = lws.get("spec")
    found = spec.get("leaderWorkerTemplate") if isinstance(spec, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def replicas(lws: Mapping[str, Any]) -> int:
    """``spec.replicas``: how many groups (1 when unset, as Kueue reads it)."""
    spec = lws.get("spec")
    return _int(spec.get("replicas") if isinstance(spec, Mapping) else None, 1)


def _surge(lws: Mapping[str, Any]) -> int:
    """``spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge`` as an integer (a percentage counts as 0,
    as apimachinery's ``IntValue`` reads one)."""
    spec = lws.get("spec")
    strategy = spec.get("rolloutStrategy") if isinstance(spec, Mapping) else None
    rolling = strategy.get("rollingUpdateConfiguration") if isinstance(strategy, Mapping) else None
    surge = rolling.get("maxSurge") if isinstance(rolling, Mapping) else None
    if isinstance(surge, str):
        return int(surge) if surge.lstrip("-").isdigit() else 0
    return _int(surge, 0)


def groups(lws: Mapping[str, Any]) -> int:
    """How many groups have a Workload (Kueue's ``filterWorkloads``): ``spec.replicas``, or, during a rolling
    update with a surge, the groups the LWS controller reports (``status.replicas``) when more."""
    count = replicas(lws)
    status = lws.get("status")
    reported = _int(status.get("replicas") if isinstance(status, Mapping) else None, 0)
    updated = _int(status.get("updatedReplicas") if isinstance(status, Mapping) else None, 0)
    if reported > count and _surge(lws) > 0 and updated < count:
        return reported
    return count


def group_size(lws: Mapping[str, Any]) -> int:
    """``spec.leaderWorkerTemplate.size``: the pods of a group, its leader included (1 when unset)."""
    return _int(_lwt(lws).get("size"), 1)


def workload_name_of_group(name: str, uid: str, index: int | str) -> str:
    """Kueue's ``GetWorkloadName``: the Workload name of ``<name>-<index>`` for the LeaderWorkerSet's kind."""
    return workload_name(f"{name}-{index}", uid, kind=LEADERWORKERSET.kind, group=LEADERWORKERSET.group)


def _template(raw: Any) -> JSON:
    """A pod template as a Workload holds it: the LWS controller's own labels and annotations left out
    (its name label kept), as Kueue's ``newPodSet``."""
    template: JSON = copy.deepcopy(dict(raw)) if isinstance(raw, Mapping) else {}
    meta = template.get("metadata")
    if isinstance(meta, dict):
        for field in ("labels", "annotations"):
            values = meta.get(field)
            if isinstance(values, dict):
                meta[field] = {
                    k: v for k, v in values.items() if not k.startswith(_LWS_PREFIX) or k == SET_NAME_LABEL
                }
    return template


#: the pod label ranking an LWS worker within its group (the leader is rank 0)
WORKER_INDEX_LABEL = POD_INDEX_LABELS[(LEADERWORKERSET.group, LEADERWORKERSET.kind)]


def _pod_sets(lws: Mapping[str, Any]) -> list[JSON]:
    """Kueue's ``podSets``: ``leader`` (1) and ``worker`` (size - 1), or ``main`` (size)."""
    lwt = _lwt(lws)
    size = group_size(lws)
    leader = lwt.get("leaderTemplate")
    out: list[JSON] = []
    workers = lwt.get("workerTemplate")
    if isinstance(leader, Mapping):
        out.append(_pod_set("leader", 1, leader, None))
        out.append(_pod_set("worker", size - 1, workers, WORKER_INDEX_LABEL))
    else:
        out.append(_pod_set("main", size, workers, WORKER_INDEX_LABEL))
    return out


def _pod_set(name: str, count: int, raw: Any, index_label: str | None) -> JSON:
    """One pod set, with the ``topologyRequest`` its template's annotations ask for (Kueue's ``newPodSet``:
    the workers ranked by the worker index, the leader by none)."""
    pod_set: JSON = {"name": name, "count": count, "template": _template(raw)}
    if isinstance(raw, Mapping) and (topology := template_topology_request(raw, index_label)) is not None:
        pod_set["topologyRequest"] = topology
    return pod_set


def _named_class(lws: Mapping[str, Any]) -> tuple[str, str] | None:
    """Kueue's ``ExtractPriority`` with no class of the kind's own: (API group, name) of the
    WorkloadPriorityClass label, else of the first pod template naming a PriorityClass, else None."""
    label = _map(lws, "labels").get(PRIORITY_CLASS_LABEL)
    if isinstance(label, str) and label:
        return GROUP, label
    for pod_set in _pod_sets(lws):
        spec = pod_set["template"].get("spec")
        name = spec.get("priorityClassName") if isinstance(spec, Mapping) else None
        if isinstance(name, str) and name:
            return POD_PRIORITY_GROUP, name
    return None


def workload_of_group(
    lws: Mapping[str, Any],
    index: int,
    classes: PriorityClasses = NO_CLASSES,
) -> JSON:
    """The Workload of group ``index`` (Kueue's ``constructWorkload``): a group Workload owned by the
    LeaderWorkerSet, its priority from the WorkloadPriorityClass label or the first template's class."""
    meta = _meta(lws)
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    pod_sets = _pod_sets(lws)
    value, class_name, class_group = class_priority(_named_class(lws), classes)
    spec: JSON = {"active": True, "podSets": pod_sets, "queueName": queue_name(lws) or ""}
    spec.update(priority_fields(value, class_name, class_group))
    labels = {JOB_UID_LABEL: uid} if uid and len(uid) <= 63 else {}
    priority_class = _map(lws, "labels").get(PRIORITY_CLASS_LABEL)
    if isinstance(priority_class, str) and priority_class:
        labels[PRIORITY_CLASS_LABEL] = priority_class
    metadata: JSON = {
        # a MultiKueue worker's copy names its Workloads after the manager's LeaderWorkerSet, as it did
        "name": workload_name_of_group(name, origin_uid(lws), index),
        "namespace": meta.get("namespace") or "default",
        "labels": labels,
        "annotations": {
            IS_GROUP_WORKLOAD_ANNOTATION: "true",
            JOB_OWNER_GVK_ANNOTATION: f"{LEADERWORKERSET.api_version}, Kind={LEADERWORKERSET.kind}",
            JOB_OWNER_NAME_ANNOTATION: name,
            WORKLOAD_INDEX_ANNOTATION: str(index),
            # Kueue's PropagateAdmissionGatedByAnnotation from the LeaderWorkerSet
            **({GATES_ANNOTATION: gates} if (gates := gates_of(meta)) else {}),
        },
        "finalizers": [RESOURCE_IN_USE],
        "ownerReferences": [
            controller_owner_reference(LEADERWORKERSET.api_version, LEADERWORKERSET.kind, name, uid)
        ],
    }
    return {"apiVersion": API_VERSION, "kind": "Workload", "metadata": metadata, "spec": spec}


def workload_index(workload: Mapping[str, Any]) -> int | None:
    """The group index a LeaderWorkerSet's Workload is for, None when it says none."""
    raw = _map(workload, "annotations").get(WORKLOAD_INDEX_ANNOTATION)
    return int(raw) if isinstance(raw, str) and raw.isdigit() else None


def made_by_leaderworkerset(pod: Mapping[str, Any]) -> bool:
    """Made from a queued LeaderWorkerSet's template (marked by the webhook) by the LWS controller."""
    marked = _map(pod, "annotations").get(SUSPENDING_PARENT_ANNOTATION) == LEADERWORKERSET.name
    return marked and isinstance(_map(pod, "labels").get(SET_NAME_LABEL), str)


def lws_of_pod(pod: Mapping[str, Any]) -> str | None:
    """The name of the queued LeaderWorkerSet that made ``pod``, None when it is not such a pod."""
    return str(_map(pod, "labels")[SET_NAME_LABEL]) if made_by_leaderworkerset(pod) else None


def group_index(pod: Mapping[str, Any]) -> str | None:
    value = _map(pod, "labels").get(GROUP_INDEX_LABEL)
    return value if isinstance(value, str) and value else None


def awaits_group(pod: Mapping[str, Any]) -> bool:
    """A LeaderWorkerSet's pod not in its group yet: its group's Workload is the LeaderWorkerSet's."""
    return made_by_leaderworkerset(pod) and group_name(pod) is None


def _role(lws: Mapping[str, Any], pod: Mapping[str, Any]) -> str:
    """Kueue's role of an LWS pod: ``main`` without a leader template, else ``leader`` for the pod that
    names no leader (the leader), ``worker`` for the others."""
    if not isinstance(_lwt(lws).get("leaderTemplate"), Mapping):
        return "main"
    return "worker" if LEADER_NAME_ANNOTATION in _map(pod, "annotations") else "leader"


def group_metadata(lws: Mapping[str, Any], pod: Mapping[str, Any]) -> JSON | None:
    """The merge patch putting ``pod`` in its group (Kueue's LWS pod reconciler ``setDefault``), or keeping
    a gated pod's queue label in line with the LeaderWorkerSet's; None when there is nothing to do (or the
    pod has no group index yet)."""
    queue = queue_name(lws)
    labels = _map(pod, "labels")
    index = group_index(pod)
    if index is None:
        return None
    meta = _meta(lws)
    name = workload_name_of_group(str(meta.get("name") or ""), origin_uid(lws), index)
    if group_name(pod) == name:
        # a started pod's queue label is immutable (the pod webhook's rule): only gated ones move
        if queue and is_suspended(POD, pod) and labels.get(QUEUE_NAME_LABEL) != queue:
            return {"metadata": {"labels": {QUEUE_NAME_LABEL: queue}}}
        return None
    new_labels: JSON = {MANAGED_LABEL: "true"}
    if queue and is_suspended(POD, pod):
        new_labels[QUEUE_NAME_LABEL] = queue
    annotations = {
        GROUP_NAME_LABEL: name,
        PREBUILT_WORKLOAD: name,
        TOTAL_COUNT_ANNOTATION: str(group_size(lws)),
        ROLE_HASH_ANNOTATION: _role(lws, pod),
    }
    return {"metadata": {"labels": new_labels, "annotations": annotations}}
