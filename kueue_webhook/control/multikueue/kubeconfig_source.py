"""A MultiKueueCluster's kubeconfig: where it is read from, and what makes one unusable.

A kubeconfig comes from the ``kubeconfig`` key of a Secret in the controller's namespace or from a file under
``/etc/multikueue/kubeconfigs``. Whoever may create MultiKueueClusters chooses which, so each is checked
before anything is connected: the size, the text encoding, the path (no ``..``, no link leading out of the
allowed directory, Kueue's ``validateKubeConfigPath``) and the content (nothing that runs a program or reads
the controller's disk, ``kubeconfig_problem``). What is refused raises ``ClusterUnusable`` with Kueue's
reason (``BadKubeConfig``, ``InsecureKubeConfig``) and a message that names the problem, never the text.
"""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path

from kueue_webhook.api.objects.multikueue import (
    BAD_KUBECONFIG,
    INSECURE_KUBECONFIG,
    KUBECONFIG_KEY,
    LOAD_FAILED,
    MAX_KUBECONFIG_BYTES,
    KubeConfigSource,
    kubeconfig_problem,
)
from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.kube.connection import Connection, from_selected
from kueue_webhook.control.kube.kinds import SECRETS
from kueue_webhook.control.kube.kubeconfig import KubeconfigError, load_text, select

#: a file read, and what it looked like then (``signature``)
FileSeen = tuple[Path, tuple[int, int, int] | None]


class ClusterUnusable(Exception):
    """The kubeconfig cannot be used: Kueue's reason and a message for the ``Active`` condition."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def read_secret(store: Store, namespace: str, source: KubeConfigSource) -> bytes:
    secret = store.get(SECRETS, source.location, namespace)
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


def read_file(source: KubeConfigSource, prefix: Path) -> tuple[bytes, FileSeen]:
    """A file under the allowed directory (after resolving links, so no link leads out of it), read up to
    one byte past the limit (Kueue's ``validateKubeConfigPath``)."""
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
    seen = (path, signature(path))
    try:
        with resolved.open("rb") as handle:
            return handle.read(MAX_KUBECONFIG_BYTES + 1), seen
    except OSError as exc:
        raise ClusterUnusable(BAD_KUBECONFIG, f"{LOAD_FAILED}: {path}: {exc.strerror or exc}") from None


def checked_text(raw: bytes) -> str:
    """The kubeconfig's text, if it is small enough and UTF-8."""
    if len(raw) > MAX_KUBECONFIG_BYTES:
        raise ClusterUnusable(
            BAD_KUBECONFIG,
            f"{LOAD_FAILED}: the kubeconfig is {len(raw)} bytes, "
            f"more than the {MAX_KUBECONFIG_BYTES} allowed",
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ClusterUnusable(
            INSECURE_KUBECONFIG, f"{LOAD_FAILED}: the kubeconfig is not UTF-8 text"
        ) from None


async def checked_connection(text: str, cluster: str) -> Connection:
    """The connection the kubeconfig ``text`` of MultiKueueCluster ``cluster`` describes, once it is known
    to need nothing refused."""
    origin = Path(f"MultiKueueCluster {cluster}")
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
    return connection


def signature(path: Path) -> tuple[int, int, int] | None:
    """What changes when a file is replaced or rewritten (a mounted Secret is swapped through a symlink)."""
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_ino, found.st_size, found.st_mtime_ns


def _without_origin(message: str, origin: Path) -> str:
    return message.removeprefix(f"{origin}: ")
