"""Kubeconfig files as kubectl reads them: credentials, several files merged, relative paths, clear errors.

The merge rules are client-go's ``ClientConfigLoadingRules.Load`` (tools/clientcmd/loader.go): the first file
to set ``current-context`` wins, the first file to define a name wins that entry whole, and relative paths
are resolved against the file that defines the entry.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.connection import resolve
from kueue_webhook.control.kube.kubeconfig import KubeconfigError, load, select, split_paths
from kueue_webhook.http.certs import ensure_certificates
from tests.unit.control.kubeconfigs import write

JSON = dict[str, Any]


def write_doc(path: Path, **document: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", **document}))
    return path


def cluster(name: str, server: str, **extra: Any) -> JSON:
    return {"name": name, "cluster": {"server": server, **extra}}


def context(name: str, cluster: str, user: str = "") -> JSON:
    return {"name": name, "context": {"cluster": cluster, **({"user": user} if user else {})}}


# -- one file: credentials ------------------------------------------------------------------------------


async def test_token_user_sends_a_bearer_header(tmp_path: Path) -> None:
    connection = await resolve(str(write(tmp_path, {"token": "abc"})), environ={})
    assert connection.host == "https://127.0.0.1:6443"
    assert await connection.auth() == {"Authorization": "Bearer abc"}


async def test_token_file_is_read_from_disk(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("from-file\n")
    connection = await resolve(str(write(tmp_path, {"tokenFile": str(token)})), environ={})
    assert await connection.auth() == {"Authorization": "Bearer from-file"}


async def test_a_relative_token_file_is_found_beside_the_kubeconfig_not_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "kube"
    home.mkdir()
    (home / "token").write_text("beside-the-file")
    monkeypatch.chdir(tmp_path)  # "token" does not exist here
    connection = await resolve(str(write(home, {"tokenFile": "token"})), environ={})
    assert await connection.auth() == {"Authorization": "Bearer beside-the-file"}


async def test_client_certificate_data_is_loaded(tmp_path: Path) -> None:
    pki = ensure_certificates(tmp_path / "client", ips=["127.0.0.1"])
    user = {
        "client-certificate-data": base64.b64encode(pki.cert.read_bytes()).decode(),
        "client-key-data": base64.b64encode(pki.key.read_bytes()).decode(),
    }
    connection = await resolve(str(write(tmp_path, user)), environ={})
    assert await connection.auth() == {}  # the certificate authenticates, in the TLS handshake


async def test_an_exec_plugin_gives_its_token(tmp_path: Path) -> None:
    credential = '{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", '
    credential += '"status": {"token": "from-plugin"}}'
    plugin = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": "sh",
        "args": ["-c", f"echo '{credential}'"],
    }
    connection = await resolve(str(write(tmp_path, {"exec": plugin})), environ={})
    assert connection.host == "https://127.0.0.1:6443"
    assert await connection.auth() == {"Authorization": "Bearer from-plugin"}


async def test_unknown_context_is_named_in_the_error(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="no context named 'other'"):
        await resolve(str(write(tmp_path, {"token": "abc"})), context="other", environ={})


async def test_cluster_without_server_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, {"token": "abc"}, cluster={"insecure-skip-tls-verify": True})
    with pytest.raises(KubeconfigError, match="has no server"):
        await resolve(str(path), environ={})


async def test_bad_certificate_data_names_the_file(tmp_path: Path) -> None:
    bad_ca = {"server": "https://x", "certificate-authority-data": "@@"}
    path = write(tmp_path, {"token": "t"}, cluster=bad_ca)
    with pytest.raises(KubeconfigError, match=f"{path}: certificate-authority-data is not valid base64"):
        await resolve(str(path), environ={})


async def test_an_explicit_kubeconfig_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="no such kubeconfig file"):
        await resolve(str(tmp_path / "absent"), environ={})


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


# -- several files: KUBECONFIG=a:b ----------------------------------------------------------------------


async def test_current_context_may_come_from_the_second_file(tmp_path: Path) -> None:
    first = write_doc(
        tmp_path / "a",
        clusters=[cluster("prod", "https://prod.example:6443")],
        users=[{"name": "me", "user": {"token": "prod-token"}}],
        contexts=[context("prod", "prod", "me")],
    )
    second = write_doc(tmp_path / "b", **{"current-context": "prod"})
    connection = await resolve(None, environ={"KUBECONFIG": f"{first}:{second}"})
    assert connection.host == "https://prod.example:6443"
    assert await connection.auth() == {"Authorization": "Bearer prod-token"}


def test_the_first_file_to_set_current_context_wins(tmp_path: Path) -> None:
    first = write_doc(tmp_path / "a", contexts=[context("one", "c")], **{"current-context": "one"})
    second = write_doc(tmp_path / "b", contexts=[context("two", "c")], **{"current-context": "two"})
    third = write_doc(tmp_path / "c", clusters=[cluster("c", "https://c.example")])
    assert select(load([first, second, third])).context.name == "one"
    assert select(load([second, first, third])).context.name == "two"


def test_the_first_file_to_define_a_name_wins_the_whole_entry(tmp_path: Path) -> None:
    first = write_doc(
        tmp_path / "a",
        clusters=[cluster("c", "https://first.example")],
        contexts=[context("ctx", "c")],
        **{"current-context": "ctx"},
    )
    # the second file's "c" adds a field the first lacks: client-go ignores it too, the entry is the first's
    second = write_doc(
        tmp_path / "b", clusters=[cluster("c", "https://second.example", **{"tls-server-name": "other"})]
    )
    selected = select(load([first, second]))
    assert selected.cluster.body == {"server": "https://first.example"}
    assert selected.cluster.origin == first


def test_relative_paths_resolve_against_the_file_that_defines_the_entry(tmp_path: Path) -> None:
    users = write_doc(
        tmp_path / "users" / "config",
        users=[
            {
                "name": "me",
                "user": {
                    "client-certificate": "me.crt",
                    "client-key": "keys/me.key",
                    "tokenFile": "/abs/token",
                    "exec": {"command": "./bin/plugin", "apiVersion": "client.authentication.k8s.io/v1"},
                },
            }
        ],
    )
    clusters = write_doc(
        tmp_path / "clusters" / "config",
        clusters=[cluster("c", "https://c.example", **{"certificate-authority": "ca.crt"})],
        contexts=[context("ctx", "c", "me")],
        **{"current-context": "ctx"},
    )
    selected = select(load(split_paths(f"{users}:{clusters}")))
    assert selected.cluster.body["certificate-authority"] == str(tmp_path / "clusters" / "ca.crt")
    assert selected.user is not None
    user = selected.user.body
    assert user["client-certificate"] == str(tmp_path / "users" / "me.crt")
    assert user["client-key"] == str(tmp_path / "users" / "keys" / "me.key")
    assert user["tokenFile"] == "/abs/token"
    assert user["exec"]["command"] == str(tmp_path / "users" / "bin" / "plugin")


def test_an_exec_command_found_on_path_is_left_alone(tmp_path: Path) -> None:
    path = write_doc(tmp_path / "a", users=[{"name": "me", "user": {"exec": {"command": "aws"}}}])
    assert load([path]).users["me"].body["exec"]["command"] == "aws"


def test_missing_files_in_kubeconfig_are_skipped(tmp_path: Path) -> None:
    present = write_doc(tmp_path / "a", clusters=[cluster("c", "https://c.example")])
    merged = load(split_paths(f"{tmp_path / 'absent'}::{present}:{present}"))
    assert merged.files == [present]
    assert merged.missing == [tmp_path / "absent"]


def test_a_name_defined_twice_in_one_file_is_an_error(tmp_path: Path) -> None:
    path = write_doc(tmp_path / "a", clusters=[cluster("c", "https://1"), cluster("c", "https://2")])
    with pytest.raises(KubeconfigError, match=f'{path}: duplicate name "c" in clusters'):
        load([path])


def test_a_malformed_file_among_several_is_named(tmp_path: Path) -> None:
    good = write_doc(tmp_path / "a", clusters=[cluster("c", "https://c.example")])
    bad = tmp_path / "b"
    bad.write_text("clusters: {not: [a list}\n")
    with pytest.raises(KubeconfigError, match=f"{bad}: cannot read kubeconfig"):
        load([good, bad])
    bad.write_text("- just\n- a list\n")
    with pytest.raises(KubeconfigError, match=f"{bad}: a kubeconfig is a mapping"):
        load([good, bad])
