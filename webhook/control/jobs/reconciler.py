"""Job ⇄ Workload lifecycle: executes what ``webhook.control.jobs.job_plan`` decides, for every queued kind.

The scheduling task only ever writes Workloads; everything that touches a queued object (a Job, a JobSet,
a pod group...) happens here. ``JobReconciler`` plans one step for an object and its Workload
(``plan_job``, or the pod group's and StatefulSet's plans), executes it, and is re-triggered by every
change of either object from a de-duplicating work queue, so a step that fails (or races another writer)
is simply planned again. A start the API server refuses is said on the Workload (``StartFailed``) and
retried with backoff; a Job in a namespace being deleted is not retried.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from webhook.api.finalizers import RESOURCE_IN_USE, is_deleting
from webhook.api.integrations import JOB, Integration, engine
from webhook.api.integrations.managed import ON_ITS_OWN, ancestry_of, is_managed
from webhook.api.integrations.owners import Ancestry, controller_reference
from webhook.api.integrations.pod_groups import IS_GROUP_WORKLOAD_ANNOTATION, group_name
from webhook.api.integrations.statefulsets import (
    awaits_group,
    controlling_statefulset,
    made_by_statefulset,
    statefulset_workload_name,
)
from webhook.api.objects import ResourceFlavor, parse_resource_flavor
from webhook.control.cache.store import Change, controller_owner, key_of
from webhook.control.cache.workqueue import WorkQueue
from webhook.control.jobs.job_plan import (
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
    UpdatePodSets,
    UpdateQueueName,
    deleted_and_held,
    has_reservation,
    holds_finalizer,
    plan_job,
    plan_unmanaged,
)
from webhook.control.jobs.owner_lookup import OwnerFetcher
from webhook.control.jobs.statefulsets import execute, plan_statefulset
from webhook.control.kube.backoff import Backoff
from webhook.control.kube.client import ApiError
from webhook.control.kube.kinds import (
    PRIORITY_CLASSES,
    RESOURCE_FLAVORS,
    WORKLOAD_PRIORITY_CLASSES,
    WORKLOADS,
    Kind,
    kind_of,
)
from webhook.control.kube.leader import NotLeader
from webhook.control.output.conditions import (
    finished_status,
    is_true,
    now_rfc3339,
    pods_ready_status,
    released_status,
    start_failed_status,
    termination_target_status,
)
from webhook.control.output.context import ControlContext
from webhook.control.output.writers import refused_fields

JSON = dict[str, Any]
Handler = Callable[[Any], Awaitable[None]]
log = logging.getLogger("kueue_webhook.reconciler")
_CONDITION_REASON = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")


# -- execution ----------------------------------------------------------------------------------------


def start_refused(exc: ApiError) -> bool:
    """The API server answered no to starting a Job (an admission webhook, RBAC, a bad request), as opposed
    to a conflict to decide again from (409), a throttle (429) or a server in trouble (5xx)."""
    return 400 <= exc.status < 500 and exc.status not in (404, 409, 429)


#: (framework name, namespace, name) of a queued object; a pod group's name is ``GROUP_KEY`` + its name
ObjectKey = tuple[str, str, str]
#: pod names cannot hold a "/", so a group's key never collides with a pod's
GROUP_KEY = "group/"


def object_key(integration: Integration, obj: JSON) -> ObjectKey:
    """The work-queue key of a queued object: its group's for a pod in a group."""
    namespace, name = key_of(obj)
    if integration.gate is not None and (group := group_name(obj)) is not None:
        return (integration.name, namespace, GROUP_KEY + group)
    return (integration.name, namespace, name)


def _group_of_workload(workload: JSON | None) -> str | None:
    annotations = ((workload or {}).get("metadata") or {}).get("annotations") or {}
    if annotations.get(IS_GROUP_WORKLOAD_ANNOTATION) != "true":
        return None
    return GROUP_KEY + str((workload or {}).get("metadata", {}).get("name", ""))


def namespace_terminating(exc: BaseException) -> bool:
    """kube-apiserver's NamespaceLifecycle refusal of a create in a namespace being deleted (403 Forbidden,
    "... because it is being terminated", cause NamespaceTerminating)."""
    if not isinstance(exc, ApiError) or exc.status != 403:
        return False
    causes = (exc.body.get("details") or {}).get("causes") or []
    return any(c.get("reason") == "NamespaceTerminating" for c in causes if isinstance(c, dict)) or (
        "because it is being terminated" in exc.message
    )


