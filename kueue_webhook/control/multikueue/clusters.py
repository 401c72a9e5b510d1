"""The worker-cluster connections: one client per ``MultiKueueCluster``, its ``Active`` condition kept true to
whether the worker answers, and the ``WorkerClusters`` answers the dispatcher reads.

Each MultiKueueCluster gets one task (``_Link.run``) that walks a small loop, as Kueue's cluster reconciler
(``multikueuecluster.go``) does:

1. read the kubeconfig: the ``kubeconfig`` key of a Secret in the controller's namespace (from the store,
   which watches that namespace's Secrets), or a file under ``/etc/multikueue/kubeconfigs`` (polled for
   changes); refuse one that is too large, malformed or unsafe, with Kueue's ``BadKubeConfig`` /
   ``InsecureKubeConfig`` reason and a message naming what is wrong;
2. connect and prove the worker works: list the Workloads this manager created there (the label
   ``kueue.x-k8s.io/multikueue-origin``), which needs the address, the credentials, the TLS trust and the
   Workload CRD on the worker all to be right, then keep a watch on them open; ``Active=True`` from then on;
3. when the watch fails or the worker cannot be reached, ``Active=False`` with ``ClientConnectionFailed`` and
   the attempt count and next attempt time in the message, retrying with exponential backoff (a watch the
   server merely timed out is reopened at once, with no change in the condition);
4. a changed Secret, file or spec closes the client and starts again at 1; a deleted cluster closes its
   client and ends the task.

All of this runs on the leader only (it writes status), started and cancelled with leadership; a replica
that does not lead has no clients, so ``client`` answers None there.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import logging
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp

from kueue_webhook.api.config import Configuration
from kueue_webhook.api.multikueue import ORIGIN_LABEL
from kueue_webhook.api.objects.multikueue import (
    ACTIVE,
    BAD_KUBECONFIG,
    CONNECTION_FAILED,
    INSECURE_KUBECONFIG,
    KUBECONFIG_KEY,
    KUBECONFIG_PATH_PREFIX,
    LOAD_FAILED,
    MAX_KUBECONFIG_BYTES,
    PATH,
    Inactive,
    KubeConfigSource,
    cluster_source,
    config_clusters,
    is_multikueue_check,
    kubeconfig_problem,
    parameters_config,
)
from kueue_webhook.control.cache.store import Change
from kueue_webhook.control.kube.backoff import Backoff
from kueue_webhook.control.kube.client import ApiError, Fence, KubeClient
from kueue_webhook.control.kube.connection import from_selected
from kueue_webhook.control.kube.kinds import (
    ADMISSION_CHECKS,
    MULTIKUEUE_CLUSTERS,
    MULTIKUEUE_CONFIGS,
    SECRETS,
    WORKLOADS,
)
from kueue_webhook.control.kube.kubeconfig import KubeconfigError, load_text, select
from kueue_webhook.control.kube.leader import NotLeader
from kueue_webhook.control.multikueue.workers import WorkerClusters
from kueue_webhook.control.output.conditions import ConditionsEdit, now_rfc3339
from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.logs import redact

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.multikueue")

#: Kueue's reconnect schedule (``retryAfter``: 5 s doubling up to 7 steps); here with jitter
RETRY_BASE = 5.0
RETRY_CAP = 320.0
#: how often a ``locationType: Path`` kubeconfig is looked at for changes
FILE_POLL_SECONDS = 2.0
#: the connection check's limit: a worker slower than this to list is not usable
CONNECT_TIMEOUT = 15.0
#: the worker's watch is reopened this often (the server ends it; reopening is not a reconnect)
WATCH_TIMEOUT_SECONDS = 290
#: connections per worker client (the dispatcher's writes; watches have their own)
WORKER_CONNECTIONS = 4


class ClusterUnusable(Exception):
    """The kubeconfig cannot be used: Kueue's reason and a message for the ``Active`` condition."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class WorkerConnections:
    """``WorkerClusters`` (``kueue_webhook.control.multikueue.workers``) over live connections.

    Feed it store changes with ``on_change`` and ``run`` it while leading; ``client``, ``clusters_for``,
    ``inactive_since`` and ``subscribe`` may be called at any time from the event loop."""

    def __init__(
        self,
        context: ControlContext,
        *,
        namespace: str,
        path_prefix: Path = Path(KUBECONFIG_PATH_PREFIX),
        retry_base: float = RETRY_BASE,
        retry_cap: float = RETRY_CAP,
        file_poll: float = FILE_POLL_SECONDS,
        connect_timeout: float = CONNECT_TIMEOUT,
        fence: Fence | None = None,
    ) -> None:
        self.context = context
        #: the leader's fence (``LeaderElector.fence``): the dispatcher's writes to a worker go out only while
        #: this replica surely holds the Lease, as its writes to the manager do
        self.fence = fence
        self.namespace = namespace
        self.path_prefix = path_prefix
        self.retry_base = retry_base
        self.retry_cap = retry_cap
        self.file_poll = file_poll
        self.connect_timeout = connect_timeout
        self._links: dict[str, _Link] = {}
        self._callbacks: list[Callable[[str], None]] = []
        self._running = False
        #: set while ``run`` owns the links; cleared when leadership ends
        self._loop: asyncio.AbstractEventLoop | None = None
        #: when a cluster with no connection task was first asked about (the dispatcher's lost timer)
        self._unknown_since: dict[str, float] = {}
        self._origin = context.configuration().multi_kueue.origin

    # -- WorkerClusters -------------------------------------------------------------------------------------

    def clusters_for(self, admission_check: str) -> tuple[str, ...] | None:
        check = self.context.store.get(ADMISSION_CHECKS, admission_check)
        if check is None or not is_multikueue_check(check):
            return None
        name, _ = parameters_config(check)
        config = self.context.store.get(MULTIKUEUE_CONFIGS, name) if name else None
        return config_clusters(config) if config is not None else None

    def client(self, cluster: str) -> KubeClient | None:
        link = self._links.get(cluster)
        if link is None or not link.active or link.client is None:
            return None
        return link.client if self.fence is None else link.client.fenced(self.fence)

    def inactive_since(self, cluster: str) -> float | None:
        link = self._links.get(cluster)
        if link is None:
            return self._unknown_since.setdefault(cluster, time.monotonic())
        return None if link.active else link.inactive_since

    def subscribe(self, callback: Callable[[str], None]) -> None:
        self._callbacks.append(callback)

    # -- store side -----------------------------------------------------------------------------------------

    def notify(self, cluster: str) -> None:
        """Tell subscribers about ``cluster`` on a later turn of the loop (never from inside their call)."""
        loop = self._loop
        if loop is None:
            with contextlib.suppress(RuntimeError):
                loop = asyncio.get_running_loop()
        if loop is None:
            return
        for callback in list(self._callbacks):
            loop.call_soon(_safely, callback, cluster)

    def on_change(self, change: Change) -> None:
        """Route a store change to the cluster tasks it concerns."""
        if change.kind is MULTIKUEUE_CLUSTERS:
            name = change.key[1]
            if change.new is None or (change.new.get("metadata") or {}).get("deletionTimestamp"):
                self._drop(name)  # Kueue's reconciler: a cluster being deleted is disconnected at once
            elif self._running and (change.old is None or change.old.get("spec") != change.new.get("spec")):
                self._ensure(name).wake.set()
        elif change.kind is SECRETS and change.key[0] == self.namespace:
            for link in self._links.values():
                if link.secret == change.key[1]:
                    link.wake.set()
        elif change.kind is MULTIKUEUE_CONFIGS:
            old, new = set(config_clusters(change.old)), set(config_clusters(change.new))
            for cluster in sorted(old ^ new if change.old and change.new else old | new):
                self.notify(cluster)
        elif change.kind is ADMISSION_CHECKS and (
            is_multikueue_check(change.old) or is_multikueue_check(change.new)
        ):
            for check in (change.old, change.new):
                if check is None:
                    continue
                config_name, _ = parameters_config(check)
                config = self.context.store.get(MULTIKUEUE_CONFIGS, config_name) if config_name else None
                for cluster in config_clusters(config):
                    self.notify(cluster)

    def reconfigure(self, configuration: Configuration) -> None:
        """A new ``multiKueue.origin`` changes which Workloads on the workers are ours: every connection is
        checked again with it (live, like every field of the ConfigMap)."""
        origin = configuration.multi_kueue.origin
        if origin == self._origin:
            return
        self._origin = origin
        for link in self._links.values():
            link.fingerprint = ""
            link.wake.set()

    async def run(self) -> None:
        """Keep a task per MultiKueueCluster until cancelled (leadership lost); then close every client."""
        self._loop = asyncio.get_running_loop()
        self._running = True
        try:
            for cluster in self.context.store.items(MULTIKUEUE_CLUSTERS):
                if not cluster["metadata"].get("deletionTimestamp"):
                    self._ensure(str(cluster["metadata"]["name"]))
            await asyncio.Event().wait()
        finally:
            self._running = False
            links, self._links = list(self._links.values()), {}
            for link in links:
                await link.stop()
                self.notify(link.name)
            self._loop = None

    def _ensure(self, name: str) -> _Link:
        link = self._links.get(name)
        if link is None:
            link = _Link(self, name)
            self._links[name] = link
            self._unknown_since.pop(name, None)
            link.start()
        return link

    def _drop(self, name: str) -> None:
        link = self._links.pop(name, None)
        if link is not None:
            asyncio.get_running_loop().create_task(link.stop(), name=f"multikueue-close-{name}")
            self.notify(name)


