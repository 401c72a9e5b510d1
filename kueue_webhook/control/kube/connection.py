"""Where the API server is and how to reach it: which credentials, TLS, proxy.

Which credentials: client-go's order, as controller-runtime's ``pkg/client/config`` ``loadConfig`` applies it
(the order every Go controller, Kueue's included, follows):

1. ``--kubeconfig``: that one file, which must exist;
2. ``$KUBECONFIG``: its files merged (``kueue_webhook.control.kube.kubeconfig``);
3. the pod's service account (``KUBERNETES_SERVICE_HOST``/``_PORT`` and the mounted token);
4. ``~/.kube/config``.

So an explicit kubeconfig wins over the service account even in a pod. When every file ``$KUBECONFIG`` names
is missing, client-go's deferred loader falls back to the service account, and so do we.

The common credentials are handled here: the service-account token (re-read every minute, because bound
tokens rotate), kubeconfig users with a token, a token file, basic auth or a client certificate. Importing
kubernetes-asyncio costs about 40 MB of resident memory (its package imports every generated model), a
third of the controller's budget at 10,000 Jobs, so it is imported only for users this module does not
handle itself: ``exec`` credential plugins and ``auth-provider`` entries, and then only for their credentials;
the cluster's address, CA, ``tls-server-name`` and ``proxy-url`` are always read here.

``proxy-url`` takes http and https proxies (aiohttp tunnels with CONNECT). client-go also speaks socks5;
aiohttp does not without a further package, so a socks5 proxy is refused with a message saying so.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import shutil
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from kueue_webhook.control.kube.kubeconfig import (
    JSON,
    KubeconfigError,
    Selected,
    load,
    load_selected,
    select,
    split_paths,
)

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
AuthHeaders = Callable[[], Awaitable[dict[str, str]]]
log = logging.getLogger("kueue_webhook.connection")


@dataclass
class Connection:
    host: str
    ssl_context: ssl.SSLContext
    auth: AuthHeaders
    #: ``proxy-url`` of the cluster (http or https)
    proxy: str | None = None
    #: ``tls-server-name``: the name the server's certificate is checked against (and sent as SNI)
    server_hostname: str | None = None
    #: where the settings came from, for the log
    source: str = ""


async def resolve(
    kubeconfig: str | None,
    *,
    context: str | None = None,
    environ: Mapping[str, str] = os.environ,
    service_account: Path = SERVICE_ACCOUNT,
) -> Connection:
    """What client-go would connect with: ``--kubeconfig``, ``$KUBECONFIG``, service account, ``~/.kube``."""
    if kubeconfig:
        return await from_selected(load_selected([Path(kubeconfig)], explicit=True, context=context))
    listed = environ.get("KUBECONFIG", "")
    if listed:
        merged = load(split_paths(listed))
        if merged.files:
            return await from_selected(select(merged, context=context))
        pod = in_cluster(environ, service_account)
        if pod is None:
            missing = ", ".join(str(path) for path in merged.missing)
            raise KubeconfigError(f"KUBECONFIG names no file that exists ({missing}) and this is not a pod")
        log.warning(
            "no file named by KUBECONFIG exists; using the pod's service account",
            extra={"kubeconfig": listed},
        )
        return pod
    pod = in_cluster(environ, service_account)
    if pod is not None:
        return pod
    home = Path(environ.get("HOME") or Path.home()) / ".kube" / "config"
    if not home.exists():
        raise KubeconfigError(
            f"no credentials: --kubeconfig and KUBECONFIG are unset, this is not a pod, and {home} is missing"
        )
    return await from_selected(load_selected([home], context=context))


def in_cluster(
    environ: Mapping[str, str] = os.environ, service_account: Path = SERVICE_ACCOUNT
) -> Connection | None:
    """The pod's service account, or None when not in a pod (client-go ``rest.InClusterConfig``'s test)."""
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
    token = service_account / "token"
    if not host or not port or not token.exists():
        return None
    if ":" in host:
        host = f"[{host}]"
    context = _ssl_context(ca_file=str(service_account / "ca.crt"), ca_data=None, insecure=False, cert=None)
    return Connection(
        f"https://{host}:{port}", context, _FileToken(token), source="in-cluster service account"
    )


async def from_selected(selected: Selected) -> Connection:
    """The connection a kubeconfig context describes."""
    cluster, where = selected.cluster.body, selected.cluster.origin
    server = cluster.get("server")
    if not server:
        raise KubeconfigError(f"{where}: cluster {selected.cluster.name!r} has no server")
    user = selected.user.body if selected.user else {}
    user_where = selected.user.origin if selected.user else where
    # inline key material is spilled to files only for as long as loading it takes, error or not
    spill = Path(tempfile.mkdtemp(prefix="kueue-webhook-kubeconfig-"))
    try:
        cert = _client_certificate(user, user_where, spill)
        auth: AuthHeaders
        if user.get("exec") or user.get("auth-provider"):
            auth, plugin_cert = await _plugin_credentials(selected)
            cert = cert or plugin_cert
        else:
            auth = _static_auth(user)
        ca_file, ca_data = _material(cluster, "certificate-authority", where)
        try:
            context = _ssl_context(
                ca_file=ca_file,
                ca_data=ca_data,
                insecure=bool(cluster.get("insecure-skip-tls-verify")),
                cert=cert,
            )
        except (OSError, ssl.SSLError) as exc:
            user_name = selected.user.name if selected.user else ""
            raise KubeconfigError(
                f"{where}: cluster {selected.cluster.name!r}, user {user_name!r}: "
                f"cannot load the certificates: {exc}"
            ) from exc
    finally:
        shutil.rmtree(spill, ignore_errors=True)
    return Connection(
        host=str(server),
        ssl_context=context,
        auth=auth,
        proxy=_proxy(cluster, selected.cluster.name, where),
        server_hostname=str(cluster["tls-server-name"]) if cluster.get("tls-server-name") else None,
        source=f"kubeconfig {where}, context {selected.context.name}",
    )


def _proxy(cluster: JSON, name: str, where: Path) -> str | None:
    value = cluster.get("proxy-url")
    if not value:
        return None
    parts = urlsplit(str(value))
    invalid = f"{where}: invalid 'proxy-url' {redact(str(value))!r} for cluster {name!r}"
    if parts.scheme == "socks5":
        raise KubeconfigError(f"{invalid}: socks5 proxies are not supported here, use an http or https proxy")
    if parts.scheme not in ("http", "https"):
        raise KubeconfigError(f"{invalid}: unsupported scheme {parts.scheme!r}, must be http or https")
    if not parts.hostname:
        raise KubeconfigError(f"{invalid}: no host")
    return str(value)


def redact(url: str) -> str:
    """A URL fit for a log line or an error: the password of its user info replaced."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


