"""The fake API server's core contract over real HTTPS: CRUD, resourceVersions, conflicts, watches, faults."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from tests.fakeapi import ADMIN_TOKEN, FakeApiServer

JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "sample", "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
    "spec": {
        "suspend": True,
        "template": {
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], "restartPolicy": "Never"}
        },
    },
}


@pytest.fixture
async def http(fake_api: FakeApiServer) -> AsyncIterator[aiohttp.ClientSession]:
    connector = aiohttp.TCPConnector(ssl=fake_api.client_ssl_context())
    async with aiohttp.ClientSession(
        base_url=fake_api.url, connector=connector, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    ) as session:
        yield session


async def call(session: aiohttp.ClientSession, method: str, path: str, body: Any = None, **kw: Any) -> Any:
    data = orjson.dumps(body) if body is not None else None
    headers = {"Content-Type": kw.pop("content_type", "application/json")}
    async with session.request(method, path, data=data, headers=headers, **kw) as response:
        return response.status, orjson.loads(await response.read())


async def test_create_get_update_conflict_delete_round_trip(http: aiohttp.ClientSession) -> None:
    status, created = await call(http, "POST", "/apis/batch/v1/namespaces/default/jobs", JOB)
    assert status == 201
    assert created["metadata"]["generation"] == 1
    rv = int(created["metadata"]["resourceVersion"])

    status, fetched = await call(http, "GET", "/apis/batch/v1/namespaces/default/jobs/sample")
    assert (status, fetched["metadata"]["uid"]) == (200, created["metadata"]["uid"])

    stale = dict(fetched)
    status, patched = await call(
        http,
        "PATCH",
        "/apis/batch/v1/namespaces/default/jobs/sample",
        {"metadata": {"labels": {"extra": "1"}}},
        content_type="application/merge-patch+json",
    )
    assert status == 200 and int(patched["metadata"]["resourceVersion"]) > rv
    assert patched["metadata"]["generation"] == 1  # labels are metadata: generation unchanged

    status, error = await call(http, "PUT", "/apis/batch/v1/namespaces/default/jobs/sample", stale)
    assert status == 409 and error["reason"] == "Conflict"

    status, gone = await call(http, "DELETE", "/apis/batch/v1/namespaces/default/jobs/sample")
    assert (status, gone["status"]) == (200, "Success")
    status, missing = await call(http, "GET", "/apis/batch/v1/namespaces/default/jobs/sample")
    assert (status, missing["reason"]) == (404, "NotFound")


async def test_unknown_token_is_unauthorized(fake_api: FakeApiServer) -> None:
    connector = aiohttp.TCPConnector(ssl=fake_api.client_ssl_context())
    headers = {"Authorization": "Bearer nope"}
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.get(f"{fake_api.url}/api/v1/namespaces", headers=headers) as response,
    ):
        assert response.status == 401


async def test_create_in_missing_namespace_is_404(http: aiohttp.ClientSession) -> None:
    status, error = await call(http, "POST", "/apis/batch/v1/namespaces/nowhere/jobs", JOB)
    assert status == 404
    assert error["message"] == 'namespaces "nowhere" not found'


async def test_watch_streams_events_after_resource_version(
    fake_api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    _, created = await call(http, "POST", "/apis/batch/v1/namespaces/default/jobs", JOB)
    start = created["metadata"]["resourceVersion"]
    url = f"/apis/batch/v1/namespaces/default/jobs?watch=1&resourceVersion={start}&timeoutSeconds=5"
    async with http.get(url) as stream:
        await fake_api.patch("jobs", "sample", {"metadata": {"labels": {"a": "b"}}}, namespace="default")
        events = []
        async for line in stream.content:
            event = orjson.loads(line)
            events.append((event["type"], event["object"]["metadata"]["labels"].get("a")))
            if event["type"] == "MODIFIED" and event["object"]["metadata"]["labels"].get("a") == "b":
                break
    # The Job controller's Suspended-condition write comes first, then our label patch.
    assert events[-1] == ("MODIFIED", "b")
    assert all(kind == "MODIFIED" for kind, _ in events)


async def test_watch_from_compacted_resource_version_gets_410(
    fake_api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    _, created = await call(http, "POST", "/apis/batch/v1/namespaces/default/jobs", JOB)
    fake_api.compact()
    rv = created["metadata"]["resourceVersion"]
    url = f"/apis/batch/v1/namespaces/default/jobs?watch=1&resourceVersion={rv}"
    async with http.get(url) as stream:
        lines = [orjson.loads(line) async for line in stream.content]
    assert lines[0]["type"] == "ERROR"
    assert lines[0]["object"]["code"] == 410 and lines[0]["object"]["reason"] == "Expired"


async def test_a_quiet_watch_survives_compaction_of_other_kinds_history(
    fake_api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    """As with the apiserver's watch cache, an open watch loses nothing when other kinds' events are
    compacted away: it goes on, it is not told to relist (410)."""
    _, created = await call(http, "POST", "/apis/batch/v1/namespaces/default/jobs", JOB)
    rv = created["metadata"]["resourceVersion"]
    url = f"/apis/batch/v1/namespaces/default/jobs?watch=1&resourceVersion={rv}&timeoutSeconds=5"
    fake_api.store.history = 100
    async with http.get(url) as stream:
        for i in range(1200):  # enough commits of another kind to compact
            fake_api.store.insert(
                ("", "secrets"), {"metadata": {"name": f"s{i}", "namespace": "default"}}, plural="secrets"
            )
        assert fake_api.store.compacted_rv > int(rv)
        await fake_api.patch("jobs", "sample", {"metadata": {"labels": {"a": "b"}}}, namespace="default")
        async for line in stream.content:
            event = orjson.loads(line)
            assert event["type"] == "MODIFIED"
            if event["object"]["metadata"]["labels"].get("a") == "b":
                break


async def test_fail_next_writes_injects_conflicts(
    fake_api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    fake_api.fail_next_writes(1, status=409)
    status, _ = await call(http, "POST", "/apis/batch/v1/namespaces/default/jobs", JOB)
    assert status == 409
    status, _ = await call(http, "POST", "/apis/batch/v1/namespaces/default/jobs", JOB)
    assert status == 201


async def test_wait_for_object_returns_when_predicate_holds(fake_api: FakeApiServer) -> None:
    await fake_api.create(dict(JOB, metadata={"name": "sample", "namespace": "default"}))

    async def finish_later() -> None:
        await asyncio.sleep(0)
        await fake_api.complete_job("default", "sample")

    task = asyncio.create_task(finish_later())
    job = await fake_api.wait_for_object(
        "jobs",
        "sample",
        lambda j: j is not None and any(c["type"] == "Complete" for c in j["status"].get("conditions", [])),
        namespace="default",
        timeout=5,
    )
    await task
    assert job is not None and job["status"]["succeeded"] == 1
