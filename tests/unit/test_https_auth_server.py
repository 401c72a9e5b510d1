"""The HTTPS port's guards over real TLS: a client certificate is asked for, not required; the front proxy's
headers count only on a connection with its certificate; ``/metrics`` wants an allowed token; the admission
paths and the probes stay open."""

from __future__ import annotations

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
from kueue_webhook.api.objects import parse_cluster_queue
from kueue_webhook.core.scheduler import SchedulerState
from kueue_webhook.http.app import create_app, create_metrics_app
from kueue_webhook.http.auth import HttpsAuth
from kueue_webhook.http.certs import CertificateSet
from kueue_webhook.http.front_proxy import parse_settings
from kueue_webhook.http.reviews import Reviewer
from kueue_webhook.http.server import PlainMetricsServer, WebhookServer
from kueue_webhook.http.visibility import Visibility
from tests.front_proxy import ClientPair, ProxyCA, requestheader_data
from tests.unit.admission.golden import golden_capture
from tests.unit.admission.servers import make_certs
from tests.unit.test_https_auth_rules import ApiServer

CQ = "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/research/pendingworkloads"
LQ = "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/q/pendingworkloads"
ALICE = {"X-Remote-User": "alice", "X-Remote-Group": "team-a"}


@dataclass
class Port:
    server: WebhookServer
    certs: CertificateSet
    proxy: ClientPair
    api: ApiServer
    registry: CollectorRegistry
    auth: HttpsAuth

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server.port}"

    async def get(
        self, path: str, *, cert: ClientPair | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        context = (
            cert.context(self.certs.ca_cert)
            if cert
            else ssl.create_default_context(cafile=str(self.certs.ca_cert))
        )
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{self.url}{path}", ssl=context, headers=headers or {}) as response,
        ):
            text = await response.text()
            if response.content_type == "application/json":
                return response.status, await response.json()
            return response.status, text


@pytest.fixture
async def port(tmp_path: Path) -> AsyncIterator[Port]:
    certs = make_certs(tmp_path / "serving")
    proxy_ca = ProxyCA(tmp_path / "proxy")
    api = ApiServer()
    auth = HttpsAuth(visibility=Reviewer(api), metrics=Reviewer(api))
    auth.settings = parse_settings(requestheader_data(proxy_ca.pem))
    state = SchedulerState()
    queue = parse_cluster_queue(
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "research"}}
    )
    assert not isinstance(queue, list)
    state.apply(queue)
    registry = CollectorRegistry()
    app = create_app(
        view=StaticClusterView(),
        config=Configuration,
        registry=registry,
        visibility=Visibility(scheduler=lambda: state, workload=lambda ns, name: None),
        auth=auth,
    )
    server = WebhookServer(
        app, cert_file=certs.cert, key_file=certs.key, host="127.0.0.1", port=0, reload_interval=0.05
    )
    server.trust_client_ca(proxy_ca.pem)
    await server.start()
    try:
        yield Port(server, certs, proxy_ca.issue(), api, registry, auth)
    finally:
        await server.stop()


async def test_a_direct_call_without_a_certificate_is_401_whatever_headers_it_sends(port: Port) -> None:
    for headers in ({}, ALICE, {**ALICE, "X-Remote-Group": "system:masters"}):
        status, body = await port.get(CQ, headers=headers)
        assert (status, body["reason"], body["message"], body["code"]) == (
            401,
            "Unauthorized",
            "Unauthorized",
            401,
        )
    assert port.api.sent == []  # nothing to ask: no user


async def test_the_front_proxys_user_is_authorized_by_a_subjectaccessreview(port: Port) -> None:
    status, body = await port.get(CQ, cert=port.proxy, headers=ALICE)
    assert status == 200 and body["kind"] == "PendingWorkloadsSummary"
    [review] = port.api.sent
    assert review["spec"]["user"] == "alice" and review["spec"]["groups"] == ["team-a"]
    assert review["spec"]["resourceAttributes"]["name"] == "research"


async def test_a_user_rbac_does_not_allow_gets_kube_apiservers_403(port: Port) -> None:
    status, body = await port.get(LQ, cert=port.proxy, headers={"X-Remote-User": "mallory"})
    assert status == 403
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'localqueues.visibility.kueue.x-k8s.io "q" is forbidden: User "mallory" cannot get '
        'resource "localqueues/pendingworkloads" in API group "visibility.kueue.x-k8s.io" in the '
        'namespace "team-a": nope',
        "reason": "Forbidden",
        "details": {"name": "q", "group": "visibility.kueue.x-k8s.io", "kind": "localqueues"},
        "code": 403,
    }


