"""Fixtures for tests that run against the fake kube-apiserver (tests/fakeapi).

`fake_api` is a started `FakeApiServer` (HTTPS on 127.0.0.1, CRDs from manifests/crds loaded, namespaces
default/kube-system present), closed after the test; `make_fake_api(**options)` starts more of them, or ones
with other options (`job_controller=False`, `history=100`, `crds=[...]`), all closed after the test. `kubectl`
runs the real /usr/bin/kubectl against it with a discovery cache shared by the whole session, and skips the
test with a clear reason when kubectl is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakeapi import FakeApiServer


@pytest.fixture
async def fake_api() -> AsyncIterator[FakeApiServer]:
    server = FakeApiServer()
    await server.start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def make_fake_api() -> AsyncIterator[Callable[..., Awaitable[FakeApiServer]]]:
    servers: list[FakeApiServer] = []

    async def make(**options: Any) -> FakeApiServer:
        server = FakeApiServer(**options)
        await server.start()
        servers.append(server)
        return server

    try:
        yield make
    finally:
        for server in servers:
            await server.close()


@dataclass(frozen=True)
class KubectlResult:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture(scope="session")
def kubectl_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kubectl-cache")


@pytest.fixture
def kubectl(fake_api: FakeApiServer, kubectl_cache_dir: Path) -> Callable[..., KubectlResult]:
    """`kubectl(*args, input=None, token=None)`: run the real kubectl against `fake_api` (blocking call)."""
    binary = shutil.which("kubectl") or ("/usr/bin/kubectl" if Path("/usr/bin/kubectl").exists() else None)
    if binary is None:
        pytest.skip("kubectl is not installed (looked on PATH and at /usr/bin/kubectl)")

    def run(*args: str, input: str | None = None, token: str | None = None) -> KubectlResult:
        config = fake_api.kubeconfig_path(token=token) if token else fake_api.kubeconfig_path()
        completed = subprocess.run(
            [binary, "--kubeconfig", str(config), "--cache-dir", str(kubectl_cache_dir), *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return KubectlResult(completed.returncode, completed.stdout, completed.stderr)

    return run
