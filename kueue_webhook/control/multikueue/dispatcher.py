"""MultiKueue dispatch: the manager's Workloads run in worker clusters; their status comes back.

The leader runs this for every Workload whose status lists an AdmissionCheck served by MultiKueue
(``spec.controllerName: kueue.x-k8s.io/multikueue``). Each key is reconciled as Kueue's MultiKueue workload
reconciler does: the group (the manager's Workload, its copy in each worker of the check's config, which
workers are unreachable and since when) goes through the pure ``plan_dispatch``, and this module carries
out the plan: copies created and deleted in the workers, the winner's job created there and its status
read back into the manager's job (status subresource), the check's state, ``clusterName`` and
``nominatedClusterNames`` written on the manager's Workload, the Workload finished when its copy is.

Which workers a check may use, a client for each reachable one and since when one is unreachable come from
``WorkerClusters`` (the cluster side). Workers are not watched: every ``poll_interval`` each reachable
worker is listed once for this manager's copies (Workloads and jobs, by the origin label) and the keys of
those that changed are reconciled, so status flows back within that interval at one request per worker
and kind, whatever the number of Workloads. Every ``gc_interval`` the same lists feed the garbage
collection: a copy whose manager Workload is gone (its job deleted) is deleted with its job (Kueue's
``runGC``).

Nothing is remembered that the API objects do not hold: the chosen worker is the Workload's
``status.clusterName``, the copies carry the origin label, so a new leader continues where the last left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kueue_webhook.api.conditions import is_true
from kueue_webhook.api.finalizers import is_deleting
from kueue_webhook.api.multikueue import (
    DEFAULT_ORIGIN,
    MULTIKUEUE_CONTROLLER,
    ORIGIN_LABEL,
    PREBUILT_WORKLOAD_LABEL,
    dispatchable,
    managed_by,
)
from kueue_webhook.api.objects import has_quota_reservation
from kueue_webhook.control.cache.store import Change, controller_owner, key_of
from kueue_webhook.control.cache.workqueue import WorkQueue
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import ADMISSION_CHECKS, JOBS, WORKLOADS, Kind, kind_of
from kueue_webhook.control.kube.leader import NotLeader
from kueue_webhook.control.multikueue.copies import (
    job_copy,
    mirrored_status,
    owned_by_origin,
    remote_spec_ops,
    stale_start_time,
    without_pods,
    workload_copy,
)
from kueue_webhook.control.multikueue.plan import (
    ALL_AT_ONCE,
    INCREMENTAL,
    Group,
    Plan,
    check_state,
    next_nomination,
    plan_dispatch,
    wants_nomination,
)
from kueue_webhook.control.multikueue.workers import WorkerClusters
from kueue_webhook.control.output.conditions import check_state_status, finished_status, now_rfc3339
from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.control.output.writers import failed_test

JSON = dict[str, Any]
Key = tuple[str, str]
log = logging.getLogger("kueue_webhook.multikueue")

#: Kueue's defaults (``multiKueue.workerLostTimeout``, ``gcInterval``, ``origin``, ``dispatcherName``)
WORKER_LOST_TIMEOUT = 15 * 60.0
GC_INTERVAL = 60.0
POLL_INTERVAL = 2.0
#: Kueue's incremental dispatcher's round (``incrementalDispatcherRoundTimeout``)
ROUND_TIMEOUT = 5 * 60.0
#: what ``spec.managedBy`` must say on the manager's job, and why the API server may have dropped it
MANAGED_BY_HINT = (
    " (the API server dropped spec.managedBy, or it was never set: Kubernetes v1.30+ with the JobManagedBy "
    "feature, on by default from v1.32, is needed for MultiKueue)"
)


@dataclass(frozen=True, slots=True)
class DispatchSettings:
    origin: str = DEFAULT_ORIGIN
    worker_lost_timeout: float = WORKER_LOST_TIMEOUT
    gc_interval: float = GC_INTERVAL
    poll_interval: float = POLL_INTERVAL
    dispatcher: str = ALL_AT_ONCE
    #: the Incremental dispatcher: workers added per round, and how long a round lasts (Kueue's 3, 5 min)
    step_size: int = 3
    round_timeout: float = ROUND_TIMEOUT


class WorkerUnreachable(Exception):
    """A worker's API server did not answer: treated as unreachable for this pass."""


