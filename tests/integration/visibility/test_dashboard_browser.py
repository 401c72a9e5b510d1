"""The dashboard in a real headless Chromium, reached as a user reaches it: ``kubectl proxy`` to the API
server, whose aggregator forwards the visibility API's path to the replica with its front-proxy certificate.

The cluster is the seed walk-through (``manifests/examples/seed.yaml``, what ``make demo`` replays): 33 Jobs
of 2 GPUs for 64 GPUs. The page must show 32 admitted and 1 pending, the quota full, the 33rd Job waiting
with Kueue's message, and the admissions among the recent decisions, with no Content-Security-Policy
violation or script error; when a Job finishes, the page follows without a reload. The screenshot is saved
in the test's directory, and also where ``DASHBOARD_SCREENSHOT`` says (``docs/images/dashboard.png``).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
import yaml
from aiohttp import web

from kueue_webhook.core.recent_decisions import RecentDecision
from kueue_webhook.http.dashboard import DASHBOARD_PATH, Dashboard, add_dashboard_routes
from tests.browser import CHROMIUM, NO_CHROMIUM, kubectl_proxy, open_browser
from tests.fakeapi import FakeApiServer
from tests.integration.visibility.test_kubectl_kueue import KUBECTL, serve_visibility
from tests.support.fake_cluster import condition, running, workloads_of
from tests.support.replica import certificates, replica
from tests.support.research import HANG
from tests.unit.core.builders import cluster_queue, run_until_quiet, state_with, workload

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
SEED = Path(__file__).resolve().parents[3] / "manifests" / "examples" / "seed.yaml"
JOBS = [f"train-{index:02d}" for index in range(1, 34)]


def seed() -> str:
    """The seed's manifests, its Jobs suspended as the mutating webhook would create them (the fake API
    server's ``apply_manifests`` calls no webhook)."""
    documents = [doc for doc in yaml.safe_load_all(SEED.read_text()) if doc]
    for doc in documents:
        if doc["kind"] == "Job":
            doc["spec"]["suspend"] = True
    return yaml.safe_dump_all(documents)


def text(element_id: str) -> str:
    return f"document.getElementById({element_id!r}).textContent"


def waits(fake_api: FakeApiServer, job: str) -> bool:
    found = workloads_of(fake_api, "team-a", job)
    reserved = condition(found[0], "QuotaReserved") if found else None
    return reserved is not None and reserved["status"] == "False"


