"""The webhook over real HTTPS: golden requests on every path, clear HTTP errors, probes, metrics, TLS."""

from __future__ import annotations

import asyncio
import copy
import logging
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from cryptography import x509

from kueue_webhook.api.config import Configuration, parse_configuration
from kueue_webhook.http.admission import MAX_BODY_BYTES
from kueue_webhook.http.certs import ensure_certificates
from kueue_webhook.runtime import JsonFormatter
from tests.unit.admission.golden import apply_patch, decode_patch, golden_capture
from tests.unit.admission.servers import Webhook, golden_object, review_for


async def post(http: aiohttp.ClientSession, path: str, review: Any) -> tuple[int, dict[str, Any]]:
    async with http.post(
        path, data=orjson.dumps(review), headers={"Content-Type": "application/json"}
    ) as response:
        return response.status, orjson.loads(await response.read())


#: golden capture -> allowed? (05 is an admin starting a queued Job by hand: the anti-bypass rule)
GOLDEN_VERDICTS = {0: True, 1: True, 2: True, 3: True, 4: True, 5: False, 6: True, 7: True, 8: True}


@pytest.mark.parametrize(("number", "allowed"), sorted(GOLDEN_VERDICTS.items()))
async def test_golden_requests_get_a_review_for_their_uid(
    http: aiohttp.ClientSession, number: int, allowed: bool
) -> None:
    capture = golden_capture(number)
    status, body = await post(http, capture["path"], capture["review"])
    assert status == 200
    assert (body["apiVersion"], body["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    response = body["response"]
    assert response["uid"] == capture["review"]["request"]["uid"]
    assert response["allowed"] is allowed, response
    assert response["status"]["code"] == (200 if allowed else 403)


@pytest.mark.parametrize(("number", "path"), [(5, "/validate-batch-v1-job"), (4, "/mutate-batch-v1-job")])
async def test_kueue_job_paths_answer_like_the_catch_all_paths(
    http: aiohttp.ClientSession, number: int, path: str
) -> None:
    capture = golden_capture(number)
    _, specific = await post(http, path, capture["review"])
    _, generic = await post(http, capture["path"], capture["review"])
    assert specific == generic


async def test_mutation_arrives_as_a_base64_json_patch(webhook: Webhook, http: aiohttp.ClientSession) -> None:
    webhook.view.add_local_queue("golden-hooked", "default")
    capture = golden_capture(6)  # kubectl create job, no label
    _, body = await post(http, "/mutate-batch-v1-job", capture["review"])
    response = body["response"]
    assert response["allowed"] and response["patchType"] == "JSONPatch"
    job = apply_patch(capture["review"]["request"]["object"], decode_patch(response))
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    assert job["spec"]["suspend"] is True


@pytest.mark.parametrize(
    "name",
    [
        "kueue-clusterqueue-create",
        "kueue-localqueue-create",
        "kueue-resourceflavor-create",
        "kueue-workload-create",
    ],
)
async def test_golden_kueue_objects_are_admitted_on_their_paths(
    http: aiohttp.ClientSession, name: str
) -> None:
    obj = golden_object(name)
    _, body = await post(http, f"/validate-kueue-x-k8s-io-v1beta2-{obj['kind'].lower()}", review_for(obj))
    assert body["response"]["allowed"], body


async def test_invalid_cluster_queue_is_denied_with_kueues_message(http: aiohttp.ClientSession) -> None:
    obj = golden_object("kueue-clusterqueue-create")
    quota = obj["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    quota["lendingLimit"] = 100  # no cohort, and above the nominal quota
    _, body = await post(http, "/validate-kueue-x-k8s-io-v1beta2-clusterqueue", review_for(obj))
    status = body["response"]["status"]
    assert (body["response"]["allowed"], status["code"]) == (False, 403)
    assert status["message"] == (
        '[spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "100": must be nil '
        "when cohort is empty, "
        'spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: Invalid value: "100": '
        "must be less than or equal to the nominalQuota]"
    )


async def test_local_queue_cannot_move_to_another_cluster_queue(http: aiohttp.ClientSession) -> None:
    old = golden_object("kueue-localqueue-create")
    new = copy.deepcopy(old)
    new["spec"]["clusterQueue"] = "elsewhere"
    _, body = await post(
        http, "/validate-kueue-x-k8s-io-v1beta2-localqueue", review_for(new, operation="UPDATE", old=old)
    )
    assert (
        body["response"]["status"]["message"]
        == 'spec.clusterQueue: Invalid value: "elsewhere": field is immutable'
    )


async def test_admitted_workload_keeps_its_admission(http: aiohttp.ClientSession) -> None:
    old = golden_capture(8)["review"]["request"]["oldObject"]
    old["status"]["conditions"] = [
        {
            "type": "QuotaReserved",
            "status": "True",
            "reason": "QuotaReserved",
            "message": "",
            "lastTransitionTime": "2026-11-21T22:55:51Z",
        }
    ]
    new = copy.deepcopy(old)
    new["status"]["admission"]["clusterQueue"] = "other"
    _, body = await post(
        http, "/validate-kueue-x-k8s-io-v1beta2-workload", review_for(new, operation="UPDATE", old=old)
    )
    assert body["response"]["status"]["message"].startswith("status.admission: Invalid value: {")
    assert body["response"]["status"]["message"].endswith("}: field is immutable")
    del new["status"]["admission"]
    _, body = await post(
        http, "/validate-kueue-x-k8s-io-v1beta2-workload", review_for(new, operation="UPDATE", old=old)
    )
    assert body["response"]["status"]["message"] == (
        "status.admission: Required value: must be set while the QuotaReserved condition is true"
    )


async def test_pinned_kueue_path_refuses_another_kind(http: aiohttp.ClientSession) -> None:
    obj = golden_object("kueue-localqueue-create")
    _, body = await post(http, "/validate-kueue-x-k8s-io-v1beta2-clusterqueue", review_for(obj))
    assert body["response"]["status"] == {
        "code": 400,
        "reason": "BadRequest",
        "message": "this endpoint validates kueue.x-k8s.io ClusterQueue, "
        "got kueue.x-k8s.io/v1beta2, Kind=LocalQueue",
    }


# -- refusals that are not reviews ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "request body is not valid JSON"),
        (b"[]", "request body must be a JSON object (an AdmissionReview)"),
        (
            b'{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{}}',
            'apiVersion must be "admission.k8s.io/v1"',
        ),
        (
            b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}}',
            "request.uid must be a non-empty string",
        ),
    ],
)
async def test_a_body_that_is_not_a_review_gets_400_with_a_status(
    http: aiohttp.ClientSession, body: bytes, message: str
) -> None:
    async with http.post("/validate", data=body, headers={"Content-Type": "application/json"}) as response:
        assert response.status == 400
        status = orjson.loads(await response.read())
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 400, "BadRequest")
    assert status["message"].startswith(message)