async def test_system_masters_through_the_proxy_is_not_reviewed(port: Port) -> None:
    headers = {"X-Remote-User": "admin", "X-Remote-Group": "system:masters"}
    status, _ = await port.get(CQ, cert=port.proxy, headers=headers)
    assert status == 200 and port.api.sent == []


async def test_a_bearer_token_is_an_alternative_to_the_proxy(port: Port) -> None:
    status, _ = await port.get(CQ, headers={"Authorization": "Bearer good"})
    assert status == 200
    status, _ = await port.get(CQ, headers={"Authorization": "Bearer nobody"})
    assert status == 401


async def test_a_certificate_from_another_ca_fails_the_handshake(port: Port, tmp_path: Path) -> None:
    stranger = ProxyCA(tmp_path / "stranger").issue()
    with pytest.raises(aiohttp.ClientError):
        await port.get(CQ, cert=stranger, headers=ALICE)


async def test_a_serving_certificate_reload_keeps_asking_for_client_certificates(
    port: Port, tmp_path: Path
) -> None:
    port.server.reloader.changed.clear()
    fresh = make_certs(tmp_path / "fresh")
    port.certs.cert.write_bytes(fresh.cert.read_bytes())
    port.certs.key.write_bytes(fresh.key.read_bytes())
    port.certs.ca_cert.write_bytes(fresh.ca_cert.read_bytes())
    await port.server.reloader.changed.wait()
    status, _ = await port.get(CQ, cert=port.proxy, headers=ALICE)
    assert status == 200


async def test_after_the_requestheader_ca_rotates_only_the_new_cas_certificates_count(
    port: Port, tmp_path: Path
) -> None:
    rotated = ProxyCA(tmp_path / "rotated")  # the same name, a new key
    port.server.trust_client_ca(rotated.pem)
    port.auth.settings = parse_settings(requestheader_data(rotated.pem))
    # the old certificate still passes the handshake (a TLS context cannot forget a CA), not the check
    status, body = await port.get(CQ, cert=port.proxy, headers=ALICE)
    assert (status, body["reason"]) == (401, "Unauthorized")
    status, _ = await port.get(CQ, cert=rotated.issue(), headers=ALICE)
    assert status == 200


async def test_discovery_probes_and_admission_stay_open_without_a_certificate(port: Port) -> None:
    for path in ("/apis", "/apis/visibility.kueue.x-k8s.io", "/apis/visibility.kueue.x-k8s.io/v1beta2"):
        status, _ = await port.get(path)
        assert status == 200, path
    assert (await port.get("/healthz"))[0] == 200
    capture = golden_capture(0)
    context = ssl.create_default_context(cafile=str(port.certs.ca_cert))
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{port.url}{capture['path']}", json=capture["review"], ssl=context) as response,
    ):
        assert response.status == 200
        assert (await response.json())["response"]["allowed"] is True


async def test_metrics_want_a_token_allowed_to_get_metrics(port: Port) -> None:
    assert await port.get("/metrics") == (401, "Unauthorized\n")
    assert await port.get("/metrics", headers={"Authorization": "Bearer nobody"}) == (401, "Unauthorized\n")
    # the front proxy's headers are no credential for /metrics
    assert (await port.get("/metrics", cert=port.proxy, headers=ALICE))[0] == 401
    assert await port.get("/metrics", headers={"Authorization": "Bearer other"}) == (
        403,
        "Authorization denied for user mallory\n",
    )
    status, text = await port.get("/metrics", headers={"Authorization": "Bearer good"})
    assert status == 200 and "kueue_webhook_admission_requests_total" in text
    review = port.api.sent[-1]
    assert review["spec"]["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}


async def test_metrics_without_an_answer_from_the_api_server_are_500(port: Port) -> None:
    port.api.down = True
    assert await port.get("/metrics", headers={"Authorization": "Bearer good"}) == (
        500,
        "Authentication failed\n",
    )


async def test_the_plain_metrics_port_answers_anyone(port: Port) -> None:
    plain = PlainMetricsServer(create_metrics_app(port.registry), host="127.0.0.1", port=0)
    await plain.start()
    try:
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{plain.port}/metrics") as response,
        ):
            assert response.status == 200
            assert "kueue_webhook_admission_requests_total" in await response.text()
    finally:
        await plain.stop()
