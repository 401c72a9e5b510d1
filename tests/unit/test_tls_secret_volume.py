"""The serving pair reloads from a Secret volume as kubelet writes it: only ``tls.crt`` and ``tls.key``
projected (the Deployment's ``items``), each a symlink through ``..data`` to a timestamped directory, and an
update that swaps ``..data`` in one rename (kubelet's atomic writer), then removes the old directory."""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import yaml

from kueue_webhook.http.certs import (
    cert_pem,
    generate_ca,
    issue_serving_certificate,
    key_pem,
    service_dns_names,
)
from kueue_webhook.http.tls import CertificateReloader

DEPLOYMENT = Path(__file__).resolve().parents[2] / "manifests" / "controller" / "deployment.yaml"


def projected_keys() -> list[str]:
    spec = yaml.safe_load(DEPLOYMENT.read_text())["spec"]["template"]["spec"]
    [volume] = [v for v in spec["volumes"] if v["name"] == "tls"]
    return [item["path"] for item in volume["secret"]["items"]]


def pair() -> dict[str, bytes]:
    ca_key, ca_cert = generate_ca()
    key, cert = issue_serving_certificate(
        ca_key=ca_key, ca_cert=ca_cert, dns_names=service_dns_names("kueue-webhook", "kueue-system")
    )
    return {"tls.crt": cert_pem(cert), "tls.key": key_pem(key), "ca.key": key_pem(ca_key)}


def kubelet_writes(volume: Path, secret: dict[str, bytes], generation: str) -> None:
    """What kubelet's atomic writer does for a Secret volume with ``items``."""
    payload = volume / f"..{generation}"
    payload.mkdir()
    for key in projected_keys():
        (payload / key).write_bytes(secret[key])
    old = os.readlink(volume / "..data") if (volume / "..data").is_symlink() else None
    os.symlink(payload.name, volume / "..data_tmp")
    os.replace(volume / "..data_tmp", volume / "..data")
    for key in projected_keys():
        if not (volume / key).is_symlink():
            os.symlink(f"..data/{key}", volume / key)
    if old is not None:
        for child in (volume / old).iterdir():
            child.unlink()
        (volume / old).rmdir()


def test_the_deployment_projects_only_the_serving_pair() -> None:
    assert projected_keys() == ["tls.crt", "tls.key"]


def test_a_renewed_secret_is_loaded_through_the_swapped_symlink(tmp_path: Path) -> None:
    volume = tmp_path / "tls"
    volume.mkdir()
    kubelet_writes(volume, pair(), "2026_11_26_20_00_00.1")
    assert not (volume / "ca.key").exists()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    reloader = CertificateReloader(context=context, cert_file=volume / "tls.crt", key_file=volume / "tls.key")
    assert reloader.load_if_changed() is True
    assert reloader.load_if_changed() is False  # nothing changed: nothing loaded
    kubelet_writes(volume, pair(), "2026_11_26_21_00_00.2")
    assert reloader.load_if_changed() is True
    assert reloader.generation == 2
