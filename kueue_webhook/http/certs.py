"""A private CA and the webhook's serving certificate: made once, checked, renewed, and handed out.

kube-apiserver calls admission webhooks over HTTPS and trusts exactly the ``caBundle`` written in the
webhook configurations, so an install needs three things: a CA, a serving certificate for the Service's DNS
names signed by it, and that CA in both webhook configurations. ``ensure_certificates`` makes the first two,
idempotently:

* the CA (``ca.crt``/``ca.key``, 10 years) is created once and reused, so the caBundle already in the
  cluster stays valid across renewals of the serving certificate;
* the serving certificate (``tls.crt``/``tls.key``, 1 year, ECDSA P-256 unless ``rsa-2048`` is asked for) is
  issued when missing, when it expires within the renewal window (30 days), when its SANs no longer cover
  the requested names, or when its CA changed; otherwise it is left alone, so it can run on every deploy.
  The running server picks a new one up without a restart;
* the SANs are ``<svc>``, ``<svc>.<ns>``, ``<svc>.<ns>.svc``, ``<svc>.<ns>.svc.cluster.local`` plus every
  extra host and IP (127.0.0.1 for a webhook running on the host).

Private keys are written with mode 0600 (files are created with that mode, never chmod-ed after the fact).
``ca_bundle`` gives the base64 caBundle and ``secret_manifest`` the ``kubernetes.io/tls`` Secret for
in-cluster use; ``kueue_webhook.http.ca_bundles`` puts the caBundle where the API server reads it, and
``kueue_webhook.http.certs_command`` is the ``kueue-webhook certs`` command over all of them.

In the cluster the leader renews the Secret itself (``internalCertManagement``,
``kueue_webhook.control.replica.cert_rotation``) with the same rules (``kueue_webhook.http.cert_renewal``).
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "KUEUE_CRDS",
    "VISIBILITY_APISERVICES",
    "CertificateSet",
    "ca_bundle",
    "cert_pem",
    "ensure_certificates",
    "generate_ca",
    "issue_serving_certificate",
    "key_pem",
    "secret_manifest",
    "service_dns_names",
    "serving_needs_renewal",
    "write_private",
]

DEFAULT_SERVICE = "kueue-webhook"
DEFAULT_NAMESPACE = "kueue-system"
DEFAULT_SECRET = "kueue-webhook-tls"
DEFAULT_MUTATING = "kueue-webhook-mutating"
DEFAULT_VALIDATING = "kueue-webhook-validating"
#: The CRDs whose conversion webhook (v1beta1 <-> v1beta2 at ``/convert``) is this process.
KUEUE_CRDS = tuple(
    f"{plural}.kueue.x-k8s.io"
    for plural in (
        "resourceflavors",
        "clusterqueues",
        "localqueues",
        "cohorts",
        "workloadpriorityclasses",
        "workloads",
        "admissionchecks",
        "topologies",
        "multikueueclusters",
        "multikueueconfigs",
    )
)
CA_DAYS = 3650
SERVING_DAYS = 365
RENEW_BEFORE_DAYS = 30
#: a CA is replaced once it can no longer sign a serving certificate that lasts its year and its renewal
CA_RENEW_BEFORE_DAYS = SERVING_DAYS + RENEW_BEFORE_DAYS
#: the APIServices this process serves (the visibility API, ``manifests/controller/visibility.yaml``)
VISIBILITY_APISERVICES = ("v1beta2.visibility.kueue.x-k8s.io",)
_CLOCK_SKEW = dt.timedelta(minutes=5)

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True, slots=True)
class CertificateSet:
    """Paths of the four files in the certificate directory, and whether this run issued anything new."""

    directory: Path
    created_ca: bool = False
    issued_serving: bool = False

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def cert(self) -> Path:
        return self.directory / "tls.crt"

    @property
    def key(self) -> Path:
        return self.directory / "tls.key"


def service_dns_names(service: str, namespace: str) -> list[str]:
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


def _new_key(key_type: str) -> PrivateKey:
    if key_type == "rsa-2048":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return ec.generate_private_key(ec.SECP256R1())


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` with mode 0600 from the first byte, replacing the file atomically."""
    tmp = path.with_name(f".{path.name}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a half-written key is not left behind (a full disk, an interrupt)
        raise


def key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _certificate(
    *,
    subject: x509.Name,
    issuer: x509.Name,
    key: PrivateKey,
    now: dt.datetime,
    not_after: dt.datetime,
    ca: bool,
) -> x509.CertificateBuilder:
    """What a CA and a serving certificate share: the validity (backdated for clock skew), the basic
    constraints, and the key usage. Both sign with their key (digital signature); only the CA signs
    certificates and CRLs, and only an RSA serving key also enciphers keys (TLS key transport)."""
    usage = x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=not ca and isinstance(key, rsa.RSAPrivateKey),
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
        .add_extension(usage, critical=True)
    )


