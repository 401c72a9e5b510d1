"""`kueue-webhook serve` as a process: ready only once synced, admits, and on SIGTERM releases its lease."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from tests.fakeapi import FakeApiServer
from tests.support.fake_cluster import free_port, readyz
from tests.support.replica import certificates
from tests.support.research import HANG, QUOTA, gpu_job, running


async def test_serve_process_becomes_ready_admits_and_releases_its_lease_on_sigterm(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    await fake_api.apply_manifests(
        QUOTA + "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: kueue-system}\n"
    )
    tls = certificates(tmp_path / "tls")
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kueue_webhook",
        "serve",
        "--kubeconfig",
        str(fake_api.kubeconfig_path()),
        "--tls-dir",
        str(tls.directory),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--identity",
        "serve-under-test",
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        deadline = asyncio.get_running_loop().time() + HANG
        while await readyz(port, tls.ca_cert) != 200:  # another process: its probe is all we can watch
            assert asyncio.get_running_loop().time() < deadline, "serve never became ready"
            await asyncio.sleep(0.1)
        await fake_api.create(gpu_job("a"))
        await fake_api.wait_for(lambda: running(fake_api, "a"), timeout=HANG)
        lease = fake_api.get("leases", "kueue-webhook-leader", "kueue-system")
        assert lease is not None and lease["spec"]["holderIdentity"] == "serve-under-test"
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), HANG)
    assert process.returncode == 0, stderr.decode()[-2000:]
    lease = fake_api.get("leases", "kueue-webhook-leader", "kueue-system")
    assert lease is not None and lease["spec"]["holderIdentity"] == ""


async def test_serve_with_an_unusable_kubeconfig_exits_2_naming_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "config"
    broken.write_text(
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:6443', proxy-url: 'socks5://proxy:1080'}}]\n"
        "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n"
    )
    for kubeconfig, message in (
        (tmp_path / "absent", f"{tmp_path / 'absent'}: no such kubeconfig file"),
        (broken, f"{broken}: invalid 'proxy-url' 'socks5://proxy:1080' for cluster 'c': socks5 proxies"),
    ):
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "kueue_webhook",
            "serve",
            "--kubeconfig",
            str(kubeconfig),
            stderr=asyncio.subprocess.PIPE,
        )
        _, stderr = await asyncio.wait_for(process.communicate(), HANG)
        assert process.returncode == 2
        assert stderr.decode().startswith(f"kueue-webhook serve: {message}")
