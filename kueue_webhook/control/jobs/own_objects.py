"""The queueing mode of a kind whose objects are queued themselves: a Job, a JobSet, a RayJob, a declared
CRD, and (``kueue_webhook.control.jobs.pods``) a pod on its own.

One object, one Workload: ``plan_job`` is run for the object and the Workload it owns. Before that, as
Kueue's jobframework reconciler: a deleted object lets go of its own finalizer; an object queued through a
real queued ancestor gets no Workload and, while that ancestor is not admitted, is suspended if it runs
(Kueue's ``shouldSuspendChildJob``); an object no longer queued loses its Workload (``plan_unmanaged``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from kueue_webhook.api.finalizers import is_deleting
from kueue_webhook.api.integrations import Integration, engine
from kueue_webhook.api.integrations.engine import JOB_UID_LABEL
from kueue_webhook.api.integrations.managed import ON_ITS_OWN, is_managed
from kueue_webhook.api.integrations.model import Dependency
from kueue_webhook.api.integrations.owners import controller_reference
from kueue_webhook.api.multikueue import gated, runs_in_worker
from kueue_webhook.api.multikueue import prebuilt_workload_name as multikueue_prebuilt_name
from kueue_webhook.api.owner_references import controller_owner_reference
from kueue_webhook.control.cache.store import Change, controller_owner, key_of
from kueue_webhook.control.jobs.job_plan import (
    NOT_ADMITTED,
    ReleaseObjects,
    StopJob,
    deleted_and_held,
    holds_finalizer,
    plan_job,
    plan_unmanaged,
)
from kueue_webhook.control.jobs.queueing import Host, ObjectKey, may_queue_in, namespace_labels
from kueue_webhook.control.jobs.urgency import object_change_is_urgent
from kueue_webhook.control.kube.kinds import WORKLOADS, dependency_kind, kind_of
from kueue_webhook.control.output.conditions import is_true

__all__ = ["KindMode", "OwnObjects", "owner_keys", "queue_change"]

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.reconciler")


def owner_keys(integration: Integration, workload: JSON) -> Iterable[ObjectKey]:
    """The key of the Workload's controlling owner when it is an object of ``integration``."""
    owner = controller_owner(workload)
    if owner is not None and integration.matches(owner.get("apiVersion"), owner.get("kind")):
        yield (integration.name, key_of(workload)[0], str(owner.get("name", "")))


def queue_change(host: Host, change: Change, key: ObjectKey, *, urgent: bool = False) -> None:
    """Queue the changed object's ``key`` (``urgent``: ahead of routine keys); a deleted one's Workload is
    deleted when it is reconciled, and a Workload its finalizer still holds is let go once nothing needs
    it."""
    if change.new is None and change.old is not None:
        host.remember_deleted(key, str((change.old.get("metadata") or {}).get("uid", "")))
    if change.new is None or is_deleting(change.new):
        gone = change.old if change.new is None else change.new
        uid = str(((gone or {}).get("metadata") or {}).get("uid", ""))
        workload = host.context.store.workload_owned_by(namespace=change.key[0], owner_uid=uid)
        if workload is not None and deleted_and_held(workload):
            host.queue_orphan(workload)
    host.queue_key(key, urgent=urgent)


def prebuilt_workload_name(obj: JSON) -> str:
    """The Workload a MultiKueue manager made for this worker copy ("" for an object of its own): a label
    on a job, an annotation on a pod (``kueue_webhook.api.multikueue.prebuilt_workload_name``)."""
    return multikueue_prebuilt_name(obj)


class KindMode:
    """What every mode of a kind with objects of its own does alike: an object's key is its name, its
    changes queue that key, and a Workload's change queues its owner's."""

    def __init__(self, integration: Integration) -> None:
        self.integration = integration

    @property
    def has_objects(self) -> bool:
        return True

    def key(self, obj: JSON) -> ObjectKey:
        return (self.integration.name, *key_of(obj))

    def on_change(self, host: Host, change: Change) -> None:
        current = change.new if change.new is not None else change.old
        key = self.key(current) if current is not None else (self.integration.name, *change.key)
        queue_change(host, change, key, urgent=object_change_is_urgent(self.integration, change))

    def keys_for_workload(self, workload: JSON) -> Iterable[ObjectKey]:
        return owner_keys(self.integration, workload)


