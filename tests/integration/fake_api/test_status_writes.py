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


APPLY = {"Content-Type": "application/apply-patch+yaml"}


def finished_apply_body(version: str) -> dict[str, Any]:
    """The body Kueue's SetConditionAndUpdate sends (checked against kube-apiserver v1.36.2)."""
    return {
        "kind": "Workload",
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "metadata": {"name": "w", "namespace": NS, "resourceVersion": version, "creationTimestamp": None},
        "spec": {"podSets": None},
        "status": {
            "conditions": [
                {
                    "type": "Finished",
                    "status": "True",
                    "lastTransitionTime": "2026-01-01T00:00:01Z",
                    "reason": "ByTest",
                    "message": "By test runner",
                }
            ]
        },
    }


async def test_a_status_apply_merges_conditions_by_type_and_ignores_the_spec(
    http: aiohttp.ClientSession,
) -> None:
    reserved = {
        "type": "QuotaReserved",
        "status": "True",
        "reason": "QuotaReserved",
        "message": "m",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    status, written = await patch(http, {"status": {"conditions": [reserved]}})
    assert status == 200
    query = "?fieldManager=kueue-job-controller-Finished&force=true"
    body = orjson.dumps(finished_apply_body(written["metadata"]["resourceVersion"]))
    async with http.patch(URL + query, data=body, headers=APPLY) as response:
        assert response.status == 200
        applied = await response.json()
    # conditions is a list-map keyed by type: the applied Finished joins QuotaReserved, which stays
    assert [(c["type"], c["status"]) for c in applied["status"]["conditions"]] == [
        ("QuotaReserved", "True"),
        ("Finished", "True"),
    ]
    assert applied["spec"]["podSets"][0]["count"] == 1


async def test_a_status_apply_with_a_stale_resource_version_conflicts(http: aiohttp.ClientSession) -> None:
    query = "?fieldManager=kueue-job-controller-Finished&force=true"
    async with http.patch(
        URL + query, data=orjson.dumps(finished_apply_body("1")), headers=APPLY
    ) as response:
        assert response.status == 409
        assert (await response.json())["reason"] == "Conflict"


async def test_an_apply_without_a_field_manager_is_refused_as_the_api_server_does(
    http: aiohttp.ClientSession, fake_api: FakeApiServer
) -> None:
    stored = fake_api.get("workloads", "w", NS)
    assert stored is not None
    body = orjson.dumps(finished_apply_body(stored["metadata"]["resourceVersion"]))
    async with http.patch(URL, data=body, headers=APPLY) as response:
        assert response.status == 422
        error = await response.json()
    assert "fieldManager: Required value: is required for apply patch" in error["message"]
    after = fake_api.get("workloads", "w", NS)
    assert after is not None and "conditions" not in (after.get("status") or {})
