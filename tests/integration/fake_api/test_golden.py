"""The fake API server replayed against traffic captured from kube-apiserver v1.36.2 (tests/golden).

Each test sends the captured request and compares the answer field by field. Values that differ on every run
(uids, timestamps, resourceVersions) are normalised on both sides; managedFields are not implemented by the
fake (see README) and are dropped from the captures before comparing. Everything else must be equal.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.fakeapi import ADMIN_TOKEN, FakeApiServer
from tests.fakeapi import golden as golden_captures
from tests.fakeapi.golden import normalise, replay, replay_file
from tests.fakeapi.tls import serving_material
from tests.golden import GOLDEN, capture_pods

golden = golden_captures.load


@pytest.fixture
async def http(fake_api: FakeApiServer) -> AsyncIterator[aiohttp.ClientSession]:
    await fake_api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "golden"}})
    connector = aiohttp.TCPConnector(ssl=fake_api.client_ssl_context())
    async with aiohttp.ClientSession(
        base_url=fake_api.url, connector=connector, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    ) as session:
        yield session


# ---- discovery ---------------------------------------------------------------------------------------------
async def test_version_document_has_the_same_fields(http: aiohttp.ClientSession) -> None:
    expected, actual = await replay_file(http, "discovery-version.json")
    assert set(actual) == set(expected)
    assert (actual["major"], actual["minor"], actual["gitVersion"]) == ("1", "36", "v1.36.2")


async def test_core_group_versions(http: aiohttp.ClientSession) -> None:
    expected, actual = await replay_file(http, "discovery-api.json")
    assert actual["kind"] == expected["kind"] and actual["versions"] == expected["versions"]


@pytest.mark.parametrize(
    "capture",
    [
        "discovery-api-v1.json",
        "discovery-apis-batch-v1.json",
        "discovery-apis-coordination-v1.json",
        "discovery-apis-events-v1.json",
        "discovery-apis-admissionregistration-v1.json",
        "discovery-apis-kueue-v1beta2.json",
        "discovery-apis-authentication-v1.json",
    ],
)
async def test_resource_lists_match_for_every_kind_we_serve(
    http: aiohttp.ClientSession, capture: str
) -> None:
    expected, actual = await replay_file(http, capture)
    assert actual["groupVersion"] == expected["groupVersion"]
    ours = {r["name"]: r for r in actual["resources"]}
    theirs = {r["name"]: r for r in expected["resources"]}
    assert ours, "no resources served"
    for name, resource in ours.items():
        assert resource == theirs[name], name


async def test_aggregated_discovery_matches_for_kueue_and_batch(http: aiohttp.ClientSession) -> None:
    capture = golden("discovery-aggregated-apis-with-kueue.json")
    headers = {"Accept": capture["request"]["accept"]}
    async with http.get("/apis", headers=headers) as response:
        assert response.headers["Content-Type"] == capture["response"]["contentType"]
        actual = await response.json(content_type=None)
    expected_groups = {g["metadata"]["name"]: g for g in capture["response"]["body"]["items"]}
    for group in actual["items"]:
        name = group["metadata"]["name"]
        theirs = {v["version"]: v for v in expected_groups[name]["versions"]}
        for version in group["versions"]:
            by_resource = {r["resource"]: r for r in theirs[version["version"]]["resources"]}
            for resource in version["resources"]:
                if resource["resource"] in ("deployments", "statefulsets"):
                    # Stored only, without the scale subresource (see README): compare the rest.
                    theirs_subs = by_resource[resource["resource"]]["subresources"]
                    expected = dict(
                        by_resource[resource["resource"]],
                        subresources=[s for s in theirs_subs if s["subresource"] != "scale"],
                    )
                    assert resource == expected
                    continue
                assert resource == by_resource[resource["resource"]], (name, resource["resource"])
    assert actual["kind"] == "APIGroupDiscoveryList"


# ---- objects, patches, errors -----------------------------------------------------------------------------
async def test_job_create_applies_every_server_side_default(http: aiohttp.ClientSession) -> None:
    expected, actual = await replay_file(http, "job-create.json")
    assert actual == expected


async def test_job_patches_in_sequence_match(http: aiohttp.ClientSession, fake_api: FakeApiServer) -> None:
    await replay_file(http, "job-create.json")
    for name in ("job-patch-merge.json", "job-patch-json.json", "job-patch-strategic.json"):
        expected, actual = await replay_file(http, name)
        assert actual == expected, name
    expected, actual = await replay_file(http, "job-patch-json-failed-test.json")
    assert actual == expected


async def test_job_list_with_label_selector(http: aiohttp.ClientSession) -> None:
    for name in (
        "job-create.json",
        "job-patch-merge.json",
        "job-patch-json.json",
        "job-patch-strategic.json",
    ):
        await replay_file(http, name)
    expected, actual = await replay_file(http, "job-list.json")
    assert actual == expected


@pytest.mark.parametrize(
    "capture",
    [
        "error-404-notfound.json",
        "error-409-alreadyexists.json",
        "error-409-conflict.json",
        "error-422-invalid.json",
    ],
)
async def test_error_bodies(http: aiohttp.ClientSession, capture: str) -> None:
    await replay_file(http, "job-create.json")
    expected, actual = await replay_file(http, capture)
    assert actual == expected


async def test_list_at_compacted_resource_version_is_410(
    http: aiohttp.ClientSession, fake_api: FakeApiServer
) -> None:
    await replay_file(http, "job-create.json")
    fake_api.compact()
    expected, actual = await replay_file(http, "error-410-expired-list.json")
    assert actual == expected


@pytest.mark.parametrize(
    "capture",
    [
        "kueue-resourceflavor-create.json",
        "kueue-clusterqueue-create.json",
        "kueue-localqueue-create.json",
        "kueue-clusterqueue-invalid.json",
    ],
)
async def test_kueue_objects_get_crd_defaults_and_validation(
    http: aiohttp.ClientSession, capture: str
) -> None:
    expected, actual = await replay_file(http, capture)
    assert actual == expected


async def test_workload_create_and_status_subresource(http: aiohttp.ClientSession) -> None:
    for name in (
        "kueue-workload-create.json",
        "kueue-workload-status-merge-patch.json",
        "kueue-workload-status-on-main-resource-ignored.json",
    ):
        expected, actual = await replay_file(http, name)
        assert actual == expected, name


async def test_status_sent_to_main_resource_keeps_resource_version(http: aiohttp.ClientSession) -> None:
    await replay_file(http, "kueue-workload-create.json")
    _, with_status = await replay(http, golden("kueue-workload-status-merge-patch.json"))
    _, ignored = await replay(http, golden("kueue-workload-status-on-main-resource-ignored.json"))
    assert ignored["metadata"]["resourceVersion"] == with_status["metadata"]["resourceVersion"]


# ---- tables ------------------------------------------------------------------------------------------------
def ages(cells: list[Any]) -> list[Any]:
    """Ages are whole seconds since creation: a capture's "0s" may be "1s" when a second boundary passes."""
    return ["<age>" if isinstance(c, str) and re.fullmatch(r"\d+[smhd]", c) else c for c in cells]


