"""The Secret the leader renews in the cluster (``internalCertManagement``,
``kueue_webhook.control.replica.cert_rotation``): what it needs and what a renewal writes, pure.

``renewal_decision`` reads the Secret's keys with the same rules as ``kueue-webhook certs``
(``kueue_webhook.http.certs``), ``renew_secret`` issues what it asks for.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from kueue_webhook.http.ca_bundles import bundle_of
from kueue_webhook.http.certs import (
    CA_RENEW_BEFORE_DAYS,
    RENEW_BEFORE_DAYS,
    PrivateKey,
    cert_pem,
    generate_ca,
    issue_serving_certificate,
    key_pem,
    serving_needs_renewal,
)

__all__ = ["Renewal", "RenewedSecret", "renew_secret", "renewal_decision"]


@dataclass(frozen=True, slots=True)
class Renewal:
    """What a certificate Secret needs. ``serving`` says why its serving certificate must be issued again
    (None: it is good, and nothing is done); ``ca`` says why that takes a new CA (None: the Secret's CA,
    with its key, signs it)."""

    serving: str | None = None
    ca: str | None = None


@dataclass(frozen=True, slots=True)
class RenewedSecret:
    """What a renewal writes: the Secret's four keys, and what the caBundles must then trust."""

    data: dict[str, bytes]
    ca_cert: x509.Certificate
    #: the CA being replaced, while still valid: trusted beside the new one until the pods serve the new
    #: certificate (kubelet refreshes a mounted Secret only after its sync period)
    previous_ca: x509.Certificate | None
    not_after: dt.datetime

    @property
    def bundle(self) -> str:
        """The caBundle to write: the CA, then the one it replaces."""
        return bundle_of(self.ca_cert, *((self.previous_ca,) if self.previous_ca is not None else ()))


def _certificate_of(pem: bytes | None) -> x509.Certificate | None:
    try:
        return x509.load_pem_x509_certificate(pem) if pem else None
    except ValueError:
        return None


def _key_of(pem: bytes | None) -> PrivateKey | None:
    try:
        key = serialization.load_pem_private_key(pem, password=None) if pem else None
    except (ValueError, TypeError):
        return None
    return key if isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) else None


def _public_der(key: Any) -> bytes:
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    return bytes(key.public_bytes(serialization.Encoding.DER, spki))


def _pair_matches(cert: x509.Certificate, key: PrivateKey) -> bool:
    return _public_der(cert.public_key()) == _public_der(key.public_key())


def _secret_ca(data: Mapping[str, bytes]) -> tuple[x509.Certificate | None, PrivateKey | None, str | None]:
    """The Secret's CA certificate and key, and why they cannot sign (None: they can)."""
    cert = _certificate_of(data.get("ca.crt"))
    if cert is None:
        return None, None, "the Secret has no CA certificate (ca.crt)"
    key = _key_of(data.get("ca.key"))
    if key is None:
        return cert, None, "the Secret has no CA key (ca.key), as `kueue-webhook certs --secret` writes it"
    if not _pair_matches(cert, key):
        return cert, None, "ca.key is not the key of ca.crt"
    return cert, key, None


def renewal_decision(
    data: Mapping[str, bytes],
    *,
    dns_names: Sequence[str],
    now: dt.datetime,
    renew_before: dt.timedelta = dt.timedelta(days=RENEW_BEFORE_DAYS),
    ca_renew_before: dt.timedelta = dt.timedelta(days=CA_RENEW_BEFORE_DAYS),
) -> Renewal:
    """Whether the Secret's serving certificate must be issued again, and whether that needs a new CA.

    The serving certificate is reissued when it is missing or unreadable, when its key is not its own,
    and for ``certs``' reasons (``serving_needs_renewal``: within ``renew_before`` of expiry, not signed
    by ``ca.crt``, not covering ``dns_names``), and when its CA expires within ``ca_renew_before``. The CA is
    kept when the Secret holds its key (``ca.key``) and it is not expiring; otherwise a new one is made. A
    good serving certificate is left alone even when ``ca.key`` is missing: a Secret written by ``certs``
    is renewed only when due.
    """
    ca_cert, ca_key, ca_problem = _secret_ca(data)
    if ca_cert is not None and ca_cert.not_valid_after_utc - ca_renew_before <= now:
        ca_problem = f"the CA expires {ca_cert.not_valid_after_utc:%Y-%m-%d}, too soon to sign for a year"
    cert = _certificate_of(data.get("tls.crt"))
    key = _key_of(data.get("tls.key"))
    if cert is None:
        serving: str | None = "missing or not a certificate"
    elif key is None:
        serving = "its key (tls.key) is missing or unreadable"
    elif not _pair_matches(cert, key):
        serving = "tls.key is not its key"
    elif ca_cert is None:
        serving = "there is no CA certificate to check it against"
    else:
        serving = serving_needs_renewal(
            cert=cert, ca_cert=ca_cert, dns_names=dns_names, ips=(), renew_before=renew_before, now=now
        )
        if serving is None and ca_key is not None and ca_problem is not None:
            serving = "its CA is replaced"
    if serving is None:
        return Renewal()
    return Renewal(serving=serving, ca=ca_problem)


def renew_secret(
    data: Mapping[str, bytes], renewal: Renewal, *, dns_names: Sequence[str], now: dt.datetime
) -> RenewedSecret:
    """Issue what ``renewal`` asks for: a serving certificate for ``dns_names`` (1 year, ECDSA P-256),
    signed by the Secret's CA or by a new one (10 years); the Secret's other keys are the caller's to
    keep."""
    ca_cert, ca_key, _ = _secret_ca(data)
    previous = None
    if renewal.ca is not None or ca_cert is None or ca_key is None:
        if ca_cert is not None and ca_cert.not_valid_after_utc > now:
            previous = ca_cert
        ca_key, ca_cert = generate_ca()
    key, cert = issue_serving_certificate(ca_key=ca_key, ca_cert=ca_cert, dns_names=dns_names)
    return RenewedSecret(
        data={
            "tls.crt": cert_pem(cert),
            "tls.key": key_pem(key),
            "ca.crt": cert_pem(ca_cert),
            "ca.key": key_pem(ca_key),
        },
        ca_cert=ca_cert,
        previous_ca=previous,
        not_after=cert.not_valid_after_utc,
    )
