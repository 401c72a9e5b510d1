"""One MultiKueueCluster's connection: its lifecycle, as Kueue's cluster reconciler (``multikueuecluster.go``)
walks it.

1. read the kubeconfig and refuse an unusable one (``kubeconfig_source``), with Kueue's reason;
2. connect and prove the worker works: list the Workloads this manager created there (the label
   ``kueue.x-k8s.io/multikueue-origin``), which needs the address, the credentials, the TLS trust and the
   Workload CRD on the worker all to be right, then keep a watch on them open; ``Active=True`` from then on;
3. when the watch fails or the worker cannot be reached, ``Active=False`` with ``ClientConnectionFailed`` and
   the attempt count and next attempt time in the message, retrying with exponential backoff (a watch the
   server merely timed out is reopened at once, with no change in the condition);
4. a changed Secret, file or spec closes the client and starts again at 1; a deleted cluster closes its
   client and ends the task.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from pathlib import Path
from typing import Any, Protocol

import aiohttp

from kueue_webhook.api.multikueue import ORIGIN_LABEL
from kueue_webhook.api.objects.multikueue import ACTIVE, CONNECTION_FAILED, PATH, Inactive, cluster_source
from kueue_webhook.control.kube.backoff import Backoff
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import MULTIKUEUE_CLUSTERS, WORKLOADS
from kueue_webhook.control.multikueue.active_condition import attempt_message, describe, write_active
from kueue_webhook.control.multikueue.kubeconfig_source import (
    ClusterUnusable,
    FileSeen,
    checked_connection,
    checked_text,
    read_file,
    read_secret,
    signature,
)
from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.runtime import wait_until_set

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.multikueue")

#: the worker's watch is reopened this often (the server ends it; reopening is not a reconnect)
WATCH_TIMEOUT_SECONDS = 290
#: connections per worker client (the dispatcher's writes; watches have their own)
WORKER_CONNECTIONS = 4


class LinkOwner(Protocol):
    """What a link reads from the set of connections it belongs to (``clusters.WorkerConnections``)."""

    context: ControlContext
    namespace: str
    path_prefix: Path
    retry_base: float
    retry_cap: float
    file_poll: float
    connect_timeout: float

    def notify(self, cluster: str) -> None: ...


class ClusterLink:
    """One MultiKueueCluster's connection and its task."""

    def __init__(self, owner: LinkOwner, name: str) -> None:
        self.owner = owner
        self.name = name
        self.client: KubeClient | None = None
        self.active = False
        self.inactive_since = time.monotonic()
        #: the Secret this cluster reads (so its changes wake us), if any
        self.secret: str | None = None
        #: the kubeconfig the client was built from
        self.fingerprint = ""
        #: the kubeconfig the attempts are counted for
        self.tried = ""
        self.wake = asyncio.Event()
        self.backoff = Backoff(base=owner.retry_base, cap=owner.retry_cap)
        self.attempts = 0
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self.run(), name=f"multikueue-{self.name}")

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task
        await self._close()

    # -- the loop --------------------------------------------------------------------------------------------

    async def run(self) -> None:
        store = self.owner.context.store
        while True:
            self.wake.clear()
            cluster = store.get(MULTIKUEUE_CLUSTERS, self.name)
            if cluster is None:
                return
            try:
                text, poll = self._read(cluster)
                fingerprint = hashlib.sha256(text.encode()).hexdigest()
                if fingerprint != self.tried:  # a new kubeconfig starts a new count, as in Kueue
                    self.tried, self.attempts = fingerprint, 0
                    self.backoff.reset()
                if fingerprint != self.fingerprint or self.client is None:
                    await self._close()
                    self.client = await self._connect(text)
                    self.fingerprint = fingerprint
            except ClusterUnusable as unusable:
                await self._set_inactive(cluster, unusable.reason, unusable.message)
                await self._wait(self.owner.file_poll if self.secret is None else None)
                continue
            except (OSError, aiohttp.ClientError, ApiError, TimeoutError) as exc:
                self.attempts += 1
                delay = self.backoff.next_delay()
                await self._set_inactive(
                    cluster, CONNECTION_FAILED, attempt_message(describe(exc), self.attempts, delay)
                )
                await self._wait(delay)
                continue
            self.attempts = 0
            self.backoff.reset()
            await self._set_active(cluster)
            await self._watch_until_changed(poll)

    def _read(self, cluster: JSON) -> tuple[str, bool]:
        """The kubeconfig text, checked; and whether its source must be polled (a file)."""
        source = cluster_source(cluster)
        if isinstance(source, Inactive):
            self.secret = None
            raise ClusterUnusable(source.reason, source.message)
        if source.location_type == PATH:
            self.secret = None
            raw, self._file = read_file(source, self.owner.path_prefix)
            poll = True
        else:
            self.secret, self._file = source.location, None
            raw = read_secret(self.owner.context.store, self.owner.namespace, source)
            poll = False
        return checked_text(raw), poll

    async def _connect(self, text: str) -> KubeClient:
        """A client for the kubeconfig ``text``, once the worker has answered a list of our Workloads."""
        connection = await checked_connection(text, self.name)
        client = KubeClient(
            host=connection.host,
            ssl_context=connection.ssl_context,
            auth=connection.auth,
            proxy=connection.proxy,
            server_hostname=connection.server_hostname,
            connections=WORKER_CONNECTIONS,
            user_agent="kueue-webhook-multikueue",
        )
        try:
            listed = await client.request(
                "GET",
                WORKLOADS.path(),
                query={"labelSelector": f"{ORIGIN_LABEL}={self._origin()}", "limit": 1},
                timeout=self.owner.connect_timeout,
            )
        except BaseException:
            await client.close()
            raise
        self._resource_version = str((listed.get("metadata") or {}).get("resourceVersion", ""))
        return client

    _resource_version = ""
    #: the ``locationType: Path`` file read last, and its signature then
    _file: FileSeen | None = None

    def _origin(self) -> str:
        return self.owner.context.configuration().multi_kueue.origin

    async def _watch_until_changed(self, poll: bool) -> None:
        """Watch our Workloads on the worker until the watch fails (then the loop reconnects), the server
        ends it (reopened here), or the source changes (the loop re-reads it): a Secret or spec change wakes
        us through the store; a file is looked at every ``file_poll`` seconds."""
        assert self.client is not None
        client = self.client
        while True:
            watch = asyncio.ensure_future(self._drain(client))
            woken = asyncio.ensure_future(self.wake.wait())
            waiters: set[asyncio.Future[Any]] = {watch, woken}
            if poll and self._file is not None:
                waiters.add(asyncio.ensure_future(self._file_changed(self._file)))
            try:
                done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()
                for waiter in waiters:
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await waiter
            if watch not in done:
                return  # woken, or the file changed: the loop reads the source again
            if watch.exception() is None:
                continue  # the server ended the watch: reopen it
            # the worker stopped answering: mark it gone, reconnect at once (then with backoff)
            log.info(
                "worker cluster watch failed",
                extra={"cluster": self.name, "error": describe(watch.exception() or Exception())},
            )
            await self._close()
            return

    async def _file_changed(self, seen: FileSeen) -> None:
        """Return once the file's identity, size or modification time differ from ``seen``."""
        path, before = seen
        while signature(path) == before:
            await asyncio.sleep(self.owner.file_poll)

    async def _drain(self, client: KubeClient) -> None:
        async for event in client.watch(
            WORKLOADS,
            resource_version=self._resource_version,
            label_selector=f"{ORIGIN_LABEL}={self._origin()}",
            timeout_seconds=WATCH_TIMEOUT_SECONDS,
        ):
            version = ((event.get("object") or {}).get("metadata") or {}).get("resourceVersion")
            if version:
                self._resource_version = str(version)

    async def _wait(self, seconds: float | None) -> None:
        await wait_until_set(self.wake, seconds)

    async def _close(self) -> None:
        client, self.client = self.client, None
        was_active, self.active = self.active, False
        if was_active:
            self.inactive_since = time.monotonic()
        if client is not None:
            await client.close()
        if was_active or client is not None:
            self.owner.notify(self.name)

    # -- status --------------------------------------------------------------------------------------------

    async def _set_active(self, cluster: JSON) -> None:
        if not self.active:
            self.active = True
            self.owner.notify(self.name)
            log.info("worker cluster connected", extra={"cluster": self.name})
        await self._write(cluster, "True", ACTIVE, "Connected")

    async def _set_inactive(self, cluster: JSON, reason: str, message: str) -> None:
        await self._close()
        await self._write(cluster, "False", reason, message)

    async def _write(self, cluster: JSON, status: str, reason: str, message: str) -> None:
        await write_active(self.owner.context, cluster, status, reason, message)
