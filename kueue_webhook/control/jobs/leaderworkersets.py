"""A LeaderWorkerSet queued as one group of pods per replica, as Kueue's leaderworkerset reconciler does it:
the mode (``LeaderWorkerSets``), its plan and the key of a pod's LeaderWorkerSet.

``plan_leaderworkerset`` takes one step at a time, in the order Kueue's reconciler takes them: the Workload
of each group index below ``spec.replicas`` (or the surge groups' count during a rolling update) is created,
an existing one follows the LeaderWorkerSet's queue while it holds no quota, the Workloads of groups that
are gone (scaled down) are deleted, and each pod is put in its group. Admitting, ungating and stopping a
group's pods is the pod group's part (``kueue_webhook.control.jobs.pod_groups``); what the objects look like
is ``kueue_webhook.api.integrations.leaderworkersets``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kueue_webhook.api.admission_gates import gates_of
from kueue_webhook.api.finalizers import is_deleting
from kueue_webhook.api.integrations import Integrations
from kueue_webhook.api.integrations.builtin import LEADERWORKERSET, POD
from kueue_webhook.api.integrations.engine import NO_CLASSES, PriorityClasses, missing_class, queue_name
from kueue_webhook.api.integrations.leaderworkersets import (
    group_metadata,
    groups,
    lws_of_pod,
    workload_index,
    workload_name_of_group,
    workload_of_group,
)
from kueue_webhook.api.integrations.managed import is_managed
from kueue_webhook.api.integrations.pod_groups import terminated
from kueue_webhook.api.multikueue import origin_uid
from kueue_webhook.api.objects import has_quota_reservation
from kueue_webhook.api.owner_references import controller_owner_reference
from kueue_webhook.control.cache.store import controller_owner, key_of
from kueue_webhook.control.jobs.job_plan import (
    AwaitPriorityClass,
    CreateWorkload,
    DeleteWorkload,
    UpdateAdmissionGates,
)
from kueue_webhook.control.jobs.own_objects import KindMode
from kueue_webhook.control.jobs.queueing import Host, ObjectKey, may_queue_in, namespace_labels
from kueue_webhook.control.jobs.statefulsets import AdoptWorkload, LabelPods
from kueue_webhook.control.kube.kinds import WORKLOADS, kind_of

__all__ = ["LeaderWorkerSetStep", "LeaderWorkerSets", "leaderworkerset_key_of", "plan_leaderworkerset"]

JSON = dict[str, Any]

LeaderWorkerSetStep = (
    CreateWorkload | AwaitPriorityClass | DeleteWorkload | AdoptWorkload | UpdateAdmissionGates | LabelPods
)


def _owned_by(workload: Mapping[str, Any], uid: str) -> bool:
    refs = (workload.get("metadata") or {}).get("ownerReferences") or []
    return any(isinstance(ref, Mapping) and ref.get("uid") == uid for ref in refs)


def plan_leaderworkerset(
    lws: JSON,
    pods: Sequence[JSON],
    workloads: Sequence[JSON],
    *,
    managed: bool,
    classes: PriorityClasses = NO_CLASSES,
) -> LeaderWorkerSetStep | None:
    """The next step for a LeaderWorkerSet (``managed``: it names a queue, or is managed without one), its
    live pods and the Workloads it owns."""
    if not managed:
        return None
    meta = lws.get("metadata") or {}
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    by_name = {str((w.get("metadata") or {}).get("name") or ""): w for w in workloads if _owned_by(w, uid)}
    # a MultiKueue worker's copy: the manager made its groups' Workloads beforehand, under the names the
    # manager's object gives them (Kueue's leaderworkerset adapter); they are adopted, not made again
    named = origin_uid(lws)
    adoptable = {
        str((w.get("metadata") or {}).get("name") or ""): w
        for w in workloads
        if named != uid and controller_owner(w) is None
    }
    count = groups(lws)
    queue = queue_name(lws) or ""
    for index in range(count):
        expected = workload_name_of_group(name, named, index)
        workload = by_name.pop(expected, None)
        if workload is None and expected in adoptable:
            owner = controller_owner_reference(LEADERWORKERSET.api_version, LEADERWORKERSET.kind, name, uid)
            return AdoptWorkload(adoptable[expected], {"metadata": {"ownerReferences": [owner]}})
        if workload is None:
            body = workload_of_group(lws, index, classes)
            missing = missing_class(body, classes)
            return AwaitPriorityClass(*missing) if missing is not None else CreateWorkload(body)
        if (workload.get("spec") or {}).get("queueName", "") != queue and not has_quota_reservation(workload):
            # a Workload holding quota keeps its queue (the Workload webhook refuses the change, as Kueue's)
            return AdoptWorkload(workload, {"spec": {"queueName": queue}})
        if (gates := gates_of(meta)) != gates_of(workload.get("metadata")):
            return UpdateAdmissionGates(workload, gates)  # Kueue's UpdateAdmissionGatedBy
    for gone in sorted(by_name.values(), key=lambda w: workload_index(w) or 0):
        return DeleteWorkload(
            gone, f"Deleted Workload {key_of(gone)[0]}/{key_of(gone)[1]}: its group is gone"
        )
    patches = []
    for pod in pods:
        if terminated(pod) or (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue  # as Kueue's pod reconciler: a pod that ended or is going keeps what it has
        patch = group_metadata(lws, pod)
        if patch is not None:
            patches.append((pod, patch))
    return LabelPods(tuple(patches)) if patches else None


def leaderworkerset_key_of(pod: Mapping[str, Any], integrations: Integrations) -> ObjectKey | None:
    """The key of the queued LeaderWorkerSet that made ``pod``, None when it is not such a pod."""
    name = lws_of_pod(pod)
    enabled = integrations.for_kind(LEADERWORKERSET.group, LEADERWORKERSET.kind)
    if name is None or enabled is None:
        return None
    return (enabled.name, key_of(dict(pod))[0], name)


class LeaderWorkerSets(KindMode):
    """The LeaderWorkerSet's queueing mode: its Workloads and its pods' groups, through
    ``plan_leaderworkerset``."""

    async def reconcile(self, host: Host, key: ObjectKey) -> bool:
        _, namespace, name = key
        context = host.context
        lws = context.store.get(kind_of(self.integration), name, namespace)
        if lws is None:
            return False  # its Workloads go with it (owner reference)
        pods_integration = context.configuration().integrations.for_kind(POD.group, POD.kind)
        if is_deleting(lws) or pods_integration is None:
            return True
        uid = str((lws.get("metadata") or {}).get("uid", ""))
        pods = [
            pod
            for pod in context.store.items(kind_of(pods_integration), namespace=namespace)
            if lws_of_pod(pod) == name
        ]
        workloads = [
            w
            for w in context.store.items(WORKLOADS, namespace=namespace)
            if _owned_by(w, uid) or controller_owner(w) is None
        ]
        inputs = host.inputs()
        step = plan_leaderworkerset(
            lws,
            pods,
            workloads,
            managed=may_queue_in(host, namespace, has_workload=bool(workloads))
            and is_managed(
                lws,
                self.integration,
                ancestry=await host.ancestry(lws, self.integration),
                config=context.configuration(),
                namespace_labels=namespace_labels(host, namespace),
            ),
            classes=inputs.priority_classes,
        )
        if step is not None:
            await host.execute(lws, step, self.integration)
        return True
