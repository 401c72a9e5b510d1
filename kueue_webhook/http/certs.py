"""``kueue-webhook certs``: a private CA and the webhook's serving certificate, and where to put the CA.

kube-apiserver calls admission webhooks over HTTPS and trusts exactly the ``caBundle`` written in the
webhook configurations, so an install needs three things: a CA, a serving certificate for the Service's DNS
names signed by it, and that CA in both webhook configurations. This command does all three, idempotently:

* the CA (``ca.crt``/``ca.key``, 10 years) is created once and reused, so the caBundle already in the
  cluster stays valid across renewals of the serving certificate;
* the serving certificate (``tls.crt``/``tls.key``, 1 year, ECDSA P-256 unless ``--key-type rsa-2048``) is
  issued when missing, when it expires within ``--renew-before-days`` (30), when its SANs no longer cover
  the requested names, or when its CA changed; otherwise it is left alone, so the command can run on every
  deploy. The running server picks a new one up without a restart;
* the SANs are ``<svc>``, ``<svc>.<ns>``, ``<svc>.<ns>.svc``, ``<svc>.<ns>.svc.cluster.local`` plus every
  ``--host`` and ``--ip`` (``--ip 127.0.0.1`` for a webhook running on the host).

Private keys are written with mode 0600 (files are created with that mode, never chmod-ed after the fact).
``--print-ca-bundle`` / ``--ca-bundle-file`` give the base64 caBundle, ``--secret`` writes the
``kubernetes.io/tls`` Secret manifest for in-cluster use, and ``--patch-webhook-configurations`` fills the
caBundle of every webhook in ``kueue-webhook-mutating`` and ``kueue-webhook-validating``, of the
conversion webhook of the kueue.x-k8s.io CRDs and of the visibility APIService through the API.

In the cluster the leader renews the Secret itself (``internalCertManagement``,
``kueue_webhook.control.replica.cert_rotation``); what it decides and issues is here, pure where it can be:
``renewal_decision`` reads the Secret's keys with the same rules as this command, ``renew_secret`` issues,
``bundle_trusts`` tells whether a caBundle already trusts a CA.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import datetime as dt
import ipaddress
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "KUEUE_CRDS",
    "VISIBILITY_APISERVICES",
    "CertificateSet",
    "Renewal",
    "RenewedSecret",
    "add_arguments",
    "apiservice_ca_patch",
    "bundle_of",
    "bundle_trusts",
    "ca_bundle",
    "conversion_ca_patch",
    "ensure_certificates",
    "patch_webhook_configurations",
    "renew_secret",
    "renewal_decision",
    "run",
    "secret_manifest",
    "service_dns_names",
    "webhook_ca_patch",
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


def _write_private(path: Path, data: bytes) -> None:
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


def _key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
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


def _serving_needs_renewal(
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
        _write_private(certs.ca_key, _key_pem(ca[0]))
        _write_private(certs.ca_cert, _cert_pem(ca[1]))
    ca_key, ca_cert = ca
    dns_names = [*service_dns_names(service, namespace), *hosts]
    serving = _load_pair(certs.cert, certs.key)
    reason = "forced" if force else None
    if serving is None:
        reason = "missing"
    elif reason is None:
        reason = _serving_needs_renewal(
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
    _write_private(certs.key, _key_pem(key))
    _write_private(certs.cert, _cert_pem(cert))
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


def webhook_ca_patch(configuration: Any, bundle: str) -> list[dict[str, Any]]:
    """JSON Patch setting every webhook's caBundle; each entry is guarded by a test of its name."""
    webhooks = configuration.get("webhooks") if isinstance(configuration, dict) else None
    patch: list[dict[str, Any]] = []
    for index, entry in enumerate(webhooks or []):
        patch.append({"op": "test", "path": f"/webhooks/{index}/name", "value": entry["name"]})
        patch.append({"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": bundle})
    return patch


def conversion_ca_patch(crd: Any, bundle: str) -> list[dict[str, Any]]:
    """JSON Patch setting a CRD's conversion webhook caBundle; empty when it converts without a webhook."""
    conversion = ((crd.get("spec") if isinstance(crd, dict) else None) or {}).get("conversion") or {}
    if conversion.get("strategy") != "Webhook":
        return []
    return [
        {"op": "test", "path": "/spec/conversion/strategy", "value": "Webhook"},
        {"op": "add", "path": "/spec/conversion/webhook/clientConfig/caBundle", "value": bundle},
    ]


