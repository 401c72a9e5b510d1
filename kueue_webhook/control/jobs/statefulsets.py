"""A StatefulSet queued as one group of its pods, as Kueue's statefulset integration does it: the
StatefulSet's mode (``StatefulSets``), its plan and its steps, all in one place.

``plan_statefulset`` takes one step at a time, in the order Kueue's reconciler takes them: the StatefulSet's
pods are put in its group (and their queue label kept in line with the StatefulSet's); its Workload is
created once it has replicas and a queue; a Workload left without its owner (an older one) is adopted and
follows the StatefulSet's queue; scaling to zero releases the reservation on purpose (Kueue's ``OnHold``
reason: the Workload is not queued again), and scaling up again queues it once more. Ungating the pods of an
admitted Workload, and stopping them when it is evicted, is the pod group's part
(``kueue_webhook.control.jobs.pod_groups``); what a StatefulSet's objects look like is
``kueue_webhook.api.integrations.statefulsets``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kueue_webhook.api.finalizers import is_deleting
from kueue_webhook.api.integrations import Integrations
from kueue_webhook.api.integrations.builtin import POD, STATEFULSET
from kueue_webhook.api.integrations.engine import NO_CLASSES, PriorityClasses, missing_class, queue_name
from kueue_webhook.api.integrations.managed import is_managed
from kueue_webhook.api.integrations.pod_groups import terminated
from kueue_webhook.api.integrations.statefulsets import (
    JOB_OWNER_GVK_ANNOTATION,
    JOB_OWNER_NAME_ANNOTATION,
    SCALED_TO_ZERO_MESSAGE,
    SCALED_TO_ZERO_REASON,
    SCALED_UP_MESSAGE,
    controlling_statefulset,
    group_metadata,
    made_by_statefulset,
    released_at_zero,
    replicas,
    statefulset_workload,
    statefulset_workload_name,
)
from kueue_webhook.api.multikueue import origin_uid
from kueue_webhook.api.objects import has_quota_reservation
from kueue_webhook.api.owner_references import controller_owner_reference
from kueue_webhook.control.cache.store import key_of
from kueue_webhook.control.jobs.job_plan import AwaitPriorityClass, CreateWorkload
from kueue_webhook.control.jobs.own_objects import KindMode
from kueue_webhook.control.jobs.queueing import Host, ObjectKey, may_queue_in, namespace_labels
from kueue_webhook.control.kube.kinds import WORKLOADS, kind_of
from kueue_webhook.control.output.conditions import NO_RESERVATION, ConditionsEdit, is_true

__all__ = [
    "AdoptWorkload",
    "LabelPods",
    "ReleaseScaledToZero",
    "RequeueScaledUp",
    "StatefulSetStep",
    "StatefulSets",
    "plan_statefulset",
    "scaled_to_zero_status",
    "scaled_up_status",
    "statefulset_key_of",
]

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class LabelPods:
    """Merge patches putting pods in their StatefulSet's group (Kueue's statefulset pod reconciler)."""

    patches: tuple[tuple[JSON, JSON], ...]


@dataclass(frozen=True, slots=True)
class AdoptWorkload:
    """A merge patch of the Workload: its StatefulSet as owner again, or the StatefulSet's queue."""

    workload: JSON
    patch: JSON


@dataclass(frozen=True, slots=True)
class ReleaseScaledToZero:
    """Scaled to zero: QuotaReserved=False ``OnHold``, no admission (the quota is released, and the
    Workload is not queued again while it stays at zero)."""

    workload: JSON


@dataclass(frozen=True, slots=True)
class RequeueScaledUp:
    """Scaled up from zero: QuotaReserved=False ``PendingEvaluation``, so the Workload queues again."""

    workload: JSON


StatefulSetStep = (
    CreateWorkload | AwaitPriorityClass | LabelPods | AdoptWorkload | ReleaseScaledToZero | RequeueScaledUp
)


def _owned_by(workload: JSON, sts: Mapping[str, Any]) -> bool:
    uid = (sts.get("metadata") or {}).get("uid")
    return any(ref.get("uid") == uid for ref in (workload.get("metadata") or {}).get("ownerReferences") or [])


def _active_reservation(workload: JSON) -> bool:
    """Kueue's ``HasActiveQuotaReservation``: reserved, not finished, active."""
    active = (workload.get("spec") or {}).get("active") is not False
    return has_quota_reservation(workload) and not is_true(workload, "Finished") and active