async def _seed_queue_objects(http: aiohttp.ClientSession) -> None:
    for name in (
        "job-create.json",
        "job-patch-merge.json",
        "job-patch-json.json",
        "job-patch-strategic.json",
        "kueue-resourceflavor-create.json",
        "kueue-clusterqueue-create.json",
        "kueue-localqueue-create.json",
        "kueue-workload-create.json",
        "kueue-workload-status-merge-patch.json",
    ):
        await replay_file(http, name)


@pytest.mark.parametrize(
    "capture",
    ["table-jobs.json", "table-workloads.json", "table-clusterqueues.json", "table-localqueues.json"],
)
async def test_tables_have_the_printer_columns_and_cells(http: aiohttp.ClientSession, capture: str) -> None:
    await _seed_queue_objects(http)
    expected, actual = await replay_file(http, capture)
    assert actual["columnDefinitions"] == expected["columnDefinitions"]
    assert [ages(row["cells"]) for row in actual["rows"]] == [ages(row["cells"]) for row in expected["rows"]]
    assert [row["object"] for row in actual["rows"]] == [row["object"] for row in expected["rows"]]


# ---- watch -------------------------------------------------------------------------------------------------
async def test_watch_framing_matches_captured_stream(
    http: aiohttp.ClientSession, fake_api: FakeApiServer
) -> None:
    captured = [json.loads(line) for line in (GOLDEN / "watch-jobs-from-rv.ndjson").read_text().splitlines()]
    _, created = await replay(http, golden("job-create.json"))
    start = created["metadata"]["resourceVersion"]
    url = f"/apis/batch/v1/namespaces/golden/jobs?watch=1&resourceVersion={start}&timeoutSeconds=5"
    async with http.get(url) as stream:
        for name in ("job-patch-merge.json", "job-patch-json.json", "job-patch-strategic.json"):
            await replay(http, golden(name))
        lines = []
        async for raw in stream.content:
            assert raw.endswith(b"\n") and raw.count(b"\n") == 1  # one event per line
            lines.append(json.loads(raw))
            if len(lines) == len(captured):
                break
    assert [e["type"] for e in lines] == [e["type"] for e in captured]
    assert [normalise(e["object"]) for e in lines] == [normalise(e["object"]) for e in captured]