async def test_a_body_over_3_mib_is_refused_with_413(http: aiohttp.ClientSession) -> None:
    review = golden_capture(1)["review"]
    review["request"]["object"]["metadata"]["annotations"] = {"big": "x" * MAX_BODY_BYTES}
    async with http.post(
        "/validate", data=orjson.dumps(review), headers={"Content-Type": "application/json"}
    ) as response:
        assert response.status == 413
        assert "exceeds 3145728 bytes" in orjson.loads(await response.read())["message"]


async def test_wrong_content_type_method_and_path(http: aiohttp.ClientSession) -> None:
    async with http.post("/validate", data=b"{}", headers={"Content-Type": "text/plain"}) as response:
        assert response.status == 400
        assert "Content-Type must be application/json" in (await response.text())
    async with http.get("/validate") as response:
        assert response.status == 405
        assert response.headers["Allow"] == "POST"
        assert orjson.loads(await response.read()) == {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": "the server does not allow this method on the requested resource",
            "reason": "MethodNotAllowed",
            "code": 405,
        }
    async with http.post(
        "/validate-apps-v1-daemonset", data=b"{}", headers={"Content-Type": "application/json"}
    ) as response:
        assert response.status == 404
        status = orjson.loads(await response.read())
        assert (status["kind"], status["reason"]) == ("Status", "NotFound")
        assert status["message"] == "the server could not find the requested resource"
    async with http.delete("/healthz") as response:
        assert (response.status, response.headers["Allow"]) == (405, "GET,HEAD")