def apiservice_ca_patch(
    apiservice: Any, bundle: str, *, service: str = DEFAULT_SERVICE, namespace: str = DEFAULT_NAMESPACE
) -> list[dict[str, Any]]:
    """JSON Patch setting an APIService's caBundle; empty when it is not ours to verify: it sends to
    another Service (or to none: a local API), or it says ``insecureSkipTLSVerify``, which kube-apiserver
    refuses beside a caBundle (the admin chose not to verify)."""
    spec = (apiservice.get("spec") if isinstance(apiservice, dict) else None) or {}
    target = spec.get("service") or {}
    if spec.get("insecureSkipTLSVerify") or (target.get("name"), target.get("namespace")) != (
        service,
        namespace,
    ):
        return []
    return [
        {"op": "test", "path": "/spec/service/name", "value": service},
        {"op": "test", "path": "/spec/service/namespace", "value": namespace},
        {"op": "add", "path": "/spec/caBundle", "value": bundle},
    ]


# -- the Secret the leader renews in the cluster (kueue_webhook.control.replica.cert_rotation) ---------------


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
    and for ``certs``' reasons (``_serving_needs_renewal``: within ``renew_before`` of expiry, not signed
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
        serving = _serving_needs_renewal(
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
            "tls.crt": _cert_pem(cert),
            "tls.key": _key_pem(key),
            "ca.crt": _cert_pem(ca_cert),
            "ca.key": _key_pem(ca_key),
        },
        ca_cert=ca_cert,
        previous_ca=previous,
        not_after=cert.not_valid_after_utc,
    )


def bundle_of(*certs: x509.Certificate) -> str:
    """A caBundle (base64 of the PEM certificates, in order)."""
    return base64.b64encode(b"".join(_cert_pem(cert) for cert in certs)).decode("ascii")


def bundle_trusts(bundle: object, ca_cert: x509.Certificate) -> bool:
    """Whether a caBundle (base64 PEM, as the API returns it) holds ``ca_cert``; an unreadable one does
    not."""
    if not isinstance(bundle, str) or not bundle:
        return False
    try:
        certs = x509.load_pem_x509_certificates(base64.b64decode(bundle, validate=True))
    except ValueError:
        return False
    wanted = ca_cert.public_bytes(serialization.Encoding.DER)
    return any(c.public_bytes(serialization.Encoding.DER) == wanted for c in certs)


async def patch_webhook_configurations(
    bundle: str,
    *,
    mutating: Sequence[str],
    validating: Sequence[str],
    crds: Sequence[str] = (),
    apiservices: Sequence[str] = (),
    service: str = DEFAULT_SERVICE,
    namespace: str = DEFAULT_NAMESPACE,
    kubeconfig: str | None = None,
) -> list[str]:
    """Fill the caBundle of the named webhook configurations, of the conversion webhook of the named
    CRDs (kube-apiserver calls ``/convert`` for kueue.x-k8s.io/v1beta1), and of the named APIServices that
    send to ``service`` in ``namespace`` (the visibility API); returns one line per object.

    Connects as ``serve`` does (``KubeClient.connect``: ``--kubeconfig``, ``$KUBECONFIG``, the pod's service
    account, ``~/.kube/config``), so both commands reach the same cluster as the same user.
    """
    from kueue_webhook.control.kube.client import ApiError, KubeClient
    from kueue_webhook.control.kube.kinds import (
        API_SERVICES,
        CUSTOM_RESOURCE_DEFINITIONS,
        MUTATING_WEBHOOKS,
        VALIDATING_WEBHOOKS,
    )

    client = await KubeClient.connect(kubeconfig=kubeconfig, connections=2)
    done: list[str] = []
    try:
        targets = [(name, MUTATING_WEBHOOKS) for name in mutating]
        targets += [(name, VALIDATING_WEBHOOKS) for name in validating]
        for name, kind in targets:
            patch = webhook_ca_patch(await client.get(kind, name=name), bundle)
            if not patch:
                done.append(f"{kind.kind} {name}: no webhooks to patch")
                continue
            await client.patch(kind, name=name, patch=patch, patch_type="json")
            done.append(f"{kind.kind} {name}: caBundle set on {len(patch) // 2} webhook(s)")
        for name in crds:
            patch = conversion_ca_patch(await client.get(CUSTOM_RESOURCE_DEFINITIONS, name=name), bundle)
            if not patch:
                done.append(f"CustomResourceDefinition {name}: no conversion webhook to patch")
                continue
            await client.patch(CUSTOM_RESOURCE_DEFINITIONS, name=name, patch=patch, patch_type="json")
            done.append(f"CustomResourceDefinition {name}: conversion webhook caBundle set")
        for name in apiservices:
            try:
                found = await client.get(API_SERVICES, name=name)
            except ApiError as exc:
                if exc.status != 404:
                    raise
                done.append(f"APIService {name}: not installed")
                continue
            patch = apiservice_ca_patch(found, bundle, service=service, namespace=namespace)
            if not patch:
                done.append(
                    f"APIService {name}: not verified (insecureSkipTLSVerify) or not served by "
                    f"{namespace}/{service}: left alone"
                )
                continue
            await client.patch(API_SERVICES, name=name, patch=patch, patch_type="json")
            done.append(f"APIService {name}: caBundle set")
    finally:
        await client.close()
    return done


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dir", default="certs", help="where ca.crt, ca.key, tls.crt, tls.key live (default certs/)"
    )
    parser.add_argument("--service", default=DEFAULT_SERVICE, help="the webhook Service name")
    parser.add_argument("--namespace", default=DEFAULT_NAMESPACE, help="the webhook Service namespace")
    parser.add_argument(
        "--host", action="append", default=[], help="extra DNS name for the certificate (repeatable)"
    )
    parser.add_argument(
        "--ip", action="append", default=[], help="extra IP address, e.g. 127.0.0.1 (repeatable)"
    )
    parser.add_argument("--days", type=int, default=SERVING_DAYS, help="serving certificate validity in days")
    parser.add_argument("--ca-days", type=int, default=CA_DAYS, help="CA validity in days (new CA only)")
    parser.add_argument(
        "--renew-before-days", type=int, default=RENEW_BEFORE_DAYS, help="reissue this close to expiry"
    )
    parser.add_argument("--key-type", choices=("ecdsa-p256", "rsa-2048"), default="ecdsa-p256")
    parser.add_argument(
        "--force", action="store_true", help="reissue the serving certificate even if still good"
    )
    parser.add_argument("--print-ca-bundle", action="store_true", help="print the base64 caBundle on stdout")
    parser.add_argument("--ca-bundle-file", help="write the base64 caBundle to this file")
    parser.add_argument(
        "--secret", metavar="PATH", help="write the kubernetes.io/tls Secret manifest here ('-' = stdout)"
    )
    parser.add_argument("--secret-name", default=DEFAULT_SECRET)
    parser.add_argument(
        "--patch-webhook-configurations",
        action="store_true",
        help="set caBundle in the webhook configurations, the kueue.x-k8s.io CRDs' conversion webhook and "
        "the visibility APIService",
    )
    parser.add_argument(
        "--mutating-webhook-configuration", action="append", help=f"default {DEFAULT_MUTATING}"
    )
    parser.add_argument(
        "--validating-webhook-configuration", action="append", help=f"default {DEFAULT_VALIDATING}"
    )
    parser.add_argument(
        "--kubeconfig", help="kubeconfig for --patch-webhook-configurations (default: as kubectl, like serve)"
    )


