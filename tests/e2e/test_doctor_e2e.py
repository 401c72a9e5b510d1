"""``kueue-webhook doctor`` on a real kube-apiserver, the install made out of cluster on an ephemeral port:
the webhook configurations and the CRDs' conversion webhook call ``https://127.0.0.1:<port>`` with the CA's
caBundle, the visibility APIService reaches the replica through an ``ExternalName`` Service. A healthy install
is all OK (exit 0): the real API server called the mutating webhook for the dry-run Job and the conversion
webhook for a v1beta1 object, and the aggregator made the APIService Available. A mutating caBundle from
another CA is a FAIL, and so is the webhook call the API server then refuses (exit 1). Everything is put back
afterwards (left behind, the webhook configurations would make the API server refuse every Job)."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_webhook.http.certs import KUEUE_CRDS, ca_bundle, ensure_certificates
from tests.e2e.cluster import KUBECONFIG, KUBECTL, NO_CLUSTER
from tests.e2e.install import REPO_ROOT
from tests.e2e.support import APISERVICE, visibility_api_service
from tests.support.replica import certificates, start_replica, webhook_configurations

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, Any]
SCRIPT = Path(sys.executable).parent / "kueue-webhook"
HANG = 120.0  # seconds: a bound on a hang, never a pace


async def run(*argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin.encode() if stdin else None), HANG)
    return process.returncode or 0, out.decode(), err.decode()


async def kubectl(*args: str, stdin: str | None = None) -> str:
    code, out, err = await run(KUBECTL, "--kubeconfig", KUBECONFIG, *args, stdin=stdin)
    assert code == 0, f"kubectl {' '.join(args)}: {err}"
    return out


async def doctor(ns: str) -> tuple[int, dict[str, JSON], str]:
    code, out, err = await run(
        str(SCRIPT), "doctor", "--kubeconfig", KUBECONFIG, "--namespace", ns, "-o", "json"
    )
    assert out, err
    return code, {c["check"]: c for c in json.loads(out)["checks"]}, out


@pytest.fixture
async def installed(tmp_path: Path) -> AsyncIterator[tuple[str, int]]:
    """(the install's namespace, the replica's port), everything registered to the replica."""
    if not SCRIPT.exists():
        pytest.skip(f"the console script is not installed at {SCRIPT} (pip install -e .)")
    for kind, name in (
        ("mutatingwebhookconfiguration", "kueue-webhook-mutating"),
        ("apiservice", APISERVICE),
    ):
        code, _, _ = await run(KUBECTL, "--kubeconfig", KUBECONFIG, "get", kind, name)
        if code == 0:
            pytest.skip(f"{kind} {name} already exists on this cluster (another install)")
    await kubectl("apply", "-k", str(REPO_ROOT / "manifests" / "crds"))
    ns = f"e2e-doctor-{uuid.uuid4().hex[:6]}"
    await kubectl("create", "namespace", ns)
    tls = certificates(tmp_path / "tls")
    serving = await start_replica(Path(KUBECONFIG), tls=tls, namespace=ns, identity=ns)
    base = f"https://127.0.0.1:{serving.port}"
    saved: dict[str, JSON] = {}
    try:
        await asyncio.wait_for(serving.controller.leading.wait(), HANG)
        configurations = webhook_configurations(ca=ca_bundle(tls), url_base=base)
        await kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(configurations))
        for crd in KUEUE_CRDS:
            found = json.loads(await kubectl("get", "crd", crd, "-o", "json"))
            saved[crd] = found["spec"]["conversion"]["webhook"]["clientConfig"]
            client_config = {"url": f"{base}/convert", "caBundle": ca_bundle(tls)}
            patch = [
                {"op": "replace", "path": "/spec/conversion/webhook/clientConfig", "value": client_config}
            ]
            await kubectl("patch", "crd", crd, "--type=json", "-p", json.dumps(patch))
        await kubectl("apply", "-f", "-", stdin=visibility_api_service(ns, serving.port))
        await kubectl("wait", f"apiservice/{APISERVICE}", "--for=condition=Available", "--timeout=120s")
        yield ns, serving.port
    finally:
        for kind, name in (
            ("mutatingwebhookconfiguration", "kueue-webhook-mutating"),
            ("validatingwebhookconfiguration", "kueue-webhook-validating"),
            ("apiservice", APISERVICE),
        ):
            await run(KUBECTL, "--kubeconfig", KUBECONFIG, "delete", kind, name, "--ignore-not-found")
        for crd, client_config in saved.items():
            patch = [
                {"op": "replace", "path": "/spec/conversion/webhook/clientConfig", "value": client_config}
            ]
            await run(
                KUBECTL,
                "--kubeconfig",
                KUBECONFIG,
                "patch",
                "crd",
                crd,
                "--type=json",
                "-p",
                json.dumps(patch),
            )
        await serving.stop()
        await run(KUBECTL, "--kubeconfig", KUBECONFIG, "delete", "namespace", ns, "--wait=false")


async def test_a_healthy_install_is_ok_and_a_foreign_ca_bundle_fails(
    installed: tuple[str, int], tmp_path: Path
) -> None:
    ns, port = installed
    code, checks, out = await doctor(ns)
    assert code == 0, out
    assert {c["level"] for c in checks.values()} == {"OK"}, out
    assert (
        checks["webhook address"]["message"] == f"called at https://127.0.0.1:{port} (no Service in between)"
    )
    assert checks["mutating webhook"]["message"].startswith("it answers: a queued Job created in default")
    assert checks["conversion webhook"]["level"] == "OK"
    assert checks[f"APIService {APISERVICE}"]["message"] == "Available"
    assert checks["serving certificate names"]["message"] == "it names 127.0.0.1"
    assert checks[f"Service {ns}/kueue-webhook"]["message"].startswith("ExternalName localhost")

    other = ensure_certificates(tmp_path / "other")
    patch = [
        {"op": "replace", "path": f"/webhooks/{n}/clientConfig/caBundle", "value": ca_bundle(other)}
        for n in range(3)
    ]
    await kubectl(
        "patch",
        "mutatingwebhookconfiguration",
        "kueue-webhook-mutating",
        "--type=json",
        "-p",
        json.dumps(patch),
    )
    code, checks, out = await doctor(ns)
    assert code == 1, out
    broken = checks["caBundle of MutatingWebhookConfiguration kueue-webhook-mutating"]
    assert broken["level"] == "FAIL" and "did not issue it" in broken["message"], out
    assert checks["caBundle of ValidatingWebhookConfiguration kueue-webhook-validating"]["level"] == "OK"
    call = checks["mutating webhook"]
    assert call["level"] == "FAIL" and "failed calling webhook" in call["message"], out
    assert "x509" in call["message"] or "certificate" in call["message"]

    code, text, _ = await run(str(SCRIPT), "doctor", "--kubeconfig", KUBECONFIG, "--namespace", ns)
    assert code == 1
    line = next(li for li in text.splitlines() if "caBundle of MutatingWebhookConfiguration" in li)
    assert line.startswith("FAIL ") and "; fix: " in line and "--patch-webhook-configurations" in line
