"""The workers' copies watched: a change to a copy in a worker brings its manager Workload back at once.

As Kueue's remote informers do, each connected worker of a MultiKueue check's config gets one informer per
copied kind (Workloads, Jobs and the enabled integrations Kueue dispatches), each filtered on the server by
this manager's origin label (``kueue.x-k8s.io/multikueue-origin``), so a worker's other objects never
cross the wire. Those are the project's informers (``control.cache.informer``): list, then watch from the
list's resourceVersion; a watch the server ends, or a connection that breaks, resumes from the last
resourceVersion seen, after the informer's backoff on errors; only a 410 Expired relists. A kind the worker
does not serve (its CRD not installed) is looked for again with that backoff.

What an informer delivers goes to a ``CopyIndex`` rather than a store: the dispatcher reads a copy afresh
when it reconciles, so only each copy's resourceVersion is kept, to tell a real change from a repeated
list. A change, an addition or a deletion queues the manager Workload the copy belongs to (the copy
itself, or the Workload its ``prebuilt-workload-name`` label names).

The set of watched workers follows ``WorkerClusters``: a worker that connects is watched, one that stops
being ``Active`` or leaves every config has its informers cancelled, and a new client (a reconnect), a
new origin or a new set of kinds restarts them. No periodic resync is kept: the watch protocol delivers
every change after the list it starts from (or says 410, and the informer lists again), a worker that
reconnects is listed again whole, and what depends on time alone (the worker-lost timeout, the Incremental
dispatcher's rounds) is timed by the dispatcher itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kueue_webhook.api.multikueue import prebuilt_workload_name
from kueue_webhook.control.cache.informer import Informer
from kueue_webhook.control.cache.store import key_of
from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.kinds import WORKLOADS, Kind
from kueue_webhook.control.multikueue.scope import clusters_in_use, copy_kinds
from kueue_webhook.control.multikueue.worker_objects import origin_selector
from kueue_webhook.control.multikueue.workers import WorkerClusters
from kueue_webhook.control.output.context import ControlContext

JSON = dict[str, Any]
Key = tuple[str, str]
log = logging.getLogger("kueue_webhook.multikueue")


class CopyIndex:
    """An informer's sink for one worker: the resourceVersion of each copy, and the manager Workload to look
    at again whenever a copy is added, changed or gone."""

    def __init__(self, touched: Callable[[Key], None]) -> None:
        self._touched = touched
        #: (kind plural, namespace, name) -> (resourceVersion, the manager Workload's key)
        self._versions: dict[tuple[str, str, str], tuple[str, Key | None]] = {}

    def upsert(self, kind: Kind, obj: JSON) -> bool:
        namespace, name = key_of(obj)
        version = str((obj.get("metadata") or {}).get("resourceVersion", ""))
        ident = (kind.plural, namespace, name)
        known = self._versions.get(ident)
        if known is not None and known[0] == version:
            return False
        workload = _workload_of(kind, obj)
        self._versions[ident] = (version, workload)
        if workload is not None:
            self._touched(workload)
        return True

    def remove(self, kind: Kind, obj: JSON) -> bool:
        namespace, name = key_of(obj)
        known = self._versions.pop((kind.plural, namespace, name), None)
        workload = known[1] if known is not None else _workload_of(kind, obj)
        if workload is not None:
            self._touched(workload)
        return known is not None

    def retain_only(self, kind: Kind, keys: set[tuple[str, str]]) -> None:
        """After a list: the copies of ``kind`` that were not listed are gone."""
        for ident in [i for i in self._versions if i[0] == kind.plural and (i[1], i[2]) not in keys]:
            _, workload = self._versions.pop(ident)
            if workload is not None:
                self._touched(workload)

    def mark_synced(self, kind: Kind) -> None:
        return None


def _workload_of(kind: Kind, obj: JSON) -> Key | None:
    namespace, name = key_of(obj)
    if kind is WORKLOADS:
        return namespace, name
    workload = prebuilt_workload_name(obj)
    return (namespace, str(workload)) if workload else None


@dataclass
class _Watched:
    """One worker's informers, and what they were started for."""

    client: KubeClient
    origin: str
    kinds: tuple[Kind, ...]
    informers: list[Informer] = field(default_factory=list)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def serves(self, client: KubeClient, origin: str, kinds: tuple[Kind, ...]) -> bool:
        return _same_connection(self.client, client) and self.origin == origin and self.kinds == kinds


def _same_connection(a: KubeClient, b: KubeClient) -> bool:
    return a is b or a.shares_connections(b)


class WorkerWatches:
    """Informers on every connected worker's copies, kept equal to the workers in use; runs while leading."""

    def __init__(
        self,
        context: ControlContext,
        *,
        workers: WorkerClusters,
        origin: Callable[[], str],
        touched: Callable[[Key], None],
        watch_timeout_seconds: int = 290,
    ) -> None:
        self.context = context
        self.workers = workers
        self._origin = origin
        self._touched = touched
        self.watch_timeout_seconds = watch_timeout_seconds
        self._watched: dict[str, _Watched] = {}
        self._running = False

    def watched(self) -> dict[str, tuple[Kind, ...]]:
        """The workers watched now, and the kinds watched in each."""
        return {cluster: watched.kinds for cluster, watched in self._watched.items()}

    def refresh(self) -> None:
        """Start, restart or stop informers so that exactly the connected workers in use are watched, with
        the origin and kinds in force."""
        if not self._running:
            return
        origin = self._origin()
        kinds = tuple(copy_kinds(self.context.configuration()))
        wanted: dict[str, KubeClient] = {}
        for cluster in clusters_in_use(self.context.store, self.workers):
            client = self.workers.client(cluster)
            if client is not None:
                wanted[cluster] = client
        for cluster in [c for c in self._watched if c not in wanted]:
            self._stop(cluster)
            log.info("worker no longer watched", extra={"worker": cluster})
        for cluster, client in wanted.items():
            current = self._watched.get(cluster)
            if current is not None and current.serves(client, origin, kinds):
                continue
            if current is not None:
                self._stop(cluster)
            self._start(cluster, client, origin, kinds)
            log.info("worker watched", extra={"worker": cluster, "kinds": [k.kind for k in kinds]})

    def _start(self, cluster: str, client: KubeClient, origin: str, kinds: tuple[Kind, ...]) -> None:
        watched = _Watched(client=client, origin=origin, kinds=kinds)
        index = CopyIndex(self._touched)
        loop = asyncio.get_running_loop()
        for kind in kinds:
            informer = Informer(
                client=client,
                kind=kind,
                sink=index,
                label_selector=origin_selector(origin),
                watch_timeout_seconds=self.watch_timeout_seconds,
                cluster=cluster,
            )
            watched.informers.append(informer)
            name = f"multikueue-watch-{cluster}-{kind.plural}"
            watched.tasks.append(loop.create_task(informer.run(), name=name))
        self._watched[cluster] = watched

    def _stop(self, cluster: str) -> None:
        watched = self._watched.pop(cluster, None)
        if watched is not None:
            for task in watched.tasks:
                task.cancel()

    async def run(self) -> None:
        """Watch until cancelled (leadership lost); then stop every informer."""
        self._running = True
        try:
            self.refresh()
            await asyncio.Event().wait()
        finally:
            self._running = False
            tasks = [task for watched in self._watched.values() for task in watched.tasks]
            for cluster in list(self._watched):
                self._stop(cluster)
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
