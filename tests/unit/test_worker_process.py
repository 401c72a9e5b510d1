"""The conversion worker process (kueue_webhook.http.limits.OffLoop) does not outlive the server that started
it,
however the server ended: a replica killed by the kubelet (SIGKILL) leaves no orphan holding memory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SERVER = """
import asyncio, sys
from kueue_webhook.http.limits import OffLoop
from tests.unit.test_worker_process import worker_pid

async def main():
    off_loop = OffLoop()
    print(int(await off_loop.run_in_process(worker_pid, b"")), flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


def worker_pid(_: bytes) -> bytes:
    """Run in the worker process: its process id."""
    return str(os.getpid()).encode()


def test_the_worker_process_exits_when_its_server_is_killed() -> None:
    server = subprocess.Popen([sys.executable, "-c", SERVER], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        worker = int(server.stdout.readline())
        assert worker != server.pid and Path(f"/proc/{worker}").exists()
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
    deadline = time.monotonic() + 30
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(worker), f"worker process {worker} outlived its server"


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for a parent that is gone."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
