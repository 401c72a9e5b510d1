"""The documented install, verbatim: `kubectl apply -k manifests/`, then `kueue-webhook certs
--patch-webhook-configurations`; the API server then calls our webhook through the Service, and a Job
created with kubectl is suspended by it, queued, admitted and started."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kueue_webhook.http.certs import CertificateSet
from tests.fakeapi import FakeApiServer
from tests.fakeapi.identity import service_account
from tests.support.replica import REPO_ROOT, replica
from tests.support.starter_queue import JOB, QUOTA


async def test_install_with_kustomize_and_certs_then_run_a_job(
    fake_api: FakeApiServer, kubectl: Callable[..., Any], tmp_path: Path
) -> None:
    async def run(*args: str, input: str | None = None) -> str:
        result = await asyncio.to_thread(kubectl, *args, input=input)
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return str(result.stdout)

    await run("apply", "-k", str(REPO_ROOT / "manifests"))
    certs_dir = tmp_path / "certs"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kueue_webhook",
        "certs",
        "--dir",
        str(certs_dir),
        "--patch-webhook-configurations",
        "--kubeconfig",
        str(fake_api.kubeconfig_path()),
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await process.communicate()
    assert process.returncode == 0, stderr.decode()
    for name in ("kueue-webhook-mutating", "kueue-webhook-validating"):
        kind = "mutatingwebhookconfigurations" if "mutating" in name else "validatingwebhookconfigurations"
        configuration = fake_api.get(kind, name)
        assert configuration is not None
        assert all(hook["clientConfig"].get("caBundle") for hook in configuration["webhooks"])

    identity = service_account("kueue-system", "kueue-webhook")
    fake_api.add_token("controller", identity.username, identity.groups)
    async with replica(
        fake_api.kubeconfig_path(token="controller"), tls=CertificateSet(certs_dir)
    ) as serving:
        fake_api.set_service_endpoint(
            namespace="kueue-system", name="kueue-webhook", address=f"127.0.0.1:{serving.port}"
        )
        await run("apply", "-f", "-", input=QUOTA)
        created = json.loads(await run("create", "-f", "-", "-o", "json", input=JOB))
        assert created["spec"]["suspend"] is True  # the mutating webhook, through the Service

        def started() -> bool:
            job = fake_api.get("jobs", "sample-job", "default")
            return job is not None and job["spec"].get("suspend") is False

        await fake_api.wait_for(started, timeout=15)