def run(args: argparse.Namespace) -> int:
    if args.days <= 0 or args.ca_days <= 0 or args.renew_before_days < 0:
        print(
            "kueue-webhook certs: --days and --ca-days must be positive, --renew-before-days >= 0",
            file=sys.stderr,
        )
        return 2
    if args.renew_before_days >= args.days:
        print("kueue-webhook certs: --renew-before-days must be less than --days", file=sys.stderr)
        return 2
    try:
        certs = ensure_certificates(
            args.dir,
            service=args.service,
            namespace=args.namespace,
            hosts=args.host,
            ips=args.ip,
            days=args.days,
            ca_days=args.ca_days,
            renew_before_days=args.renew_before_days,
            key_type=args.key_type,
            force=args.force,
        )
    except ValueError as exc:
        print(f"kueue-webhook certs: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"kueue-webhook certs: cannot write certificates: {exc}", file=sys.stderr)
        return 1
    print(
        f"{'created' if certs.created_ca else 'reused'} CA {certs.ca_cert}; "
        f"{'issued' if certs.issued_serving else 'kept'} serving certificate {certs.cert}",
        file=sys.stderr,
    )
    bundle = ca_bundle(certs)
    if args.print_ca_bundle:
        print(bundle)
    if args.ca_bundle_file:
        Path(args.ca_bundle_file).write_text(bundle + "\n")
    if args.secret:
        manifest = yaml.safe_dump(
            secret_manifest(certs, name=args.secret_name, namespace=args.namespace), sort_keys=False
        )
        if args.secret == "-":
            sys.stdout.write(manifest)
        else:
            _write_private(Path(args.secret), manifest.encode())
    if args.patch_webhook_configurations:
        try:
            lines = asyncio.run(
                patch_webhook_configurations(
                    bundle,
                    mutating=args.mutating_webhook_configuration or [DEFAULT_MUTATING],
                    validating=args.validating_webhook_configuration or [DEFAULT_VALIDATING],
                    crds=KUEUE_CRDS,
                    apiservices=VISIBILITY_APISERVICES,
                    service=args.service,
                    namespace=args.namespace,
                    kubeconfig=args.kubeconfig,
                )
            )
        except Exception as exc:  # API, connection and kubeconfig errors all mean the same to the user
            print(f"kueue-webhook certs: patching the webhook configurations failed: {exc}", file=sys.stderr)
            return 1
        for line in lines:
            print(line, file=sys.stderr)
    return 0
