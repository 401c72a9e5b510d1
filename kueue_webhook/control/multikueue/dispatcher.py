"""MultiKueue dispatch: the manager's Workloads run in worker clusters; their status comes back.

The leader runs this for every Workload whose status lists an AdmissionCheck served by MultiKueue
(``spec.controllerName: kueue.x-k8s.io/multikueue``). Each key is reconciled as Kueue's MultiKueue workload
reconciler does: the group (the manager's Workload, its copy in each worker of the check's config, which
workers are unreachable and since when) goes through the pure ``plan_dispatch``, and this module carries
out the plan: copies created and deleted in the workers, the winner's job created there and its status
read back into the manager's job (status subresource), the check's state, ``clusterName`` and
``nominatedClusterNames`` written on the manager's Workload, the Workload finished when its copy is.

Kinds without ``managedBy`` (``kueue_webhook.api.multikueue.GATED``: Pods, StatefulSets, LeaderWorkerSets)
keep their manager pods gated instead, and what is copied for them differs: each pod, with its status read
back (``pod_copies``), or the object alone; a LeaderWorkerSet's Workloads all go to the worker its lowest
group went to (``plan.component_binding``).

Which workers a check may use, a client for each reachable one and since when one is unreachable come from
``WorkerClusters`` (the cluster side). The workers' copies are watched (``worker_watch``): a copy that
changes there queues its Workload here, so status flows back on the event. Every ``gc_interval`` the
garbage collection (``garbage``) deletes copies whose manager Workload is gone (Kueue's ``runGC``).

Nothing is remembered that the API objects do not hold: the chosen worker is the Workload's
``status.clusterName``, the copies carry the origin label, so a new leader continues where the last left.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from kueue_webhook.api.conditions import is_true
from kueue_webhook.api.config import Configuration
from kueue_webhook.api.finalizers import is_deleting
from kueue_webhook.api.integrations.leaderworkersets import groups
from kueue_webhook.api.multikueue import (
    MULTIKUEUE_CONTROLLER,
    copies_groups,
    copies_pods,
    gated,
    managed_by,
)
from kueue_webhook.api.objects import admitted_cluster_queue, has_quota_reservation
from kueue_webhook.control.cache.store import Change, controller_owner, key_of
from kueue_webhook.control.cache.workqueue import WorkQueue
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import ADMISSION_CHECKS, WORKLOADS, Kind
from kueue_webhook.control.kube.leader import NotLeader
from kueue_webhook.control.multikueue.copies import workload_copy
from kueue_webhook.control.multikueue.garbage import GarbageCollector
from kueue_webhook.control.multikueue.job_mirror import JobMirror
from kueue_webhook.control.multikueue.plan import (
    INCREMENTAL,
    Group,
    Plan,
    check_state,
    cluster_name,
    component_binding,
    next_nomination,
    plan_dispatch,
    wants_nomination,
)
from kueue_webhook.control.multikueue.pod_copies import local_pods, reset_pods, sync_pods
from kueue_webhook.control.multikueue.scope import (
    check_of,
    workload_kind,
)
from kueue_webhook.control.multikueue.settings import DEFAULT_SETTINGS, DispatchSettings
from kueue_webhook.control.multikueue.worker_objects import (
    WorkerUnreachable,
    delete_copies,
    get_object,
)
from kueue_webhook.control.multikueue.worker_watch import WorkerWatches
from kueue_webhook.control.multikueue.workers import WorkerClusters
from kueue_webhook.control.output.conditions import check_state_status, finished_status, now_rfc3339
from kueue_webhook.control.output.context import ControlContext

__all__ = ["DispatchSettings", "MultiKueueDispatcher", "WorkerUnreachable", "multikueue_workloads"]

JSON = dict[str, Any]
Key = tuple[str, str]
log = logging.getLogger("kueue_webhook.multikueue")

#: what ``spec.managedBy`` must say on the manager's job, and why the API server may have dropped it
MANAGED_BY_HINT = (
    " (the API server dropped spec.managedBy, or it was never set: Kubernetes v1.30+ with the JobManagedBy "
    "feature, on by default from v1.32, is needed for MultiKueue)"
)


class MultiKueueDispatcher:
    """Dispatches Workloads of ClusterQueues with a MultiKueue check to the workers; runs while leading."""

    def __init__(
        self,
        context: ControlContext,
        *,
        workers: WorkerClusters,
        settings: DispatchSettings | Callable[[], DispatchSettings] = DEFAULT_SETTINGS,
        concurrency: int = 2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.context = context
        self.workers = workers
        #: the settings in force, asked for each time (the configuration's ``multiKueue`` changes live)
        self._settings = settings if callable(settings) else (lambda: settings)
        self.concurrency = concurrency
        self.clock = clock
        self.queue: WorkQueue[Key] = WorkQueue()
        #: the last state of manager Workloads deleted while dispatched, until their copies are gone
        self._deleted: dict[Key, JSON] = {}
        self._timers: dict[Key, asyncio.TimerHandle] = {}
        #: the Incremental dispatcher's current round's start, by Workload
        self._rounds: dict[Key, float] = {}
        self.mirror = JobMirror(context, origin=lambda: self.settings.origin)
        self.garbage = GarbageCollector(context, workers=workers, settings=self._settings)
        #: the workers' copies, watched: a copy's change queues its Workload
        self.watches = WorkerWatches(
            context, workers=workers, origin=lambda: self.settings.origin, touched=self.queue.add
        )
        workers.subscribe(self._worker_changed)

    @property
    def settings(self) -> DispatchSettings:
        return self._settings()

    # -- routing -------------------------------------------------------------------------------------------

    def on_change(self, change: Change) -> None:
        if change.kind is WORKLOADS:
            if change.new is None and change.old is not None:
                if self._check_of(change.old) is not None:
                    self._deleted[change.key] = change.old
                    self.queue.add(change.key)
            elif change.new is not None and self._check_of(change.new) is not None:
                self.queue.add(change.key)
                if change.old is not None and cluster_name(change.old) != cluster_name(change.new):
                    kind = self._workload_kind(change.new)
                    if kind is not None and copies_groups(kind.group, kind.kind):
                        self._queue_siblings(change.new)  # they go where this one went
        elif change.kind is ADMISSION_CHECKS:
            self.watches.refresh()
            self.resync()
        elif change.new is not None and not change.only_status_changed():
            self._queue_owned(change.new)

    def _queue_owned(self, obj: JSON) -> None:
        """A manager job that started or stopped: what is read back from its worker depends on that (a
        Job's status is mirrored once it runs here), so its Workload is looked at again."""
        uid = (obj.get("metadata") or {}).get("uid")
        if not uid:
            return
        workload = self.context.store.workload_owned_by(namespace=key_of(obj)[0], owner_uid=str(uid))
        if workload is not None and self._check_of(workload) is not None:
            self.queue.add(key_of(workload))

    def _worker_changed(self, cluster: str) -> None:
        self.watches.refresh()
        if self.context.is_leader():
            self.resync()

    def reconfigure(self, configuration: Configuration) -> None:
        """A new configuration may change the origin or the kinds copied: the watches follow."""
        self.watches.refresh()

    def _check_of(self, workload: JSON) -> str | None:
        return check_of(self.context.store, workload)

    def resync(self) -> None:
        """Every Workload with a MultiKueue check (on becoming leader, a worker's state changing)."""
        for workload in self.context.store.items(WORKLOADS):
            self.resync_workload(workload)

    def resync_workload(self, workload: JSON) -> None:
        """``resync`` for one Workload (a term's start hands each one to every controller in one pass)."""
        if self._check_of(workload) is not None:
            self.queue.add(key_of(workload))

    # -- running -------------------------------------------------------------------------------------------

    async def run(self) -> None:
        async def serve() -> None:
            await self.queue.serve(self.reconcile, on_error=self._failed)

        try:
            await asyncio.gather(
                *(serve() for _ in range(self.concurrency)), self.watches.run(), self.garbage.run()
            )
        finally:
            for timer in self._timers.values():
                timer.cancel()
            self._timers.clear()

    def _failed(self, key: Key, exc: BaseException) -> None:
        if not isinstance(exc, NotLeader):
            log.warning("multikueue sync failed, retrying: %r", exc, extra={"workload": "/".join(key)})
        self._requeue(key, 1.0)

    def _requeue(self, key: Key, delay: float) -> None:
        previous = self._timers.pop(key, None)
        if previous is not None:
            previous.cancel()
        self._timers[key] = asyncio.get_running_loop().call_later(delay, self._fire, key)

    def _fire(self, key: Key) -> None:
        self._timers.pop(key, None)
        self.queue.add(key)

    # -- one Workload --------------------------------------------------------------------------------------

    async def reconcile(self, key: Key) -> None:
        if not self.context.is_leader():
            return
        namespace, name = key
        local = self.context.store.get(WORKLOADS, name, namespace)
        deleted = local is None or is_deleting(local)
        if local is None:
            local = self._deleted.get(key)
            if local is None:
                return
        check = self._check_of(local)
        if check is None:
            self._deleted.pop(key, None)
            return
        state = check_state(local, check) or {}
        owner = controller_owner(local)
        group_kind = self._workload_kind(local)
        local_objects: list[JSON] | None = None
        if not deleted and state.get("state") != "Rejected":
            if group_kind is None:
                kind = (
                    ""
                    if owner is None
                    else f"{owner.get('kind')}.{str(owner.get('apiVersion')).split('/')[0]}"
                )
                message = (
                    f'No multikueue adapter found for owner kind "{kind}"'
                    if kind
                    else "No multikueue adapter found"
                )
                await self._set_check(local, check, "Rejected", message)
                return
            if copies_pods(group_kind.group, group_kind.kind):
                # pods have no managedBy: they are Kueue's always (its pod adapter's IsJobManagedByKueue)
                local_objects = local_pods(self.context.store, group_kind, local)
                if local_objects is None:
                    return  # its pod is not in the store (yet): the Workload's next change brings us back
            else:
                local_job = self.context.store.get(group_kind, str((owner or {}).get("name", "")), namespace)
                if local_job is None or local_job["metadata"].get("uid") != (owner or {}).get("uid"):
                    return  # its job is not in the store (yet): the Workload's next change brings us back
                found = managed_by(local_job)
                if not gated(group_kind.group, group_kind.kind) and found != MULTIKUEUE_CONTROLLER:
                    message = (
                        "The owner is not managed by Kueue: Expecting spec.managedBy to be "
                        f'"{MULTIKUEUE_CONTROLLER}" not "{found}"' + (MANAGED_BY_HINT if not found else "")
                    )
                    await self._set_check(local, check, "Rejected", message)
                    return
                local_objects = [local_job]
        if self.settings.dispatcher == INCREMENTAL and not deleted:
            local = await self._nominate_incrementally(key, local, check)
        group = await self._read_group(local, check, deleted)
        if group_kind is not None and copies_groups(group_kind.group, group_kind.kind) and local_objects:
            group = self._bind_to_siblings(group, local, local_objects[0])
        plan = plan_dispatch(
            group, worker_lost_timeout=self.settings.worker_lost_timeout, dispatcher=self.settings.dispatcher
        )
        await self._carry_out(plan, local, check, group_kind, local_objects)
        if group_kind is not None and local_objects and not _running_here(local):
            await self.mirror.clear_start_time(group_kind, local_objects[0])
        if deleted and not plan.delete and not group.unreachable:
            self._deleted.pop(key, None)
        if plan.requeue_after is not None:
            self._requeue(key, min(plan.requeue_after, max(self.settings.longest_wait, 1.5)))

    async def _nominate_incrementally(self, key: Key, local: JSON, check: str) -> JSON:
        """Kueue's Incremental dispatcher: every ``round_timeout`` the next ``step_size`` workers of the
        check's config are nominated, until one admits the copy (round starts are kept in memory, as
        Kueue keeps them: a new leader starts a round at once)."""
        if not wants_nomination(local, check):
            self._rounds.pop(key, None)
            return local
        now = self.clock()
        started = self._rounds.get(key)
        if started is not None and now - started <= self.settings.round_timeout:
            self._requeue(key, self.settings.round_timeout - (now - started))
            return local
        nominated = [str(w) for w in (local.get("status") or {}).get("nominatedClusterNames") or []]
        clusters = self.workers.clusters_for(check) or ()
        wanted = next_nomination(nominated, clusters, self.settings.step_size)
        if not wanted:
            return local
        updated = await self.context.writer.patch_status(
            WORKLOADS, local, lambda _current: {"nominatedClusterNames": wanted}
        )
        self._rounds[key] = now
        self._requeue(key, self.settings.round_timeout)
        log.info("workers nominated", extra={"workload": "/".join(key), "workers": wanted})
        return updated or local

    def _siblings(self, workload: JSON) -> list[JSON]:
        """The other Workloads of the object controlling ``workload`` (a LeaderWorkerSet's groups)."""
        uid = (controller_owner(workload) or {}).get("uid")
        namespace, name = key_of(workload)
        return [
            other
            for other in self.context.store.items(WORKLOADS, namespace=namespace)
            if key_of(other)[1] != name and (controller_owner(other) or {}).get("uid") == uid
        ]

    def _bind_to_siblings(self, group: Group, local: JSON, owner: JSON) -> Group:
        """Kueue's component Workloads: every Workload of one object runs in the worker the first of them
        went to; none is sent before all exist and the one of the lowest group has gone first."""
        bound, hold = component_binding(local, self._siblings(local), expected=groups(owner))
        return replace(group, bound_to=bound, hold=hold)

    def _queue_siblings(self, workload: JSON) -> None:
        for sibling in self._siblings(workload):
            self.queue.add(key_of(sibling))

    def _workload_kind(self, workload: JSON) -> Kind | None:
        return workload_kind(self.context.configuration(), workload)

    async def _read_group(self, local: JSON, check: str, deleted: bool) -> Group:
        namespace, name = key_of(local)
        remotes: dict[str, JSON | None] = {}
        unreachable: dict[str, float] = {}
        now = self.clock()
        for cluster in self.workers.clusters_for(check) or ():
            client = self.workers.client(cluster)
            if client is None:
                since = self.workers.inactive_since(cluster)
                unreachable[cluster] = 0.0 if since is None else max(0.0, now - since)
                continue
            try:
                remotes[cluster] = await get_object(client, WORKLOADS, name, namespace)
            except WorkerUnreachable:
                since = self.workers.inactive_since(cluster)
                unreachable[cluster] = 0.0 if since is None else max(0.0, now - since)
        return Group(local=local, check=check, remotes=remotes, unreachable=unreachable, deleted=deleted)

    async def _carry_out(
        self, plan: Plan, local: JSON, check: str, job_kind: Kind | None, local_objects: list[JSON] | None
    ) -> None:
        namespace, name = key_of(local)
        owner = controller_owner(local) or {}
        local_job = local_objects[0] if local_objects else None
        pods = job_kind is not None and copies_pods(job_kind.group, job_kind.kind)
        write_status = self.mirror.write_job_status
        for cluster in plan.delete:
            await self._delete_copies(cluster, namespace, name, job_kind, str(owner.get("name", "")))
        for cluster in plan.update_priority:
            spec = local.get("spec") or {}
            patch = {
                "spec": {"priorityClassRef": spec.get("priorityClassRef"), "priority": spec.get("priority")}
            }
            await self._client(cluster).patch(WORKLOADS, name=name, namespace=namespace, patch=patch)
            log.info("copy priority updated", extra={"workload": f"{namespace}/{name}", "worker": cluster})
        if plan.deactivate is not None:
            client = self._client(plan.deactivate)
            await client.patch(WORKLOADS, name=name, namespace=namespace, patch={"spec": {"active": False}})
            log.info("copy deactivated", extra={"workload": f"{namespace}/{name}", "worker": plan.deactivate})
        if plan.nominate is not None:
            nominated = plan.nominate
            await self.context.writer.patch_status(
                WORKLOADS, local, lambda _current: {"nominatedClusterNames": nominated or None}
            )
        for cluster in plan.create:
            client = self._client(cluster)
            try:
                await client.create(
                    WORKLOADS, workload_copy(local, origin=self.settings.origin), namespace=namespace
                )
            except ApiError as exc:
                if exc.status != 409:
                    raise
            else:
                log.info("workload dispatched", extra={"workload": f"{namespace}/{name}", "worker": cluster})
                metrics = self.context.metrics
                metrics.multikueue_dispatched.labels(
                    admitted_cluster_queue(local), cluster, metrics.role
                ).inc()
        if plan.sync_job is not None and job_kind is not None and pods and local_objects is not None:
            await sync_pods(
                self._client(plan.sync_job),
                job_kind,
                local_objects,
                workload_name=name,
                origin=self.settings.origin,
                # only a Workload running there gets its pods: a stopped or finished one's are not made again
                create=plan.finish is None and _running_here(local),
                write_status=lambda pod, status: write_status(job_kind, pod, status),
            )
        elif plan.sync_job is not None and job_kind is not None and local_job is not None:
            await self.mirror.sync_job(self._client(plan.sync_job), plan.sync_job, job_kind, local_job, name)
        if plan.reset_job_activity and job_kind is not None and pods and local_objects is not None:
            await reset_pods(
                local_objects, write_status=lambda pod, status: write_status(job_kind, pod, status)
            )
        elif plan.reset_job_activity and job_kind is not None and local_job is not None:
            await self.mirror.reset_activity(job_kind, local_job)
        if plan.check is not None:
            await self._set_check(local, check, *plan.check, cluster_name=plan.cluster_name)
        if plan.finish is not None:
            reason, message = plan.finish
            finished = await self.context.writer.patch_status(
                WORKLOADS,
                local,
                lambda current: finished_status(current, reason=reason, message=message, now=now_rfc3339()),
            )
            if finished is not None:
                log.info(
                    "workload finished in its worker",
                    extra={"workload": f"{namespace}/{name}", "reason": reason},
                )

    async def _delete_copies(
        self, cluster: str, namespace: str, name: str, job_kind: Kind | None, job_name: str
    ) -> None:
        client = self.workers.client(cluster)
        if client is None:
            return  # the garbage collection deletes it once the worker is back
        await delete_copies(
            client,
            cluster,
            origin=self.settings.origin,
            namespace=namespace,
            name=name,
            job_kind=job_kind,
            job_name=job_name,
        )

    def _client(self, cluster: str) -> KubeClient:
        client = self.workers.client(cluster)
        if client is None:
            raise WorkerUnreachable(f"worker cluster {cluster} is not active")
        return client

    async def _set_check(
        self, local: JSON, check: str, state: str, message: str, *, cluster_name: str | None = None
    ) -> None:
        previous = (check_state(local, check) or {}).get("state", "Pending")
        if state in ("Retry", "Rejected"):  # Kueue's updateACS says what it moves away from
            message = f'{message}, Previously: "{previous}"'

        def build(current: JSON) -> JSON | None:
            status = check_state_status(current, check=check, state=state, message=message, now=now_rfc3339())
            if cluster_name is None:
                return status
            out = dict(status or {})
            if (current.get("status") or {}).get("clusterName") != cluster_name:
                out["clusterName"] = cluster_name
            if (current.get("status") or {}).get("nominatedClusterNames"):
                out["nominatedClusterNames"] = None
            return out or None

        updated = await self.context.writer.patch_status(WORKLOADS, local, build)
        if updated is not None and state == "Ready" and previous != "Ready" and cluster_name:
            metrics = self.context.metrics
            metrics.multikueue_admitted.labels(
                admitted_cluster_queue(local), cluster_name, metrics.role
            ).inc()
        if updated is not None:
            workload = "/".join(key_of(local))
            log.info("multikueue check", extra={"workload": workload, "state": state, "detail": message})
            kind = "Warning" if state in ("Retry", "Rejected") else "Normal"
            self.context.events.record(local, type=kind, reason="MultiKueue", message=message)


def _running_here(workload: JSON) -> bool:
    """Holding its reservation and not being evicted: its job may be running in a worker."""
    return has_quota_reservation(workload) and not is_true(workload, "Evicted")


def multikueue_workloads(workloads: Iterable[JSON], checks: set[str]) -> list[JSON]:
    """The Workloads whose status lists one of ``checks`` (for tests and ``resync``)."""
    return [
        w
        for w in workloads
        if any(s.get("name") in checks for s in (w.get("status") or {}).get("admissionChecks") or [])
    ]