class MultiKueueDispatcher:
    """Dispatches Workloads of ClusterQueues with a MultiKueue check to the workers; runs while leading."""

    def __init__(
        self,
        context: ControlContext,
        *,
        workers: WorkerClusters,
        settings: DispatchSettings | Callable[[], DispatchSettings] = DispatchSettings(),
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
        #: (worker, kind, namespace, name) -> resourceVersion of the copies last listed
        self._seen: dict[tuple[str, str, str, str], str] = {}
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
        elif change.kind is ADMISSION_CHECKS:
            self.resync()

    def _worker_changed(self, cluster: str) -> None:
        if self.context.is_leader():
            self.resync()

    def resync(self) -> None:
        """Every Workload with a MultiKueue check (on becoming leader, a worker's state changing)."""
        for workload in self.context.store.items(WORKLOADS):
            self.resync_workload(workload)

    def resync_workload(self, workload: JSON) -> None:
        """``resync`` for one Workload (a term's start hands each one to every controller in one pass)."""
        if self._check_of(workload) is not None:
            self.queue.add(key_of(workload))

    def _multikueue_checks(self) -> set[str]:
        return {
            key_of(check)[1]
            for check in self.context.store.items(ADMISSION_CHECKS)
            if (check.get("spec") or {}).get("controllerName") == MULTIKUEUE_CONTROLLER
        }

    def _check_of(self, workload: JSON) -> str | None:
        """The name of the Workload's MultiKueue check, if its status lists one."""
        states = (workload.get("status") or {}).get("admissionChecks") or []
        if not states:
            return None
        checks = self._multikueue_checks()
        for state in states:
            if isinstance(state, dict) and state.get("name") in checks:
                return str(state["name"])
        return None

    # -- running -------------------------------------------------------------------------------------------

    async def run(self) -> None:
        async def serve() -> None:
            await self.queue.serve(self.reconcile, on_error=self._failed)

        try:
            await asyncio.gather(*(serve() for _ in range(self.concurrency)), self._poll(), self._collect())
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
        group_kind = self._owner_kind(owner)
        local_job: JSON | None = None
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
            local_job = self.context.store.get(group_kind, str((owner or {}).get("name", "")), namespace)
            if local_job is None or local_job["metadata"].get("uid") != (owner or {}).get("uid"):
                return  # its job is not in the store (yet): its arrival does not matter, the Workload's does
            if managed_by(local_job) != MULTIKUEUE_CONTROLLER:
                found = managed_by(local_job)
                message = (
                    "The owner is not managed by Kueue: Expecting spec.managedBy to be "
                    f'"{MULTIKUEUE_CONTROLLER}" not "{found}"' + (MANAGED_BY_HINT if not found else "")
                )
                await self._set_check(local, check, "Rejected", message)
                return
        if self.settings.dispatcher == INCREMENTAL and not deleted:
            local = await self._nominate_incrementally(key, local, check)
        group = await self._read_group(local, check, deleted)
        plan = plan_dispatch(
            group, worker_lost_timeout=self.settings.worker_lost_timeout, dispatcher=self.settings.dispatcher
        )
        await self._carry_out(plan, local, check, group_kind, local_job)
        if group_kind is not None and local_job is not None and not _running_here(local):
            await self._clear_start_time(group_kind, local_job)
        if deleted and not plan.delete and not group.unreachable:
            self._deleted.pop(key, None)
        if plan.requeue_after is not None:
            self._requeue(key, min(plan.requeue_after, max(self.settings.poll_interval, 0.05) * 30))

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

    def _owner_kind(self, owner: JSON | None) -> Kind | None:
        if owner is None:
            return None
        api_version = str(owner.get("apiVersion", ""))
        group = api_version.split("/")[0] if "/" in api_version else ""
        if not dispatchable(group, str(owner.get("kind", ""))):
            return None
        integration = self.context.configuration().integrations.for_kind(group, str(owner.get("kind", "")))
        return kind_of(integration) if integration is not None else None

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
                remotes[cluster] = await _get(client, WORKLOADS, name, namespace)
            except WorkerUnreachable:
                since = self.workers.inactive_since(cluster)
                unreachable[cluster] = 0.0 if since is None else max(0.0, now - since)
        return Group(local=local, check=check, remotes=remotes, unreachable=unreachable, deleted=deleted)

    async def _carry_out(
        self, plan: Plan, local: JSON, check: str, job_kind: Kind | None, local_job: JSON | None
    ) -> None:
        namespace, name = key_of(local)
        owner = controller_owner(local) or {}
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
                metrics.multikueue_dispatched.labels(_cluster_queue(local), cluster, metrics.role).inc()
        if plan.sync_job is not None and job_kind is not None and local_job is not None:
            await self._sync_job(plan.sync_job, job_kind, local_job, name)
        if plan.reset_job_activity and job_kind is not None and local_job is not None:
            await self._reset_activity(job_kind, local_job)
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
            metrics.multikueue_admitted.labels(_cluster_queue(local), cluster_name, metrics.role).inc()
        if updated is not None:
            workload = "/".join(key_of(local))
            log.info("multikueue check", extra={"workload": workload, "state": state, "detail": message})
            kind = "Warning" if state in ("Retry", "Rejected") else "Normal"
            self.context.events.record(local, type=kind, reason="MultiKueue", message=message)

    async def _sync_job(self, cluster: str, kind: Kind, local_job: JSON, workload_name: str) -> None:
        """Create the job in the winning worker, or read its status back (Kueue's adapters' ``SyncJob``)."""
        client = self._client(cluster)
        namespace, name = key_of(local_job)
        remote = await _get(client, kind, name, namespace)
        if remote is None:
            body = job_copy(local_job, workload_name=workload_name, origin=self.settings.origin)
            try:
                await client.create(kind, body, namespace=namespace)
            except ApiError as exc:
                if exc.status != 409:
                    raise
            else:
                log.info(
                    "job dispatched",
                    extra={"job": f"{namespace}/{name}", "kind": kind.kind, "worker": cluster},
                )
            return
        if not owned_by_origin(remote, self.settings.origin):
            raise RuntimeError(
                f"{kind.kind} {namespace}/{name} in worker {cluster} is not a copy made by this manager "
                f"({ORIGIN_LABEL}={self.settings.origin} is missing)"
            )
        status = mirrored_status(local_job, remote)
        if status is not None:
            await self._write_job_status(kind, local_job, status)
        ops = remote_spec_ops(local_job, remote)
        if ops:
            version = (remote.get("metadata") or {}).get("resourceVersion")
            test = {"op": "test", "path": "/metadata/resourceVersion", "value": version}
            try:
                await client.patch(
                    kind, name=name, namespace=namespace, patch=[test, *ops], patch_type="json"
                )
            except ApiError as exc:
                if exc.status == 409 or failed_test(exc):
                    raise RuntimeError(
                        f"{kind.kind} {namespace}/{name} in worker {cluster} changed meanwhile"
                    ) from exc
                raise
            log.info(
                "job spec synced", extra={"job": f"{namespace}/{name}", "kind": kind.kind, "worker": cluster}
            )

    async def _reset_activity(self, kind: Kind, local_job: JSON) -> None:
        """Zero the pod counts read back from a worker that can no longer say they ended."""
        status = without_pods(local_job)
        if status is None:
            return
        await self._write_job_status(kind, local_job, status)
        log.info(
            "pods of an unreachable worker no longer counted", extra={"job": "/".join(key_of(local_job))}
        )

    async def _clear_start_time(self, kind: Kind, local_job: JSON) -> None:
        """Forget the worker's ``startTime`` on a suspended manager Job, so the next worker's can be read
        back once it starts again (the Job controller would clear it, but it skips this Job)."""
        namespace, name = key_of(local_job)
        current = self.context.store.get(kind, name, namespace) or local_job
        if not stale_start_time(current):
            return
        version = (current.get("metadata") or {}).get("resourceVersion")
        patch = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": version},
            {"op": "remove", "path": "/status/startTime"},
        ]
        try:
            await self.context.writer.client.patch(
                kind, name=name, namespace=namespace, patch=patch, patch_type="json", subresource="status"
            )
        except ApiError as exc:
            if exc.status == 409 or failed_test(exc):
                raise RuntimeError(f"{kind.kind} {namespace}/{name} changed meanwhile") from exc
            raise

    async def _write_job_status(self, kind: Kind, local_job: JSON, status: JSON) -> None:
        namespace, name = key_of(local_job)
        version = (local_job.get("metadata") or {}).get("resourceVersion")
        patch = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": version},
            {"op": "replace" if "status" in local_job else "add", "path": "/status", "value": status},
        ]
        try:
            await self.context.writer.client.patch(
                kind, name=name, namespace=namespace, patch=patch, patch_type="json", subresource="status"
            )
        except ApiError as exc:
            if exc.status == 409 or failed_test(exc):  # changed meanwhile: read again, decide again
                raise RuntimeError(f"{kind.kind} {namespace}/{name} changed meanwhile") from exc
            raise

    async def _delete_copies(
        self, cluster: str, namespace: str, name: str, job_kind: Kind | None, job_name: str
    ) -> None:
        """The job copy first (with its pods), then the Workload copy, without its finalizer (Kueue's
        ``RemoveRemoteObjects``); only objects carrying this manager's origin."""
        client = self.workers.client(cluster)
        if client is None:
            return  # the garbage collection deletes it once the worker is back
        if job_kind is not None and job_name:
            job = await _get(client, job_kind, job_name, namespace)
            if job is not None and owned_by_origin(job, self.settings.origin):
                await _delete(client, job_kind, job_name, namespace)
        remote = await _get(client, WORKLOADS, name, namespace)
        if remote is None or not owned_by_origin(remote, self.settings.origin):
            return
        if (remote.get("metadata") or {}).get("finalizers"):
            version = remote["metadata"].get("resourceVersion")
            with contextlib.suppress(ApiError):
                await client.patch(
                    WORKLOADS,
                    name=name,
                    namespace=namespace,
                    patch={"metadata": {"finalizers": None, "resourceVersion": version}},
                )
        await _delete(client, WORKLOADS, name, namespace)
        log.info("copy deleted", extra={"workload": f"{namespace}/{name}", "worker": cluster})

    # -- watching the workers, and their garbage ------------------------------------------------------------

    def _clusters(self) -> list[str]:
        out: set[str] = set()
        for check in self._multikueue_checks():
            out.update(self.workers.clusters_for(check) or ())
        return sorted(out)

    def _copy_kinds(self) -> list[Kind]:
        kinds = [WORKLOADS, JOBS]
        for integration in self.context.configuration().integrations:
            if dispatchable(integration.group, integration.kind) and kind_of(integration) not in kinds:
                kinds.append(kind_of(integration))
        return kinds

    async def _list_copies(self, client: KubeClient, kind: Kind) -> list[JSON]:
        items: list[JSON] = []
        selector = f"{ORIGIN_LABEL}={self.settings.origin}"
        async for page, _ in client.list_pages(kind, label_selector=selector):
            items.extend(page)
        return items

    async def _poll(self) -> None:
        """Every ``poll_interval``: the copies that changed in a worker get their Workload reconciled."""
        while True:
            await asyncio.sleep(self.settings.poll_interval)
            for cluster in self._clusters():
                client = self.workers.client(cluster)
                if client is None:
                    continue
                try:
                    await self._poll_one(cluster, client)
                except (TimeoutError, ApiError, OSError) as exc:
                    log.info("worker not listed: %r", exc, extra={"worker": cluster})

    async def _poll_one(self, cluster: str, client: KubeClient) -> None:
        seen_now: set[tuple[str, str, str, str]] = set()
        for kind in self._copy_kinds():
            try:
                items = await self._list_copies(client, kind)
            except ApiError as exc:
                if exc.status == 404:  # the kind is not served there
                    continue
                raise
            for item in items:
                namespace, name = key_of(item)
                ident = (cluster, kind.plural, namespace, name)
                seen_now.add(ident)
                version = str((item.get("metadata") or {}).get("resourceVersion", ""))
                if self._seen.get(ident) == version:
                    continue
                self._seen[ident] = version
                self._queue_copy(kind, item)
        for ident in [i for i in self._seen if i[0] == cluster and i not in seen_now]:
            del self._seen[ident]
            _, plural, namespace, name = ident
            if plural == WORKLOADS.plural:
                self.queue.add((namespace, name))

    def _queue_copy(self, kind: Kind, item: JSON) -> None:
        namespace, name = key_of(item)
        if kind is WORKLOADS:
            self.queue.add((namespace, name))
            return
        labels = (item.get("metadata") or {}).get("labels") or {}
        workload = labels.get(PREBUILT_WORKLOAD_LABEL)
        if workload:
            self.queue.add((namespace, str(workload)))

    async def _collect(self) -> None:
        """Every ``gc_interval``: copies whose manager Workload is gone or being deleted go, with their
        job."""
        while True:
            interval = self.settings.gc_interval
            await asyncio.sleep(interval if interval > 0 else self.settings.poll_interval)
            if interval <= 0:
                continue  # Kueue's gcInterval 0: no garbage collection
            for cluster in self._clusters():
                client = self.workers.client(cluster)
                if client is None or not self.context.is_leader():
                    continue
                try:
                    await self.collect(cluster, client)
                except (TimeoutError, ApiError, OSError) as exc:
                    log.info("garbage collection of a worker failed: %r", exc, extra={"worker": cluster})

    async def collect(self, cluster: str, client: KubeClient) -> None:
        for remote in await self._list_copies(client, WORKLOADS):
            namespace, name = key_of(remote)
            local = self.context.store.get(WORKLOADS, name, namespace)
            if local is not None and not is_deleting(local):
                continue
            owner = controller_owner(remote)
            job_kind = self._owner_kind(owner)
            await self._delete_copies(cluster, namespace, name, job_kind, str((owner or {}).get("name", "")))
            log.info("garbage collected", extra={"workload": f"{namespace}/{name}", "worker": cluster})


