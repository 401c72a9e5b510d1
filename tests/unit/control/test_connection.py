"""Which credentials the controller uses, and how it reaches the server: ``tls-server-name``, ``proxy-url``.

The order is client-go's, as controller-runtime's ``pkg/client/config`` ``loadConfig`` applies it: the
explicit ``--kubeconfig``, then ``$KUBECONFIG``, then the pod's service account, then ``~/.kube/config``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import re
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web

from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.connection import resolve
from kueue_webhook.control.kube.kubeconfig import KubeconfigError
from kueue_webhook.http.certs import CertificateSet, ensure_certificates

JSON = dict[str, Any]
POD_ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def kubeconfig(path: Path, server: str, *, token: str = "t", **cluster: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.fixture
def service_account(tmp_path: Path) -> Path:
    """What a pod has mounted: a token and the cluster CA."""
    pki = ensure_certificates(tmp_path / "pki", ips=["127.0.0.1"])
    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "token").write_text("pod-token")
    (directory / "ca.crt").write_bytes(pki.ca_cert.read_bytes())
    return directory


# -- precedence ------------------------------------------------------------------------------------------


async def test_in_a_pod_without_kubeconfig_the_service_account_is_used(service_account: Path) -> None:
    connection = await resolve(None, environ=POD_ENV, service_account=service_account)
    assert connection.host == "https://10.96.0.1:443"
    assert await connection.auth() == {"Authorization": "Bearer pod-token"}


async def test_in_a_pod_an_explicit_kubeconfig_wins_over_the_service_account(
    tmp_path: Path, service_account: Path
) -> None:
    path = kubeconfig(tmp_path / "explicit", "https://explicit.example", token="explicit")
    connection = await resolve(str(path), environ=POD_ENV, service_account=service_account)
    assert connection.host == "https://explicit.example"
    assert await connection.auth() == {"Authorization": "Bearer explicit"}


async def test_in_a_pod_kubeconfig_from_the_environment_wins_over_the_service_account(
    tmp_path: Path, service_account: Path
) -> None:
    path = kubeconfig(tmp_path / "env", "https://env.example")
    environ = {**POD_ENV, "KUBECONFIG": str(path)}
    connection = await resolve(None, environ=environ, service_account=service_account)
    assert connection.host == "https://env.example"


async def test_the_explicit_kubeconfig_wins_over_the_environment(tmp_path: Path) -> None:
    explicit = kubeconfig(tmp_path / "explicit", "https://explicit.example")
    listed = kubeconfig(tmp_path / "env", "https://env.example")
    connection = await resolve(str(explicit), environ={"KUBECONFIG": str(listed)})
    assert connection.host == "https://explicit.example"


async def test_in_a_pod_a_kubeconfig_variable_naming_only_missing_files_falls_back_to_the_service_account(
    tmp_path: Path, service_account: Path
) -> None:
    environ = {**POD_ENV, "KUBECONFIG": str(tmp_path / "absent")}
    connection = await resolve(None, environ=environ, service_account=service_account)
    assert connection.host == "https://10.96.0.1:443"


async def test_outside_a_pod_the_home_kubeconfig_is_last(tmp_path: Path, service_account: Path) -> None:
    kubeconfig(tmp_path / "home" / ".kube" / "config", "https://home.example")
    environ = {"HOME": str(tmp_path / "home")}  # no KUBERNETES_SERVICE_HOST: not a pod
    connection = await resolve(None, environ=environ, service_account=service_account)
    assert connection.host == "https://home.example"


async def test_with_nothing_to_go_on_the_error_says_what_was_tried(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match=r"KUBECONFIG are unset, this is not a pod, and .* is missing"):
        await resolve(None, environ={"HOME": str(tmp_path)}, service_account=tmp_path / "none")
    with pytest.raises(KubeconfigError, match="KUBECONFIG names no file that exists"):
        await resolve(None, environ={"KUBECONFIG": str(tmp_path / "absent")}, service_account=tmp_path)


async def test_an_ipv6_service_host_is_bracketed(service_account: Path) -> None:
    environ = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    connection = await resolve(None, environ=environ, service_account=service_account)
    assert connection.host == "https://[fd00::1]:443"


# -- a TLS API server to talk to -----------------------------------------------------------------------


@contextlib.asynccontextmanager
async def tls_server(pki: CertificateSet) -> AsyncIterator[int]:
    """An HTTPS server on 127.0.0.1 answering ``/version`` with the bearer token it was sent."""

    async def version(request: web.Request) -> web.Response:
        return web.json_response({"gitVersion": "v1.36.2", "auth": request.headers.get("Authorization")})

    app = web.Application()
    app.router.add_get("/version", version)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki.cert, pki.key)
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    try:
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()


async def get_version(path: Path) -> JSON:
    client = await KubeClient.connect(kubeconfig=str(path))
    try:
        return await client.request("GET", "/version")
    finally:
        await client.close()


# -- tls-server-name --------------------------------------------------------------------------------------


async def test_tls_server_name_verifies_the_certificate_against_that_name(tmp_path: Path) -> None:
    # the server's certificate names only kueue-webhook.kueue-system.svc (and shorter forms), not 127.0.0.1
    pki = ensure_certificates(tmp_path / "pki")
    ca = {"certificate-authority": str(pki.ca_cert)}
    async with tls_server(pki) as port:
        server = f"https://127.0.0.1:{port}"
        service_name = {"tls-server-name": "kueue-webhook.kueue-system.svc"}
        named = kubeconfig(tmp_path / "named", server, token="ok", **ca, **service_name)
        assert (await get_version(named))["auth"] == "Bearer ok"

        with pytest.raises(aiohttp.ClientConnectorCertificateError, match=re.escape("127.0.0.1")):
            await get_version(kubeconfig(tmp_path / "plain", server, **ca))
        wrong = kubeconfig(tmp_path / "wrong", server, **ca, **{"tls-server-name": "elsewhere.example"})
        with pytest.raises(aiohttp.ClientConnectorCertificateError, match=re.escape("elsewhere.example")):
            await get_version(wrong)


# -- proxy-url ----------------------------------------------------------------------------------------------


class ConnectProxy:
    """A minimal HTTP CONNECT proxy: records each CONNECT line and its headers, then relays the bytes."""

    def __init__(self) -> None:
        self.connects: list[tuple[str, dict[str, str]]] = []
        self._relays: set[asyncio.Task[None]] = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers = dict(line.split(": ", 1) for line in head[1:] if line)
        self.connects.append((head[0], headers))
        method, target, _ = head[0].split(" ")
        if method != "CONNECT":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            writer.close()
            return
        host, port = target.rsplit(":", 1)
        upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        for source, sink in ((reader, upstream_writer), (upstream_reader, writer)):
            task = asyncio.create_task(self._relay(source, sink))
            self._relays.add(task)
            task.add_done_callback(self._relays.discard)

    @staticmethod
    async def _relay(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            sink.close()

    @contextlib.asynccontextmanager
    async def serving(self, ssl_context: ssl.SSLContext | None = None) -> AsyncIterator[int]:
        server = await asyncio.start_server(self.handle, "127.0.0.1", 0, ssl=ssl_context)
        try:
            yield int(server.sockets[0].getsockname()[1])
        finally:
            server.close()
            for task in list(self._relays):
                task.cancel()
            await asyncio.gather(*self._relays, return_exceptions=True)


async def test_an_http_proxy_tunnels_every_request_with_connect(tmp_path: Path) -> None:
    pki = ensure_certificates(tmp_path / "pki", ips=["127.0.0.1"])
    proxy = ConnectProxy()
    async with tls_server(pki) as port, proxy.serving() as proxy_port:
        path = kubeconfig(
            tmp_path / "config",
            f"https://127.0.0.1:{port}",
            token="through-proxy",
            **{"certificate-authority": str(pki.ca_cert), "proxy-url": f"http://127.0.0.1:{proxy_port}"},
        )
        assert (await get_version(path))["auth"] == "Bearer through-proxy"
    assert [line for line, _ in proxy.connects] == [f"CONNECT 127.0.0.1:{port} HTTP/1.1"]
    # the API server's bearer token travels inside the tunnel, never to the proxy
    assert "Authorization" not in proxy.connects[0][1]


async def test_proxy_credentials_in_the_url_are_sent_to_the_proxy(tmp_path: Path) -> None:
    pki = ensure_certificates(tmp_path / "pki", ips=["127.0.0.1"])
    proxy = ConnectProxy()
    async with tls_server(pki) as port, proxy.serving() as proxy_port:
        path = kubeconfig(
            tmp_path / "config",
            f"https://127.0.0.1:{port}",
            **{
                "certificate-authority": str(pki.ca_cert),
                "proxy-url": f"http://alice:s3cret@127.0.0.1:{proxy_port}",
            },
        )
        await get_version(path)
    expected = "Basic " + base64.b64encode(b"alice:s3cret").decode()
    assert proxy.connects[0][1]["Proxy-Authorization"] == expected


async def test_an_https_proxy_is_reached_over_tls(tmp_path: Path) -> None:
    pki = ensure_certificates(tmp_path / "pki", ips=["127.0.0.1"])
    proxy_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    proxy_tls.load_cert_chain(pki.cert, pki.key)
    proxy = ConnectProxy()
    async with tls_server(pki) as port, proxy.serving(proxy_tls) as proxy_port:
        path = kubeconfig(
            tmp_path / "config",
            f"https://127.0.0.1:{port}",
            token="tls-in-tls",
            **{"certificate-authority": str(pki.ca_cert), "proxy-url": f"https://127.0.0.1:{proxy_port}"},
        )
        assert (await get_version(path))["auth"] == "Bearer tls-in-tls"
    assert [line for line, _ in proxy.connects] == [f"CONNECT 127.0.0.1:{port} HTTP/1.1"]


@pytest.mark.parametrize(
    ("proxy_url", "message"),
    [
        ("socks5://127.0.0.1:1080", "socks5 proxies are not supported here, use an http or https proxy"),
        ("ftp://127.0.0.1:21", "unsupported scheme 'ftp', must be http or https"),
        ("http://", "no host"),
    ],
)
async def test_an_unusable_proxy_url_is_refused_with_the_reason(
    tmp_path: Path, proxy_url: str, message: str
) -> None:
    path = kubeconfig(tmp_path / "config", "https://127.0.0.1:6443", **{"proxy-url": proxy_url})
    with pytest.raises(KubeconfigError, match=f"{path}: invalid 'proxy-url' .* for cluster 'c': {message}"):
        await resolve(str(path), environ={})


async def test_a_proxy_password_never_appears_in_an_error(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", "https://x", **{"proxy-url": "socks5://bob:hunter2@proxy:1080"})
    with pytest.raises(KubeconfigError) as raised:
        await resolve(str(path), environ={})
    assert "hunter2" not in str(raised.value)
    assert "bob:***@proxy:1080" in str(raised.value)