class JobReconciler:
    """Runs ``plan_job`` for every queued object (a Job, a JobSet, ... : every enabled integration) the store
    reports changed, directly or through its Workload."""

    def __init__(
        self, context: ControlContext, *, workers: int = 4, owners: OwnerFetcher | None = None
    ) -> None:
        self.context = context
        self.workers = workers
        self.queue: WorkQueue[ObjectKey] = WorkQueue()
        #: keys of deleted Workloads that may have no object left to speak for them (``release_orphan``)
        self.orphans: WorkQueue[tuple[str, str]] = WorkQueue()
        self._deleted_jobs: dict[ObjectKey, str] = {}  # object key -> uid, until its Workload is gone
        self._backoffs: dict[tuple[str, ...], Backoff] = {}
        #: looks up owners of kinds the store does not watch (none: such owners stay unresolved)
        self.owners = owners
        #: objects left to a queued ancestor, by the ancestor's uid, and the reverse: a change of the
        #: ancestor's Workload reconciles them (Kueue's parent Workload handler)
        self._children: dict[str, set[ObjectKey]] = {}
        self._ancestor_of: dict[ObjectKey, str] = {}

    def _integration_of_kind(self, kind: Kind) -> Integration | None:
        return self.context.configuration().integrations.for_kind(kind.group, kind.kind)

    def _integration_of_owner(self, owner: JSON | None) -> Integration | None:
        """The enabled integration of a Workload's controller ownerReference."""
        if owner is None:
            return None
        for integration in self.context.configuration().integrations:
            if integration.matches(owner.get("apiVersion"), owner.get("kind")):
                return integration
        return None

    def on_change(self, change: Change) -> None:
        integration = self._integration_of_kind(change.kind)
        if integration is not None:
            current = change.new if change.new is not None else change.old
            key = object_key(integration, current) if current is not None else (integration.name, *change.key)
            if integration.gate is not None and current is not None:
                self._queue_statefulset_of(current)
            if key[2].startswith(GROUP_KEY):
                self.queue.add(key)
                return
            if change.new is None and change.old is not None:
                uid = str((change.old.get("metadata") or {}).get("uid", ""))
                self._deleted_jobs[key] = uid
            if change.new is None or is_deleting(change.new):
                gone = change.old if change.new is None else change.new
                uid = str(((gone or {}).get("metadata") or {}).get("uid", ""))
                workload = self.context.store.workload_owned_by(namespace=change.key[0], owner_uid=uid)
                if workload is not None and deleted_and_held(workload):
                    self.orphans.add(key_of(workload))
            self.queue.add(key)
        elif change.kind is WORKLOADS:
            obj = change.new if change.new is not None else change.old
            if (group := _group_of_workload(obj)) is not None and (pods := self._pods()) is not None:
                self.queue.add((pods.name, change.key[0], group))
            owner = controller_owner(obj)
            owner_integration = self._integration_of_owner(owner)
            if owner is not None and owner_integration is not None:
                self.queue.add((owner_integration.name, change.key[0], str(owner.get("name", ""))))
            self._queue_children_of(owner)
            if change.new is not None and deleted_and_held(change.new):
                self.orphans.add(change.key)
        elif change.kind is RESOURCE_FLAVORS and change.new is not None:
            # admitted Workloads may have waited for this flavor
            pods = self._pods()
            for workload in self.context.store.items(WORKLOADS):
                group = _group_of_workload(workload)
                if group is not None and pods is not None and has_reservation(workload):
                    self.queue.add((pods.name, key_of(workload)[0], group))
                owner = controller_owner(workload)
                owner_integration = self._integration_of_owner(owner)
                if owner is not None and owner_integration is not None and has_reservation(workload):
                    self.queue.add((owner_integration.name, key_of(workload)[0], str(owner.get("name", ""))))

    def resync(self) -> None:
        """Queue every queued object, and every deleted Workload still held (after becoming leader: finish
        anything a previous leader left half done, such as a finalizer it did not get to remove)."""
        for integration in self.context.configuration().integrations:
            if integration.through_pods == "pods":
                continue  # queued through its pods
            for obj in self.context.store.items(kind_of(integration)):
                self.queue.add(object_key(integration, obj))
        for workload in self.context.store.items(WORKLOADS):
            if deleted_and_held(workload):
                self.orphans.add(key_of(workload))

    def _queue_statefulset_of(self, pod: JSON) -> None:
        """A StatefulSet's pod came or changed: its StatefulSet may have a pod to put in its group."""
        owner = controlling_statefulset(pod) if made_by_statefulset(pod) else None
        statefulsets = next(
            (i for i in self.context.configuration().integrations if i.through_pods == "group"), None
        )
        if owner is not None and statefulsets is not None:
            self.queue.add((statefulsets.name, key_of(pod)[0], str(owner.get("name", ""))))

    def _pods(self) -> Integration | None:
        """The enabled gated integration (pods), whose groups have Workloads of their own."""
        return next((i for i in self.context.configuration().integrations if i.gate is not None), None)

    async def run(self) -> None:
        async def worker(queue: WorkQueue[Any], handler: Handler, tag: str) -> None:
            await queue.serve(handler, on_error=partial(self._failed, queue, tag))

        await asyncio.gather(
            *(worker(self.queue, self.reconcile, "job") for _ in range(self.workers)),
            # as many for finalizers: a namespace being deleted waits on every one of its Workloads
            *(worker(self.orphans, self.release_orphan, "workload") for _ in range(self.workers)),
        )

    def _failed(self, queue: WorkQueue[Any], tag: str, key: tuple[str, ...], exc: BaseException) -> None:
        """Retry a failed key with its own exponential backoff (a conflict storm must not spin); not when
        its namespace is being deleted, which deletes the object too."""
        if namespace_terminating(exc):
            log.info("namespace being deleted: not retried", extra={tag: "/".join(key)})
            return
        backoff = self._backoffs.setdefault((tag, *key), Backoff(base=0.05, cap=10.0))
        delay = backoff.next_delay()
        if not isinstance(exc, NotLeader):  # a refused write is said once, by the elector
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

    async def reconcile(self, key: ObjectKey) -> None:
        framework, namespace, name = key
        configuration = self.context.configuration()
        integration = next((i for i in configuration.integrations if i.name == framework), None)
        if integration is None or integration.through_pods == "pods":
            return  # the integration was turned off (or has no objects of its own): left alone
        if integration.through_pods == "group":
            if self.context.store.get(kind_of(integration), name, namespace) is None:
                await self._job_deleted(key)  # the garbage collector would do it too; now frees quota at once
                return
            await self._reconcile_statefulset(integration, namespace, name)
            self._backoffs.pop(("job", *key), None)
            return
        if name.startswith(GROUP_KEY):
            await self._reconcile_group(integration, namespace, name.removeprefix(GROUP_KEY))
            self._backoffs.pop(("job", *key), None)
            return
        job = self.context.store.get(kind_of(integration), name, namespace)
        if job is None:
            self._remember_ancestor(key, None)
            await self._job_deleted(key)
            return
        if is_deleting(job):
            # its Workload's finalizer is for release_orphan, as Kueue finalizes a deleted Job's; a pod's own
            # finalizer goes at once (Kueue's Pod.Finalize of a deleted pod)
            if holds_finalizer(job, integration):
                await self._execute(job, ReleaseObjects((job,)), integration)
            return
        labels = self.context.store.namespace_labels(namespace) or {"kubernetes.io/metadata.name": namespace}
        uid = str((job.get("metadata") or {}).get("uid", ""))
        workload = self.context.store.workload_owned_by(namespace=namespace, owner_uid=uid)
        alone = is_managed(
            job, integration, ancestry=ON_ITS_OWN, config=configuration, namespace_labels=labels
        )
        # a Job without a queue name of its own is still suspended while its queued owner is not admitted; a
        # pod's owners matter only when it is queued on its own (Kueue's pods are top-level)
        if (alone or integration.gate is None) and await self._left_to_owner(job, integration):
            return
        if not alone:
            # no longer queued (its queue label removed while suspended): its Workload must not hold quota
            unmanaged = plan_unmanaged(job, workload, integration=integration)
            if unmanaged is not None:
                await self._execute(job, unmanaged, integration)
            return
        if integration.gate is not None and awaits_group(job):
            return  # its StatefulSet puts it in its group first; the Workload is the StatefulSet's
        step = plan_job(
            job,
            workload,
            flavors=self._flavor,
            priorities=self._priorities(),
            pod_priorities=self._priorities(PRIORITY_CLASSES),
            pods_ready=configuration.wait_for_pods_ready.enable,
            integration=integration,
        )
        if step is not None:
            await self._execute(job, step, integration)
        self._backoffs.pop(("job", *key), None)

    async def _ancestry(self, obj: JSON, integration: Integration) -> Ancestry:
        """The object's ancestry (``webhook.api.integrations.owners``), owners the store does not watch
        fetched from the API server."""
        config, store = self.context.configuration(), self.context.store
        if self.owners is not None and controller_reference(obj) is not None:
            return await self.owners.ancestry(obj, integration, config=config, store=store)
        return ancestry_of(obj, integration, config=config, lookup=store)

    def _queue_children_of(self, owner: JSON | None) -> None:
        """A Workload changed: the objects left to its owner may have to be suspended (or not any more)."""
        uid = str((owner or {}).get("uid") or "")
        for key in self._children.get(uid, ()):
            self.queue.add(key)

    def _remember_ancestor(self, key: ObjectKey, ancestor_uid: str | None) -> None:
        previous = self._ancestor_of.pop(key, None)
        if previous is not None:
            children = self._children.get(previous, set())
            children.discard(key)
            if not children:
                self._children.pop(previous, None)
        if ancestor_uid:
            self._ancestor_of[key] = ancestor_uid
            self._children.setdefault(ancestor_uid, set()).add(key)

    async def _left_to_owner(self, obj: JSON, integration: Integration) -> bool:
        """Whether the object is queued through a real queued owner rather than on its own (Kueue's
        ``FindAncestorJobManagedByKueue`` in ``Reconcile``; ``webhook.api.integrations.owners``), in which
        case it gets no Workload, and, as Kueue's ``shouldSuspendChildJob``, is suspended if it runs while
        its ancestor's Workload is not admitted.

        An object that already has a Workload of its own stays queued on its own: an ownerReference added
        later does not free it from its quota."""
        key = object_key(integration, obj)
        if controller_reference(obj) is None:
            self._remember_ancestor(key, None)
            return False
        namespace, _ = key_of(obj)
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        if self.context.store.workload_owned_by(namespace=namespace, owner_uid=uid) is not None:
            self._remember_ancestor(key, None)
            return False
        ancestry = await self._ancestry(obj, integration)
        where = {"object": f"{integration.kind} {namespace}/{key_of(obj)[1]}"}
        if ancestry.too_deep:
            self.context.events.record(obj, type="Warning", reason="JobNestingTooDeep", message=ancestry.note)
            log.warning("queued on its own: %s", ancestry.note, extra=where)
        elif ancestry.note and ancestry.ancestor is None:
            log.info("queued on its own: %s", ancestry.note, extra=where)
        ancestor_uid = str(((ancestry.ancestor or {}).get("metadata") or {}).get("uid") or "")
        # a pod left to its owner is never suspended by us (Kueue's pods are top-level): not remembered
        self._remember_ancestor(key, ancestor_uid if integration.gate is None and ancestor_uid else None)
        if ancestry.ancestor is None:
            return False
        if integration.gate is None:
            await self._suspend_child(obj, integration, ancestry.ancestor)
        return True

    async def _suspend_child(self, obj: JSON, integration: Integration, ancestor: Any) -> None:
        """Kueue's ``shouldSuspendChildJob``: a running child whose ancestor has no admitted, unfinished
        Workload is suspended."""
        if engine.finished(integration, obj)[0] or engine.is_suspended(integration, obj):
            return
        namespace, _ = key_of(obj)
        ancestor_uid = str((ancestor.get("metadata") or {}).get("uid", ""))
        workload = self.context.store.workload_owned_by(namespace=namespace, owner_uid=ancestor_uid)
        if workload is not None and is_true(workload, "Admitted") and not is_true(workload, "Finished"):
            return
        version = (obj.get("metadata") or {}).get("resourceVersion")
        guard = [{"op": "test", "path": "/metadata/resourceVersion", "value": version}] if version else []
        suspended = await self.context.writer.patch(
            kind_of(integration), obj, [*guard, *engine.suspend_ops(integration, obj)]
        )
        if suspended is not None:
            self.context.events.record(
                obj, type="Normal", reason="Suspended", message="Kueue managed child job suspended"
            )

    async def _reconcile_group(self, integration: Integration, namespace: str, group: str) -> None:
        """``plan_group`` for the pods of ``group`` and the Workload named after it."""
        from webhook.control.jobs.pod_groups import plan_group  # it builds on this module

        configuration = self.context.configuration()
        labels = self.context.store.namespace_labels(namespace) or {"kubernetes.io/metadata.name": namespace}
        pods = []
        for pod in self.context.store.items(kind_of(integration), namespace=namespace):
            if group_name(pod) != group:
                continue
            if holds_finalizer(pod, integration) or is_managed(
                pod,
                integration,
                ancestry=await self._ancestry(pod, integration),
                config=configuration,
                namespace_labels=labels,
            ):
                pods.append(pod)
        workload = self.context.store.get(WORKLOADS, group, namespace)
        if workload is not None and _group_of_workload(workload) is None:
            workload = None  # a Workload of that name that is not a group's: not ours to drive
        step = plan_group(
            group,
            pods,
            workload,
            flavors=self._flavor,
            priorities=self._priorities(),
            pod_priorities=self._priorities(PRIORITY_CLASSES),
            pods_ready=configuration.wait_for_pods_ready.enable,
        )
        # a StatefulSet's Workload outlives its pods (stopped, scaled to zero): it then speaks for the group
        subject = pods[0] if pods else workload
        if step is not None and subject is not None:
            await self._execute(subject, step, integration)

    async def _reconcile_statefulset(self, integration: Integration, namespace: str, name: str) -> None:
        """``plan_statefulset`` for a StatefulSet, the pods it made and its Workload."""
        pods_integration = self._pods()
        sts = self.context.store.get(kind_of(integration), name, namespace)
        if sts is None or is_deleting(sts) or pods_integration is None:
            return  # a deleted StatefulSet's Workload goes with it (owner reference)
        configuration = self.context.configuration()
        labels = self.context.store.namespace_labels(namespace) or {"kubernetes.io/metadata.name": namespace}
        uid = str((sts.get("metadata") or {}).get("uid", ""))
        pods = [
            pod
            for pod in self.context.store.items(kind_of(pods_integration), namespace=namespace)
            if made_by_statefulset(pod) and (controlling_statefulset(pod) or {}).get("uid") == uid
        ]
        ancestry = await self._ancestry(sts, integration)
        step = plan_statefulset(
            sts,
            pods,
            self.context.store.get(WORKLOADS, statefulset_workload_name(name, uid), namespace),
            managed=is_managed(
                sts, integration, ancestry=ancestry, config=configuration, namespace_labels=labels
            ),
            priorities=self._priorities(),
            pod_priorities=self._priorities(PRIORITY_CLASSES),
        )
        if isinstance(step, CreateWorkload):
            await self._execute(sts, step, integration)
        elif step is not None:
            await execute(self.context, sts, step)

    async def release_orphan(self, key: tuple[str, str]) -> None:
        """A deleted Workload held by the finalizer with no live Job to wait for lets go at once.

        Kueue removes it without waiting for anything when the owning Job is gone or being deleted
        (``finalizeWorkloads``) and when the Workload has no owner at all (the workload controller's
        orphaned-Workload rule). A Workload owned by another kind counts as ownerless here: only Jobs are
        integrated, so nothing else would ever let it go. A live Job's Workload is for ``plan_job``.
        """
        namespace, name = key
        workload = self.context.store.get(WORKLOADS, name, namespace)
        if workload is None or not deleted_and_held(workload):
            return
        owner = controller_owner(workload)
        integration = self._integration_of_owner(owner)
        job = None
        if owner is not None and integration is not None:
            job = self.context.store.get(kind_of(integration), str(owner.get("name", "")), namespace)
            if job is not None and (job.get("metadata") or {}).get("uid") != owner.get("uid"):
                job = None
        if job is not None and not is_deleting(job):
            return
        if await self.context.writer.remove_finalizer(WORKLOADS, workload, RESOURCE_IN_USE) is not None:
            log.info(
                "finalizer removed",
                extra={"workload": "/".join(key), "reason": "deleted, no Job to wait for"},
            )
        self._backoffs.pop(("workload", *key), None)

    async def _clear_start_time(self, kind: Kind, job: JSON, integration: Integration) -> JSON | None:
        """Clear a suspended Job's ``status.startTime`` through the status subresource, as Kueue's
        ``Job.Stop`` does, so that kube-apiserver accepts its template's restore (the Job controller clears
        it too, but only once it has caught up with the suspension). The Job as it is then; None if gone."""

        def clear(current: JSON) -> JSON | None:
            if not engine.start_time_blocks_restore(integration, current):
                return None
            return {"startTime": None}

        if not engine.start_time_blocks_restore(integration, job):
            return job
        cleared = await self.context.writer.patch_status(kind, job, clear)
        return job if cleared is None else cleared

    async def _start(self, job: JSON, step: StartJob, integration: Integration) -> None:
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
                await self._execute(
                    job, FinishWorkload(step.workload, "FailedToStart", exc.message), integration
                )
                return
            if start_refused(exc):
                await self._record_refusal(job, step.workload, exc, admitted, integration.kind)
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

    async def _job_deleted(self, key: ObjectKey) -> None:
        uid = self._deleted_jobs.pop(key, None)
        if not uid:
            return
        workload = self.context.store.workload_owned_by(namespace=key[1], owner_uid=uid)
        if workload is not None:  # the garbage collector would do it too; doing it now frees quota at once
            await self.context.writer.delete(WORKLOADS, workload)

    async def _execute(self, job: JSON, step: Step, integration: Integration = JOB) -> None:
        namespace = key_of(job)[0]
        kind = kind_of(integration)
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
            await self._start(job, step, integration)
        elif isinstance(step, StopJob):
            target: JSON | None = job
            if step.first:
                target = await writer.patch(kind, job, list(step.first))
                if target is not None:
                    on_job("Stopped", step.message)
            if target is not None and step.clear_start_time:
                target = await self._clear_start_time(kind, target, integration)
            restored = target is not None and await writer.patch(kind, target, step.patch) is not None
            if restored and not step.first:
                on_job("Stopped", step.message)
        elif isinstance(step, DeleteObjects):
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
                    events.record(obj, type="Normal", reason="Stopped", message=step.message)
        elif isinstance(step, ReleaseObjects):
            finalizer = integration.gate.finalizer if integration.gate is not None else ""
            for obj in step.objects:
                await writer.remove_finalizer(kind, obj, finalizer)
        elif isinstance(step, RemoveExcessPods):
            finalizer = integration.gate.finalizer if integration.gate is not None else ""
            for obj in step.objects:
                await writer.remove_finalizer(kind, obj, finalizer)
                if not is_deleting(obj) and await writer.delete(kind, obj):
                    events.record(obj, type="Normal", reason="ExcessPodDeleted", message="Excess pod deleted")
        elif isinstance(step, StartPods):
            admitted = f"Admitted by clusterQueue {step.cluster_queue}"
            for obj, patch in step.patches:
                if await writer.patch(kind, obj, patch) is not None:
                    events.record(obj, type="Normal", reason="Started", message=admitted)
        elif isinstance(step, RemoveFinalizer):
            if await writer.remove_finalizer(WORKLOADS, step.workload, RESOURCE_IN_USE) is not None:
                log.info(
                    "finalizer removed",
                    extra={"workload": "/".join(key_of(step.workload)), "reason": step.why},
                )
        elif isinstance(step, UpdatePodSets):
            # null removes a limit the Job no longer has (RFC 7386)
            spec = {
                "podSets": step.pod_sets,
                "maximumExecutionTimeSeconds": step.maximum_execution_time_seconds,
            }
            updated = await writer.patch(WORKLOADS, step.workload, {"spec": spec}, patch_type="merge")
            if updated is not None:
                on_job(
                    "UpdatedWorkload",
                    f"Updated not matching Workload for suspended job: {'/'.join(key_of(updated))}",
                )
        elif isinstance(step, UpdateQueueName):
            moved = await writer.patch(
                WORKLOADS, step.workload, {"spec": {"queueName": step.queue_name}}, patch_type="merge"
            )
            if moved is not None:
                log.info(
                    "job changed queue-name, workload updated",
                    extra={"workload": "/".join(key_of(moved)), "queue": step.queue_name},
                )
        elif isinstance(step, DeleteWorkload):
            if await writer.delete(WORKLOADS, step.workload):
                on_job("DeletedWorkload", step.message)
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
