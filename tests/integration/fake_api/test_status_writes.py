"""Writes through ``/status`` on the fake API server: only the status changes, and it is still checked."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from tests.fakeapi import ADMIN_TOKEN, FakeApiServer
from tests.fakeapi.patches import copy_json

NS = "team-s"
URL = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NS}/workloads/w/status"
MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture
async def http(fake_api: FakeApiServer) -> AsyncIterator[aiohttp.ClientSession]:
    await fake_api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    await fake_api.create(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": "w", "namespace": NS},
            "spec": {"queueName": "q", "podSets": [{"count": 1, "template": {"spec": {"containers": []}}}]},
        }
    )
    connector = aiohttp.TCPConnector(ssl=fake_api.client_ssl_context())
    async with aiohttp.ClientSession(
        base_url=fake_api.url, connector=connector, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    ) as session:
        yield session


async def patch(http: aiohttp.ClientSession, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async with http.patch(URL, data=orjson.dumps(body), headers=MERGE) as response:
        return response.status, await response.json()


async def test_a_status_patch_cannot_change_the_spec(
    http: aiohttp.ClientSession, fake_api: FakeApiServer
) -> None:
    status, written = await patch(
        http,
        {
            "spec": {"queueName": "elsewhere"},
            "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": []}},
        },
    )
    assert status == 200
    assert written["spec"]["queueName"] == "q"
    assert written["status"]["admission"]["clusterQueue"] == "cq"
    assert written["metadata"]["generation"] == 1
    stored = fake_api.get("workloads", "w", NS)
    assert stored is not None and stored["spec"]["queueName"] == "q"


async def test_an_invalid_status_is_refused_naming_the_field(
    http: aiohttp.ClientSession, fake_api: FakeApiServer
) -> None:
    condition = {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "m"}
    condition["lastTransitionTime"] = 7  # type: ignore[assignment]
    status, error = await patch(http, {"status": {"conditions": [condition]}})
    assert status == 422
    # the field first; then, as the API server says for a CRD with CEL rules whose schema check failed,
    # the <nil> cause "some validation rules were not checked" (golden kueue-clusterqueue-invalid.json)
    fields = [cause["field"] for cause in error["details"]["causes"]]
    assert fields[0] == "status.conditions[0].lastTransitionTime"
    assert fields[1:] == ["<nil>"]
    stored = fake_api.get("workloads", "w", NS)
    assert stored is not None and "conditions" not in (stored.get("status") or {})


async def test_successive_status_patches_do_not_share_state(
    http: aiohttp.ClientSession, fake_api: FakeApiServer
) -> None:
    first = {
        "type": "QuotaReserved",
        "status": "False",
        "reason": "Pending",
        "message": "one",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    assert (await patch(http, {"status": {"conditions": [first]}}))[0] == 200
    before = fake_api.get("workloads", "w", NS)
    second = {**first, "message": "two"}
    status, written = await patch(http, {"status": {"conditions": [second]}})
    assert status == 200 and written["status"]["conditions"][0]["message"] == "two"
    assert before is not None and before["status"]["conditions"][0]["message"] == "one"


def test_json_copies_are_deep_and_exact_even_beyond_64_bits() -> None:
    original = {"a": [{"b": 1.5}], "big": 2**70, "s": "é"}
    copied = copy_json(original)
    assert copied == original
    copied["a"][0]["b"] = 2
    assert original["a"][0]["b"] == 1.5