def generate_ca(
    *, common_name: str = "kueue-webhook-ca", days: int = CA_DAYS, key_type: str = "ecdsa-p256"
) -> tuple[PrivateKey, x509.Certificate]:
    key = _new_key(key_type)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = _now()
    cert = (
        _certificate(
            subject=name, issuer=name, key=key, now=now, not_after=now + dt.timedelta(days=days), ca=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def issue_serving_certificate(
    *,
    ca_key: PrivateKey,
    ca_cert: x509.Certificate,
    dns_names: Sequence[str],
    ips: Sequence[str] = (),
    days: int = SERVING_DAYS,
    key_type: str = "ecdsa-p256",
) -> tuple[PrivateKey, x509.Certificate]:
    key = _new_key(key_type)
    now = _now()
    not_after = min(now + dt.timedelta(days=days), ca_cert.not_valid_after_utc)
    sans: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_names[0] if dns_names else ips[0])])
    cert = (
        _certificate(subject=subject, issuer=ca_cert.subject, key=key, now=now, not_after=not_after, ca=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()),  # type: ignore[arg-type]
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def _load_pair(cert_path: Path, key_path: Path) -> tuple[PrivateKey, x509.Certificate] | None:
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except (OSError, ValueError):
        return None
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        return None
    return key, cert


def serving_needs_renewal(
    *,
    cert: x509.Certificate,
    ca_cert: x509.Certificate,
    dns_names: Sequence[str],
    ips: Sequence[str],
    renew_before: dt.timedelta,
    now: dt.datetime | None = None,
) -> str | None:
    """Why the serving certificate must be reissued, or None when it is still good."""
    if cert.issuer != ca_cert.subject:
        return "issued by another CA"
    try:
        cert.verify_directly_issued_by(ca_cert)
    except (InvalidSignature, ValueError, TypeError):
        return "not signed by the current CA"
    if cert.not_valid_after_utc - renew_before <= (now or _now()):
        return f"expires {cert.not_valid_after_utc:%Y-%m-%d}, within the renewal window"
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return "has no subject alternative names"
    have_dns = set(san.get_values_for_type(x509.DNSName))
    have_ips = {str(ip) for ip in san.get_values_for_type(x509.IPAddress)}
    missing = [n for n in dns_names if n not in have_dns] + [
        ip for ip in ips if str(ipaddress.ip_address(ip)) not in have_ips
    ]
    if missing:
        return f"does not cover {', '.join(missing)}"
    return None


def ensure_certificates(
    directory: str | os.PathLike[str],
    *,
    service: str = DEFAULT_SERVICE,
    namespace: str = DEFAULT_NAMESPACE,
    hosts: Sequence[str] = (),
    ips: Sequence[str] = (),
    days: int = SERVING_DAYS,
    ca_days: int = CA_DAYS,
    renew_before_days: int = RENEW_BEFORE_DAYS,
    key_type: str = "ecdsa-p256",
    force: bool = False,
) -> CertificateSet:
    """Create what is missing or due in ``directory``; reuse what is still good (see the module docstring)."""
    for ip in ips:
        ipaddress.ip_address(ip)  # ValueError names the bad address before anything is written
    certs = CertificateSet(Path(directory))
    certs.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    ca = _load_pair(certs.ca_cert, certs.ca_key)
    created_ca = ca is None
    if ca is None:
        ca = generate_ca(days=ca_days, key_type=key_type)
        write_private(certs.ca_key, key_pem(ca[0]))
        write_private(certs.ca_cert, cert_pem(ca[1]))
    ca_key, ca_cert = ca
    dns_names = [*service_dns_names(service, namespace), *hosts]
    serving = _load_pair(certs.cert, certs.key)
    reason = "forced" if force else None
    if serving is None:
        reason = "missing"
    elif reason is None:
        reason = serving_needs_renewal(
            cert=serving[1],
            ca_cert=ca_cert,
            dns_names=dns_names,
            ips=ips,
            renew_before=dt.timedelta(days=renew_before_days),
        )
    if reason is None:
        return CertificateSet(certs.directory, created_ca=created_ca)
    key, cert = issue_serving_certificate(
        ca_key=ca_key, ca_cert=ca_cert, dns_names=dns_names, ips=ips, days=days, key_type=key_type
    )
    # key first: the server reloads only a matching pair, so a reader between the writes keeps the old one
    write_private(certs.key, key_pem(key))
    write_private(certs.cert, cert_pem(cert))
    return CertificateSet(certs.directory, created_ca=created_ca, issued_serving=True)


def ca_bundle(certs: CertificateSet) -> str:
    """The base64 of the CA certificate PEM, as ``clientConfig.caBundle`` wants it."""
    return base64.b64encode(certs.ca_cert.read_bytes()).decode("ascii")


def secret_manifest(
    certs: CertificateSet, *, name: str = DEFAULT_SECRET, namespace: str = DEFAULT_NAMESPACE
) -> dict[str, Any]:
    def b64(path: Path) -> str:
        return base64.b64encode(path.read_bytes()).decode("ascii")

    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/name": "kueue-webhook"},
        },
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": b64(certs.cert), "tls.key": b64(certs.key), "ca.crt": b64(certs.ca_cert)},
    }
