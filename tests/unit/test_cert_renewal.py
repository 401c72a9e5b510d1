"""What the leader decides about the certificate Secret (``renewal_decision``) and what it writes
(``renew_secret``, the caBundles): pure, with the clock given."""

from __future__ import annotations

import base64
import datetime as dt

import pytest
from cryptography import x509

from kueue_webhook.http.ca_bundles import apiservice_ca_patch, bundle_of, bundle_trusts
from kueue_webhook.http.cert_renewal import renew_secret, renewal_decision
from kueue_webhook.http.certs import (
    cert_pem,
    generate_ca,
    issue_serving_certificate,
    key_pem,
    service_dns_names,
)
from tests.unit.admission.golden import apply_patch

NAMES = service_dns_names("kueue-webhook", "kueue-system")
DAY = dt.timedelta(days=1)


def secret_data(
    *, days: int = 365, ca_days: int = 3650, names: list[str] = NAMES, with_ca_key: bool = True
) -> dict[str, bytes]:
    ca_key, ca_cert = generate_ca(days=ca_days)
    key, cert = issue_serving_certificate(ca_key=ca_key, ca_cert=ca_cert, dns_names=names, days=days)
    data = {"tls.crt": cert_pem(cert), "tls.key": key_pem(key), "ca.crt": cert_pem(ca_cert)}
    if with_ca_key:
        data["ca.key"] = key_pem(ca_key)
    return data


def not_after(data: dict[str, bytes], key: str = "tls.crt") -> dt.datetime:
    return x509.load_pem_x509_certificate(data[key]).not_valid_after_utc


def today(data: dict[str, bytes]) -> dt.datetime:
    """A moment well inside the serving certificate's life (a year before it ends)."""
    return not_after(data) - dt.timedelta(days=364)


def test_a_good_secret_is_left_alone() -> None:
    data = secret_data()
    decision = renewal_decision(data, dns_names=NAMES, now=today(data))
    assert decision.serving is None and decision.ca is None


def test_a_secret_written_by_certs_without_the_ca_key_is_left_alone_while_good() -> None:
    data = secret_data(with_ca_key=False)
    assert renewal_decision(data, dns_names=NAMES, now=today(data)).serving is None


def test_expiring_within_30_days_is_renewed_with_the_secrets_own_ca() -> None:
    data = secret_data()
    decision = renewal_decision(data, dns_names=NAMES, now=not_after(data) - dt.timedelta(days=29))
    assert decision.serving is not None and "within the renewal window" in decision.serving
    assert decision.ca is None
    assert (
        renewal_decision(data, dns_names=NAMES, now=not_after(data) - dt.timedelta(days=31)).serving is None
    )


def test_expiring_without_the_ca_key_takes_a_new_ca() -> None:
    data = secret_data(days=1, with_ca_key=False)
    decision = renewal_decision(data, dns_names=NAMES, now=not_after(data) - dt.timedelta(hours=12))
    assert decision.serving is not None and "renewal window" in decision.serving
    assert decision.ca is not None and "ca.key" in decision.ca


def test_a_certificate_not_for_the_service_is_renewed() -> None:
    data = secret_data(names=service_dns_names("old-name", "kueue-system"))
    decision = renewal_decision(data, dns_names=NAMES, now=today(data))
    assert decision.serving is not None and "does not cover kueue-webhook" in decision.serving


def test_a_certificate_of_another_ca_is_renewed() -> None:
    data = secret_data()
    other = secret_data()
    data["ca.crt"], data["ca.key"] = other["ca.crt"], other["ca.key"]
    decision = renewal_decision(data, dns_names=NAMES, now=today(data))
    assert decision.serving == "not signed by the current CA"
    assert decision.ca is None  # the Secret's CA (with its key) signs the new one


@pytest.mark.parametrize(
    ("missing", "words"),
    [("tls.crt", "missing"), ("tls.key", "tls.key"), ("ca.crt", "no CA certificate")],
)
def test_missing_pieces_are_renewed(missing: str, words: str) -> None:
    data = secret_data()
    moment = today(data)
    del data[missing]
    decision = renewal_decision(data, dns_names=NAMES, now=moment)
    assert decision.serving is not None and words in decision.serving


def test_a_key_that_is_not_the_certificates_is_renewed() -> None:
    data = secret_data()
    data["tls.key"] = secret_data()["tls.key"]
    decision = renewal_decision(data, dns_names=NAMES, now=today(data))
    assert decision.serving == "tls.key is not its key"


def test_a_ca_key_that_is_not_the_cas_means_a_new_ca() -> None:
    data = secret_data(days=1)
    data["ca.key"] = secret_data()["ca.key"]
    decision = renewal_decision(data, dns_names=NAMES, now=not_after(data))
    assert decision.ca == "ca.key is not the key of ca.crt"


