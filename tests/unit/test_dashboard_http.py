"""The dashboard over real TLS, as the aggregator reaches it: who may open it, what a browser and a script
get, and that text from objects can never become markup on the page."""

from __future__ import annotations

import json
import re
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry

from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration
from kueue_webhook.core.recent_decisions import RecentDecisions
from kueue_webhook.core.scheduler import SchedulerState
from kueue_webhook.http.app import create_app
from kueue_webhook.http.auth import HttpsAuth
from kueue_webhook.http.certs import CertificateSet
from kueue_webhook.http.dashboard import DASHBOARD_PATH, Dashboard
from kueue_webhook.http.dashboard_page import CONTENT_SECURITY_POLICY
from kueue_webhook.http.front_proxy import parse_settings
from kueue_webhook.http.reviews import Reviewer
from kueue_webhook.http.server import WebhookServer
from tests.front_proxy import ClientPair, ProxyCA, requestheader_data
from tests.unit.admission.servers import make_certs
from tests.unit.core.builders import cluster_queue, run_until_quiet, state_with, workload
from tests.unit.test_https_auth_rules import ApiServer

ALICE = {"X-Remote-User": "alice", "X-Remote-Group": "team-a"}
HTML = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
HOSTILE = "</script><script>alert(1)</script><img src=x onerror=alert(2)> & \u2028"


@dataclass
class Port:
    url: str
    certs: CertificateSet
    proxy: ClientPair
    api: ApiServer
    workloads: dict[tuple[str, str], dict[str, Any]]
    recent: RecentDecisions

    async def get(
        self,
        path: str = DASHBOARD_PATH,
        *,
        cert: ClientPair | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], str]:
        context = (
            cert.context(self.certs.ca_cert)
            if cert
            else ssl.create_default_context(cafile=str(self.certs.ca_cert))
        )
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{self.url}{path}", ssl=context, headers=headers or {}) as response,
        ):
            return response.status, dict(response.headers), await response.text()


def one_waiting() -> SchedulerState:
    """research: one cpu, held by ``running``; ``waiting`` waits."""
    state = state_with(cluster_queue("research", {"default": {"cpu": 1}}))
    state.upsert_workload(workload("running"))
    state.upsert_workload(workload("waiting", created=1))
    run_until_quiet(state)
    return state


@pytest.fixture
async def port(tmp_path: Path) -> AsyncIterator[Port]:
    certs = make_certs(tmp_path / "serving")
    proxy_ca = ProxyCA(tmp_path / "proxy")
    api = ApiServer()
    auth = HttpsAuth(visibility=Reviewer(api), metrics=Reviewer(api))
    auth.settings = parse_settings(requestheader_data(proxy_ca.pem))
    state = one_waiting()
    workloads: dict[tuple[str, str], dict[str, Any]] = {}
    recent = RecentDecisions()
    dashboard = Dashboard(
        scheduler=lambda: state,
        workload=lambda namespace, name: workloads.get((namespace, name)),
        recent=recent.latest,
        leading=lambda: True,
        identity="replica-a",
        min_interval=0.0,
    )
    app = create_app(
        view=StaticClusterView(),
        config=Configuration,
        registry=CollectorRegistry(),
        auth=auth,
        dashboard=dashboard,
    )
    server = WebhookServer(app, cert_file=certs.cert, key_file=certs.key, host="127.0.0.1", port=0)
    server.trust_client_ca(proxy_ca.pem)
    await server.start()
    try:
        yield Port(f"https://127.0.0.1:{server.port}", certs, proxy_ca.issue(), api, workloads, recent)
    finally:
        await server.stop()


def embedded(page: str) -> dict[str, Any]:
    """The document embedded in the page, parsed as the page's script parses it (JSON.parse)."""
    match = re.search(r'<script type="application/json" id="initial">(.*?)</script>', page, re.S)
    assert match is not None
    parsed: dict[str, Any] = json.loads(match.group(1))
    return parsed


async def test_without_the_front_proxys_certificate_the_dashboard_is_401(port: Port) -> None:
    for headers in ({}, ALICE, {**ALICE, "X-Remote-Group": "system:masters"}):
        status, _, body = await port.get(headers={**headers, **HTML})
        assert (status, json.loads(body)["reason"]) == (401, "Unauthorized")
        assert "Queues" not in body
    assert port.api.sent == []


async def test_a_user_rbac_does_not_allow_gets_403_naming_what_to_grant(port: Port) -> None:
    status, _, body = await port.get(cert=port.proxy, headers={"X-Remote-User": "mallory", **HTML})
    assert status == 403
    assert json.loads(body)["message"] == (
        'dashboards.visibility.kueue.x-k8s.io "queues" is forbidden: User "mallory" cannot get resource '
        '"dashboards" in API group "visibility.kueue.x-k8s.io" at the cluster scope: nope'
    )
    [review] = port.api.sent
    assert review["spec"]["resourceAttributes"] == {
        "verb": "get",
        "group": "visibility.kueue.x-k8s.io",
        "version": "v1beta2",
        "resource": "dashboards",
        "name": "queues",
    }


async def test_an_allowed_browser_gets_the_page_under_a_strict_content_security_policy(port: Port) -> None:
    status, headers, page = await port.get(cert=port.proxy, headers={**ALICE, **HTML})
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    policy = dict(item.split(" ", 1) for item in CONTENT_SECURITY_POLICY.split("; "))
    assert policy["default-src"] == "'none'" and policy["connect-src"] == "'self'"
    assert re.fullmatch(r"'sha256-[A-Za-z0-9+/]+=*'", policy["script-src"])
    assert re.fullmatch(r"'sha256-[A-Za-z0-9+/]+=*'", policy["style-src"])
    assert "unsafe" not in CONTENT_SECURITY_POLICY
    assert (headers["X-Content-Type-Options"], headers["Cache-Control"]) == ("nosniff", "no-store")
    assert "http://" not in page and "https://" not in page  # nothing fetched from elsewhere
    document = embedded(page)
    assert (document["totals"]["admitted"], document["totals"]["pending"]) == (1, 1)


async def test_a_script_gets_the_document_alone(port: Port) -> None:
    for query, headers in (("?format=json", HTML), ("", {"Accept": "application/json, */*"})):
        status, response_headers, body = await port.get(
            DASHBOARD_PATH + query, cert=port.proxy, headers={**ALICE, **headers}
        )
        assert status == 200 and response_headers["Content-Type"] == "application/json"
        document = json.loads(body)
        assert document["kind"] == "QueueDashboard"
        assert [w["name"] for w in document["pending"][0]["workloads"]] == ["waiting"]


async def test_text_from_objects_cannot_close_the_embedded_document_or_become_markup(port: Port) -> None:
    port.workloads[("ns", "waiting")] = {
        "metadata": {"name": "waiting", "namespace": "ns"},
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": HOSTILE}
            ]
        },
    }
    _, _, page = await port.get(cert=port.proxy, headers={**ALICE, **HTML})
    assert "</script><script>" not in page and "<img" not in page and "\u2028" not in page
    assert page.count("</script>") == 2  # the document's and the script's own
    [group] = embedded(page)["pending"]
    assert group["workloads"][0]["message"] == HOSTILE  # the same text, shown as text by the script
