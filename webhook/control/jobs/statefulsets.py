"""The StatefulSet's side of admission: ``plan_statefulset`` is Kueue's statefulset reconciler.

One step at a time, in the order Kueue's reconciler takes them: the StatefulSet's pods are put in its group
(and their queue label kept in line with the StatefulSet's); its Workload is created once it has replicas
and a queue; a Workload left without its owner (an older one) is adopted and follows the StatefulSet's
queue; scaling to zero releases the reservation and puts the Workload on hold, and scaling up again lifts
the hold so the Workload queues once more. Ungating the pods of an admitted Workload, and stopping them
when it is evicted, is the pod group's part (``webhook.control.jobs.pod_groups``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webhook.api.integrations.builtin import POD, STATEFULSET
from webhook.api.integrations.engine import queue_name
from webhook.api.integrations.pod_groups import terminated
from webhook.api.integrations.statefulsets import (
    HOLD_MESSAGE,
    JOB_OWNER_GVK_ANNOTATION,
    JOB_OWNER_NAME_ANNOTATION,
    ON_HOLD,
    UNHOLD_MESSAGE,
    group_metadata,
    is_on_hold,
    replicas,
    statefulset_workload,
)
from webhook.control.cache.store import key_of
from webhook.control.jobs.job_plan import CreateWorkload, has_reservation
from webhook.control.kube.kinds import WORKLOADS, kind_of
from webhook.control.output.conditions import NO_RESERVATION, ConditionsEdit, is_true, now_rfc3339
from webhook.control.output.context import ControlContext

__all__ = [
    "AdoptWorkload",
    "ClearHold",
    "HoldWorkload",
    "LabelPods",
    "StatefulSetStep",
    "execute",
    "plan_statefulset",
]

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.statefulsets")


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
class HoldWorkload:
    """Scaled to zero: QuotaReserved=False ``OnHold``, no admission (the quota is released)."""

    workload: JSON


@dataclass(frozen=True, slots=True)
class ClearHold:
    """Scaled up from zero: QuotaReserved=False ``PendingEvaluation``, so the Workload queues again."""

    workload: JSON


StatefulSetStep = CreateWorkload | LabelPods | AdoptWorkload | HoldWorkload | ClearHold


def _owned_by(workload: JSON, sts: Mapping[str, Any]) -> bool:
    uid = (sts.get("metadata") or {}).get("uid")
    return any(ref.get("uid") == uid for ref in (workload.get("metadata") or {}).get("ownerReferences") or [])


def _active_reservation(workload: JSON) -> bool:
    """Kueue's ``HasActiveQuotaReservation``: reserved, not finished, active."""
    active = (workload.get("spec") or {}).get("active") is not False
    return has_reservation(workload) and not is_true(workload, "Finished") and active


def plan_statefulset(
    sts: JSON,
    pods: Sequence[JSON],
    workload: JSON | None,
    *,
    managed: bool,
    priorities: Mapping[str, int],
    pod_priorities: Mapping[str, int] | None = None,
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
            return CreateWorkload(
                statefulset_workload(
                    sts, workload_priority_classes=priorities, pod_priority_classes=pod_priorities
                )
            )
        return None
    edit: JSON = {}
    meta = sts.get("metadata") or {}
    if count > 0 and not _owned_by(workload, sts):
        owners = list((workload.get("metadata") or {}).get("ownerReferences") or [])
        owners.append(
            {
                "apiVersion": STATEFULSET.api_version,
                "kind": STATEFULSET.kind,
                "name": meta.get("name"),
                "uid": meta.get("uid"),
                "controller": True,
                "blockOwnerDeletion": True,
            }
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
        and not has_reservation(workload)
    ):
        # a Workload holding quota keeps its queue (the Workload webhook refuses the change, as Kueue's):
        # it follows once its reservation is released
        edit["spec"] = {"queueName": queue}
    pod_sets = (workload.get("spec") or {}).get("podSets") or []
    if (
        count > 0
        and not has_reservation(workload)
        and len(pod_sets) == 1
        and isinstance(pod_sets[0], dict)
        and pod_sets[0].get("count") != count
    ):
        # scaled while it held no quota (0 -> n after a hold): it queues for what it now asks
        edit.setdefault("spec", {})["podSets"] = [{**pod_sets[0], "count": count}]
    if edit:
        return AdoptWorkload(workload, edit)
    if count == 0 and _active_reservation(workload):
        return HoldWorkload(workload)
    if count > 0 and is_on_hold(workload):
        return ClearHold(workload)
    return None


def hold_status(workload: JSON, *, now: str) -> JSON | None:
    """Kueue's ``UnsetQuotaReservationWithCondition(OnHold)``; None once the reservation is gone."""
    if not _active_reservation(workload):
        return None
    edit = ConditionsEdit.of(workload, now)
    edit.set("QuotaReserved", "False", ON_HOLD, HOLD_MESSAGE)
    edit.set("Admitted", *NO_RESERVATION)
    return {"admission": None, "conditions": edit.conditions}


def unhold_status(workload: JSON, *, now: str) -> JSON | None:
    """The hold lifted: QuotaReserved=False ``PendingEvaluation`` (Kueue's reason with
    UnadmittedWorkloadsObservability on); None when it is no longer on hold."""
    if not is_on_hold(workload):
        return None
    edit = ConditionsEdit.of(workload, now)
    edit.set("QuotaReserved", "False", "PendingEvaluation", UNHOLD_MESSAGE)
    edit.set("Admitted", *NO_RESERVATION)
    return {"conditions": edit.conditions}


async def execute(context: ControlContext, sts: JSON, step: StatefulSetStep) -> None:
    """Write one step other than ``CreateWorkload`` (the reconciler's, with its event on the StatefulSet)."""
    writer = context.writer
    if isinstance(step, LabelPods):
        for pod, patch in step.patches:
            await writer.patch(kind_of(POD), pod, patch, patch_type="merge")
    elif isinstance(step, AdoptWorkload):
        await writer.patch(WORKLOADS, step.workload, step.patch, patch_type="merge")
    elif isinstance(step, HoldWorkload):
        updated = await writer.patch_status(
            WORKLOADS, step.workload, lambda current: hold_status(current, now=now_rfc3339())
        )
        if updated is not None:
            log.info(
                "workload on hold", extra={"workload": "/".join(key_of(updated)), "reason": HOLD_MESSAGE}
            )
    elif isinstance(step, ClearHold):
        updated = await writer.patch_status(
            WORKLOADS, step.workload, lambda current: unhold_status(current, now=now_rfc3339())
        )
        if updated is not None:
            log.info("workload hold lifted", extra={"workload": "/".join(key_of(updated))})
