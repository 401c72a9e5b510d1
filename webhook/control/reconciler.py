"""Job ⇄ Workload lifecycle: the Job's side of admission, following Kueue's jobframework reconciler.

The scheduling task only ever writes Workloads; everything that touches a Job happens here, driven by the
pair (Job, its Workload) as the store currently sees it. ``plan_job`` is pure: given the pair it returns
the one step that brings them closer to agreement, so each rule is a readable branch and testable without a
server. ``JobReconciler`` executes steps from a de-duplicating work queue and is re-triggered by every
change of either object, so a step that fails (or races another writer) is simply planned again.

The rules, in Kueue's order (pkg/controller/jobframework/reconciler.go):
1. a Job that is Complete or Failed marks its Workload ``Finished`` (reason Succeeded/Failed, the Job
   condition's message) — which is what releases its quota;
2. a managed Job without a Workload gets one (owned by the Job, so deleting the Job deletes it);
3. an admitted Workload whose Job is still suspended starts the Job (suspend=false plus the flavors'
   nodeSelector/tolerations) — also the crash-recovery path when we died between the two writes. A start
   the API server refuses (a webhook's or RBAC's 403, a 400) must not look admitted silently: the Workload
   gets ``StartFailed=True`` with the server's answer and a Warning Event ``FailedToStart`` (so does the
   Job), and the start is retried with backoff; ``StartFailed`` turns False once the Job starts. A 422
   naming fields can never succeed and finishes the Workload as ``FailedToStart``, as Kueue does;
4. a running Job whose Workload holds no reservation (a user unsuspended it, or it was evicted) is
   suspended again and its pod template restored, with a ``Stopped`` Event;
5. an evicted Workload whose Job has stopped and has no active pods left (``status.active`` is 0, Kueue's
   ``IsActive``) gets its reservation cleared, with Requeued (True after a preemption) first, releasing
   the quota;
6. a suspended Job edited while waiting (parallelism, requests) gets its Workload's pod sets updated, so it
   queues for what it now asks (Kueue's "Updated not matching Workload for suspended job");
7. with waitForPodsReady, a running Job's Workload carries PodsReady as Kueue's generatePodsReadyCondition
   derives it from the Job (``webhook.api.pods_ready``); PodsReady=False WaitForStart is written with the
   first pending reason or the admission and again when the reservation is released, so only the
   transitions to and from ready cost a write.

Kueue's resource-in-use finalizer (``webhook.api.finalizers``) is let go, checked before all of the above:
- from a ``Finished`` Workload (its quota is already free);
- from a Workload being deleted, once its Job is stopped: a running Job is suspended first (``Stopped``,
  "Workload is deleted"), and — stricter than Kueue, which lets go as soon as the suspend is written —
  the finalizer stays until the Job has no active pods, as for an eviction (rule 5), so the quota is not
  handed on while those pods still run. The Workload is then gone, and the Job, still queued, gets a new
  one once it has no active pods (Kueue's ``handleJobWithNoWorkload`` waits for them too);
- from a deleted Workload whose Job is gone or being deleted, or that no Job owns (Kueue's
  ``finalizeWorkloads`` and orphaned-Workload rule): at once, from ``release_orphan``.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from webhook.api.finalizers import RESOURCE_IN_USE, has_finalizer, is_deleting
from webhook.api.jobs import (
    FlavorConflict,
    is_managed,
    is_stopping,
    job_pod_sets,
    stop_patches,
    unsuspend_patch,
    workload_for_job,
)
from webhook.api.objects import ResourceFlavor, parse_resource_flavor, parse_workload
from webhook.api.pods_ready import PODS_READY, desired_pods_ready, job_pods_ready
from webhook.control.backoff import Backoff
from webhook.control.conditions import (
    find,
    finished_status,
    is_true,
    now_rfc3339,
    pods_ready_status,
    released_status,
    start_failed_status,
)
from webhook.control.context import ControlContext
from webhook.control.kinds import (
    JOBS,
    PRIORITY_CLASSES,
    RESOURCE_FLAVORS,
    WORKLOAD_PRIORITY_CLASSES,
    WORKLOADS,
    Kind,
)
from webhook.control.kube import ApiError
from webhook.control.store import Change, controller_owner, key_of
from webhook.control.workqueue import WorkQueue
from webhook.control.writers import refused_fields

JSON = dict[str, Any]
Handler = Callable[[tuple[str, str]], Awaitable[None]]
log = logging.getLogger("kueue_webhook.reconciler")
_CONDITION_REASON = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")


# -- the steps ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreateWorkload:
    body: JSON


@dataclass(frozen=True, slots=True)
class FinishWorkload:
    workload: JSON
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class StartJob:
    patch: list[JSON]
    cluster_queue: str
    workload: JSON


@dataclass(frozen=True, slots=True)
class StopJob:
    patch: list[JSON]
    message: str
    #: sent before ``patch`` (the suspension, when restoring a partially admitted Job takes two patches)
    first: tuple[JSON, ...] = ()


@dataclass(frozen=True, slots=True)
class ReleaseReservation:
    workload: JSON
    message: str


@dataclass(frozen=True, slots=True)
class RemoveFinalizer:
    """Nothing uses the Workload's quota any more: let the object go (if deleted) or drop the finalizer."""

    workload: JSON
    why: str


