"""Pods on the fake API server: kube-apiserver's scheduling-gate rules (PodSchedulingReadiness) that a queue
controller must respect, answered with the apiserver's 422 and words, and the status a kubelet would write."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.fakeapi import ADMIN_TOKEN, FakeApiServer

NS = "team"
PODS = f"/api/v1/namespaces/{NS}/pods"
JSON_PATCH = {"Content-Type": "application/json-patch+json"}


def gated_pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
            "containers": [{"name": "c", "image": "busybox"}],
            **spec,
        },
    }


@pytest.fixture
async def http(fake_api: FakeApiServer) -> AsyncIterator[aiohttp.ClientSession]:
    await fake_api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    connector = aiohttp.TCPConnector(ssl=fake_api.client_ssl_context())
    async with aiohttp.ClientSession(
        base_url=fake_api.url, connector=connector, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    ) as session:
        yield session


async def patch(http: aiohttp.ClientSession, name: str, ops: list[dict[str, Any]]) -> tuple[int, Any]:
    async with http.patch(f"{PODS}/{name}", json=ops, headers=JSON_PATCH) as response:
        return response.status, await response.json()


async def test_a_created_pod_is_pending_with_the_default_tolerations(http: aiohttp.ClientSession) -> None:
    async with http.post(PODS, json=gated_pod("p")) as response:
        assert response.status == 201
        pod = await response.json()
    assert pod["status"]["phase"] == "Pending" and pod["status"]["qosClass"] == "BestEffort"
    (gated,) = pod["status"]["conditions"]  # kube-apiserver's own, for a pod created gated
    assert (gated["type"], gated["status"], gated["reason"]) == ("PodScheduled", "False", "SchedulingGated")
    assert [t["key"] for t in pod["spec"]["tolerations"]] == [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    assert pod["spec"]["restartPolicy"] == "Always"


async def test_a_gate_can_be_removed_with_a_node_selector_added_but_never_added_back(
    http: aiohttp.ClientSession,
) -> None:
    await http.post(PODS, json=gated_pod("p", nodeSelector={"zone": "a"}))
    status, body = await patch(
        http,
        "p",
        [
            {"op": "remove", "path": "/spec/schedulingGates"},
            {"op": "add", "path": "/spec/nodeSelector/pool", "value": "gpu"},
            {"op": "add", "path": "/spec/tolerations/-", "value": {"key": "gpu", "operator": "Exists"}},
        ],
    )
    assert status == 200, body
    assert body["spec"]["nodeSelector"] == {"pool": "gpu", "zone": "a"}
    assert "schedulingGates" not in body["spec"]

    status, body = await patch(
        http, "p", [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": "again"}]}]
    )
    assert status == 422
    assert body["reason"] == "Invalid"
    assert body["message"] == (
        'Pod "p" is invalid: spec.schedulingGates[0].name: Forbidden: only deletion is allowed, '
        "but found new scheduling gate 'again'"
    )
    # ungated, the node selector is frozen like the rest of the spec
    status, body = await patch(http, "p", [{"op": "add", "path": "/spec/nodeSelector/more", "value": "x"}])
    assert status == 422 and body["message"].startswith('Pod "p" is invalid: spec: Forbidden: pod updates')


async def test_a_gated_pod_node_selector_may_only_grow(http: aiohttp.ClientSession) -> None:
    await http.post(PODS, json=gated_pod("p", nodeSelector={"zone": "a"}))
    status, body = await patch(
        http, "p", [{"op": "replace", "path": "/spec/nodeSelector/zone", "value": "b"}]
    )
    assert status == 422
    assert body["message"] == (
        'Pod "p" is invalid: spec.nodeSelector: Invalid value: {"zone":"b"}: only additions to '
        "spec.nodeSelector are allowed (no mutations or deletions)"
    )


async def test_tolerations_may_only_be_added(http: aiohttp.ClientSession) -> None:
    await http.post(PODS, json=gated_pod("p"))
    status, body = await patch(http, "p", [{"op": "replace", "path": "/spec/tolerations", "value": []}])
    assert status == 422
    assert body["message"] == (
        'Pod "p" is invalid: spec.tolerations: Forbidden: existing toleration can not be modified except its '
        "tolerationSeconds"
    )


async def test_the_phase_is_written_through_pods_status(
    http: aiohttp.ClientSession, fake_api: FakeApiServer
) -> None:
    await http.post(PODS, json=gated_pod("p"))
    await fake_api.patch("pods", "p", {"status": {"phase": "Succeeded"}}, namespace=NS, subresource="status")
    pod = fake_api.get("pods", "p", NS)
    assert pod is not None and pod["status"]["phase"] == "Succeeded"
    status, _ = await patch(http, "p", [{"op": "replace", "path": "/status/phase", "value": "Failed"}])
    assert status == 200
    pod = fake_api.get("pods", "p", NS)
    assert pod is not None and pod["status"]["phase"] == "Succeeded"  # status only through /status
