"""docs/install.md's out-of-cluster path, as written, with an admin kubeconfig: queued Jobs start.

``kubectl apply -k manifests/controller/local``, ``kueue-webhook certs --ip 127.0.0.1
--patch-webhook-configurations``, ``kueue-webhook serve --kubeconfig ~/.kube/config --tls-dir certs
--no-leader-election``, each run as a user would, in a directory of their own with ``~/.kube/config`` the
fake API server's admin. The only change: the webhook port, 9443 in the manifests, is a free one here so
the test cannot collide with anything else listening on this machine.

Before the controller learned its own identity, this path admitted every Workload and started no Job: the
webhook trusted only the service account of the in-cluster install.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fakeapi import FakeApiServer
from tests.support.fake_cluster import condition, free_port, readyz, workload_of
from tests.support.replica import REPO_ROOT
from tests.support.starter_queue import JOB, QUOTA

HANG = 60.0  # seconds: only bounds a hang on a loaded machine


async def test_the_readme_out_of_cluster_path_starts_jobs_with_an_admin_kubeconfig(
    fake_api: FakeApiServer, kubectl: Callable[..., Any], tmp_path: Path
) -> None:
    async def run(*args: str, input: str | None = None) -> str:
        result = await asyncio.to_thread(kubectl, *args, input=input)
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return str(result.stdout)

    home, workdir = tmp_path / "home", tmp_path / "work"
    (home / ".kube").mkdir(parents=True)
    workdir.mkdir()
    (home / ".kube" / "config").write_text(fake_api.kubeconfig_path().read_text())
    environ = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    environ["HOME"] = str(home)
    port = free_port()

    local = await run("kustomize", str(REPO_ROOT / "manifests" / "controller" / "local"))
    assert local.count("https://127.0.0.1:9443/") >= 2
    await run(
        "apply", "-f", "-", input=local.replace("https://127.0.0.1:9443/", f"https://127.0.0.1:{port}/")
    )

    certs = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kueue_webhook",
        "certs",
        "--ip",
        "127.0.0.1",
        "--patch-webhook-configurations",
        cwd=workdir,
        env=environ,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await certs.communicate()
    assert certs.returncode == 0, stderr.decode()

    serve = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kueue_webhook",
        "serve",
        "--kubeconfig",
        str(home / ".kube" / "config"),
        "--tls-dir",
        "certs",
        "--no-leader-election",
        "--port",
        str(port),
        cwd=workdir,
        env=environ,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        deadline = asyncio.get_running_loop().time() + HANG
        while await readyz(port, workdir / "certs" / "ca.crt") != 200:  # another process: poll its probe
            assert asyncio.get_running_loop().time() < deadline, "serve never became ready"
            await asyncio.sleep(0.1)
        await run("apply", "-f", "-", input=QUOTA)
        created = json.loads(await run("create", "-f", "-", "-o", "json", input=JOB))
        assert created["spec"]["suspend"] is True  # queued by the mutating webhook on 127.0.0.1

        def started() -> bool:
            job = fake_api.get("jobs", "sample-job", "default")
            return job is not None and job["spec"].get("suspend") is False

        await fake_api.wait_for(started, timeout=HANG)
        assert condition(workload_of(fake_api, "default", "sample-job"), "StartFailed") is None
    finally:
        serve.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(serve.communicate(), HANG)
    assert serve.returncode == 0, stderr.decode()[-2000:]
    identity = [json.loads(line) for line in stderr.decode().splitlines() if '"controller identity"' in line]
    assert [(line["username"], line["source"]) for line in identity] == [("admin", "SelfSubjectReview")]
