"""Where the API server is and how to authenticate: in-cluster service account or a kubeconfig file.

The common cases are read here directly: the pod's service-account token (re-read every minute, because
bound tokens rotate) with the cluster CA, and kubeconfig users with a token, a token file or a client
certificate. Importing kubernetes-asyncio costs about 40 MB of resident memory (its package imports every
generated model), a third of the controller's budget at 10,000 Jobs, so it is imported only for kubeconfig
users this module does not handle itself: ``exec`` credential plugins and ``auth-provider`` entries.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
AuthHeaders = Callable[[], Awaitable[dict[str, str]]]


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used; the message names the file and the field."""


@dataclass
class Connection:
    host: str
    ssl_context: ssl.SSLContext
    auth: AuthHeaders


def _ssl_context(
    *, ca_file: str | None, ca_data: bytes | None, insecure: bool, cert: tuple[str, str] | None
) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca_file, cadata=ca_data.decode() if ca_data else None)
    if cert is not None:
        context.load_cert_chain(cert[0], cert[1])
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class _FileToken:
    """A bearer token read from a file and re-read at most every ``ttl`` seconds (token rotation)."""

    def __init__(self, path: Path, ttl: float = 60.0) -> None:
        self.path = path
        self.ttl = ttl
        self._value = ""
        self._read_at = -ttl

    async def __call__(self) -> dict[str, str]:
        now = time.monotonic()
        if now - self._read_at >= self.ttl:
            self._value = self.path.read_text().strip()
            self._read_at = now
        return {"Authorization": f"Bearer {self._value}"}


def in_cluster() -> Connection | None:
    """The pod's service account, or None when not running in a pod."""
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    token = SERVICE_ACCOUNT / "token"
    if not host or not token.exists():
        return None
    if ":" in host:
        host = f"[{host}]"
    context = _ssl_context(ca_file=str(SERVICE_ACCOUNT / "ca.crt"), ca_data=None, insecure=False, cert=None)
    return Connection(f"https://{host}:{port}", context, _FileToken(token))


def _named(entries: Any, name: str, what: str, path: Path) -> dict[str, Any]:
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return dict(entry.get(what) or {})
    raise KubeconfigError(f"{path}: no {what} named {name!r}")


def _material(section: dict[str, Any], key: str, base: Path) -> tuple[str | None, bytes | None]:
    """(file path, inline bytes) for a ``key`` / ``key-data`` pair; relative paths start at the file."""
    data = section.get(f"{key}-data")
    if data:
        return None, base64.b64decode(data)
    value = section.get(key)
    if value:
        file = Path(value)
        return str(file if file.is_absolute() else base / file), None
    return None, None


def _spill(data: bytes, directory: Path, name: str) -> str:
    """ssl wants client certificates as files; inline data is written once to a private temp file."""
    path = directory / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return str(path)


def from_kubeconfig(path: Path, *, context: str | None = None) -> Connection | None:
    """The connection a kubeconfig describes; None when its user needs an exec plugin or auth provider."""
    try:
        document = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise KubeconfigError(f"{path}: cannot read kubeconfig: {exc}") from exc
    context_name = context or document.get("current-context")
    if not context_name:
        raise KubeconfigError(f"{path}: no current-context and no --context given")
    ctx = _named(document.get("contexts"), context_name, "context", path)
    cluster = _named(document.get("clusters"), str(ctx.get("cluster", "")), "cluster", path)
    user = _named(document.get("users"), str(ctx.get("user", "")), "user", path) if ctx.get("user") else {}
    if user.get("exec") or user.get("auth-provider"):
        return None
    server = cluster.get("server")
    if not server:
        raise KubeconfigError(f"{path}: cluster {ctx.get('cluster')!r} has no server")
    base = path.parent
    ca_file, ca_data = _material(cluster, "certificate-authority", base)
    cert_file, cert_data = _material(user, "client-certificate", base)
    key_file, key_data = _material(user, "client-key", base)
    cert: tuple[str, str] | None = None
    if cert_file or cert_data:
        spill = Path(tempfile.mkdtemp(prefix="kueue-webhook-kubeconfig-"))
        cert = (
            cert_file or _spill(cert_data or b"", spill, "client.crt"),
            key_file or _spill(key_data or b"", spill, "client.key"),
        )
    context_ssl = _ssl_context(
        ca_file=ca_file, ca_data=ca_data, insecure=bool(cluster.get("insecure-skip-tls-verify")), cert=cert
    )
    if cluster.get("tls-server-name"):
        raise KubeconfigError(
            f"{path}: tls-server-name is not supported; use a server URL matching the certificate"
        )
    auth: AuthHeaders
    if user.get("token"):
        header = {"Authorization": f"Bearer {user['token']}"}

        async def static() -> dict[str, str]:
            return header

        auth = static
    elif user.get("tokenFile"):
        auth = _FileToken(Path(user["tokenFile"]))
    elif user.get("username"):
        pair = base64.b64encode(f"{user['username']}:{user.get('password', '')}".encode()).decode()
        basic = {"Authorization": f"Basic {pair}"}

        async def static_basic() -> dict[str, str]:
            return basic

        auth = static_basic
    else:

        async def anonymous() -> dict[str, str]:
            return {}

        auth = anonymous
    return Connection(str(server), context_ssl, auth)


def default_kubeconfig() -> Path:
    first = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    return Path(first) if first else Path.home() / ".kube" / "config"