class OwnObjects(KindMode):
    """Objects suspended and started themselves, each with a Workload of its own."""

    #: a running object whose queued ancestor's Workload is not admitted is suspended (Kueue's
    #: ``shouldSuspendChildJob``); pods are not (Kueue's pods are top-level)
    suspended_for_ancestor = True

    def waits_for_owner(self, obj: JSON) -> bool:
        """The object is made by an owner that queues it later (a StatefulSet's pod not in its group yet)."""
        del obj
        return False

    async def reconcile(self, host: Host, key: ObjectKey) -> bool:
        _, namespace, name = key
        integration, context = self.integration, host.context
        job = context.store.get(kind_of(integration), name, namespace)
        if job is None:
            host.remember_ancestor(key, None)
            await host.delete_workload_of_deleted(key)
            return False
        if is_deleting(job):
            # its Workload's finalizer is for release_orphan, as Kueue finalizes a deleted Job's; a pod's own
            # finalizer goes at once (Kueue's Pod.Finalize of a deleted pod)
            if holds_finalizer(job, integration):
                await host.execute(job, ReleaseObjects((job,)), integration)
            return False
        configuration = context.configuration()
        uid = str((job.get("metadata") or {}).get("uid", ""))
        workload = context.store.workload_owned_by(namespace=namespace, owner_uid=uid)
        if workload is None and prebuilt_workload_name(job):
            # a worker's copy made by a MultiKueue manager: its Workload was made for it beforehand
            await self._adopt_prebuilt(host, job)
            return True
        if not may_queue_in(host, namespace, has_workload=workload is not None):
            return False
        alone = is_managed(
            job,
            integration,
            ancestry=ON_ITS_OWN,
            config=configuration,
            namespace_labels=namespace_labels(host, namespace),
        )
        # a Job without a queue name of its own is still suspended while its queued owner is not admitted; a
        # pod's owners matter only when it is queued on its own (Kueue's pods are top-level)
        if (alone or self.suspended_for_ancestor) and await self._left_to_owner(host, job):
            return False
        if not alone:
            # no longer queued (its queue label removed while suspended): its Workload must not hold quota
            unmanaged = plan_unmanaged(job, workload, integration=integration)
            if unmanaged is not None:
                await host.execute(job, unmanaged, integration)
            return False
        if self.waits_for_owner(job):
            return False
        view = self._resolved(host, job, workload)
        if view is None:
            return True  # the object it names is missing: its arrival queues this key again
        job = view
        inputs = host.inputs()
        step = plan_job(
            job,
            workload,
            flavors=inputs.flavors,
            classes=inputs.priority_classes,
            pods_ready=inputs.pods_ready,
            integration=integration,
            prebuilt=bool(prebuilt_workload_name(job)),
            dispatched=gated(integration.group, integration.kind)
            and runs_in_worker(workload, inputs.multikueue_checks),
            label_keys=inputs.label_keys,
        )
        if step is not None:
            await host.execute(job, step, integration)
        return True

    def _resolved(self, host: Host, job: JSON, workload: JSON | None) -> JSON | None:
        """The object as its plan reads it: for a kind whose pod sets are partly in another object it names
        (``Resolver``: a TrainJob's runtime), that object's part merged in. When it is missing, the
        Workload's pod sets stand in for it (the object can still be started, stopped and finished); with no
        Workload either, None, after a Warning Event on the object saying what it waits for (Kueue's
        ``ErrWorkloadCompose``)."""
        resolver = self.integration.resolver
        if resolver is None:
            return job
        store = host.context.store

        def lookup(dependency: Dependency, name: str, namespace: str) -> JSON | None:
            return store.get(dependency_kind(dependency), name, namespace)

        resolved = resolver.resolve(job, lookup)
        if not isinstance(resolved, str):
            return resolved
        if workload is not None:
            return resolver.from_workload(job, workload)
        host.context.events.record(job, type="Warning", reason="ErrWorkloadCompose", message=resolved)
        log.info("no Workload: %s", resolved, extra={"object": "/".join(key_of(job))})
        return None

    async def _adopt_prebuilt(self, host: Host, job: JSON) -> None:
        """Kueue's ``ensureOneWorkload`` for an object naming a prebuilt Workload: that Workload, once it
        exists and nothing else controls it, is made the object's own (controller ownerReference and
        job-uid label); one controlled by another object is left alone. While it does not exist the
        object is kept suspended and the key retried with backoff (Kueue's
        ``ErrPrebuiltWorkloadNotFound``): the object never runs without its Workload."""
        integration, context = self.integration, host.context
        namespace, _ = key_of(job)
        name = prebuilt_workload_name(job)
        workload = context.store.get(WORKLOADS, name, namespace)
        if workload is None:
            if not engine.is_suspended(integration, job) and not engine.finished(integration, job)[0]:
                await host.execute(
                    job, StopJob(engine.suspend_ops(integration, job), NOT_ADMITTED), integration
                )
            raise LookupError(f"prebuilt workload {namespace}/{name} not found")
        meta = job.get("metadata") or {}
        owner = controller_owner(workload)
        if owner is not None:
            if owner.get("uid") != meta.get("uid"):
                log.warning(
                    "prebuilt workload is controlled by another object",
                    extra={"workload": f"{namespace}/{name}", "controller": str(owner.get("name"))},
                )
            return
        reference = controller_owner_reference(
            integration.api_version, integration.kind, meta.get("name"), meta.get("uid")
        )
        version = (workload.get("metadata") or {}).get("resourceVersion")
        patch: list[JSON] = [{"op": "test", "path": "/metadata/resourceVersion", "value": version}]
        references = (workload.get("metadata") or {}).get("ownerReferences")
        if references:
            patch.append({"op": "add", "path": "/metadata/ownerReferences/-", "value": reference})
        else:
            patch.append({"op": "add", "path": "/metadata/ownerReferences", "value": [reference]})
        if not (workload.get("metadata") or {}).get("labels"):
            patch.append({"op": "add", "path": "/metadata/labels", "value": {}})
        label = JOB_UID_LABEL.replace("/", "~1")
        patch.append({"op": "add", "path": f"/metadata/labels/{label}", "value": str(meta.get("uid", ""))})
        if await context.writer.patch(WORKLOADS, workload, patch) is not None:
            log.info("prebuilt workload adopted", extra={"workload": f"{namespace}/{name}"})

    async def _left_to_owner(self, host: Host, obj: JSON) -> bool:
        """Whether the object is queued through a real queued owner rather than on its own (Kueue's
        ``FindAncestorJobManagedByKueue`` in ``Reconcile``; ``kueue_webhook.api.integrations.owners``), in
        which
        case it gets no Workload, and, as Kueue's ``shouldSuspendChildJob``, is suspended if it runs while
        its ancestor's Workload is not admitted.

        An object that already has a Workload of its own stays queued on its own: an ownerReference added
        later does not free it from its quota."""
        integration, context = self.integration, host.context
        key = self.key(obj)
        if controller_reference(obj) is None:
            host.remember_ancestor(key, None)
            return False
        namespace, _ = key_of(obj)
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        if context.store.workload_owned_by(namespace=namespace, owner_uid=uid) is not None:
            host.remember_ancestor(key, None)
            return False
        ancestry = await host.ancestry(obj, integration)
        where = {"object": f"{integration.kind} {namespace}/{key_of(obj)[1]}"}
        if ancestry.too_deep:
            context.events.record(obj, type="Warning", reason="JobNestingTooDeep", message=ancestry.note)
            log.warning("queued on its own: %s", ancestry.note, extra=where)
        elif ancestry.note and ancestry.ancestor is None:
            log.info("queued on its own: %s", ancestry.note, extra=where)
        ancestor_uid = str(((ancestry.ancestor or {}).get("metadata") or {}).get("uid") or "")
        # an object its ancestor never suspends needs no reconcile when that ancestor's Workload changes
        host.remember_ancestor(key, ancestor_uid if self.suspended_for_ancestor and ancestor_uid else None)
        if ancestry.ancestor is None:
            return False
        if self.suspended_for_ancestor:
            await self._suspend_child(host, obj, ancestry.ancestor)
        return True

    async def _suspend_child(self, host: Host, obj: JSON, ancestor: Any) -> None:
        """Kueue's ``shouldSuspendChildJob``: a running child whose ancestor has no admitted, unfinished
        Workload is suspended."""
        integration, context = self.integration, host.context
        if engine.finished(integration, obj)[0] or engine.is_suspended(integration, obj):
            return
        namespace, _ = key_of(obj)
        ancestor_uid = str((ancestor.get("metadata") or {}).get("uid", ""))
        workload = context.store.workload_owned_by(namespace=namespace, owner_uid=ancestor_uid)
        if workload is not None and is_true(workload, "Admitted") and not is_true(workload, "Finished"):
            return
        version = (obj.get("metadata") or {}).get("resourceVersion")
        guard = [{"op": "test", "path": "/metadata/resourceVersion", "value": version}] if version else []
        suspended = await context.writer.patch(
            kind_of(integration), obj, [*guard, *engine.suspend_ops(integration, obj)]
        )
        if suspended is not None:
            context.events.record(
                obj, type="Normal", reason="Suspended", message="Kueue managed child job suspended"
            )
