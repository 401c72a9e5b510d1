"""The one executor of plan steps: every step a plan returns (``job_plan``, ``pod_groups``, ``statefulsets``)
is written here, whichever kind of object it is for.

A plan is pure and returns one step; executing it is a few API writes and the Event or log line that says
what was done. Each step type has one method, found through a table keyed by the step's type, so a new step
is one method and one table entry, and a step nobody can execute fails loudly rather than being skipped. The
writes are the same for every kind: the object's REST resource comes from its integration.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

from kueue_webhook.api.admission_gates import ANNOTATION as GATES_ANNOTATION
from kueue_webhook.api.finalizers import RESOURCE_IN_USE, is_deleting
from kueue_webhook.api.integrations import JOB, Integration, engine
from kueue_webhook.api.integrations.builtin import POD
from kueue_webhook.api.integrations.engine.priority import class_kind
from kueue_webhook.api.integrations.reclaimable import recorded_reclaimable
from kueue_webhook.api.integrations.statefulsets import SCALED_TO_ZERO_MESSAGE
from kueue_webhook.api.objects import GROUP, has_quota_reservation
from kueue_webhook.api.pods_ready import STARTED
from kueue_webhook.control.cache.store import key_of
from kueue_webhook.control.jobs.job_plan import (
    AwaitPriorityClass,
    CreateWorkload,
    DeleteObjects,
    DeleteWorkload,
    FinishWorkload,
    ReleaseObjects,
    ReleaseReservation,
    RemoveExcessPods,
    RemoveFinalizer,
    StartJob,
    StartPods,
    Step,
    StopJob,
    SyncPodsReady,
    UpdateAdmissionGates,
    UpdatePodSets,
    UpdateQueueName,
    UpdateReclaimablePods,
    reclaimable_to_record,
)
from kueue_webhook.control.jobs.statefulsets import (
    AdoptWorkload,
    LabelPods,
    ReleaseScaledToZero,
    RequeueScaledUp,
    StatefulSetStep,
    scaled_to_zero_status,
    scaled_up_status,
)
from kueue_webhook.control.kube.client import ApiError
from kueue_webhook.control.kube.kinds import WORKLOADS, kind_of
from kueue_webhook.control.output.conditions import (
    finished_status,
    is_true,
    now_rfc3339,
    pods_ready_status,
    released_status,
    start_failed_status,
    termination_target_status,
)
from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.control.output.milestones import record_created, record_ready
from kueue_webhook.control.output.writers import refused_fields

__all__ = ["AnyStep", "StepExecutor", "start_refused"]

JSON = dict[str, Any]
AnyStep = Step | StatefulSetStep
log = logging.getLogger("kueue_webhook.reconciler")
#: the StatefulSet steps' lines keep the logger they were always written under
statefulset_log = logging.getLogger("kueue_webhook.statefulsets")
_CONDITION_REASON = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")


def start_refused(exc: ApiError) -> bool:
    """The API server answered no to starting a Job (an admission webhook, RBAC, a bad request), as opposed
    to a conflict to decide again from (409), a throttle (429) or a server in trouble (5xx)."""
    return 400 <= exc.status < 500 and exc.status not in (404, 409, 429)


class StepExecutor:
    """Writes one step for an object of an integration (the object the step is about: the Job, the first pod
    of a group, the StatefulSet), with its Events."""

    def __init__(self, context: ControlContext) -> None:
        self.context = context
        self._handlers: Mapping[type[Any], Callable[[JSON, Any, Integration], Awaitable[None]]] = {
            CreateWorkload: self._create_workload,
            AwaitPriorityClass: self._await_priority_class,
            FinishWorkload: self._finish_workload,
            StartJob: self._start_job,
            StopJob: self._stop_job,
            DeleteObjects: self._delete_objects,
            ReleaseObjects: self._release_objects,
            RemoveExcessPods: self._remove_excess_pods,
            StartPods: self._start_pods,
            RemoveFinalizer: self._remove_finalizer,
            UpdatePodSets: self._update_pod_sets,
            UpdateQueueName: self._update_queue_name,
            UpdateAdmissionGates: self._update_admission_gates,
            UpdateReclaimablePods: self._update_reclaimable_pods,
            DeleteWorkload: self._delete_workload,
            SyncPodsReady: self._sync_pods_ready,
            ReleaseReservation: self._release_reservation,
            LabelPods: self._label_pods,
            AdoptWorkload: self._adopt_workload,
            ReleaseScaledToZero: self._release_scaled_to_zero,
            RequeueScaledUp: self._requeue_scaled_up,
        }

    def executes(self, step_type: type[Any]) -> bool:
        """Whether steps of ``step_type`` have a writer here."""
        return step_type in self._handlers

    async def run(self, obj: JSON, step: AnyStep, integration: Integration = JOB) -> None:
        await self._handlers[type(step)](obj, step, integration)

    def _on_object(self, obj: JSON, reason: str, message: str) -> None:
        """The Normal Event on the object that says a step was taken."""
        self.context.events.record(obj, type="Normal", reason=reason, message=message)

    # -- the Workload -----------------------------------------------------------------------------------

    async def _create_workload(self, obj: JSON, step: CreateWorkload, integration: Integration) -> None:
        created = await self.context.writer.create(WORKLOADS, step.body)
        if created is not None:
            record_created(self.context, obj, integration.kind, created)
            namespace = key_of(obj)[0]
            self._on_object(
                obj, "CreatedWorkload", f"Created Workload: {namespace}/{created['metadata']['name']}"
            )

    async def _await_priority_class(self, obj: JSON, step: AwaitPriorityClass, _: Integration) -> None:
        """Nothing to write: Kueue says so on the object for a WorkloadPriorityClass (a Warning, folded with
        its repeats) and only in its log for a PriorityClass."""
        if step.group == GROUP:
            message = f'WorkloadPriorityClass "{step.name}" not found'
            self.context.events.record(
                obj, type="Warning", reason="WorkloadPriorityClassNotFound", message=message
            )
        log.info(
            "no Workload until its %s %s exists",
            class_kind(step.group),
            step.name,
            extra={"object": "/".join(key_of(obj))},
        )

    async def _finish_workload(self, obj: JSON, step: FinishWorkload, _: Integration) -> None:
        reason, message = step.reason, step.message
        updated = await self.context.writer.patch_status(
            WORKLOADS,
            step.workload,
            lambda current: finished_status(current, reason=reason, message=message, now=now_rfc3339()),
        )
        if updated is not None:
            wl_name = updated["metadata"]["name"]
            self._on_object(
                obj, "FinishedWorkload", f"Workload '{key_of(obj)[0]}/{wl_name}' is declared finished"
            )
            self.context.events.record(
                updated,
                type="Normal" if reason == "Succeeded" else "Warning",
                reason="Finished",
                message=message,
            )

    async def _remove_finalizer(self, _: JSON, step: RemoveFinalizer, __: Integration) -> None:
        if await self.context.writer.remove_finalizer(WORKLOADS, step.workload, RESOURCE_IN_USE) is not None:
            log.info(
                "finalizer removed", extra={"workload": "/".join(key_of(step.workload)), "reason": step.why}
            )

    async def _update_pod_sets(self, obj: JSON, step: UpdatePodSets, _: Integration) -> None:
        # null removes a limit the object no longer has (RFC 7386)
        spec = {"podSets": step.pod_sets, "maximumExecutionTimeSeconds": step.maximum_execution_time_seconds}
        updated = await self.context.writer.patch(
            WORKLOADS, step.workload, {"spec": spec}, patch_type="merge"
        )
        if updated is not None:
            self._on_object(
                obj,
                "UpdatedWorkload",
                f"Updated not matching Workload for suspended job: {'/'.join(key_of(updated))}",
            )

    async def _update_queue_name(self, _: JSON, step: UpdateQueueName, __: Integration) -> None:
        moved = await self.context.writer.patch(
            WORKLOADS, step.workload, {"spec": {"queueName": step.queue_name}}, patch_type="merge"
        )
        if moved is not None:
            log.info(
                "job changed queue-name, workload updated",
                extra={"workload": "/".join(key_of(moved)), "queue": step.queue_name},
            )

    async def _update_admission_gates(self, obj: JSON, step: UpdateAdmissionGates, __: Integration) -> None:
        # null removes the annotation (RFC 7386)
        patch = {"metadata": {"annotations": {GATES_ANNOTATION: step.gates or None}}}
        updated = await self.context.writer.patch(WORKLOADS, step.workload, patch, patch_type="merge")
        if updated is not None:
            self._on_object(obj, "UpdatedWorkload", f'Updated workload AdmissionGatedBy to "{step.gates}"')

    async def _update_reclaimable_pods(self, _: JSON, step: UpdateReclaimablePods, __: Integration) -> None:
        counts = dict(step.counts)

        def reclaimable_status(current: JSON) -> JSON | None:
            wanted = reclaimable_to_record(counts, current)
            if wanted == recorded_reclaimable(current):
                return None
            # null removes the list (RFC 7386)
            entries = [{"name": name, "count": count} for name, count in sorted(wanted.items())]
            return {"reclaimablePods": entries or None}

        updated = await self.context.writer.patch_status(WORKLOADS, step.workload, reclaimable_status)
        if updated is not None:
            log.info(
                "updated reclaimable pods",
                extra={"workload": "/".join(key_of(updated)), "reclaimable": counts},
            )

    async def _delete_workload(self, obj: JSON, step: DeleteWorkload, _: Integration) -> None:
        if await self.context.writer.delete(WORKLOADS, step.workload):
            self._on_object(obj, "DeletedWorkload", step.message)

    async def _sync_pods_ready(self, _: JSON, step: SyncPodsReady, __: Integration) -> None:
        condition = step.condition
        updated = await self.context.writer.patch_status(
            WORKLOADS,
            step.workload,
            lambda current: (
                pods_ready_status(current, condition=condition, now=now_rfc3339())
                if has_quota_reservation(current) and not is_true(current, "Evicted")
                else None
            ),
        )
        if updated is not None:
            log.info(
                "pods ready condition",
                extra={"workload": "/".join(key_of(updated)), "status": condition[0], "reason": condition[1]},
            )
            if condition[:2] == ("True", STARTED):  # the first start, not a recovery (Kueue's rule)
                record_ready(self.context, updated)

    async def _release_reservation(self, _: JSON, step: ReleaseReservation, __: Integration) -> None:
        message = step.message
        await self.context.writer.patch_status(
            WORKLOADS,
            step.workload,
            lambda current: (
                released_status(current, reason="Pending", message=message, now=now_rfc3339())
                if has_quota_reservation(current)
                else None
            ),
        )

    # -- the queued object ------------------------------------------------------------------------------

    async def _start_job(self, job: JSON, step: StartJob, integration: Integration) -> None:
        """Unsuspend an admitted object; a refusal is said on the Workload and the object, never only
        logged."""
        admitted = f"Admitted by clusterQueue {step.cluster_queue}"
        try:
            started = await self.context.writer.patch(kind_of(integration), job, step.patch)
        except ApiError as exc:
            if exc.status == 422 and refused_fields(exc):
                # The API server refuses the Job as admission would start it (a flavor's nodeSelector or
                # toleration it cannot accept): a retry cannot help, so, like Kueue for a start that can
                # never succeed, the Workload finishes as FailedToStart, which frees its quota and says why.
                self.context.events.record(job, type="Warning", reason="FailedToStart", message=exc.message)
                await self.run(job, FinishWorkload(step.workload, "FailedToStart", exc.message), integration)
                return
            if start_refused(exc):
                await self._record_refusal(job, step.workload, exc, admitted, integration.kind)
            raise  # retried with backoff: the refusal may be lifted (a webhook or its configuration fixed)
        if started is None:
            return
        self._on_object(job, "Started", admitted)
        await self.context.writer.patch_status(
            WORKLOADS,
            self._current(step.workload),
            lambda current: start_failed_status(
                current, failed=False, reason="Started", message=admitted, now=now_rfc3339()
            ),
        )

    async def _record_refusal(
        self, job: JSON, workload: JSON, exc: ApiError, admitted: str, kind: str
    ) -> None:
        """StartFailed=True on the Workload with the server's answer, and a Warning Event on both objects."""
        message = (
            f"{admitted}, but the API server refused to start the {kind} ({exc.status} {exc.reason}): "
            f"{exc.message}; retrying"
        )
        # the server's Status reason (Forbidden, BadRequest...); a webhook may send any text, the condition
        # reason must be CamelCase (metav1.Condition's pattern)
        reason = exc.reason if _CONDITION_REASON.fullmatch(exc.reason) else "Refused"
        updated = await self.context.writer.patch_status(
            WORKLOADS,
            self._current(workload),
            lambda current: start_failed_status(
                current, failed=True, reason=reason, message=message, now=now_rfc3339()
            ),
        )
        if updated is not None:
            log.warning(
                "job start refused",
                extra={"job": "/".join(key_of(job)), "status": exc.status, "error": message},
            )
            self.context.events.record(updated, type="Warning", reason="FailedToStart", message=message)
            self.context.events.record(job, type="Warning", reason="FailedToStart", message=message)

    def _current(self, workload: JSON) -> JSON:
        """The store's copy of ``workload`` (newer than the one planned from, after our own writes)."""
        namespace, name = key_of(workload)
        return self.context.store.get(WORKLOADS, name, namespace) or workload

    async def _stop_job(self, job: JSON, step: StopJob, integration: Integration) -> None:
        writer, kind = self.context.writer, kind_of(integration)
        target: JSON | None = job
        if step.first:
            target = await writer.patch(kind, job, list(step.first))
            if target is not None:
                self._on_object(job, "Stopped", step.message)
        if target is not None and step.clear_start_time:
            target = await self._clear_start_time(target, integration)
        restored = target is not None and await writer.patch(kind, target, step.patch) is not None
        if restored and not step.first:
            self._on_object(job, "Stopped", step.message)

    async def _clear_start_time(self, job: JSON, integration: Integration) -> JSON | None:
        """Clear a suspended Job's ``status.startTime`` through the status subresource, as Kueue's
        ``Job.Stop`` does, so that kube-apiserver accepts its template's restore (the Job controller clears
        it too, but only once it has caught up with the suspension). The Job as it is then; None if gone."""

        def clear(current: JSON) -> JSON | None:
            if not engine.start_time_blocks_restore(integration, current):
                return None
            return {"startTime": None}

        if not engine.start_time_blocks_restore(integration, job):
            return job
        cleared = await self.context.writer.patch_status(kind_of(integration), job, clear)
        return job if cleared is None else cleared

    async def _delete_objects(self, _: JSON, step: DeleteObjects, integration: Integration) -> None:
        writer, kind = self.context.writer, kind_of(integration)
        mark = partial(termination_target_status, reason=step.reason, message=step.message)
        for obj in step.objects:
            if step.reason:
                marked = await writer.patch_status(
                    kind, obj, lambda current: mark(current, now=now_rfc3339())
                )
                if marked is None:
                    continue  # already gone
                obj = marked
            if await writer.delete(kind, obj):
                self._on_object(obj, "Stopped", step.message)

    async def _release_objects(self, _: JSON, step: ReleaseObjects, integration: Integration) -> None:
        for obj in step.objects:
            await self.context.writer.remove_finalizer(
                kind_of(integration), obj, engine.own_finalizer(integration)
            )

    async def _remove_excess_pods(self, _: JSON, step: RemoveExcessPods, integration: Integration) -> None:
        writer, kind = self.context.writer, kind_of(integration)
        for obj in step.objects:
            await writer.remove_finalizer(kind, obj, engine.own_finalizer(integration))
            if not is_deleting(obj) and await writer.delete(kind, obj):
                self._on_object(obj, "ExcessPodDeleted", "Excess pod deleted")

    async def _start_pods(self, _: JSON, step: StartPods, integration: Integration) -> None:
        admitted = f"Admitted by clusterQueue {step.cluster_queue}"
        for obj, patch in step.patches:
            if await self.context.writer.patch(kind_of(integration), obj, patch) is not None:
                self._on_object(obj, "Started", admitted)

    # -- a StatefulSet's pods and Workload --------------------------------------------------------------

    async def _label_pods(self, _: JSON, step: LabelPods, __: Integration) -> None:
        for pod, patch in step.patches:
            await self.context.writer.patch(kind_of(POD), pod, patch, patch_type="merge")

    async def _adopt_workload(self, _: JSON, step: AdoptWorkload, __: Integration) -> None:
        await self.context.writer.patch(WORKLOADS, step.workload, step.patch, patch_type="merge")

    async def _release_scaled_to_zero(self, _: JSON, step: ReleaseScaledToZero, __: Integration) -> None:
        updated = await self.context.writer.patch_status(
            WORKLOADS, step.workload, lambda current: scaled_to_zero_status(current, now=now_rfc3339())
        )
        if updated is not None:
            statefulset_log.info(
                "workload on hold",
                extra={"workload": "/".join(key_of(updated)), "reason": SCALED_TO_ZERO_MESSAGE},
            )

    async def _requeue_scaled_up(self, _: JSON, step: RequeueScaledUp, __: Integration) -> None:
        updated = await self.context.writer.patch_status(
            WORKLOADS, step.workload, lambda current: scaled_up_status(current, now=now_rfc3339())
        )
        if updated is not None:
            statefulset_log.info("workload hold lifted", extra={"workload": "/".join(key_of(updated))})