def _safely(callback: Callable[[str], None], cluster: str) -> None:
    try:
        callback(cluster)
    except Exception:  # one subscriber's bug must not stop the others' news
        log.exception("worker cluster subscriber failed", extra={"cluster": cluster})


class _Link:
    """One MultiKueueCluster's connection and its task."""

    def __init__(self, owner: WorkerConnections, name: str) -> None:
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
                    cluster, CONNECTION_FAILED, self._attempt_message(_describe(exc), delay)
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
            raw = self._read_file(source)
            poll = True
        else:
            self.secret, self._file = source.location, None
            raw = self._read_secret(source)
            poll = False
        if len(raw) > MAX_KUBECONFIG_BYTES:
            raise ClusterUnusable(
                BAD_KUBECONFIG,
                f"{LOAD_FAILED}: the kubeconfig is {len(raw)} bytes, "
                f"more than the {MAX_KUBECONFIG_BYTES} allowed",
            )
        try:
            return raw.decode("utf-8"), poll
        except UnicodeDecodeError:
            raise ClusterUnusable(
                INSECURE_KUBECONFIG, f"{LOAD_FAILED}: the kubeconfig is not UTF-8 text"
            ) from None

    def _read_secret(self, source: KubeConfigSource) -> bytes:
        namespace = self.owner.namespace
        secret = self.owner.context.store.get(SECRETS, source.location, namespace)
        if secret is None:
            raise ClusterUnusable(BAD_KUBECONFIG, f'{LOAD_FAILED}: secrets "{source.location}" not found')
        data = (secret.get("data") or {}).get(KUBECONFIG_KEY)
        if not isinstance(data, str):
            raise ClusterUnusable(
                BAD_KUBECONFIG,
                f'{LOAD_FAILED}: key "{KUBECONFIG_KEY}" not found in secret "{source.location}"',
            )
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise ClusterUnusable(
                BAD_KUBECONFIG,
                f'{LOAD_FAILED}: key "{KUBECONFIG_KEY}" of secret "{source.location}" is not base64',
            ) from None

    def _read_file(self, source: KubeConfigSource) -> bytes:
        """A file under the allowed directory (after resolving links, so no link leads out of it), read up to
        one byte past the limit (Kueue's ``validateKubeConfigPath``)."""
        prefix = self.owner.path_prefix
        path = Path(os.path.normpath(source.location))
        if ".." in Path(source.location).parts or not path.is_absolute():
            raise ClusterUnusable(
                BAD_KUBECONFIG, f"{LOAD_FAILED}: kubeconfig path must be an absolute path with no '..'"
            )
        try:
            resolved = path.resolve(strict=True)
            allowed = prefix.resolve(strict=True)
        except OSError as exc:
            raise ClusterUnusable(BAD_KUBECONFIG, f"{LOAD_FAILED}: {path}: {exc.strerror or exc}") from None
        if not resolved.is_relative_to(allowed):
            raise ClusterUnusable(
                BAD_KUBECONFIG, f'{LOAD_FAILED}: kubeconfig path "{path}" is not under "{prefix}"'
            )
        self._file = (path, _signature(path))
        try:
            with resolved.open("rb") as handle:
                return handle.read(MAX_KUBECONFIG_BYTES + 1)
        except OSError as exc:
            raise ClusterUnusable(BAD_KUBECONFIG, f"{LOAD_FAILED}: {path}: {exc.strerror or exc}") from None

    async def _connect(self, text: str) -> KubeClient:
        """A client for the kubeconfig ``text``, once the worker has answered a list of our Workloads."""
        origin = Path(f"MultiKueueCluster {self.name}")
        try:
            merged = load_text(text, origin=origin)
            selected = select(merged)
        except KubeconfigError as exc:
            raise ClusterUnusable(
                INSECURE_KUBECONFIG, f"{LOAD_FAILED}: {_without_origin(str(exc), origin)}"
            ) from None
        problem = kubeconfig_problem(
            clusters={name: entry.body for name, entry in merged.clusters.items()},
            users={name: entry.body for name, entry in merged.users.items()},
            selected_cluster=selected.cluster.body,
            selected_user=selected.user.body if selected.user else {},
        )
        if problem is not None:
            raise ClusterUnusable(INSECURE_KUBECONFIG, f"{LOAD_FAILED}: {problem}")
        try:
            connection = await from_selected(selected)
        except KubeconfigError as exc:
            raise ClusterUnusable(
                INSECURE_KUBECONFIG, f"{LOAD_FAILED}: {_without_origin(str(exc), origin)}"
            ) from None
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
    _file: tuple[Path, tuple[int, int, int] | None] | None = None

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
                extra={"cluster": self.name, "error": _describe(watch.exception() or Exception())},
            )
            await self._close()
            return

    async def _file_changed(self, seen: tuple[Path, tuple[int, int, int] | None]) -> None:
        """Return once the file's identity, size or modification time differ from ``seen``."""
        path, signature = seen
        while _signature(path) == signature:
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
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wake.wait(), timeout=seconds)

    async def _close(self) -> None:
        client, self.client = self.client, None
        was_active, self.active = self.active, False
        if was_active:
            self.inactive_since = time.monotonic()
        if client is not None:
            await client.close()
        if was_active or client is not None:
            self.owner.notify(self.name)

    def _attempt_message(self, error: str, delay: float) -> str:
        at = (datetime.now(UTC) + timedelta(seconds=delay)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"{error}; connection attempts: {self.attempts}, next connection attempt: {at}"

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
        def build(current: JSON) -> JSON | None:
            edit = ConditionsEdit.of(current, now_rfc3339())
            return {"conditions": edit.conditions} if edit.set("Active", status, reason, message) else None

        try:
            await self.owner.context.writer.patch_status(MULTIKUEUE_CLUSTERS, cluster, build)
        except NotLeader:
            return  # leadership is ending: this task is cancelled next
        except (ApiError, aiohttp.ClientError, TimeoutError) as exc:
            log.warning(
                "cannot write MultiKueueCluster status", extra={"cluster": self.name, "error": _describe(exc)}
            )


def _signature(path: Path) -> tuple[int, int, int] | None:
    """What changes when a file is replaced or rewritten (a mounted Secret is swapped through a symlink)."""
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_ino, found.st_size, found.st_mtime_ns


def _describe(exc: BaseException) -> str:
    """An error for a condition message anyone who may read MultiKueueClusters sees: credentials that an
    error may carry (a proxy password, a token in a URL) are redacted as in the logs."""
    if isinstance(exc, ApiError):
        text = f"the worker answered {exc.status} {exc.reason}: {exc.message}".strip().rstrip(":")
    elif isinstance(exc, TimeoutError):
        text = "the worker's API server did not answer in time"
    else:
        text = str(exc) or type(exc).__name__
    return redact(text)


def _without_origin(message: str, origin: Path) -> str:
    return message.removeprefix(f"{origin}: ")


def as_worker_clusters(connections: WorkerConnections) -> WorkerClusters:
    """``connections`` as the seam's type (and where mypy proves it implements ``WorkerClusters``)."""
    return connections