def plan_statefulset(
    sts: JSON,
    pods: Sequence[JSON],
    workload: JSON | None,
    *,
    managed: bool,
    classes: PriorityClasses = NO_CLASSES,
) -> StatefulSetStep | None:
    """The next step for a queued StatefulSet (``managed``: it names a queue, or is managed without one),
    its pods (live ones made by it) and its Workload (by Kueue's name for it)."""
    if not managed:
        return None
    patches = []
    for pod in pods:
        if terminated(pod) or (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue  # as Kueue's pod reconciler: a pod that ended or is going keeps what it has
        patch = group_metadata(sts, pod, managed=managed)
        if patch is not None:
            patches.append((pod, patch))
    if patches:
        return LabelPods(tuple(patches))
    count = replicas(sts)
    if workload is None:
        if count > 0:
            body = statefulset_workload(sts, classes)
            missing = missing_class(body, classes)
            return AwaitPriorityClass(*missing) if missing is not None else CreateWorkload(body)
        return None
    edit: JSON = {}
    meta = sts.get("metadata") or {}
    if count > 0 and not _owned_by(workload, sts):
        owners = list((workload.get("metadata") or {}).get("ownerReferences") or [])
        owners.append(
            controller_owner_reference(
                STATEFULSET.api_version, STATEFULSET.kind, meta.get("name"), meta.get("uid")
            )
        )
        edit["metadata"] = {
            "ownerReferences": owners,
            "annotations": {
                JOB_OWNER_GVK_ANNOTATION: f"{STATEFULSET.api_version}, Kind={STATEFULSET.kind}",
                JOB_OWNER_NAME_ANNOTATION: meta.get("name"),
            },
        }
    queue = queue_name(sts) or ""
    if (
        count > 0
        and (workload.get("spec") or {}).get("queueName", "") != queue
        and not has_quota_reservation(workload)
    ):
        # a Workload holding quota keeps its queue (the Workload webhook refuses the change, as Kueue's):
        # it follows once its reservation is released
        edit["spec"] = {"queueName": queue}
    pod_sets = (workload.get("spec") or {}).get("podSets") or []
    if (
        count > 0
        and not has_quota_reservation(workload)
        and len(pod_sets) == 1
        and isinstance(pod_sets[0], dict)
        and pod_sets[0].get("count") != count
    ):
        # scaled while it held no quota (0 -> n after its release at zero): it queues for what it now asks
        edit.setdefault("spec", {})["podSets"] = [{**pod_sets[0], "count": count}]
    if edit:
        return AdoptWorkload(workload, edit)
    if count == 0 and _active_reservation(workload):
        return ReleaseScaledToZero(workload)
    if count > 0 and released_at_zero(workload):
        return RequeueScaledUp(workload)
    return None


def scaled_to_zero_status(workload: JSON, *, now: str) -> JSON | None:
    """Kueue's ``UnsetQuotaReservationWithCondition(OnHold)``; None once the reservation is gone."""
    if not _active_reservation(workload):
        return None
    edit = ConditionsEdit.of(workload, now)
    edit.set("QuotaReserved", "False", SCALED_TO_ZERO_REASON, SCALED_TO_ZERO_MESSAGE)
    edit.set("Admitted", *NO_RESERVATION)
    return {"admission": None, "conditions": edit.conditions}


def scaled_up_status(workload: JSON, *, now: str) -> JSON | None:
    """Scaled up again: QuotaReserved=False ``PendingEvaluation`` (Kueue's reason with
    UnadmittedWorkloadsObservability on); None when it is no longer released at zero."""
    if not released_at_zero(workload):
        return None
    edit = ConditionsEdit.of(workload, now)
    edit.set("QuotaReserved", "False", "PendingEvaluation", SCALED_UP_MESSAGE)
    edit.set("Admitted", *NO_RESERVATION)
    return {"conditions": edit.conditions}


def statefulset_key_of(pod: Mapping[str, Any], integrations: Integrations) -> ObjectKey | None:
    """The key of the queued StatefulSet that made ``pod`` (its pod came or changed: it may have a pod to
    put in its group), None when the pod is not a queued StatefulSet's."""
    owner = controlling_statefulset(pod) if made_by_statefulset(pod) else None
    statefulsets = integrations.for_kind(STATEFULSET.group, STATEFULSET.kind)
    if owner is None or statefulsets is None:
        return None
    return (statefulsets.name, key_of(dict(pod))[0], str(owner.get("name", "")))


class StatefulSets(KindMode):
    """The StatefulSet's queueing mode: its pods and its Workload, through ``plan_statefulset``."""

    async def reconcile(self, host: Host, key: ObjectKey) -> bool:
        _, namespace, name = key
        context = host.context
        sts = context.store.get(kind_of(self.integration), name, namespace)
        if sts is None:
            await host.delete_workload_of_deleted(
                key
            )  # the garbage collector would do it too; now frees quota at once
            return False
        pods_integration = context.configuration().integrations.for_kind(POD.group, POD.kind)
        if is_deleting(sts) or pods_integration is None:
            return True  # a deleted StatefulSet's Workload goes with it (owner reference)
        uid = str((sts.get("metadata") or {}).get("uid", ""))
        pods = [
            pod
            for pod in context.store.items(kind_of(pods_integration), namespace=namespace)
            if made_by_statefulset(pod) and (controlling_statefulset(pod) or {}).get("uid") == uid
        ]
        inputs = host.inputs()
        # a MultiKueue worker's copy finds the Workload copy named after the manager's StatefulSet
        workload = context.store.get(WORKLOADS, statefulset_workload_name(name, origin_uid(sts)), namespace)
        step = plan_statefulset(
            sts,
            pods,
            workload,
            managed=may_queue_in(host, namespace, has_workload=workload is not None)
            and is_managed(
                sts,
                self.integration,
                ancestry=await host.ancestry(sts, self.integration),
                config=context.configuration(),
                namespace_labels=namespace_labels(host, namespace),
            ),
            classes=inputs.priority_classes,
        )
        if step is not None:
            await host.execute(sts, step, self.integration)
        return True
