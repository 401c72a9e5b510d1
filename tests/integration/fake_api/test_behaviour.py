"""Cluster behaviours the controller relies on, as the fake reproduces them (beyond the golden captures)."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from kubernetes_asyncio import client, config, watch

from tests.fakeapi import ADMIN_TOKEN, FakeApiServer
from tests.fakeapi.tls import serving_material
from tests.golden import GOLDEN
from tests.support import builders

NS = "team-a"


def job(name: str, *, suspend: bool = True, labels: dict[str, str] | None = None) -> dict[str, Any]:
    pod_spec = {"containers": [{"name": "c", "image": "busybox:1"}], "restartPolicy": "Never"}
    return builders.job(
        name, NS, labels=labels or {}, suspend=suspend, parallelism=2, completions=2, pod_spec=pod_spec
    )


def workload(name: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    owners = None if owner is None else [builders.owner_reference(owner, block_owner_deletion=True)]
    pod_sets = [{"count": 1, "template": {"spec": {"containers": []}}}]
    return builders.workload(name, NS, queue="q", pod_sets=pod_sets, ownerReferences=owners)


@pytest.fixture
async def api(fake_api: FakeApiServer) -> FakeApiServer:
    await fake_api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    return fake_api


@pytest.fixture
async def http(api: FakeApiServer) -> AsyncIterator[aiohttp.ClientSession]:
    connector = aiohttp.TCPConnector(ssl=api.client_ssl_context())
    async with aiohttp.ClientSession(
        base_url=api.url, connector=connector, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    ) as session:
        yield session


async def watch_lines(session: aiohttp.ClientSession, url: str, count: int) -> list[dict[str, Any]]:
    events = []
    async with session.get(url) as stream:
        async for line in stream.content:
            events.append(orjson.loads(line))
            if len(events) == count:
                break
    return events


# ---- lifecycle ---------------------------------------------------------------------------------------------
async def test_deleting_a_job_garbage_collects_its_workload(api: FakeApiServer) -> None:
    owner = await api.create(job("j"))
    await api.create(workload("w", owner))
    await api.delete("jobs", "j", namespace=NS)
    assert api.get("workloads", "w", NS) is None


async def test_orphan_propagation_keeps_dependents_without_the_owner_reference(api: FakeApiServer) -> None:
    owner = await api.create(job("j"))
    await api.create(workload("w", owner))
    await api.delete("jobs", "j", namespace=NS, propagation="Orphan")
    kept = api.get("workloads", "w", NS)
    assert kept is not None and "ownerReferences" not in kept["metadata"]


async def test_finalizers_hold_deletion_until_removed(api: FakeApiServer) -> None:
    w = workload("w")
    w["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
    await api.create(w)
    await api.delete("workloads", "w", namespace=NS)
    held = api.get("workloads", "w", NS)
    assert held is not None and held["metadata"]["deletionTimestamp"]
    await api.patch("workloads", "w", {"metadata": {"finalizers": None}}, namespace=NS)
    assert api.get("workloads", "w", NS) is None


async def test_finalizers_leave_one_at_a_time_and_watchers_see_kube_apiserver_events(
    api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    """As kube-apiserver v1.36.2 answers (observed on a real control plane): DELETE marks the object and
    keeps it (generation bumped, grace period 0); removing one finalizer is a MODIFIED event; removing the
    last one deletes the object without a MODIFIED, the DELETED event still listing that finalizer, while
    the writer gets its update back at the resourceVersion it updated."""
    w = workload("w")
    w["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use", "example.com/other"]
    created = await api.create(w)
    url = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NS}/workloads/w"
    async with http.delete(url) as response:
        marked = await response.json()
    assert response.status == 200
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["deletionGracePeriodSeconds"] == 0
    assert marked["metadata"]["generation"] == 2
    headers = {"Content-Type": "application/json-patch+json"}

    def remove_first(expected: str) -> bytes:
        return orjson.dumps(
            [
                {"op": "test", "path": "/metadata/finalizers/0", "value": expected},
                {"op": "remove", "path": "/metadata/finalizers/0"},
            ]
        )

    async with http.patch(url, data=remove_first("kueue.x-k8s.io/resource-in-use"), headers=headers) as r:
        assert r.status == 200
    async with http.patch(url, data=remove_first("kueue.x-k8s.io/resource-in-use"), headers=headers) as r:
        assert r.status == 422  # the test op guards against removing someone else's finalizer
    async with http.patch(url, data=remove_first("example.com/other"), headers=headers) as r:
        last = await r.json()
    assert r.status == 200 and "finalizers" not in last["metadata"]
    assert api.get("workloads", "w", NS) is None

    watch = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NS}/workloads?watch=1"
    events = await asyncio.wait_for(
        watch_lines(http, f"{watch}&resourceVersion={created['metadata']['resourceVersion']}", 3), 5
    )
    assert [e["type"] for e in events] == ["MODIFIED", "MODIFIED", "DELETED"]
    assert [e["object"]["metadata"].get("finalizers") for e in events] == [
        ["kueue.x-k8s.io/resource-in-use", "example.com/other"],
        ["example.com/other"],
        ["example.com/other"],
    ]
    assert last["metadata"]["resourceVersion"] == events[1]["object"]["metadata"]["resourceVersion"]
    assert int(events[2]["object"]["metadata"]["resourceVersion"]) > int(last["metadata"]["resourceVersion"])


async def test_no_finalizer_can_be_added_to_an_object_being_deleted(
    api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    w = workload("w")
    w["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
    await api.create(w)
    await api.delete("workloads", "w", namespace=NS)
    url = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NS}/workloads/w"
    patch = {"metadata": {"finalizers": ["kueue.x-k8s.io/resource-in-use", "example.com/b", "example.com/a"]}}
    headers = {"Content-Type": "application/merge-patch+json"}
    async with http.patch(url, data=orjson.dumps(patch), headers=headers) as response:
        error = await response.json()
    assert response.status == 422 and error["reason"] == "Invalid"
    forbidden = (
        "Forbidden: no new finalizers can be added if the object is being deleted, "
        'found new finalizers []string{"example.com/a", "example.com/b"}'
    )
    assert error["message"] == f'Workload.kueue.x-k8s.io "w" is invalid: metadata.finalizers: {forbidden}'
    cause = {"reason": "FieldValueForbidden", "message": forbidden, "field": "metadata.finalizers"}
    assert error["details"]["causes"] == [cause, cause]
    held = api.get("workloads", "w", NS)
    assert held is not None and held["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]


async def test_deleting_a_namespace_terminates_it_then_removes_its_content(
    api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    await api.create(job("j"))
    await api.delete("namespaces", NS)
    terminating = api.get("namespaces", NS)
    assert terminating is not None and terminating["status"]["phase"] == "Terminating"
    assert api.get("jobs", "j", NS) is not None  # still there while the namespace terminates, as on a cluster
    async with http.post(f"/apis/batch/v1/namespaces/{NS}/jobs", json=job("late")) as response:
        refused = await response.json()
    assert response.status == 403
    assert refused["message"].endswith(
        f"unable to create new content in namespace {NS} because it is being terminated"
    )
    # the cause as kube-apiserver's NamespaceLifecycle gives it (golden error-403-namespace-terminating)
    captured = json.loads((GOLDEN / "error-403-namespace-terminating.json").read_text())["response"]["body"]
    captured_cause = captured["details"]["causes"][0]
    expected_cause = {**captured_cause, "message": f"namespace {NS} is being terminated"}
    assert refused["details"]["causes"] == [expected_cause]
    await api.wait_for(lambda: api.get("namespaces", NS) is None, timeout=5)
    assert api.list("jobs", NS) == []


async def test_generate_name_appends_five_characters(http: aiohttp.ClientSession) -> None:
    body = workload("")
    del body["metadata"]["name"]
    body["metadata"]["generateName"] = "job-sample-"
    async with http.post(f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NS}/workloads", json=body) as response:
        created = await response.json()
    assert response.status == 201
    name = created["metadata"]["name"]
    assert name.startswith("job-sample-") and len(name) == len("job-sample-") + 5


async def test_unknown_fields_are_pruned_from_custom_resources(api: FakeApiServer) -> None:
    w = workload("w")
    w["spec"]["notAField"] = 1
    w["status"] = {"conditions": []}
    created = await api.create(w)
    assert "notAField" not in created["spec"]
    assert "status" not in created  # status is a subresource: ignored on create
    patched = await api.patch(
        "workloads",
        "w",
        {"status": {"admission": {"clusterQueue": "cq", "podSetAssignments": []}, "bogus": 1}},
        namespace=NS,
        subresource="status",
    )
    assert patched["status"] == {"admission": {"clusterQueue": "cq", "podSetAssignments": []}}


# ---- the Job controller stand-in ---------------------------------------------------------------------------
async def test_job_controller_tracks_suspend_and_completion(api: FakeApiServer) -> None:
    await api.create(job("j"))
    suspended = api.get("jobs", "j", NS)
    assert suspended is not None
    assert [(c["type"], c["status"], c["reason"]) for c in suspended["status"]["conditions"]] == [
        ("Suspended", "True", "JobSuspended")
    ]
    resumed = await api.patch("jobs", "j", {"spec": {"suspend": False}}, namespace=NS)
    resumed = api.get("jobs", "j", NS)
    assert resumed is not None and resumed["status"]["active"] == 2 and resumed["status"]["startTime"]
    assert resumed["status"]["conditions"][0]["reason"] == "JobResumed"

    done = await api.complete_job(NS, "j")
    types = [(c["type"], c["reason"]) for c in done["status"]["conditions"] if c["type"] != "Suspended"]
    assert types == [("SuccessCriteriaMet", "CompletionsReached"), ("Complete", "CompletionsReached")]
    assert done["status"]["succeeded"] == 2 and done["status"]["completionTime"]


async def test_failed_job_gets_failure_target_then_failed(api: FakeApiServer) -> None:
    await api.create(job("j", suspend=False))
    failed = await api.complete_job(NS, "j", succeeded=False)
    types = [(c["type"], c["reason"]) for c in failed["status"]["conditions"] if c["type"] != "Suspended"]
    assert types == [("FailureTarget", "BackoffLimitExceeded"), ("Failed", "BackoffLimitExceeded")]


# ---- lists and watches -------------------------------------------------------------------------------------
async def test_list_pagination_with_limit_and_continue(
    api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    for i in range(5):
        await api.create(workload(f"w{i}"))
    names: list[str] = []
    token = ""
    while True:
        query = f"limit=2&continue={token}" if token else "limit=2"
        async with http.get(f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NS}/workloads?{query}") as response:
            page = await response.json()
        names += [item["metadata"]["name"] for item in page["items"]]
        token = page["metadata"].get("continue", "")
        if not token:
            break
    assert names == ["w0", "w1", "w2", "w3", "w4"]


async def test_field_and_label_selectors(api: FakeApiServer, http: aiohttp.ClientSession) -> None:
    await api.create(job("a", labels={"kueue.x-k8s.io/queue-name": "q"}))
    await api.create(job("b"))
    async with http.get(f"/apis/batch/v1/namespaces/{NS}/jobs?labelSelector=kueue.x-k8s.io/queue-name") as r:
        assert [i["metadata"]["name"] for i in (await r.json())["items"]] == ["a"]
    async with http.get("/apis/batch/v1/jobs?fieldSelector=metadata.name%3Db") as r:
        assert [i["metadata"]["name"] for i in (await r.json())["items"]] == ["b"]
    async with http.get("/apis/batch/v1/jobs?labelSelector=in%20(") as r:
        assert r.status == 400


async def test_watch_sees_objects_enter_and_leave_a_label_selector(
    api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    created = await api.create(job("a"))
    rv = created["metadata"]["resourceVersion"]
    url = f"/apis/batch/v1/namespaces/{NS}/jobs?watch=1&labelSelector=team%3Dx&resourceVersion={rv}"
    task = asyncio.create_task(watch_lines(http, url, 2))
    await asyncio.sleep(0)
    await api.patch("jobs", "a", {"metadata": {"labels": {"team": "x"}}}, namespace=NS)
    await api.patch("jobs", "a", {"metadata": {"labels": {"team": "y"}}}, namespace=NS)
    events = await asyncio.wait_for(task, 5)
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]


async def test_initial_events_end_with_an_annotated_bookmark(
    api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    await api.create(job("a"))
    url = (
        f"/apis/batch/v1/namespaces/{NS}/jobs?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
        "&resourceVersionMatch=NotOlderThan"
    )
    added, bookmark = await asyncio.wait_for(watch_lines(http, url, 2), 5)
    assert added["type"] == "ADDED" and added["object"]["metadata"]["name"] == "a"
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert bookmark["object"]["metadata"]["resourceVersion"] == str(api.store.rv)


async def test_server_side_watch_timeout_ends_the_stream(
    api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    url = f"/apis/batch/v1/namespaces/{NS}/jobs?watch=1&resourceVersion={api.store.rv}&timeoutSeconds=1"
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with http.get(url) as stream:
        assert await stream.read() == b""
    assert 0.9 <= loop.time() - started < 3


async def test_drop_watches_and_restart_end_streams_but_keep_data(
    api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    await api.create(job("a"))
    url = f"/apis/batch/v1/namespaces/{NS}/jobs?watch=1&resourceVersion={api.store.rv}"
    async with http.get(url) as stream:
        api.drop_watches()
        assert await asyncio.wait_for(stream.read(), 5) == b""
    port = api.port
    await api.restart()
    assert api.port == port
    async with http.get(f"/apis/batch/v1/namespaces/{NS}/jobs/a") as response:
        assert response.status == 200


async def test_delay_slows_every_request(api: FakeApiServer, http: aiohttp.ClientSession) -> None:
    api.delay(0.3)
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with http.get("/api/v1/namespaces") as response:
        assert response.status == 200
    assert loop.time() - started >= 0.3


async def test_injected_server_errors(api: FakeApiServer, http: aiohttp.ClientSession) -> None:
    api.fail_next_writes(1, status=500)
    async with http.post(f"/apis/batch/v1/namespaces/{NS}/jobs", json=job("a")) as response:
        assert response.status == 500 and (await response.json())["reason"] == "InternalError"


# ---- admission failure handling ----------------------------------------------------------------------------
def webhook_config(url: str, *, failure_policy: str, timeout: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "test"},
        "webhooks": [
            {
                "name": "vjob.test.example",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": failure_policy,
                "timeoutSeconds": timeout,
                "clientConfig": {
                    "url": url,
                    "caBundle": base64.b64encode(serving_material().ca_pem).decode(),
                },
                "rules": [
                    {
                        "apiGroups": ["batch"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["jobs"],
                    }
                ],
            }
        ],
    }


@pytest.fixture
async def slow_webhook() -> AsyncIterator[str]:
    """Answers at once, except for user `slow`, whom it keeps waiting until the test is over."""
    release = asyncio.Event()

    async def handle(request: web.Request) -> web.Response:
        review = await request.json()
        if review["request"]["userInfo"]["username"] == "slow":
            await release.wait()
        return web.json_response({"response": {"uid": review["request"]["uid"], "allowed": True}})

    app = web.Application()
    app.router.add_post("/validate", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=serving_material().server_context())
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"https://127.0.0.1:{port}/validate"
    finally:
        release.set()
        await runner.cleanup()


async def test_unreachable_webhook_fails_closed_or_open_per_failure_policy(
    api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    await api.create(webhook_config("https://127.0.0.1:1/validate", failure_policy="Fail"))
    async with http.post(f"/apis/batch/v1/namespaces/{NS}/jobs", json=job("a")) as response:
        body = await response.json()
    assert response.status == 500
    assert body["message"] == (
        'Internal error occurred: failed calling webhook "vjob.test.example": failed to call webhook: '
        'Post "https://127.0.0.1:1/validate?timeout=2s": dial tcp 127.0.0.1:1: connect: connection refused'
    )
    await api.patch(
        "validatingwebhookconfigurations",
        "test",
        webhook_config("https://127.0.0.1:1/validate", failure_policy="Ignore"),
    )
    async with http.post(f"/apis/batch/v1/namespaces/{NS}/jobs", json=job("a")) as response:
        assert response.status == 201


async def test_webhook_timeout_and_identity_from_token(
    api: FakeApiServer, http: aiohttp.ClientSession, slow_webhook: str
) -> None:
    await api.create(webhook_config(slow_webhook, failure_policy="Fail", timeout=1))
    api.add_token("slow-token", "slow", ["team"])
    headers = {"Authorization": "Bearer slow-token"}
    async with http.post(f"/apis/batch/v1/namespaces/{NS}/jobs", json=job("a"), headers=headers) as response:
        body = await response.json()
    assert response.status == 500 and "context deadline exceeded" in body["message"]
    async with http.post(f"/apis/batch/v1/namespaces/{NS}/jobs", json=job("b")) as response:
        assert response.status == 201
    users = [r["request"]["userInfo"] for r in api.admission_reviews]
    assert users[0] == {"username": "slow", "groups": ["team", "system:authenticated"]}


# ---- kubernetes-asyncio, as the controller uses it ---------------------------------------------------------
async def test_kubernetes_asyncio_client_works_with_the_kubeconfig(api: FakeApiServer) -> None:
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(api.kubeconfig_path()), client_configuration=configuration)
    async with client.ApiClient(configuration) as api_client:
        custom = client.CustomObjectsApi(api_client)
        await custom.create_namespaced_custom_object(
            "kueue.x-k8s.io", "v1beta2", NS, "workloads", workload("w")
        )
        listed = await custom.list_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", NS, "workloads")
        assert [i["spec"]["active"] for i in listed["items"]] == [True]
        stream = watch.Watch()
        events = []
        async for event in stream.stream(
            custom.list_namespaced_custom_object,
            "kueue.x-k8s.io",
            "v1beta2",
            NS,
            "workloads",
            resource_version="0",
            timeout_seconds=1,
        ):
            events.append((event["type"], event["object"]["metadata"]["name"]))
        assert events == [("ADDED", "w")]
        batch = client.BatchV1Api(api_client)
        created = await batch.create_namespaced_job(NS, job("j"))
        assert created.spec.backoff_limit == 6
        with pytest.raises(client.ApiException) as conflict:
            stale = json.loads(json.dumps(api_client.sanitize_for_serialization(created)))
            await api.patch("jobs", "j", {"metadata": {"labels": {"x": "y"}}}, namespace=NS)
            await batch.replace_namespaced_job("j", NS, stale)
        assert conflict.value.status == 409


# ---- custom resource strictness ----------------------------------------------------------------------------
async def test_strict_field_validation_names_unknown_fields(http: aiohttp.ClientSession) -> None:
    body = workload("w")
    body["spec"]["queueNmae"] = "typo"
    url = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NS}/workloads?fieldValidation=Strict"
    async with http.post(url, json=body) as response:
        error = await response.json()
    assert response.status == 400
    assert error["message"] == (
        'Workload in version "v1beta2" cannot be handled as a Workload: '
        'strict decoding error: unknown field "spec.queueNmae"'
    )


async def test_custom_resources_refuse_unconditional_updates(
    api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    created = await api.create(workload("w"))
    del created["metadata"]["resourceVersion"]
    async with http.put(
        f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NS}/workloads/w", json=created
    ) as response:
        error = await response.json()
    assert response.status == 422
    assert error["message"].endswith(
        "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
    )


async def test_local_queue_cluster_queue_is_immutable(
    api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    lq = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "q", "namespace": NS},
        "spec": {"clusterQueue": "a"},
    }
    await api.create(lq)
    url = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NS}/localqueues/q"
    patch = {"spec": {"clusterQueue": "b"}}
    headers = {"Content-Type": "application/merge-patch+json"}
    async with http.patch(url, data=orjson.dumps(patch), headers=headers) as response:
        error = await response.json()
    assert response.status == 422
    assert error["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "string": field is immutable',
            "field": "spec.clusterQueue",
        }
    ]


async def test_watch_as_table_sends_column_definitions_once(
    api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    await api.create(workload("w"))
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    url = f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NS}/workloads?watch=1&resourceVersion=0"
    events: list[dict[str, Any]] = []
    async with http.get(url, headers={"Accept": accept}) as stream:
        await api.patch("workloads", "w", {"metadata": {"labels": {"x": "y"}}}, namespace=NS)
        async for line in stream.content:
            events.append(orjson.loads(line))
            if len(events) == 2:
                break
    first, second = (e["object"] for e in events)
    assert [c["name"] for c in first["columnDefinitions"]][:2] == ["Name", "Queue"]
    assert second["columnDefinitions"] is None
    assert second["rows"][0]["cells"][:2] == ["w", "q"]


async def test_client_configuration_acts_as_the_requested_user(api: FakeApiServer, slow_webhook: str) -> None:
    await api.create(webhook_config(slow_webhook, failure_policy="Fail"))
    configuration = api.client_configuration(user="alice", groups=["team-a"])
    async with client.ApiClient(configuration) as api_client:
        await client.BatchV1Api(api_client).create_namespaced_job(NS, job("j"))
    (review,) = api.admission_reviews
    assert review["request"]["userInfo"] == {
        "username": "alice",
        "groups": ["team-a", "system:authenticated"],
    }
    kubeconfig = api.kubeconfig_path(user="alice", groups=["team-a"]).read_text()
    assert "token: user-alice" in kubeconfig


async def test_names_and_labels_are_validated_like_object_meta(
    api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    long_name = "j" * 64
    async with http.post(f"/apis/batch/v1/namespaces/{NS}/jobs", json=job(long_name)) as response:
        error = await response.json()
    assert response.status == 422
    # The job-name label (pod template, and metadata copied from it) cannot hold a 64-character name.
    assert {c["field"] for c in error["details"]["causes"]} == {"metadata.labels", "spec.template.labels"}
    # kube-apiserver v1.36 (apimachinery's content.IsLabelValue) measures label values in bytes
    assert error["details"]["causes"][0]["message"].endswith("must be no more than 63 bytes")

    async with http.post(f"/apis/batch/v1/namespaces/{NS}/jobs", json=job("Bad_Name")) as response:
        error = await response.json()
    assert response.status == 422
    assert error["details"]["causes"][0]["field"] == "metadata.name"
    assert "a lowercase RFC 1123 subdomain" in error["details"]["causes"][0]["message"]

    bad_label = job("ok", labels={"kueue.x-k8s.io/queue-name": "not a valid value"})
    async with http.post(f"/apis/batch/v1/namespaces/{NS}/jobs", json=bad_label) as response:
        error = await response.json()
    assert response.status == 422
    assert error["message"].startswith(
        'Job.batch "ok" is invalid: metadata.labels: Invalid value: "not a valid value"'
    )


async def test_delete_collection_honours_selectors(api: FakeApiServer, http: aiohttp.ClientSession) -> None:
    await api.create(job("a", labels={"team": "x"}))
    await api.create(job("b", labels={"team": "y"}))
    async with http.delete(f"/apis/batch/v1/namespaces/{NS}/jobs?labelSelector=team%3Dx") as response:
        deleted = await response.json()
    assert response.status == 200
    assert [i["metadata"]["name"] for i in deleted["items"]] == ["a"]
    assert [j["metadata"]["name"] for j in api.list("jobs", NS)] == ["b"]


async def test_service_webhooks_are_verified_for_the_service_dns_name(
    api: FakeApiServer, http: aiohttp.ClientSession, slow_webhook: str
) -> None:
    config = webhook_config(slow_webhook, failure_policy="Fail")
    client_config = config["webhooks"][0]["clientConfig"]
    del client_config["url"]
    client_config["service"] = {"name": "hooks", "namespace": "system", "path": "/validate"}
    api.set_service_endpoint(namespace="system", name="hooks", address=slow_webhook.split("/")[2])
    await api.create(config)
    async with http.post(f"/apis/batch/v1/namespaces/{NS}/jobs", json=job("a")) as response:
        error = await response.json()
    # The test server's certificate names 127.0.0.1 and localhost, not hooks.system.svc: refused.
    assert response.status == 500
    assert 'Post "https://hooks.system.svc:443/validate?timeout=2s"' in error["message"]
    assert "certificate is not valid for 'hooks.system.svc'" in error["message"]


async def test_make_fake_api_builds_servers_with_other_options(make_fake_api: Any) -> None:
    quiet = await make_fake_api(job_controller=False)
    await quiet.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    created = await quiet.create(job("a"))
    assert created["status"] == {}
    assert quiet.get("jobs", "a", NS)["status"] == {}  # type: ignore[index]


async def test_generation_only_where_the_apiserver_keeps_it(api: FakeApiServer) -> None:
    config_map = await api.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": NS},
            "data": {"a": "1"},
        }
    )
    assert "generation" not in config_map["metadata"]
    created = await api.create(job("j"))
    assert created["metadata"]["generation"] == 1
    patched = await api.patch("jobs", "j", {"spec": {"suspend": False}}, namespace=NS)
    assert patched["metadata"]["generation"] == 2


async def test_crds_are_served_once_created_and_must_be_structural(
    api: FakeApiServer, http: aiohttp.ClientSession
) -> None:
    items = {"type": "object", "properties": {"name": {"type": "string"}}}
    crd: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "parts": {
                                            "type": "array",
                                            "x-kubernetes-list-type": "map",
                                            "x-kubernetes-list-map-keys": ["name"],
                                            "items": items,
                                        }
                                    },
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    async with http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd) as response:
        refused = await response.json()
    assert response.status == 422
    assert refused["details"]["causes"][0]["field"].endswith("properties[parts].items.properties[name]")

    items["required"] = ["name"]
    async with http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd) as response:
        assert response.status == 201
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"parts": []},
    }
    async with http.post(f"/apis/example.com/v1/namespaces/{NS}/widgets", json=widget) as response:
        assert response.status == 201
    stored = api.get("customresourcedefinitions", "widgets.example.com")
    assert stored is not None
    assert [c["type"] for c in stored["status"]["conditions"]] == ["NamesAccepted", "Established"]
