"""``kueue-webhook doctor``'s verdicts from objects as read: a caBundle passes only when its CA signed the
serving certificate (a CA with the same name but another key does not), expiry warns within 30 days and
fails once past, the certificate must name the host kube-apiserver dials, a Service needs a ready endpoint,
the APIService must be Available, and the dry-run Job must come back suspended. Exit code 1 on any FAIL."""

from __future__ import annotations

import base64
import datetime as dt
from pathlib import Path

import pytest
from cryptography import x509

from kueue_webhook.doctor.checks import (
    Check,
    apiservice_check,
    ca_bundle_check,
    certificate_names_check,
    endpoints_check,
    exit_code,
    expiry_check,
    probe_job_check,
    render,
)
from kueue_webhook.http.certs import CertificateSet, ca_bundle, ensure_certificates


def serving(certs: CertificateSet) -> x509.Certificate:
    return x509.load_pem_x509_certificate(certs.cert.read_bytes())


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> tuple[CertificateSet, CertificateSet]:
    """The install's certificates, and another CA's (same subject, another key)."""
    base = tmp_path_factory.mktemp("certs")
    return ensure_certificates(base / "ours", ips=["127.0.0.1"]), ensure_certificates(base / "other")


def test_a_bundle_passes_only_with_the_ca_that_signed_the_certificate(
    install: tuple[CertificateSet, CertificateSet],
) -> None:
    ours, other = install
    cert = serving(ours)
    good = ca_bundle_check("caBundle of X", {"a": ca_bundle(ours), "b": ca_bundle(ours)}, cert)
    assert (good.level, good.message) == ("OK", "2 caBundle(s) verify the serving certificate")
    # another CA: same subject name, different key: only the signature tells them apart
    wrong = ca_bundle_check("caBundle of X", {"a": ca_bundle(ours), "b": ca_bundle(other)}, cert)
    assert wrong.level == "FAIL"
    assert "b: " in wrong.message and "did not issue it" in wrong.message and "a: " not in wrong.message
    assert "--patch-webhook-configurations" in wrong.line()
    both = base64.b64encode(other.ca_cert.read_bytes() + ours.ca_cert.read_bytes()).decode()
    assert ca_bundle_check("X", {"a": both}, cert).level == "OK"  # a bundle may hold several CAs
    assert "a: no caBundle" in ca_bundle_check("X", {"a": None}, cert).message
    assert "a: it is not base64" in ca_bundle_check("X", {"a": "%%%"}, cert).message
    empty = base64.b64encode(b"hello").decode()
    assert "a: it holds no PEM certificate" in ca_bundle_check("X", {"a": empty}, cert).message
    assert ca_bundle_check("X", {"a": ca_bundle(ours)}, None).level == "WARN"


def test_expiry_warns_within_30_days_and_fails_after(install: tuple[CertificateSet, CertificateSet]) -> None:
    cert = serving(install[0])
    end = cert.not_valid_after_utc
    assert expiry_check(cert, now=end - dt.timedelta(days=200), source="s").level == "OK"
    soon = expiry_check(cert, now=end - dt.timedelta(days=10, hours=1), source="s")
    assert (soon.level, soon.message.split(",")[0]) == ("WARN", "s expires in 10 day(s)")
    assert "kueue-webhook certs" in soon.fix
    gone = expiry_check(cert, now=end + dt.timedelta(days=1), source="s")
    assert gone.level == "FAIL" and gone.message.startswith("s expired on")


def test_the_certificate_must_name_the_host_kube_apiserver_dials(
    install: tuple[CertificateSet, CertificateSet],
) -> None:
    ours, other = install
    assert (
        certificate_names_check(serving(ours), ["kueue-webhook.kueue-system.svc", "127.0.0.1"]).level == "OK"
    )
    missing = certificate_names_check(serving(other), ["127.0.0.1"])
    assert missing.level == "FAIL" and missing.message.startswith("kube-apiserver dials 127.0.0.1,")


def test_a_service_needs_a_ready_endpoint() -> None:
    service = {"spec": {"type": "ClusterIP"}}
    ready = {"endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}]}
    not_ready = {"endpoints": [{"addresses": ["10.0.0.2"], "conditions": {"ready": False}}]}
    assert endpoints_check("ns/svc", service, [ready, not_ready]).message == "1 ready endpoint(s)"
    failed = endpoints_check("ns/svc", service, [not_ready])
    assert failed.level == "FAIL" and "kubectl -n ns logs deploy/kueue-webhook" in failed.fix
    assert endpoints_check("ns/svc", None, []).level == "FAIL"
    external = {"spec": {"type": "ExternalName", "externalName": "localhost"}}
    assert endpoints_check("ns/svc", external, []).level == "OK"


def test_the_apiservice_must_be_available() -> None:
    def service(status: str) -> dict[str, object]:
        condition = {"type": "Available", "status": status, "reason": "FailedDiscoveryCheck", "message": "x"}
        return {"status": {"conditions": [condition]}}

    assert apiservice_check("v", service("True")).level == "OK"
    down = apiservice_check("v", service("False"))
    assert (down.level, down.message) == ("FAIL", "not Available: FailedDiscoveryCheck: x")
    assert apiservice_check("v", None).level == "FAIL"
    assert apiservice_check("v", {"status": {}}).level == "WARN"


def test_the_probe_job_must_come_back_suspended() -> None:
    assert probe_job_check({"spec": {"suspend": True}}, None, "default").level == "OK"
    assert probe_job_check({"spec": {"suspend": False}}, None, "default").level == "FAIL"
    unreachable = (
        500,
        'Internal error occurred: failed calling webhook "mjob.kueue.x-k8s.io": failed to call webhook: '
        'Post "https://127.0.0.1:1/mutate-batch-v1-job?timeout=5s": dial tcp 127.0.0.1:1: connect: refused',
    )
    failed = probe_job_check(None, unreachable, "default")
    assert failed.level == "FAIL" and failed.message.startswith("kube-apiserver could not call it: Internal")
    forbidden = probe_job_check(None, (403, 'jobs.batch is forbidden: User "u" cannot create'), "default")
    assert forbidden.level == "WARN" and "--probe-namespace" in forbidden.fix
    denied = (400, 'admission webhook "vjob.kueue.x-k8s.io" denied the request: no')
    assert probe_job_check(None, denied, "default").level == "WARN"


def test_one_line_per_check_and_exit_code_1_on_any_failure(tmp_path: Path) -> None:
    checks = [Check("OK", "a", "fine", "unused"), Check("WARN", "b", "hmm", "look")]
    assert render(checks) == "OK   a: fine\nWARN b: hmm; fix: look\n1 OK, 1 WARN, 0 FAIL\n"
    assert exit_code(checks) == 0
    assert exit_code([*checks, Check("FAIL", "c", "broken", "mend")]) == 1