async def test_watch_past_history_window_gets_the_410_error_event(
    http: aiohttp.ClientSession, fake_api: FakeApiServer
) -> None:
    _, created = await replay(http, golden("job-create.json"))
    await replay(http, golden("job-patch-merge.json"))
    fake_api.compact()
    rv = int(created["metadata"]["resourceVersion"])
    async with http.get(f"/apis/batch/v1/namespaces/golden/jobs?watch=1&resourceVersion={rv}") as stream:
        events = [json.loads(line) async for line in stream.content]
    assert events == [
        {
            "type": "ERROR",
            "object": {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": f"too old resource version: {rv} ({fake_api.store.compacted_rv})",
                "reason": "Expired",
                "code": 410,
            },
        }
    ]


async def test_watch_from_old_version_inside_window_replays_history(
    http: aiohttp.ClientSession, fake_api: FakeApiServer
) -> None:
    _, created = await replay(http, golden("job-create.json"))
    await replay(http, golden("job-patch-merge.json"))
    rv = int(created["metadata"]["resourceVersion"]) - 1
    url = f"/apis/batch/v1/namespaces/golden/jobs?watch=1&resourceVersion={rv}&timeoutSeconds=1"
    async with http.get(url) as stream:
        events = [json.loads(line) async for line in stream.content]
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "MODIFIED"]


# ---- admission ---------------------------------------------------------------------------------------------
class GoldenWebhook:
    """The webhook used for the captures: mutate adds an annotation, validate denies `golden/deny`."""

    def __init__(self) -> None:
        self.reviews: list[tuple[str, dict[str, str], Any]] = []

    async def handle(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.reviews.append((request.path_qs, dict(request.headers), review))
        uid = review["request"]["uid"]
        answer: dict[str, Any] = {"uid": uid, "allowed": True}
        obj = review["request"]["object"] or {}
        if request.path == "/mutate" and "golden/mutated" not in (obj["metadata"].get("annotations") or {}):
            patch = [{"op": "add", "path": "/metadata/annotations", "value": {"golden/mutated": "yes"}}]
            answer["patchType"] = "JSONPatch"
            answer["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        if request.path == "/validate" and "golden/deny" in (obj["metadata"].get("labels") or {}):
            answer = {
                "uid": uid,
                "allowed": False,
                "status": {"code": 403, "message": "denied by golden webhook: label golden/deny is set"},
            }
        return web.json_response(
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": answer}
        )


@pytest.fixture
async def golden_webhook(fake_api: FakeApiServer) -> AsyncIterator[GoldenWebhook]:
    hook = GoldenWebhook()
    app = web.Application()
    app.router.add_post("/mutate", hook.handle)
    app.router.add_post("/validate", hook.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=serving_material().server_context())
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    bundle = base64.b64encode(serving_material().ca_pem).decode()
    for name in ("webhookconfiguration-mutating.json", "webhookconfiguration-validating.json"):
        config = golden(name)
        for webhook in config["webhooks"]:
            path = webhook["clientConfig"]["url"].rsplit("/", 1)[1]
            webhook["clientConfig"] = {"url": f"https://127.0.0.1:{port}/{path}", "caBundle": bundle}
        await fake_api.create(config)
    await fake_api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "golden-hooked"}})
    try:
        yield hook
    finally:
        await runner.cleanup()


def _review_shape(review: dict[str, Any]) -> dict[str, Any]:
    request = dict(review["request"])
    for key in ("object", "oldObject"):
        if request.get(key):
            request[key] = dict(request[key], metadata=dict(request[key]["metadata"]))
            request[key]["metadata"].pop("managedFields", None)
    return normalise(dict(review, request=request))


