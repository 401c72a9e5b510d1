"""The API connection against a real kube-apiserver (``KUEUE_E2E_KUBECONFIG``): who am I, merged files,
``tls-server-name``. Nothing is created on the cluster (a SelfSubjectReview is not stored).

The second kubeconfig file written here comes first in ``KUBECONFIG``: it sets ``current-context`` to a
context of its own naming the given kubeconfig's user (defined only in the second file, so resolved there)
and a copy of its cluster verified against the API server's in-cluster name ``kubernetes.default.svc``,
which every standard API server certificate carries.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.identity import own_username
from kueue_webhook.control.kube.kubeconfig import load, select, split_paths
from tests.e2e.cluster import KUBECONFIG, KUBECTL, NO_CLUSTER

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)


def whoami() -> str:
    result = subprocess.run(
        [KUBECTL, "--kubeconfig", KUBECONFIG, "auth", "whoami", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return str(json.loads(result.stdout)["status"]["userInfo"]["username"])


def first_file(tmp_path: Path, tls_server_name: str) -> Path:
    given = select(load([Path(KUBECONFIG)]))
    assert given.user is not None
    cluster: dict[str, Any] = {**given.cluster.body, "tls-server-name": tls_server_name}
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e-by-name", "cluster": cluster}],
        "contexts": [{"name": "e2e-by-name", "context": {"cluster": "e2e-by-name", "user": given.user.name}}],
        "current-context": "e2e-by-name",
    }
    path = tmp_path / f"first-{tls_server_name}"
    path.write_text(yaml.safe_dump(document))
    return path


async def test_the_controller_is_told_the_user_kubectl_is_told() -> None:
    client = await KubeClient.connect(kubeconfig=KUBECONFIG)
    try:
        assert await own_username(client) == whoami()
    finally:
        await client.close()


async def test_merged_kubeconfig_files_with_tls_server_name_reach_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", f"{first_file(tmp_path, 'kubernetes.default.svc')}:{KUBECONFIG}")
    assert select(load(split_paths(os.environ["KUBECONFIG"]))).cluster.name == "e2e-by-name"
    client = await KubeClient.connect()
    try:
        version = await client.request("GET", "/version")
        assert version["gitVersion"].startswith("v1.")
        assert await own_username(client) == whoami()
    finally:
        await client.close()

    monkeypatch.setenv("KUBECONFIG", f"{first_file(tmp_path, 'not-the-api-server.example')}:{KUBECONFIG}")
    client = await KubeClient.connect()
    try:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await client.request("GET", "/version")
    finally:
        await client.close()