def test_a_ca_too_close_to_its_end_to_sign_for_a_year_is_replaced_with_the_certificate() -> None:
    data = secret_data(ca_days=390)  # 390 days left: a year's certificate and its 30 days do not fit
    decision = renewal_decision(data, dns_names=NAMES, now=dt.datetime.now(dt.UTC))
    assert decision.serving == "its CA is replaced"
    assert decision.ca is not None and "the CA expires" in decision.ca


def test_renewal_with_the_secrets_ca_keeps_the_ca_and_the_bundle_needs_nothing_new() -> None:
    data = secret_data(days=1)
    moment = not_after(data)
    renewed = renew_secret(
        data, renewal_decision(data, dns_names=NAMES, now=moment), dns_names=NAMES, now=moment
    )
    assert renewed.data["ca.crt"] == data["ca.crt"] and renewed.data["ca.key"] == data["ca.key"]
    assert renewed.previous_ca is None
    assert renewal_decision(renewed.data, dns_names=NAMES, now=dt.datetime.now(dt.UTC)).serving is None
    assert bundle_trusts(base64.b64encode(data["ca.crt"]).decode(), renewed.ca_cert)


def test_renewal_with_a_new_ca_trusts_both_cas_during_the_switch() -> None:
    """The pods serve the old certificate until kubelet refreshes their volume: the bundle written first
    holds the new CA and the old one, so both certificates verify."""
    data = secret_data(days=1, with_ca_key=False)
    now = dt.datetime.now(dt.UTC)
    renewed = renew_secret(data, renewal_decision(data, dns_names=NAMES, now=now), dns_names=NAMES, now=now)
    old_ca = x509.load_pem_x509_certificate(data["ca.crt"])
    assert renewed.ca_cert != old_ca and renewed.previous_ca == old_ca
    assert set(renewed.data) == {"tls.crt", "tls.key", "ca.crt", "ca.key"}
    bundle = x509.load_pem_x509_certificates(base64.b64decode(renewed.bundle))
    assert bundle == [renewed.ca_cert, old_ca]
    new_cert = x509.load_pem_x509_certificate(renewed.data["tls.crt"])
    old_cert = x509.load_pem_x509_certificate(data["tls.crt"])
    new_cert.verify_directly_issued_by(bundle[0])
    old_cert.verify_directly_issued_by(bundle[1])
    assert renewal_decision(renewed.data, dns_names=NAMES, now=now).serving is None


def test_an_expired_old_ca_is_not_kept_in_the_bundle() -> None:
    data = secret_data(days=1, with_ca_key=False)
    after_the_old_ca = not_after(data, "ca.crt") + DAY
    renewed = renew_secret(
        data,
        renewal_decision(data, dns_names=NAMES, now=after_the_old_ca),
        dns_names=NAMES,
        now=after_the_old_ca,
    )
    assert renewed.previous_ca is None
    assert x509.load_pem_x509_certificates(base64.b64decode(renewed.bundle)) == [renewed.ca_cert]


def test_bundle_trusts_reads_any_certificate_of_the_bundle_and_refuses_garbage() -> None:
    first, second = (x509.load_pem_x509_certificate(secret_data()["ca.crt"]) for _ in range(2))
    assert bundle_trusts(bundle_of(first, second), second)
    assert not bundle_trusts(bundle_of(first), second)
    for garbage in (None, "", "not base64!", base64.b64encode(b"no pem").decode(), 42):
        assert not bundle_trusts(garbage, first)


def apiservice(**spec: object) -> dict[str, object]:
    return {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": "v1beta2.visibility.kueue.x-k8s.io"},
        "spec": {
            "group": "visibility.kueue.x-k8s.io",
            "version": "v1beta2",
            "service": {"name": "kueue-webhook", "namespace": "kueue-system", "port": 443},
            **spec,
        },
    }


def test_the_visibility_apiservice_gets_the_bundle() -> None:
    patched = apply_patch(apiservice(), apiservice_ca_patch(apiservice(), "Q0E="))
    assert patched["spec"]["caBundle"] == "Q0E="


@pytest.mark.parametrize(
    "spec",
    [
        {"insecureSkipTLSVerify": True},  # kube-apiserver refuses a caBundle beside it
        {"service": {"name": "kueue-visibility-server", "namespace": "kueue-system", "port": 443}},
        {"service": None},  # a local API, served by kube-apiserver itself
    ],
)
def test_an_apiservice_not_ours_to_verify_is_left_alone(spec: dict[str, object]) -> None:
    assert apiservice_ca_patch(apiservice(**spec), "Q0E=") == []