def _running_here(workload: JSON) -> bool:
    """Holding its reservation and not being evicted: its job may be running in a worker."""
    return has_quota_reservation(workload) and not is_true(workload, "Evicted")


def _cluster_queue(workload: JSON) -> str:
    return str(((workload.get("status") or {}).get("admission") or {}).get("clusterQueue", ""))


async def _get(client: KubeClient, kind: Kind, name: str, namespace: str) -> JSON | None:
    try:
        return await client.get(kind, name=name, namespace=namespace)
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise
    except (TimeoutError, OSError) as exc:
        raise WorkerUnreachable(str(exc)) from exc


async def _delete(client: KubeClient, kind: Kind, name: str, namespace: str) -> None:
    """Delete with its dependents in the background (a Job's default would orphan its pods)."""
    try:
        await client.request(
            "DELETE",
            kind.path(namespace=namespace, name=name),
            body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
        )
    except ApiError as exc:
        if exc.status != 404:
            raise


def multikueue_workloads(workloads: Iterable[JSON], checks: set[str]) -> list[JSON]:
    """The Workloads whose status lists one of ``checks`` (for tests and ``resync``)."""
    return [
        w
        for w in workloads
        if any(s.get("name") in checks for s in (w.get("status") or {}).get("admissionChecks") or [])
    ]