async def test_admission_reviews_are_built_like_kube_apiserver(
    http: aiohttp.ClientSession, golden_webhook: GoldenWebhook
) -> None:
    capture = golden("webhook-create-job-mutated-response.json")
    status, body = await replay(http, capture)
    assert status == 201
    assert normalise(body) == normalise(capture["response"]["body"])

    expected = [
        golden("admission-00-mutate-create-jobs.json"),
        golden("admission-01-validate-create-jobs.json"),
    ]
    assert len(golden_webhook.reviews) == 2
    for (path_qs, headers, review), want in zip(golden_webhook.reviews, expected, strict=True):
        assert path_qs == want["path"]
        for header in ("Content-Type", "Accept", "User-Agent"):
            assert headers[header] == want["headers"][header]
        assert _review_shape(review) == _review_shape(want["review"])


async def test_update_reviews_carry_old_object_and_bumped_generation_only_for_validation(
    http: aiohttp.ClientSession, golden_webhook: GoldenWebhook
) -> None:
    await replay(http, golden("webhook-create-job-mutated-response.json"))
    golden_webhook.reviews.clear()
    status, _ = await replay(http, golden("webhook-update-job-suspend-false.json"))
    assert status == 200
    mutate, validate = (review for _, _, review in golden_webhook.reviews)
    want_mutate = golden("admission-04-mutate-update-jobs.json")["review"]
    want_validate = golden("admission-05-validate-update-jobs.json")["review"]
    assert _review_shape(mutate) == _review_shape(want_mutate)
    assert _review_shape(validate) == _review_shape(want_validate)


async def test_denial_reaches_the_client_as_kube_apiserver_sends_it(
    http: aiohttp.ClientSession, golden_webhook: GoldenWebhook
) -> None:
    expected, actual = await replay_file(http, "webhook-create-job-denied-response.json")
    assert actual == expected


async def test_status_subresource_review(http: aiohttp.ClientSession, golden_webhook: GoldenWebhook) -> None:
    await replay_file(http, "job-create.json")
    await replay_file(http, "kueue-workload-create.json")
    await replay_file(http, "kueue-workload-status-merge-patch.json")
    golden_webhook.reviews.clear()
    expected, actual = await replay_file(http, "webhook-workload-status-update.json")
    assert actual == expected
    ((_, _, review),) = golden_webhook.reviews
    want = golden("admission-08-validate-update-workloads-status.json")["review"]
    assert _review_shape(review) == _review_shape(want)


# ---- pods: ValidatePodUpdate's rules for gated pods, and a controller's condition on pods/status ---------
_SPEC_DIFF = re.compile(r"\n@@ [^\n]* @@\n(?:[ +-][^\n]*\n)*")


def _without_spec_diff(status: dict[str, Any]) -> dict[str, Any]:
    """A Status without the diff of its internal PodSpec that kube-apiserver appends to the error for a
    change to a field no rule lets change (the fake does not reproduce it); all else is compared."""
    out = dict(status)
    out["message"] = _SPEC_DIFF.sub("", status["message"])
    if "details" in status:
        causes = [{**c, "message": _SPEC_DIFF.sub("", c["message"])} for c in status["details"]["causes"]]
        out["details"] = {**status["details"], "causes": causes}
    return out


_POD_FIELDS = (("spec", "schedulingGates"), ("spec", "nodeSelector"), ("spec", "tolerations"))


async def test_pod_updates_are_refused_and_allowed_as_kube_apiserver_does(
    http: aiohttp.ClientSession,
) -> None:
    """The captures of tests/golden/capture_pods.py, replayed in their order on one gated pod."""
    await http.post(
        "/api/v1/namespaces",
        json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "golden-pods"}},
    )
    for name, *_ in capture_pods.STEPS:
        capture = golden(f"{name}.json")
        status, body = await replay(http, capture)
        expected = capture["response"]["body"]
        assert status == capture["response"]["status"], (name, body)
        if expected.get("kind") == "Status":
            assert _without_spec_diff(normalise(body)) == _without_spec_diff(normalise(expected)), name
            continue
        for section, field in _POD_FIELDS:
            assert body[section].get(field) == expected[section].get(field), (name, field)
        assert normalise(body["status"].get("conditions")) == normalise(expected["status"].get("conditions"))
