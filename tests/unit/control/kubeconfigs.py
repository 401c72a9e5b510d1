"""Kubeconfig files for tests: one cluster with a fresh CA, one user, one context in use."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from kueue_webhook.http.certs import ensure_certificates

JSON = dict[str, Any]


def ca_data(tmp_path: Path) -> str:
    ca = ensure_certificates(tmp_path / "pki", ips=["127.0.0.1"])
    return base64.b64encode(ca.ca_cert.read_bytes()).decode()


def write(tmp_path: Path, user: JSON, *, cluster: JSON | None = None) -> Path:
    """One kubeconfig file: cluster ``c`` (a CA, 127.0.0.1:6443), user ``u``, context ``ctx`` in use."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "c",
                "cluster": cluster
                or {"server": "https://127.0.0.1:6443", "certificate-authority-data": ca_data(tmp_path)},
            }
        ],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(document))
    return path
