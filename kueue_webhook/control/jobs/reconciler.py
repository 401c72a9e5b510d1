"""Object ⇄ Workload lifecycle for every queued kind: routes store changes to work-queue keys and runs one
reconcile per key, retried with backoff.

The scheduling task only ever writes Workloads; everything that touches a queued object (a Job, a JobSet,
a pod group...) happens here. A change of an object, of a Workload or of a ResourceFlavor becomes keys
(each kind's queueing mode says which: ``kueue_webhook.control.jobs.queueing``); a key is reconciled by its
kind's mode, which plans one step for the object and its Workload and has it written by the one executor
(``kueue_webhook.control.jobs.executor``). Keys come from a de-duplicating work queue, so a step that fails
(or races another writer) is simply planned again; a key in a namespace being deleted is not retried. The
changes a user waits on (an object finished, a Workload admitted: ``kueue_webhook.control.jobs.urgency``)
are served first, by a worker kept for them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from kueue_webhook.api.finalizers import RESOURCE_IN_USE, is_deleting
from kueue_webhook.api.integrations import JOB, Integration
from kueue_webhook.api.integrations.engine import PriorityClasses
from kueue_webhook.api.integrations.engine.priority import POD_PRIORITY_GROUP
from kueue_webhook.api.integrations.managed import ancestry_of
from kueue_webhook.api.integrations.owners import Ancestry, controller_reference
from kueue_webhook.api.objects import GROUP, ResourceFlavor, has_quota_reservation, parse_resource_flavor
from kueue_webhook.api.objects.multikueue import is_multikueue_check
from kueue_webhook.control.cache.store import Change, controller_owner, key_of
from kueue_webhook.control.cache.workqueue import WorkQueue
from kueue_webhook.control.jobs.executor import AnyStep, StepExecutor
from kueue_webhook.control.jobs.job_plan import AwaitPriorityClass, deleted_and_held
from kueue_webhook.control.jobs.modes import mode_of
from kueue_webhook.control.jobs.owner_lookup import OwnerFetcher
from kueue_webhook.control.jobs.queueing import ObjectKey, PlanInputs, QueueingMode
from kueue_webhook.control.jobs.reconcile_queue import ReconcileQueue
from kueue_webhook.control.jobs.urgency import workload_change_is_urgent
from kueue_webhook.control.kube.backoff import Backoff
from kueue_webhook.control.kube.client import ApiError
from kueue_webhook.control.kube.kinds import (
    ADMISSION_CHECKS,
    PRIORITY_CLASSES,
    RESOURCE_FLAVORS,
    WORKLOAD_PRIORITY_CLASSES,
    WORKLOADS,
    Kind,
    dependency_kind,
    kind_of,
)
from kueue_webhook.control.kube.leader import NotLeader
from kueue_webhook.control.output.context import ControlContext

JSON = dict[str, Any]
Handler = Callable[[Any], Awaitable[None]]
#: workers that serve only urgent keys, beside the ``workers`` that serve every key urgent ones first
URGENT_WORKERS = 1
log = logging.getLogger("kueue_webhook.reconciler")


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
    """Reconciles every queued object (a Job, a JobSet, ... : every enabled integration) the store reports
    changed, directly or through its Workload, by asking the object's queueing mode (``mode_of``)."""

    def __init__(
        self, context: ControlContext, *, workers: int = 4, owners: OwnerFetcher | None = None
    ) -> None:
        self.context = context
        self.workers = workers
        self.queue = ReconcileQueue()
        #: keys of deleted Workloads that may have no object left to speak for them (``release_orphan``)
        self.orphans: WorkQueue[tuple[str, str]] = WorkQueue()
        self.executor = StepExecutor(context)
        self._deleted_jobs: dict[ObjectKey, str] = {}  # object key -> uid, until its Workload is gone
        self._backoffs: dict[tuple[str, ...], Backoff] = {}
        #: looks up owners of kinds the store does not watch (none: such owners stay unresolved)
        self.owners = owners
        #: objects left to a queued ancestor, by the ancestor's uid, and the reverse: a change of the
        #: ancestor's Workload reconciles them (Kueue's parent Workload handler)
        self._children: dict[str, set[ObjectKey]] = {}
        self._ancestor_of: dict[ObjectKey, str] = {}
        #: the modes of the configuration in force, by framework name (built again when it is reloaded)
        self._modes_of: tuple[object, dict[str, QueueingMode]] = (None, {})
        #: (API group, name) of the priority classes objects named when they did not exist: an object gets
        #: no Workload until its class is there, and the class's arrival reconciles every object again
        self._awaited_classes: set[tuple[str, str]] = set()

    def _modes(self) -> dict[str, QueueingMode]:
        """The queueing mode of every enabled integration, by framework name, in the configuration's order."""
        configuration = self.context.configuration()
        if self._modes_of[0] is not configuration:
            self._modes_of = (configuration, {i.name: mode_of(i) for i in configuration.integrations})
        return self._modes_of[1]

    def _integration_of_owner(self, owner: JSON | None) -> Integration | None:
        """The enabled integration of a Workload's controller ownerReference."""
        if owner is None:
            return None
        for integration in self.context.configuration().integrations:
            if integration.matches(owner.get("apiVersion"), owner.get("kind")):
                return integration
        return None

    def on_change(self, change: Change) -> None:
        integration = self.context.configuration().integrations.for_kind(change.kind.group, change.kind.kind)
        if integration is not None:
            self._modes()[integration.name].on_change(self, change)
        elif change.kind is WORKLOADS:
            obj = change.new if change.new is not None else change.old
            urgent: bool | None = None  # asked only of a Workload some queued object owns
            for mode in self._modes().values():
                for key in mode.keys_for_workload(obj or {}):
                    if urgent is None:
                        urgent = workload_change_is_urgent(change)
                    self.queue.add(key, urgent=urgent)
            self._queue_children_of(controller_owner(obj))
            if change.new is not None and deleted_and_held(change.new):
                self.orphans.add(change.key)
        elif self._dependents(change):
            return
        elif change.kind is WORKLOAD_PRIORITY_CLASSES or change.kind is PRIORITY_CLASSES:
            self._class_arrived(change)
        elif change.kind is RESOURCE_FLAVORS and change.new is not None:
            # admitted Workloads may have waited for this flavor
            modes = self._modes().values()
            for workload in self.context.store.items(WORKLOADS):
                if has_quota_reservation(workload):
                    for mode in modes:
                        for key in mode.keys_for_workload(workload):
                            self.queue.add(key)

    def _class_arrived(self, change: Change) -> None:
        """A priority class some object waited for exists now: every queued object is reconciled again (a
        rare event, and which objects name a class differs by kind), as after a leadership change."""
        if change.new is None or not self._awaited_classes:
            return
        group = GROUP if change.kind is WORKLOAD_PRIORITY_CLASSES else POD_PRIORITY_GROUP
        awaited = (group, key_of(change.new)[1])
        if awaited in self._awaited_classes:
            self._awaited_classes.discard(awaited)
            for kind, consume in self.resync_consumers():
                for obj in self.context.store.items(kind):
                    consume(obj)

    def _dependents(self, change: Change) -> bool:
        """An object some queued kind reads its pod sets from changed (a TrainJob's runtime): queue the
        objects that name it. False when ``change`` is of no such kind."""
        found = False
        obj = change.new if change.new is not None else change.old
        meta = (obj or {}).get("metadata") or {}
        name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
        for mode in self._modes().values():
            resolver = mode.integration.resolver
            for dependency in resolver.dependencies if resolver is not None else ():
                if dependency_kind(dependency) != change.kind:
                    continue
                found = True
                for item in self.context.store.items(kind_of(mode.integration), namespace=namespace or None):
                    if resolver is not None and resolver.refers_to(item, dependency, name, namespace):
                        self.queue.add(mode.key(item))
        return found

    def resync(self) -> None:
        """Queue every queued object, and every deleted Workload still held (after becoming leader: finish
        anything a previous leader left half done, such as a finalizer it did not get to remove)."""
        for kind, consume in self.resync_consumers():
            for obj in self.context.store.items(kind):
                consume(obj)
        for workload in self.context.store.items(WORKLOADS):
            self.resync_workload(workload)

    def resync_consumers(self) -> list[tuple[Kind, Callable[[JSON], None]]]:
        """``resync`` as one consumer per queued kind, each to be handed every object of its kind (a term's
        start passes over the store once per kind, in slices); the Workloads go to ``resync_workload``."""
        return [
            (kind_of(mode.integration), partial(self._queue_object, mode))
            for mode in self._modes().values()
            if mode.has_objects
        ]

    def _queue_object(self, mode: QueueingMode, obj: JSON) -> None:
        self.queue.add(mode.key(obj))

    def resync_workload(self, workload: JSON) -> None:
        if deleted_and_held(workload):
            self.orphans.add(key_of(workload))

    async def run(self) -> None:
        async def worker(
            queue: WorkQueue[Any], handler: Handler, tag: str, *, urgent_only: bool = False
        ) -> None:
            await queue.serve(handler, on_error=partial(self._failed, queue, tag), urgent_only=urgent_only)

        await asyncio.gather(
            *(worker(self.queue, self.reconcile, "job") for _ in range(self.workers)),
            # kept free of routine keys: a finished or admitted object is not served behind them (``urgency``)
            *(worker(self.queue, self.reconcile, "job", urgent_only=True) for _ in range(URGENT_WORKERS)),
            # as many for finalizers: a namespace being deleted waits on every one of its Workloads
            *(worker(self.orphans, self.release_orphan, "workload") for _ in range(self.workers)),
        )

    async def start_admitted(self, workload: JSON) -> None:
        """Reconcile the object of a Workload whose admission has just been answered, at once and in the
        caller's task (the admission write's): the object is started from the write's answer, with no turn
        of the event loop to wait for (``reconcile_queue``). A key a worker is on already is left to the
        queue, which reconciles it again after; a failure is retried as a worker's is."""
        for mode in self._modes().values():
            for key in mode.keys_for_workload(workload):
                if not self.queue.claim(key):
                    continue
                try:
                    await self.reconcile(key)
                except Exception as exc:
                    self._failed(self.queue, "job", key, exc)
                finally:
                    self.queue.done(key)

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

    async def reconcile(self, key: ObjectKey) -> None:
        mode = self._modes().get(key[0])
        if mode is None:
            return  # the integration was turned off: left alone
        if await mode.reconcile(self, key):
            self._backoffs.pop(("job", *key), None)

    # -- what a queueing mode uses (``kueue_webhook.control.jobs.queueing.Host``)
    # ------------------------------

    def queue_key(self, key: ObjectKey, *, urgent: bool = False) -> None:
        self.queue.add(key, urgent=urgent)

    def queue_orphan(self, workload: JSON) -> None:
        self.orphans.add(key_of(workload))

    def remember_deleted(self, key: ObjectKey, uid: str) -> None:
        self._deleted_jobs[key] = uid

    async def delete_workload_of_deleted(self, key: ObjectKey) -> None:
        uid = self._deleted_jobs.pop(key, None)
        if not uid:
            return
        workload = self.context.store.workload_owned_by(namespace=key[1], owner_uid=uid)
        if workload is not None:  # the garbage collector would do it too; doing it now frees quota at once
            await self.context.writer.delete(WORKLOADS, workload)

    def inputs(self) -> PlanInputs:
        return PlanInputs(
            flavors=self._flavor,
            priority_classes=PriorityClasses.from_objects(
                self.context.store.items(WORKLOAD_PRIORITY_CLASSES),
                self.context.store.items(PRIORITY_CLASSES),
            ),
            pods_ready=self.context.configuration().wait_for_pods_ready.enable,
            label_keys=self.context.configuration().integrations.label_keys_to_copy,
            multikueue_checks=frozenset(
                key_of(check)[1]
                for check in self.context.store.items(ADMISSION_CHECKS)
                if is_multikueue_check(check)
            ),
        )

    async def execute(self, obj: JSON, step: AnyStep, integration: Integration = JOB) -> None:
        if isinstance(step, AwaitPriorityClass):
            self._awaited_classes.add((step.group, step.name))
        await self.executor.run(obj, step, integration)

    async def ancestry(self, obj: JSON, integration: Integration) -> Ancestry:
        """The object's ancestry (``kueue_webhook.api.integrations.owners``), owners the store does not watch
        fetched from the API server."""
        config, store = self.context.configuration(), self.context.store
        if self.owners is not None and controller_reference(obj) is not None:
            return await self.owners.ancestry(obj, integration, config=config, store=store)
        return ancestry_of(obj, integration, config=config, lookup=store)

    def remember_ancestor(self, key: ObjectKey, ancestor_uid: str | None) -> None:
        previous = self._ancestor_of.pop(key, None)
        if previous is not None:
            children = self._children.get(previous, set())
            children.discard(key)
            if not children:
                self._children.pop(previous, None)
        if ancestor_uid:
            self._ancestor_of[key] = ancestor_uid
            self._children.setdefault(ancestor_uid, set()).add(key)

    # -- inputs -----------------------------------------------------------------------------------------

    def _queue_children_of(self, owner: JSON | None) -> None:
        """A Workload changed: the objects left to its owner may have to be suspended (or not any more)."""
        uid = str((owner or {}).get("uid") or "")
        for key in self._children.get(uid, ()):
            self.queue.add(key)

    def _flavor(self, name: str) -> ResourceFlavor | None:
        raw = self.context.store.get(RESOURCE_FLAVORS, name)
        if raw is None:
            return None
        parsed = parse_resource_flavor(raw)
        return parsed if isinstance(parsed, ResourceFlavor) else None

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
