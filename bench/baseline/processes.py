"""The system under test as separate processes: the fake API server and ``kueue-webhook serve``.

Each runs in its own process so that, as in a real cluster, the API server and the controller do not share
one interpreter (and one core); the benchmark's own client is a third process. The controller is started
exactly as an operator would run it beside a local API server (``serve --kubeconfig``, no leader election,
a serving certificate for 127.0.0.1), optionally under ``py-spy record`` to see where its time goes. Its
peak resident memory is read from ``/proc/<pid>/status`` (VmHWM) before it is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml

ROOT = Path(__file__).resolve().parents[2]
PROFILE_RATE_HZ = 50


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def peak_rss_mb(pid: int) -> float | None:
    """VmHWM of a live process in MiB, None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time a live process has used (utime + stime from /proc/<pid>/stat)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def snapshot(commit: str, directory: Path) -> Path:
    """The tree of ``commit`` exported to ``directory``: run from there, the system under test is exactly
    that commit, not whatever is being edited in the working tree at the time."""
    directory.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(directory)], input=archive.stdout, check=True)
    return directory


def head_commit() -> str:
    """The commit measured, marked when kueue_webhook/ has edits beyond it."""
    git = ["git", "-C", str(ROOT)]
    result = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run([*git, "status", "--porcelain", "kueue_webhook"], capture_output=True, text=True)
    return (result.stdout.strip() or "unknown") + ("+edits" if dirty.stdout.strip() else "")


def _under_py_spy(command: list[str], profile: Path | None) -> list[str]:
    if profile is None:
        return command
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        raise SystemExit("--profile needs py-spy: pip install -e '.[bench]'")
    rate = str(PROFILE_RATE_HZ)
    # --nonblocking: sampling never pauses the controller. Paused 50 times a second on a loaded machine it
    # missed its lease renewals and stepped down mid-run; the price is Python frames only (no --native,
    # which needs the pauses), so time in C shows under the Python frame that called it.
    return [
        spy,
        "record",
        "--rate",
        rate,
        "--nonblocking",
        "--format",
        "raw",
        "--output",
        str(profile),
        "--",
        *command,
    ]


@dataclass
class Spawned:
    """A process of the system under test; ``pid`` is the Python process even when py-spy wraps it."""

    process: subprocess.Popen[Any]
    pid: int
    profile: Path | None

    def stop(self) -> None:
        """SIGTERM (as a kubelet stops a pod); py-spy writes its profile once its target is gone."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=120 if self.profile else 15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.pid != self.process.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


def _spawn(
    command: list[str],
    *,
    root: Path,
    profile: Path | None,
    log: Path,
    stdout: int,
    env: Mapping[str, str] | None = None,
) -> Spawned:
    with log.open("ab") as handle:
        process = subprocess.Popen(
            _under_py_spy(command, profile), cwd=root, stdout=stdout, stderr=handle, env=env
        )
    pid = _child_pid(process.pid, timeout=10.0) if profile is not None else process.pid
    return Spawned(process, pid, profile)


def start_fake_api(workdir: Path, *, root: Path = ROOT, profile: Path | None = None) -> tuple[Spawned, Path]:
    """``python -m tests.fakeapi`` on a free port, modules from ``root``; the process and admin kubeconfig."""
    kubeconfig = workdir / "kubeconfig.yaml"
    command = [sys.executable, "-m", "tests.fakeapi", "--port", "0", "--kubeconfig", str(kubeconfig)]
    spawned = _spawn(command, root=root, profile=profile, log=workdir / "fakeapi.log", stdout=subprocess.PIPE)
    stdout = spawned.process.stdout
    assert stdout is not None
    for raw in stdout:
        if raw.startswith(b"kubeconfig:"):
            return spawned, kubeconfig
    raise RuntimeError(f"the fake API server exited with {spawned.process.wait()} before serving")


@dataclass
class Controller(Spawned):
    """A running ``kueue-webhook serve``."""

    port: int
    ca_file: Path
    #: the bearer token of the controller's own kubeconfig: /metrics on the HTTPS port wants one allowed to
    #: get it (the fake API server's admin is; on a real cluster the ServiceAccount is bound to the
    #: metrics-reader role)
    token: str | None = None

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    async def wait_ready(self, *, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self.ssl_context())) as session:
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(f"kueue-webhook serve exited with {self.process.returncode}")
                with contextlib.suppress(aiohttp.ClientError, OSError):
                    async with session.get(f"https://127.0.0.1:{self.port}/readyz") as response:
                        if response.status == 200:
                            return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"kueue-webhook serve not ready after {timeout:.0f}s")
                await _sleep_poll()

    async def metrics(self) -> str:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        async with (
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self.ssl_context())) as session,
            session.get(f"https://127.0.0.1:{self.port}/metrics", headers=headers) as response,
        ):
            if response.status != 200:
                raise RuntimeError(f"/metrics answered {response.status}: {(await response.text())[:200]}")
            return await response.text()


async def _sleep_poll() -> None:
    """Readiness has no event to await across processes: poll /readyz every 100 ms."""
    await asyncio.sleep(0.1)


#: beside the fake API server: one replica (no Lease), and a connection for each of the 16 decision writes in
#: flight beside the watches (the default pool is sized for memory; Kueue's own runner likewise raises its
#: client's QPS and burst)
FAKE_API_FLAGS = ["--no-leader-election", "--api-connections", "32"]


def start_controller(
    *,
    kubeconfig: Path,
    workdir: Path,
    profile: Path | None,
    root: Path = ROOT,
    flags: list[str] = FAKE_API_FLAGS,
    env: Mapping[str, str] | None = None,
) -> Controller:
    """``kueue-webhook serve`` (modules from ``root``: ``python -m`` puts the working directory first), in
    ``env`` if given (else this process's environment)."""
    certs = workdir / "certs"
    subprocess.run(
        [sys.executable, "-m", "kueue_webhook", "certs", "--dir", str(certs), "--ip", "127.0.0.1"],
        check=True,
        cwd=root,
        capture_output=True,
    )
    port = free_port()
    serve = [
        sys.executable,
        "-m",
        "kueue_webhook",
        "serve",
        "--kubeconfig",
        str(kubeconfig),
        *flags,
    ]
    serve += ["--tls-dir", str(certs), "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    log = workdir / "controller.log"
    spawned = _spawn(serve, root=root, profile=profile, log=log, stdout=subprocess.DEVNULL, env=env)
    return Controller(
        spawned.process, spawned.pid, profile, port, certs / "ca.crt", kubeconfig_token(kubeconfig)
    )


def kubeconfig_token(kubeconfig: Path) -> str | None:
    """The bearer token of the kubeconfig's current user, if it has one."""
    config = yaml.safe_load(kubeconfig.read_text()) or {}
    context = next(
        (c for c in config.get("contexts") or [] if c["name"] == config.get("current-context")), None
    )
    if context is None:
        return None
    user = next((u for u in config.get("users") or [] if u["name"] == context["context"].get("user")), None)
    token = ((user or {}).get("user") or {}).get("token")
    return token if isinstance(token, str) else None


def _child_pid(parent: int, *, timeout: float) -> int:
    """The Python process py-spy started (its only child)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
            if children:
                return int(children[0])
        time.sleep(0.05)
    raise RuntimeError("py-spy did not start the controller")