async def test_a_rule_that_crashes_is_a_denial_not_a_traceback(
    webhook: Webhook, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    class Exploding(dict[str, str]):
        def __contains__(self, key: object) -> bool:
            raise RuntimeError("informer exploded")

    webhook.view.namespaces["golden-hooked"] = Exploding()
    capture = golden_capture(7)
    _, body = await post(http, capture["path"], capture["review"])
    status = body["response"]["status"]
    assert (body["response"]["allowed"], status["code"], status["reason"]) == (False, 500, "InternalError")
    assert "Traceback" not in status["message"] and "informer exploded" not in status["message"]
    assert any(r.getMessage() == "admission rule failed" and r.exc_info for r in caplog.records)


# -- probes, metrics, logs --------------------------------------------------------------------------


async def test_probes(webhook: Webhook, http: aiohttp.ClientSession) -> None:
    async with http.get("/healthz") as response:
        assert response.status == 200
    webhook.ready[0] = False
    async with http.get("/readyz") as response:
        assert response.status == 503
        assert await response.text() == "caches not synced yet"
    webhook.ready[0] = True
    async with http.get("/readyz") as response:
        assert response.status == 200


async def test_metrics_count_verdicts_and_time_them(webhook: Webhook, http: aiohttp.ClientSession) -> None:
    capture = golden_capture(5)
    await post(http, capture["path"], capture["review"])
    async with http.get("/metrics") as response:
        text = await response.text()
    assert 'kueue_webhook_admission_requests_total{allowed="false",code="403",path="/validate"} 1.0' in text
    assert 'kueue_webhook_admission_duration_seconds_count{path="/validate"} 1.0' in text


async def test_each_denial_is_logged_once_with_its_reason(
    http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="kueue_webhook.admission")
    capture = golden_capture(5)
    _, body = await post(http, capture["path"], capture["review"])
    denials = [r for r in caplog.records if r.getMessage() == "admission denied"]
    assert len(denials) == 1
    record: Any = denials[0]
    assert record.reason == body["response"]["status"]["message"]
    assert (record.user, record.namespace, record.object) == ("admin", "golden-hooked", "hooked")


# -- TLS ---------------------------------------------------------------------------------------------


async def served_certificate(
    webhook: Webhook, *, server_hostname: str = "127.0.0.1", context: ssl.SSLContext | None = None
) -> x509.Certificate:
    _, writer = await asyncio.open_connection(
        "127.0.0.1",
        webhook.server.port,
        ssl=context or webhook.client_context(),
        server_hostname=server_hostname,
    )
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
        await writer.wait_closed()
    return x509.load_der_x509_certificate(der)


@pytest.mark.parametrize(
    "hostname",
    ["kueue-webhook.kueue-system.svc", "kueue-webhook.kueue-system.svc.cluster.local", "127.0.0.1"],
)
async def test_certificate_verifies_for_the_service_names(webhook: Webhook, hostname: str) -> None:
    cert = await served_certificate(webhook, server_hostname=hostname)
    assert cert.serial_number == x509.load_pem_x509_certificate(webhook.certs.cert.read_bytes()).serial_number


async def test_certificate_is_refused_for_another_name(webhook: Webhook) -> None:
    with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
        await served_certificate(webhook, server_hostname="evil.example")


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion:DeprecationWarning")
async def test_tls_below_1_2_is_refused(webhook: Webhook) -> None:
    context = webhook.client_context()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    await served_certificate(webhook, context=context)  # 1.2 itself is served
    old = webhook.client_context()
    old.set_ciphers("DEFAULT:@SECLEVEL=0")
    old.minimum_version = ssl.TLSVersion.TLSv1
    old.maximum_version = ssl.TLSVersion.TLSv1_1
    with pytest.raises((ssl.SSLError, ConnectionError)):  # the server resets the handshake
        await served_certificate(webhook, context=old)


async def test_rotated_certificate_is_served_without_restart(
    webhook: Webhook, http: aiohttp.ClientSession
) -> None:
    before = await served_certificate(webhook)
    webhook.server.reloader.changed.clear()
    ensure_certificates(webhook.certs.directory, ips=["127.0.0.1"], hosts=["localhost"], force=True)
    await asyncio.wait_for(webhook.server.reloader.changed.wait(), timeout=60)  # bounds a hang only
    after = await served_certificate(webhook)
    assert after.serial_number != before.serial_number
    assert (
        after.serial_number == x509.load_pem_x509_certificate(webhook.certs.cert.read_bytes()).serial_number
    )
    status, _ = await post(http, "/validate", golden_capture(1)["review"])
    assert status == 200


async def test_a_broken_rotation_keeps_the_current_certificate(webhook: Webhook) -> None:
    before = await served_certificate(webhook)
    generation = webhook.server.reloader.generation
    webhook.certs.cert.write_bytes(b"-----BEGIN CERTIFICATE-----\nnot a certificate\n")
    assert webhook.server.reloader.load_if_changed() is False
    assert webhook.server.reloader.generation == generation
    assert (await served_certificate(webhook)).serial_number == before.serial_number


async def test_a_configuration_change_applies_to_the_next_request(
    webhook: Webhook, http: aiohttp.ClientSession
) -> None:
    capture = golden_capture(7)  # kubectl create job without a queue label
    _, body = await post(http, capture["path"], capture["review"])
    assert body["response"]["allowed"]
    enforcing = parse_configuration("labelPolicy: {enforcedNamespaceSelector: {}}\n")  # every namespace
    assert isinstance(enforcing, Configuration)
    webhook.config[0] = enforcing
    _, body = await post(http, capture["path"], capture["review"])
    assert not body["response"]["allowed"]
    assert 'LocalQueues in namespace "golden-hooked": "team-a-gpu"' in body["response"]["status"]["message"]


async def test_denial_log_line_is_one_json_object(
    http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="kueue_webhook.admission")
    capture = golden_capture(5)
    await post(http, capture["path"], capture["review"])
    (record,) = [r for r in caplog.records if r.getMessage() == "admission denied"]
    line = JsonFormatter().format(record)
    assert "\n" not in line
    fields = orjson.loads(line)
    assert fields["level"] == "info" and fields["logger"] == "kueue_webhook.admission"
    assert fields["msg"] == "admission denied" and fields["ts"].endswith("Z")
    assert fields["reason"].startswith("spec.suspend: Forbidden")
    assert fields["uid"] == capture["review"]["request"]["uid"]


@pytest.mark.parametrize(
    "name", ["kueue-clusterqueue-create", "kueue-resourceflavor-create", "kueue-workload-create"]
)
async def test_kueue_defaulting_paths_answer_without_a_patch(http: aiohttp.ClientSession, name: str) -> None:
    obj = golden_object(name)
    _, body = await post(http, f"/mutate-kueue-x-k8s-io-v1beta2-{obj['kind'].lower()}", review_for(obj))
    assert body["response"]["allowed"] and "patch" not in body["response"]
    job = golden_capture(0)["review"]
    _, body = await post(http, f"/mutate-kueue-x-k8s-io-v1beta2-{obj['kind'].lower()}", job)
    assert (body["response"]["allowed"], body["response"]["status"]["code"]) == (False, 400)


def test_standalone_server_refuses_to_start_without_a_certificate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kueue_webhook.http.server import main

    missing = tmp_path / "nope.crt"
    assert main(["--cert", str(missing), "--key", str(tmp_path / "nope.key"), "--port", "0"]) == 1
    error = capsys.readouterr().err
    assert f"cannot serve: serving certificate {missing} / key {tmp_path / 'nope.key'} unusable: " in error
    assert error.rstrip().endswith("No such file or directory")


# -- CRD conversion ---------------------------------------------------------------------------------


def _conversion_review(desired: str, objects: list[Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "c0ffee", "desiredAPIVersion": desired, "objects": objects},
    }


async def test_convert_turns_v1beta1_cohort_into_v1beta2_cohort_name(http: aiohttp.ClientSession) -> None:
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {"cohort": "team"},
    }
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "f"}}
    status, body = await post(http, "/convert", _conversion_review("kueue.x-k8s.io/v1beta2", [queue, flavor]))
    assert status == 200
    assert (body["apiVersion"], body["kind"]) == ("apiextensions.k8s.io/v1", "ConversionReview")
    response = body["response"]
    assert response["uid"] == "c0ffee"
    assert response["result"] == {"status": "Success"}
    assert [o["apiVersion"] for o in response["convertedObjects"]] == ["kueue.x-k8s.io/v1beta2"] * 2
    assert response["convertedObjects"][0]["spec"] == {"cohortName": "team"}