# -- credentials ---------------------------------------------------------------------------------------


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


def _fixed(headers: dict[str, str]) -> AuthHeaders:
    async def auth() -> dict[str, str]:
        return headers

    return auth


def _static_auth(user: JSON) -> AuthHeaders:
    if user.get("token"):
        return _fixed({"Authorization": f"Bearer {user['token']}"})
    if user.get("tokenFile"):
        return _FileToken(Path(user["tokenFile"]))
    if user.get("username"):
        pair = base64.b64encode(f"{user['username']}:{user.get('password', '')}".encode()).decode()
        return _fixed({"Authorization": f"Basic {pair}"})
    return _fixed({})


async def _plugin_credentials(selected: Selected) -> tuple[AuthHeaders, tuple[str, str] | None]:
    """Token (and any client certificate) from an exec plugin or auth provider, through kubernetes-asyncio."""
    from kubernetes_asyncio import config as kube_config
    from kubernetes_asyncio.client import Configuration

    configuration = Configuration()
    await kube_config.load_kube_config_from_dict(
        selected.document(), context=selected.context.name, client_configuration=configuration
    )

    async def auth() -> dict[str, str]:
        settings = await configuration.auth_settings()
        bearer = settings.get("BearerToken")
        return {"Authorization": bearer["value"]} if bearer and bearer.get("value") else {}

    cert = (str(configuration.cert_file), str(configuration.key_file)) if configuration.cert_file else None
    return auth, cert


def _client_certificate(user: JSON, where: Path, spill: Path) -> tuple[str, str] | None:
    """The client certificate and key as files: the kubeconfig's own, or its inline data written to
    ``spill`` (a private directory the caller removes once the SSL context has loaded them)."""
    cert_file, cert_data = _material(user, "client-certificate", where)
    key_file, key_data = _material(user, "client-key", where)
    if not (cert_file or cert_data):
        return None
    return (
        cert_file or _spill(cert_data or b"", spill, "client.crt"),
        key_file or _spill(key_data or b"", spill, "client.key"),
    )


def _material(section: JSON, key: str, where: Path) -> tuple[str | None, bytes | None]:
    """(file path, inline bytes) for a ``key`` / ``key-data`` pair; the data wins, as in client-go."""
    data = section.get(f"{key}-data")
    if data:
        try:
            return None, base64.b64decode(str(data), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise KubeconfigError(f"{where}: {key}-data is not valid base64: {exc}") from exc
    value = section.get(key)
    return (str(value), None) if value else (None, None)


def _spill(data: bytes, directory: Path, name: str) -> str:
    """ssl wants client certificates as files; inline data is written once to a temp file that is 0600
    from its creation (in a 0700 directory), so there is no moment anyone else may read it."""
    path = directory / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return str(path)


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


def describe(connection: Connection) -> dict[str, Any]:
    """The log fields of a connection (no secrets)."""
    fields: dict[str, Any] = {"server": connection.host, "source": connection.source}
    if connection.proxy:
        fields["proxy"] = redact(connection.proxy)
    if connection.server_hostname:
        fields["tls_server_name"] = connection.server_hostname
    return fields