@dataclass(frozen=True, slots=True)
class SyncPodsReady:
    """waitForPodsReady: the running Job's pods became ready (or fell back): PodsReady says so."""

    workload: JSON
    condition: tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class UpdatePodSets:
    """A suspended, unadmitted Job was edited (parallelism, requests): its Workload asks for the new shape."""

    workload: JSON
    pod_sets: list[JSON]


Step = (
    CreateWorkload
    | FinishWorkload
    | StartJob
    | StopJob
    | ReleaseReservation
    | UpdatePodSets
    | RemoveFinalizer
    | SyncPodsReady
)

#: the Stopped event's message when a Job's Workload is deleted (Kueue's StopReasonWorkloadDeleted)
WORKLOAD_DELETED = "Workload is deleted"


def job_finished(job: JSON) -> tuple[bool, bool, str]:
    """(finished, succeeded, message) from the Job's Complete/Failed conditions (Kueue's Job.Finished)."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return True, condition.get("type") == "Complete", str(condition.get("message") or "")
    return False, True, ""


def is_suspended(job: JSON) -> bool:
    """Suspended, and not half-way through a stop whose restore is still to be written (Kueue's
    Job.IsSuspended with the stopping annotation)."""
    return (job.get("spec") or {}).get("suspend") is True and not is_stopping(job)


def has_active_pods(job: JSON) -> bool:
    """Pods still running or terminating: the quota they use is not free yet (Kueue's Job.IsActive)."""
    active = (job.get("status") or {}).get("active")
    return isinstance(active, int) and active > 0


def has_reservation(workload: JSON) -> bool:
    return is_true(workload, "QuotaReserved") and bool((workload.get("status") or {}).get("admission"))


def _stop(job: JSON, workload: JSON, message: str) -> StopJob:
    """Suspend the Job and put back what admission changed, from the Workload's pod set (its template,
    and its count, the parallelism a partial admission reduced: Kueue's GetPodSetsInfoFromWorkload)."""
    pod_sets = (workload.get("spec") or {}).get("podSets") or []
    template = dict(pod_sets[0].get("template") or {}) if pod_sets else {}
    count = pod_sets[0].get("count") if pod_sets else None
    patches = stop_patches(job, template, count if isinstance(count, int) else None)
    return StopJob(patches[-1], message, tuple(op for patch in patches[:-1] for op in patch))


def plan_job(
    job: JSON,
    workload: JSON | None,
    *,
    flavors: Callable[[str], ResourceFlavor | None],
    priorities: dict[str, int],
    pod_priorities: dict[str, int] | None = None,
    pods_ready: bool = False,
) -> Step | None:
    """The next step for a managed Job and its Workload (None: they agree). ``pods_ready``: waitForPodsReady
    is on, so a running Job's Workload carries PodsReady (Kueue's step "handle WaitForPodsReady")."""
    finished, succeeded, message = job_finished(job)
    if workload is not None and is_true(workload, "Finished"):
        return RemoveFinalizer(workload, "finished") if has_finalizer(workload) else None
    if workload is not None and is_deleting(workload):
        if not finished and not is_suspended(job):
            return _stop(job, workload, WORKLOAD_DELETED)
        if has_active_pods(job):
            return None  # the Job's status change when its pods are gone re-triggers us
        return RemoveFinalizer(workload, "deleted, its Job stopped") if has_finalizer(workload) else None
    if finished:
        if workload is not None:
            return FinishWorkload(workload, "Succeeded" if succeeded else "Failed", message)
        return None
    if workload is None:
        if not is_suspended(job):
            suspend = [{"op": "replace", "path": "/spec/suspend", "value": True}]
            if is_stopping(job):  # a half-done stop: nothing is left to restore from
                suspend.append({"op": "remove", "path": "/metadata/annotations/kueue.x-k8s.io~1stopping"})
            return StopJob(suspend, "Not admitted by cluster queue")
        if has_active_pods(job):
            return None  # stopped, but its pods still hold what a new Workload would queue for
        return CreateWorkload(
            workload_for_job(job, workload_priority_classes=priorities, pod_priority_classes=pod_priorities)
        )
    admission = (workload.get("status") or {}).get("admission") or {}
    evicted = is_true(workload, "Evicted")
    if is_suspended(job):
        if evicted and has_reservation(workload):
            if has_active_pods(job):
                return None  # the Job's status change when its pods are gone re-triggers us
            return ReleaseReservation(workload, _evicted_message(workload))
        if is_true(workload, "Admitted") and has_reservation(workload) and not evicted:
            names: list[str] = []
            for assignment in admission.get("podSetAssignments") or []:
                for flavor_name in (assignment.get("flavors") or {}).values():
                    if flavor_name not in names:
                        names.append(str(flavor_name))
            resolved = [flavors(name) for name in names]
            if any(flavor is None for flavor in resolved):
                return None  # the flavor is not in the store yet; its arrival re-triggers us
            counts = [a.get("count") for a in admission.get("podSetAssignments") or []]
            count = counts[0] if len(counts) == 1 and isinstance(counts[0], int) else None
            try:
                # a partial admission runs the admitted count (podSetAssignments[].count)
                chosen = [flavor for flavor in resolved if flavor is not None]
                patch = unsuspend_patch(job, chosen, count=count)
            except FlavorConflict as exc:
                return FinishWorkload(workload, "FailedToStart", str(exc))
            return StartJob(patch, str(admission.get("clusterQueue", "")), workload)
        if not has_reservation(workload) and _shape(job) != _workload_shape(workload):
            desired = workload_for_job(
                job, workload_priority_classes=priorities, pod_priority_classes=pod_priorities
            )["spec"]["podSets"]
            return UpdatePodSets(workload, desired)
        return None
    if evicted:
        return _stop(job, workload, _evicted_message(workload))
    if not has_reservation(workload):
        return _stop(job, workload, "Not admitted by cluster queue")
    if is_stopping(job):
        # suspended, its restore not written before the Workload was admitted again: finish the stop,
        # then it starts at the new admitted count
        return _stop(job, workload, "Restoring the Job before it starts again")
    if pods_ready:
        condition = desired_pods_ready(workload, pods_ready=job_pods_ready(job))
        current = find(((workload.get("status") or {}).get("conditions")), PODS_READY) or {}
        if (current.get("status"), current.get("reason")) != condition[:2]:
            return SyncPodsReady(workload, condition)
    return None


_Shape = tuple[tuple[str, int, int | None, tuple[tuple[str, int], ...]], ...]


def _shape(job: JSON) -> _Shape | None:
    """What quota a Job asks for: (pod set, count, minCount, per-pod requests), minCount compared as
    Kueue's ComparePodSets does; None when its template is invalid."""
    pod_sets = job_pod_sets(job)
    if isinstance(pod_sets, list):
        return None
    return tuple((p.name, p.count, p.min_count, tuple(sorted(p.requests.items()))) for p in pod_sets)


def _workload_shape(workload: JSON) -> _Shape | None:
    parsed = parse_workload(workload)
    if isinstance(parsed, list):
        return None
    return tuple((p.name, p.count, p.min_count, tuple(sorted(p.requests.items()))) for p in parsed.pod_sets)


def _held(workload: JSON) -> bool:
    """Deleted, and our finalizer is among those that keep it."""
    return is_deleting(workload) and has_finalizer(workload)


def _evicted_message(workload: JSON) -> str:
    for condition in (workload.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Evicted":
            return str(condition.get("message") or "Evicted")
    return "Evicted"


# -- execution ----------------------------------------------------------------------------------------


def start_refused(exc: ApiError) -> bool:
    """The API server answered no to starting a Job (an admission webhook, RBAC, a bad request), as opposed
    to a conflict to decide again from (409), a throttle (429) or a server in trouble (5xx)."""
    return 400 <= exc.status < 500 and exc.status not in (404, 409, 429)


class JobReconciler:
    """Runs ``plan_job`` for every Job the store reports changed (directly or through its Workload)."""

    def __init__(self, context: ControlContext, *, workers: int = 4) -> None:
        self.context = context
        self.workers = workers
        self.queue: WorkQueue[tuple[str, str]] = WorkQueue()
        #: keys of deleted Workloads that may have no Job left to speak for them (``release_orphan``)
        self.orphans: WorkQueue[tuple[str, str]] = WorkQueue()
        self._deleted_jobs: dict[tuple[str, str], str] = {}  # job key -> uid, until its Workload is gone
        self._backoffs: dict[tuple[str, str, str], Backoff] = {}

    def on_change(self, change: Change) -> None:
        if change.kind is JOBS:
            if change.new is None and change.old is not None:
                uid = str((change.old.get("metadata") or {}).get("uid", ""))
                self._deleted_jobs[change.key] = uid
            if change.new is None or is_deleting(change.new):
                gone = change.old if change.new is None else change.new
                uid = str(((gone or {}).get("metadata") or {}).get("uid", ""))
                workload = self.context.store.workload_owned_by(namespace=change.key[0], owner_uid=uid)
                if workload is not None and _held(workload):
                    self.orphans.add(key_of(workload))
            self.queue.add(change.key)
        elif change.kind is WORKLOADS:
            obj = change.new if change.new is not None else change.old
            owner = controller_owner(obj)
            if owner is not None and owner.get("kind") == "Job":
                self.queue.add((change.key[0], str(owner.get("name", ""))))
            if change.new is not None and _held(change.new):
                self.orphans.add(change.key)
        elif change.kind is RESOURCE_FLAVORS and change.new is not None:
            # admitted Workloads may have waited for this flavor
            for workload in self.context.store.items(WORKLOADS):
                owner = controller_owner(workload)
                if owner is not None and owner.get("kind") == "Job" and has_reservation(workload):
                    self.queue.add((key_of(workload)[0], str(owner.get("name", ""))))

    def resync(self) -> None:
        """Queue every Job, and every deleted Workload still held (after becoming leader: finish anything a
        previous leader left half done, such as a finalizer it did not get to remove)."""
        for job in self.context.store.items(JOBS):
            self.queue.add(key_of(job))
        for workload in self.context.store.items(WORKLOADS):
            if _held(workload):
                self.orphans.add(key_of(workload))

    async def run(self) -> None:
        async def worker(queue: WorkQueue[tuple[str, str]], handler: Handler, tag: str) -> None:
            await queue.serve(handler, on_error=partial(self._failed, queue, tag))

        await asyncio.gather(
            *(worker(self.queue, self.reconcile, "job") for _ in range(self.workers)),
            worker(self.orphans, self.release_orphan, "workload"),
        )

    def _failed(
        self, queue: WorkQueue[tuple[str, str]], tag: str, key: tuple[str, str], exc: BaseException
    ) -> None:
        """Retry a failed key with its own exponential backoff (a conflict storm must not spin)."""
        backoff = self._backoffs.setdefault((tag, *key), Backoff(base=0.05, cap=10.0))
        delay = backoff.next_delay()
        log.warning("reconcile failed, retrying in %.2fs: %r", delay, exc, extra={tag: "/".join(key)})
        asyncio.get_running_loop().call_later(delay, queue.add, key)

    def _flavor(self, name: str) -> ResourceFlavor | None:
        raw = self.context.store.get(RESOURCE_FLAVORS, name)
        if raw is None:
            return None
        parsed = parse_resource_flavor(raw)
        return parsed if isinstance(parsed, ResourceFlavor) else None

    def _priorities(self, kind: Kind = WORKLOAD_PRIORITY_CLASSES) -> dict[str, int]:
        """``{name: value}`` of the WorkloadPriorityClasses (or of another kind with a top-level value)."""
        out: dict[str, int] = {}
        for item in self.context.store.items(kind):
            value = item.get("value")
            if isinstance(value, int):
                out[str((item.get("metadata") or {}).get("name", ""))] = value
        return out

    async def reconcile(self, key: tuple[str, str]) -> None:
        namespace, name = key
        job = self.context.store.get(JOBS, name, namespace)
        if job is None:
            await self._job_deleted(key)
            return
        if is_deleting(job):
            return  # its Workload's finalizer is for release_orphan, as Kueue finalizes a deleted Job's
        labels = self.context.store.namespace_labels(namespace) or {"kubernetes.io/metadata.name": namespace}
        if not is_managed(job, config=self.context.configuration(), namespace_labels=labels):
            return
        uid = str((job.get("metadata") or {}).get("uid", ""))
        workload = self.context.store.workload_owned_by(namespace=namespace, owner_uid=uid)
        step = plan_job(
            job,
            workload,
            flavors=self._flavor,
            priorities=self._priorities(),
            pod_priorities=self._priorities(PRIORITY_CLASSES),
            pods_ready=self.context.configuration().wait_for_pods_ready.enable,
        )
        if step is not None:
            await self._execute(job, step)
        self._backoffs.pop(("job", *key), None)

    async def release_orphan(self, key: tuple[str, str]) -> None:
        """A deleted Workload held by the finalizer with no live Job to wait for lets go at once.

        Kueue removes it without waiting for anything when the owning Job is gone or being deleted
        (``finalizeWorkloads``) and when the Workload has no owner at all (the workload controller's
        orphaned-Workload rule). A Workload owned by another kind counts as ownerless here: only Jobs are
        integrated, so nothing else would ever let it go. A live Job's Workload is for ``plan_job``.
        """
        namespace, name = key
        workload = self.context.store.get(WORKLOADS, name, namespace)
        if workload is None or not _held(workload):
            return
        job = self.context.store.job_of(workload)
        if job is not None and not is_deleting(job):
            return
        if await self.context.writer.remove_finalizer(WORKLOADS, workload, RESOURCE_IN_USE) is not None:
            log.info(
                "finalizer removed",
                extra={"workload": "/".join(key), "reason": "deleted, no Job to wait for"},
            )
        self._backoffs.pop(("workload", *key), None)

    async def _start(self, job: JSON, step: StartJob) -> None:
        """Unsuspend an admitted Job; a refusal is said on the Workload and the Job, never only logged."""
        admitted = f"Admitted by clusterQueue {step.cluster_queue}"
        try:
            started = await self.context.writer.patch(JOBS, job, step.patch)
        except ApiError as exc:
            if exc.status == 422 and refused_fields(exc):
                # The API server refuses the Job as admission would start it (a flavor's nodeSelector or
                # toleration it cannot accept): a retry cannot help, so, like Kueue for a start that can
                # never succeed, the Workload finishes as FailedToStart, which frees its quota and says why.
                self.context.events.record(job, type="Warning", reason="FailedToStart", message=exc.message)
                await self._execute(job, FinishWorkload(step.workload, "FailedToStart", exc.message))
                return
            if start_refused(exc):
                await self._record_refusal(job, step.workload, exc, admitted)
            raise  # retried with backoff: the refusal may be lifted (a webhook or its configuration fixed)
        if started is None:
            return
        self.context.events.record(job, type="Normal", reason="Started", message=admitted)
        workload = self._current(step.workload)
        await self.context.writer.patch_status(
            WORKLOADS,
            workload,
            lambda current: start_failed_status(
                current, failed=False, reason="Started", message=admitted, now=now_rfc3339()
            ),
        )

    async def _record_refusal(self, job: JSON, workload: JSON, exc: ApiError, admitted: str) -> None:
        """StartFailed=True on the Workload with the server's answer, and a Warning Event on both objects."""
        message = (
            f"{admitted}, but the API server refused to start the Job ({exc.status} {exc.reason}): "
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

    async def _job_deleted(self, key: tuple[str, str]) -> None:
        uid = self._deleted_jobs.pop(key, None)
        if not uid:
            return
        workload = self.context.store.workload_owned_by(namespace=key[0], owner_uid=uid)
        if workload is not None:  # the garbage collector would do it too; doing it now frees quota at once
            await self.context.writer.delete(WORKLOADS, workload)

    async def _execute(self, job: JSON, step: Step) -> None:
        namespace = key_of(job)[0]
        writer, events = self.context.writer, self.context.events

        def on_job(reason: str, message: str) -> None:
            """The Normal Event on the Job that says a step was taken."""
            events.record(job, type="Normal", reason=reason, message=message)

        if isinstance(step, CreateWorkload):
            created = await writer.create(WORKLOADS, step.body)
            if created is not None:
                on_job("CreatedWorkload", f"Created Workload: {namespace}/{created['metadata']['name']}")
        elif isinstance(step, FinishWorkload):
            reason, message = step.reason, step.message
            updated = await writer.patch_status(
                WORKLOADS,
                step.workload,
                lambda current: finished_status(current, reason=reason, message=message, now=now_rfc3339()),
            )
            if updated is not None:
                wl_name = updated["metadata"]["name"]
                on_job("FinishedWorkload", f"Workload '{namespace}/{wl_name}' is declared finished")
                events.record(
                    updated,
                    type="Normal" if reason == "Succeeded" else "Warning",
                    reason="Finished",
                    message=message,
                )
        elif isinstance(step, StartJob):
            await self._start(job, step)
        elif isinstance(step, StopJob):
            target: JSON | None = job
            if step.first:
                target = await writer.patch(JOBS, job, list(step.first))
                if target is not None:
                    on_job("Stopped", step.message)
            restored = target is not None and await writer.patch(JOBS, target, step.patch) is not None
            if restored and not step.first:
                on_job("Stopped", step.message)
        elif isinstance(step, RemoveFinalizer):
            if await writer.remove_finalizer(WORKLOADS, step.workload, RESOURCE_IN_USE) is not None:
                log.info(
                    "finalizer removed",
                    extra={"workload": "/".join(key_of(step.workload)), "reason": step.why},
                )
        elif isinstance(step, UpdatePodSets):
            updated = await writer.patch(
                WORKLOADS, step.workload, {"spec": {"podSets": step.pod_sets}}, patch_type="merge"
            )
            if updated is not None:
                on_job(
                    "UpdatedWorkload",
                    f"Updated not matching Workload for suspended job: {'/'.join(key_of(updated))}",
                )
        elif isinstance(step, SyncPodsReady):
            condition = step.condition
            updated = await writer.patch_status(
                WORKLOADS,
                step.workload,
                lambda current: (
                    pods_ready_status(current, condition=condition, now=now_rfc3339())
                    if has_reservation(current) and not is_true(current, "Evicted")
                    else None
                ),
            )
            if updated is not None:
                log.info(
                    "pods ready condition",
                    extra={
                        "workload": "/".join(key_of(updated)),
                        "status": condition[0],
                        "reason": condition[1],
                    },
                )
        elif isinstance(step, ReleaseReservation):
            message = step.message
            await writer.patch_status(
                WORKLOADS,
                step.workload,
                lambda current: (
                    released_status(current, reason="Pending", message=message, now=now_rfc3339())
                    if has_reservation(current)
                    else None
                ),
            )
