"""Kubeconfig and in-cluster settings: what a user's ~/.kube/config or a pod gives, and clear errors."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from webhook.certs import ensure_certificates
from webhook.control.kube import KubeClient
from webhook.control.kubeconfig import KubeconfigError, from_kubeconfig


def write(tmp_path: Path, user: dict[str, Any], *, cluster: dict[str, Any] | None = None) -> Path:
    ca = ensure_certificates(tmp_path / "pki", ips=["127.0.0.1"])
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "c",
                "cluster": cluster
                or {
                    "server": "https://127.0.0.1:6443",
                    "certificate-authority-data": base64.b64encode(ca.ca_cert.read_bytes()).decode(),
                },
            }
        ],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(document))
    return path


async def test_token_user_sends_a_bearer_header(tmp_path: Path) -> None:
    connection = from_kubeconfig(write(tmp_path, {"token": "abc"}))
    assert connection is not None
    assert connection.host == "https://127.0.0.1:6443"
    assert await connection.auth() == {"Authorization": "Bearer abc"}


async def test_token_file_is_read_from_disk(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("from-file\n")
    connection = from_kubeconfig(write(tmp_path, {"tokenFile": str(token)}))
    assert connection is not None
    assert await connection.auth() == {"Authorization": "Bearer from-file"}


def test_client_certificate_data_is_loaded(tmp_path: Path) -> None:
    pki = ensure_certificates(tmp_path / "client", ips=["127.0.0.1"])
    user = {
        "client-certificate-data": base64.b64encode(pki.cert.read_bytes()).decode(),
        "client-key-data": base64.b64encode(pki.key.read_bytes()).decode(),
    }
    assert from_kubeconfig(write(tmp_path, user)) is not None


def test_exec_plugin_users_are_left_to_kubernetes_asyncio(tmp_path: Path) -> None:
    assert from_kubeconfig(write(tmp_path, {"exec": {"command": "aws", "apiVersion": "v1"}})) is None


def test_unknown_context_is_named_in_the_error(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="no context named 'other'"):
        from_kubeconfig(write(tmp_path, {"token": "abc"}), context="other")


def test_cluster_without_server_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="has no server"):
        from_kubeconfig(write(tmp_path, {"token": "abc"}, cluster={"insecure-skip-tls-verify": True}))


async def test_the_connection_pool_size_is_kept_for_a_token_user(tmp_path: Path) -> None:
    client = await KubeClient.connect(kubeconfig=str(write(tmp_path, {"token": "t"})), connections=27)
    try:
        assert client.connections == 27
    finally:
        await client.close()


async def test_the_connection_pool_size_is_kept_for_an_exec_plugin_user(tmp_path: Path) -> None:
    credential = '{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", '
    credential += '"status": {"token": "from-plugin"}}'
    plugin = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": "sh",
        "args": ["-c", f"echo '{credential}'"],
    }
    client = await KubeClient.connect(kubeconfig=str(write(tmp_path, {"exec": plugin})), connections=27)
    try:
        assert client.connections == 27
    finally:
        await client.close()