async def test_the_seed_in_a_browser_32_admitted_1_pending_and_the_page_follows_the_queue(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    if not Path(KUBECTL).exists():
        pytest.skip("kubectl is not installed")
    await fake_api.apply_manifests(seed())
    tls = certificates(tmp_path / "tls")
    async with replica(fake_api.kubeconfig_path(), tls=tls) as serving:
        await asyncio.wait_for(serving.controller.leading.wait(), HANG)
        await serve_visibility(fake_api, serving.port, tls)
        await fake_api.wait_for(
            lambda: all(running(fake_api, "team-a", job) for job in JOBS[:32]) and waits(fake_api, JOBS[32]),
            timeout=HANG,
        )
        waiting = workloads_of(fake_api, "team-a", JOBS[32])[0]["metadata"]["name"]
        async with (
            kubectl_proxy(KUBECTL, fake_api.kubeconfig_path()) as base,
            open_browser(tmp_path / "profile") as tab,
        ):
            await tab.goto(base + DASHBOARD_PATH)
            assert await tab.evaluate(text("total-admitted")) == "32"
            assert await tab.evaluate(text("total-pending")) == "1"
            card = "document.querySelector('[data-cluster-queue=\"research\"]')"
            assert await tab.evaluate(f"{card}.querySelector('.counts').textContent") == (
                "admitted 32 \u00b7 reserving 32 \u00b7 pending 1"
            )
            assert await tab.evaluate(f"{card}.querySelector('.badge').textContent") == "Active"
            cells = await tab.evaluate(
                f"[...{card}.querySelectorAll('tr')].map(r => [...r.cells].map(c => c.textContent))"
            )
            assert cells[1][:3] == ["gpu-nodes", "nvidia.com/gpu", "64 / 64"]
            pending = await tab.evaluate(
                "[...document.querySelectorAll('#pending tr')].map(r => [...r.cells].map(c => c.textContent))"
            )
            assert pending[1] == [
                "1",
                f"team-a/{waiting}",
                "Job/train-33",
                "team-a-gpu (#1)",
                "0",
                "WaitingForQuota",
                "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in "
                "flavor gpu-nodes, 2 more needed",
            ]
            kinds = await tab.evaluate(
                "[...document.querySelectorAll('#recent tr')].slice(1).map(r => r.cells[1].textContent)"
            )
            assert kinds == ["Admitted"] * 20  # the newest 20 of the 32 admissions kept
            assert await tab.evaluate("document.querySelector('#recent p').textContent") == (
                "The latest 20 of 32 kept."
            )
            shot = tmp_path / "dashboard.png"
            await tab.screenshot(shot)
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            if os.environ.get("DASHBOARD_SCREENSHOT"):
                await tab.screenshot(Path(os.environ["DASHBOARD_SCREENSHOT"]))

            # a Job finishes: the 33rd is admitted, and the open page shows it without a reload
            await fake_api.complete_job("team-a", JOBS[0])
            await tab.wait_until(f"{text('total-pending')} === '0'")
            assert await tab.evaluate(text("total-admitted")) == "32"
            latest = await tab.evaluate(
                "[...document.querySelector('#recent tr + tr').cells].map(c => c.textContent)"
            )
            assert latest[1:4] == ["Admitted", f"team-a/{waiting}", "research"]
            assert tab.console_errors == []


HOSTILE = (
    '</script><script>window.injected = 1</script><img src=x onerror="window.injected = 2">'
    "<b>bold</b> & \u2028 ' \""
)


async def test_text_from_objects_stays_text_in_the_browser(tmp_path: Path) -> None:
    """A message (writable by anyone who may write a Workload's status) full of markup is shown verbatim:
    no element is made of it and nothing in it runs."""
    state = state_with(cluster_queue("research", {"default": {"cpu": 1}}))
    state.upsert_workload(workload("running"))
    state.upsert_workload(workload("waiting", created=1))
    run_until_quiet(state)
    hostile = {
        "metadata": {"name": "waiting", "namespace": "ns"},
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "False", "reason": HOSTILE, "message": HOSTILE}
            ]
        },
    }
    app = web.Application()
    dashboard = Dashboard(
        scheduler=lambda: state,
        workload=lambda namespace, name: hostile if name == "waiting" else None,
        recent=lambda: [
            RecentDecision("2026-01-01T00:00:00Z", "Evicted", "ns", HOSTILE, "research", HOSTILE, HOSTILE)
        ],
        leading=lambda: True,
        identity=HOSTILE,
    )
    add_dashboard_routes(app, dashboard)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        async with open_browser(tmp_path / "profile") as tab:
            await tab.goto(f"http://127.0.0.1:{port}{DASHBOARD_PATH}")
            cells = await tab.evaluate(
                "[...document.querySelectorAll('#pending tr')][1].cells.length === 7 && "
                "[...document.querySelectorAll('#pending td')].map(c => c.textContent)"
            )
            assert cells[5:7] == [HOSTILE, HOSTILE]
            recent = await tab.evaluate(
                "[...document.querySelectorAll('#recent td')].map(c => c.textContent)"
            )
            assert recent == [
                "2026-01-01T00:00:00Z",
                "Evicted",
                f"ns/{HOSTILE}",
                "research",
                HOSTILE,
                HOSTILE,
            ]
            assert HOSTILE in await tab.evaluate(text("meta"))
            assert await tab.evaluate("window.injected === undefined") is True
            assert await tab.evaluate("document.querySelectorAll('img, b, script:not([id])').length") == 1
            assert tab.console_errors == []
    finally:
        await runner.cleanup()