async def test_convert_refuses_an_object_it_cannot_convert_with_a_failure_result(
    http: aiohttp.ClientSession,
) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}}
    status, body = await post(http, "/convert", _conversion_review("kueue.x-k8s.io/v1beta1", [job]))
    assert status == 200
    assert body["response"]["uid"] == "c0ffee"
    assert body["response"]["result"]["status"] == "Failure"
    assert body["response"]["result"]["message"].startswith("objects[0]: kind 'Job' is not")
    assert "convertedObjects" not in body["response"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "request body is not JSON"),
        (b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}', "expected a ConversionReview"),
        (
            b'{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}',
            "ConversionReview has no request",
        ),
        (
            b'{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":'
            b'{"uid":"u","desiredAPIVersion":"kueue.x-k8s.io/v1beta2","objects":{}}}',
            "ConversionReview request.objects must be a list",
        ),
        (
            b'{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"objects":[]}}',
            "ConversionReview request.uid must be a non-empty string",
        ),
    ],
)
async def test_convert_answers_a_body_that_is_not_a_conversion_review_with_400(
    http: aiohttp.ClientSession, body: bytes, message: str
) -> None:
    async with http.post("/convert", data=body, headers={"Content-Type": "application/json"}) as response:
        assert response.status == 400
        status = orjson.loads(await response.read())
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 400, "BadRequest")
    assert status["message"].startswith(message)
