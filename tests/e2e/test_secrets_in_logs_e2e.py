"""Secrets never reach the logs of a real ``kueue-webhook serve``: run with the real control plane's admin
token behind a proxy that wants credentials, and with a kubeconfig broken next to its token line.

The proxy here answers every tunnel with 407, so the controller's requests fail after aiohttp has sent the
``Proxy-Authorization`` header, whose error's repr carries the request's headers: what the logs must not
show. The process is stopped once it has logged a few failures.
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster
from tests.e2e.install import REPO_ROOT
from tests.support.replica import certificates

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
PROXY_PASSWORD = "hunter2-proxy-e2e"


def admin_token(cluster: Cluster) -> str:
    """The control plane's static admin token (../shared/kube writes it beside the kubeconfig's PKI)."""
    token_file = Path(KUBECONFIG).parent / "pki" / "admin.token"
    if not token_file.exists():
        pytest.skip(f"no static admin token at {token_file} (a ../shared/kube control plane has one)")
    return token_file.read_text().strip()


def kubeconfig(cluster: Cluster, token: str, proxy_port: int) -> str:
    ca = Path(KUBECONFIG).parent / "pki" / "ca.crt"
    return f"""apiVersion: v1
kind: Config
clusters:
- name: real
  cluster:
    server: {cluster.server}
    certificate-authority: {ca}
    proxy-url: http://alice:{PROXY_PASSWORD}@127.0.0.1:{proxy_port}
users:
- name: admin
  user:
    token: {token}
contexts:
- name: real
  context: {{cluster: real, user: admin}}
current-context: real
"""


async def refuse_tunnels(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A proxy that reads a request head and asks for (other) credentials."""
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    writer.write(b'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="p"\r\n')
    writer.write(b"Content-Length: 0\r\nConnection: close\r\n\r\n")
    await writer.drain()
    writer.close()


def secrets_in(text: str, token: str) -> list[str]:
    basic = base64.b64encode(f"alice:{PROXY_PASSWORD}".encode()).decode()
    return [name for name, secret in (("token", token), ("proxy password", PROXY_PASSWORD), ("basic", basic))
            if secret in text]  # fmt: skip


async def test_a_proxy_refusing_the_controllers_credentials_leaves_no_secret_in_the_log(
    tmp_path: Path,
) -> None:
    cluster = Cluster(Path(KUBECONFIG))
    token = admin_token(cluster)
    proxy = await asyncio.start_server(refuse_tunnels, "127.0.0.1", 0)
    port = proxy.sockets[0].getsockname()[1]
    config = tmp_path / "kubeconfig"
    config.write_text(kubeconfig(cluster, token, port))
    certificates(tmp_path / "certs")
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "kueue_webhook", "serve", "--kubeconfig", str(config), "--tls-dir",
            str(tmp_path / "certs"), "--port", "0", "--no-leader-election",
            stdout=out, stderr=out, cwd=REPO_ROOT, env=dict(os.environ),
        )  # fmt: skip
        try:
            deadline = asyncio.get_running_loop().time() + 60
            while log.read_text().count("407") < 3:
                assert process.returncode is None, log.read_text()[-2000:]
                assert asyncio.get_running_loop().time() < deadline, "no refused request logged"
                await asyncio.sleep(0.2)
        finally:
            process.terminate()
            await process.wait()
            proxy.close()
    text = log.read_text()
    assert "alice:***@127.0.0.1" in text  # the proxy is named, its password not
    assert secrets_in(text, token) == []


def test_a_kubeconfig_broken_next_to_its_token_is_refused_by_line_without_quoting_it(tmp_path: Path) -> None:
    cluster = Cluster(Path(KUBECONFIG))
    token = admin_token(cluster)
    broken = kubeconfig(cluster, token, 9).replace("    token:", "   token:\n  - [unclosed", 1)
    config = tmp_path / "kubeconfig"
    config.write_text(broken)
    certificates(tmp_path / "certs")
    result = subprocess.run(
        [sys.executable, "-m", "kueue_webhook", "serve", "--kubeconfig", str(config), "--tls-dir",
         str(tmp_path / "certs"), "--port", "0", "--no-leader-election"],
        capture_output=True, text=True, timeout=60, cwd=REPO_ROOT,
    )  # fmt: skip
    assert result.returncode != 0
    assert "line" in result.stderr
    assert secrets_in(result.stdout + result.stderr, token) == []
