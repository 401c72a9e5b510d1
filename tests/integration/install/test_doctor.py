"""``kueue-webhook doctor`` against the fake API server with the webhook installed as in a cluster: the
Service with a ready endpoint, the serving Secret, caBundles patched by ``certs``, the visibility APIService
Available. Everything is OK and it exits 0; a caBundle from another CA fails that check and the webhook
call (exit 1); a Service without a ready endpoint fails; and it only reads, besides its two dry runs."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_webhook.http.certs import KUEUE_CRDS, ca_bundle, ensure_certificates, secret_manifest
from tests.fakeapi import FakeApiServer
from tests.support.webhook import MANIFESTS, registered_webhook

SCRIPT = Path(sys.executable).parent / "kueue-webhook"
JSON = dict[str, Any]


async def doctor(kubeconfig: Path, *args: str) -> tuple[int, JSON]:
    process = await asyncio.create_subprocess_exec(
        str(SCRIPT),
        "doctor",
        "--kubeconfig",
        str(kubeconfig),
        "-o",
        "json",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "KUBECONFIG": ""},
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert out, err.decode()
    return process.returncode or 0, json.loads(out)


def levels(report: JSON) -> dict[str, str]:
    return {c["check"]: c["level"] for c in report["checks"]}


@pytest.fixture
async def installed(fake_api: FakeApiServer, tmp_path: Path) -> AsyncIterator[Path]:
    """The webhook served on this host, installed the in-cluster way; yields the certificates' directory."""
    if not SCRIPT.exists():
        pytest.skip(f"the console script is not installed at {SCRIPT} (pip install -e .)")
    async with registered_webhook(fake_api, tmp_path, crds=KUEUE_CRDS):
        certs = ensure_certificates(tmp_path / "certs", ips=["127.0.0.1"])  # the harness's: reused
        await fake_api.apply_manifests((MANIFESTS / "namespace.yaml").read_text())
        await fake_api.apply_manifests((MANIFESTS / "service.yaml").read_text())
        await fake_api.create(secret_manifest(certs))
        await fake_api.create(
            {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": "kueue-webhook-abcde",
                    "namespace": "kueue-system",
                    "labels": {"kubernetes.io/service-name": "kueue-webhook"},
                },
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.0.0.7"], "conditions": {"ready": True}}],
                "ports": [{"name": "https", "port": 9443, "protocol": "TCP"}],
            }
        )
        apiservice = next(yaml.safe_load_all((MANIFESTS / "visibility.yaml").read_text()))
        apiservice["spec"]["caBundle"] = ca_bundle(certs)  # as `certs --patch-webhook-configurations` sets it
        await fake_api.create(apiservice)
        await fake_api.patch(
            "apiservices",
            apiservice["metadata"]["name"],
            {"status": {"conditions": [{"type": "Available", "status": "True", "reason": "Passed"}]}},
            subresource="status",
        )
        yield tmp_path / "certs"


async def test_a_healthy_install_is_all_ok_and_only_read(fake_api: FakeApiServer, installed: Path) -> None:
    before = len(fake_api.requests)
    code, report = await doctor(fake_api.kubeconfig_path())
    assert code == 0, report
    found = levels(report)
    assert set(found.values()) == {"OK"}, report
    assert {
        "Service kueue-system/kueue-webhook",
        "serving certificate expiry",
        "serving certificate names",
        "caBundle of MutatingWebhookConfiguration kueue-webhook-mutating",
        "caBundle of ValidatingWebhookConfiguration kueue-webhook-validating",
        "caBundle of the CRDs' conversion webhook",
        "caBundle of APIService v1beta2.visibility.kueue.x-k8s.io",
        "mutating webhook",
        "conversion webhook",
        "APIService v1beta2.visibility.kueue.x-k8s.io",
    } <= set(found)
    writes = [r for r in fake_api.requests[before:] if not r.startswith("GET ")]
    assert writes and all("dryRun=All" in r for r in writes), writes
    assert fake_api.list("jobs", "default") == [] and fake_api.list("resourceflavors") == []


async def test_a_foreign_ca_bundle_fails_with_exit_1(
    fake_api: FakeApiServer, installed: Path, tmp_path: Path
) -> None:
    other = ensure_certificates(tmp_path / "other")
    configuration = fake_api.get("mutatingwebhookconfigurations", "kueue-webhook-mutating")
    assert configuration is not None
    patch = [
        {"op": "replace", "path": f"/webhooks/{n}/clientConfig/caBundle", "value": ca_bundle(other)}
        for n in range(len(configuration["webhooks"]))
    ]
    await fake_api.patch(
        "mutatingwebhookconfigurations",
        "kueue-webhook-mutating",
        patch,
        patch_type="application/json-patch+json",
    )
    code, report = await doctor(fake_api.kubeconfig_path())
    assert code == 1
    found = {c["check"]: c for c in report["checks"]}
    broken = found["caBundle of MutatingWebhookConfiguration kueue-webhook-mutating"]
    assert broken["level"] == "FAIL" and "did not issue it" in broken["message"]
    assert "--patch-webhook-configurations" in broken["fix"]
    assert found["caBundle of ValidatingWebhookConfiguration kueue-webhook-validating"]["level"] == "OK"
    assert found["mutating webhook"]["level"] == "FAIL"  # kube-apiserver's TLS handshake fails too
    assert report["failed"] is True


async def test_a_service_without_ready_endpoints_fails(fake_api: FakeApiServer, installed: Path) -> None:
    await fake_api.patch(
        "endpointslices",
        "kueue-webhook-abcde",
        {"endpoints": [{"addresses": ["10.0.0.7"], "conditions": {"ready": False}}]},
        namespace="kueue-system",
    )
    code, report = await doctor(fake_api.kubeconfig_path())
    assert code == 1
    service = next(c for c in report["checks"] if c["check"] == "Service kueue-system/kueue-webhook")
    assert service["level"] == "FAIL" and "logs deploy/kueue-webhook" in service["fix"]
