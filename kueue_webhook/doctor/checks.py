"""The verdicts of ``kueue-webhook doctor``: objects as read in, one ``Check`` (OK, WARN or FAIL, what was
found, what to do) out. Pure: ``kueue_webhook.doctor.probes`` does the reading.

kube-apiserver trusts exactly the ``caBundle`` of each webhook configuration, CRD conversion webhook and
APIService, so a caBundle is right when the serving certificate the webhook presents chains to one of the
bundle's certificates (its signature checked, not only the names), and the certificate must name the host
the API server dials (``<service>.<namespace>.svc``, or the URL's host). What an install needs in order to
work is a FAIL; what will break later (a certificate expiring within 30 days) or could not be checked
(RBAC) is a WARN.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from cryptography import x509
from cryptography.exceptions import InvalidSignature

__all__ = [
    "EXPIRY_WARNING_DAYS",
    "Check",
    "apiservice_check",
    "bundle_certificates",
    "ca_bundle_check",
    "certificate_names_check",
    "endpoints_check",
    "exit_code",
    "expiry_check",
    "probe_job_check",
    "render",
    "signs",
]

JSON = Mapping[str, Any]
Level = Literal["OK", "WARN", "FAIL"]
EXPIRY_WARNING_DAYS = 30
PATCH_CA = (
    "put the CA of the serving certificate there: kueue-webhook certs --dir DIR "
    "--patch-webhook-configurations (DIR: where ca.crt and tls.crt are)"
)


@dataclass(frozen=True, slots=True)
class Check:
    level: Level
    name: str
    message: str
    fix: str = ""

    def line(self) -> str:
        text = f"{self.level:<4} {self.name}: {self.message}"
        return f"{text}; fix: {self.fix}" if self.fix and self.level != "OK" else text

    def data(self) -> dict[str, str]:
        return {"level": self.level, "check": self.name, "message": self.message, "fix": self.fix}


def render(checks: Sequence[Check]) -> str:
    counts = {level: sum(c.level == level for c in checks) for level in ("OK", "WARN", "FAIL")}
    lines = [c.line() for c in checks]
    lines.append(f"{counts['OK']} OK, {counts['WARN']} WARN, {counts['FAIL']} FAIL")
    return "\n".join(lines) + "\n"


def exit_code(checks: Sequence[Check]) -> int:
    """1 when anything failed, else 0 (warnings do not fail the install)."""
    return 1 if any(c.level == "FAIL" for c in checks) else 0


def bundle_certificates(bundle: str) -> list[x509.Certificate] | str:
    """The certificates of a base64 caBundle, or why it cannot be read."""
    try:
        pem = base64.b64decode(bundle, validate=True)
    except (binascii.Error, ValueError):
        return "it is not base64"
    try:
        return x509.load_pem_x509_certificates(pem)
    except ValueError:
        return "it holds no PEM certificate"


def signs(ca: x509.Certificate, certificate: x509.Certificate) -> bool:
    """Whether ``ca`` issued ``certificate`` (its name and its signature), or is that certificate."""
    if ca == certificate:
        return True
    try:
        certificate.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def ca_bundle_check(name: str, bundles: Mapping[str, str | None], serving: x509.Certificate | None) -> Check:
    """One object's caBundles (``bundles``: each webhook's name -> its caBundle) against the certificate."""
    if not bundles:
        return Check("WARN", name, "no webhook in it to check")
    if serving is None:
        return Check("WARN", name, "not compared: the serving certificate could not be read (see above)")
    wrong: list[str] = []
    for hook, bundle in bundles.items():
        if not bundle:
            wrong.append(f"{hook}: no caBundle")
            continue
        found = bundle_certificates(bundle)
        if isinstance(found, str):
            wrong.append(f"{hook}: {found}")
        elif not any(signs(ca, serving) for ca in found):
            subjects = ", ".join(c.subject.rfc4514_string() or "(no subject)" for c in found)
            wrong.append(f"{hook}: {subjects} did not issue it")
    if wrong:
        return Check(
            "FAIL",
            name,
            "caBundle does not verify the serving certificate (kube-apiserver refuses the TLS handshake): "
            + "; ".join(wrong),
            PATCH_CA,
        )
    what = f"{len(bundles)} caBundle(s)" if len(bundles) > 1 else "caBundle"
    return Check("OK", name, f"{what} verify the serving certificate")


def expiry_check(certificate: x509.Certificate, *, now: dt.datetime, source: str) -> Check:
    ends = certificate.not_valid_after_utc
    days = (ends - now).total_seconds() / 86400
    when = ends.strftime("%Y-%m-%d %H:%M UTC")
    renew = (
        "issue a new one from the same CA, so the caBundles stay valid: kueue-webhook certs --dir DIR, and "
        "in cluster also kueue-webhook certs --dir DIR --secret - | kubectl apply -f -; the server reloads "
        "it without a restart"
    )
    name = "serving certificate expiry"
    if days < 0:
        return Check("FAIL", name, f"{source} expired on {when}", renew)
    if certificate.not_valid_before_utc > now:
        return Check("FAIL", name, f"{source} is not valid before {certificate.not_valid_before_utc}", renew)
    if days < EXPIRY_WARNING_DAYS:
        return Check("WARN", name, f"{source} expires in {int(days)} day(s), on {when}", renew)
    return Check("OK", name, f"{source} expires in {int(days)} days, on {when}")


def _covers(pattern: str, host: str) -> bool:
    pattern, host = pattern.lower().rstrip("."), host.lower().rstrip(".")
    if pattern.startswith("*."):
        head, _, rest = host.partition(".")
        return bool(head) and rest == pattern[2:]
    return pattern == host


def certificate_names_check(certificate: x509.Certificate, hosts: Sequence[str]) -> Check:
    """The certificate names every host kube-apiserver dials (a DNS name or an IP address SAN)."""
    name = "serving certificate names"
    try:
        sans = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return Check("FAIL", name, "it has no subjectAltName: kube-apiserver refuses it", "reissue it")
    dns = sans.get_values_for_type(x509.DNSName)
    ips = {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}
    missing = []
    for host in hosts:
        try:
            if str(ipaddress.ip_address(host)) not in ips:
                missing.append(host)
        except ValueError:
            if not any(_covers(pattern, host) for pattern in dns):
                missing.append(host)
    if missing:
        return Check(
            "FAIL",
            name,
            f"kube-apiserver dials {', '.join(missing)}, which it does not name (it names "
            f"{', '.join([*dns, *sorted(ips)]) or 'nothing'})",
            "reissue it with those names: kueue-webhook certs --force (--host NAME / --ip ADDRESS)",
        )
    return Check("OK", name, f"it names {', '.join(hosts)}")


def endpoints_check(service: str, obj: JSON | None, slices: Sequence[JSON]) -> Check:
    """A Service the API server calls (``namespace/name``) exists and has a ready endpoint."""
    name = f"Service {service}"
    logs = (
        "see why the controller is not Ready: kubectl -n {ns} get pods "
        "-l app.kubernetes.io/name=kueue-webhook; kubectl -n {ns} logs deploy/kueue-webhook"
    ).format(ns=service.partition("/")[0])
    if obj is None:
        return Check(
            "FAIL", name, "not found: kube-apiserver cannot call the webhook", "kubectl apply -k manifests/"
        )
    spec = obj.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return Check("OK", name, f"ExternalName {spec.get('externalName', '')}: no endpoints to check")
    ready = 0
    for found in slices:
        for endpoint in found.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is not False:
                ready += len(endpoint.get("addresses") or [])
    if ready == 0:
        return Check("FAIL", name, "no ready endpoint: no replica of the controller is Ready", logs)
    return Check("OK", name, f"{ready} ready endpoint(s)")


def apiservice_check(name: str, obj: JSON | None) -> Check:
    title = f"APIService {name}"
    if obj is None:
        return Check(
            "FAIL",
            title,
            "not found: queue positions (kubectl kueue list/why, the visibility API) are unavailable",
            "kubectl apply -f manifests/controller/visibility.yaml",
        )
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Available":
            if condition.get("status") == "True":
                return Check("OK", title, "Available")
            return Check(
                "FAIL",
                title,
                f"not Available: {condition.get('reason', '')}: {condition.get('message', '')}",
                "the aggregator cannot reach the controller: check the Service and the caBundle above",
            )
    return Check("WARN", title, "no Available condition yet (the aggregator has not looked at it)")


def probe_job_check(created: JSON | None, error: tuple[int, str] | None, namespace: str) -> Check:
    """The dry-run create of a queued Job (``created``), or the API server's error (status, message)."""
    name = "mutating webhook"
    if error is not None:
        status, message = error
        if "failed calling webhook" in message or "failed to call webhook" in message:
            return Check(
                "FAIL",
                name,
                f"kube-apiserver could not call it: {message}",
                "make sure the controller runs and is reachable, and that the caBundle above verifies it",
            )
        if "denied the request" in message:
            return Check("WARN", name, f"it answered but refused the probe Job in {namespace}: {message}")
        if status in (401, 403):
            return Check(
                "WARN",
                name,
                f"not checked: {message}",
                f"run as someone who may create Jobs in {namespace} (a dry run needs it), or give "
                "--probe-namespace",
            )
        return Check("FAIL", name, f"the dry-run create of a queued Job failed: {message}")
    suspended = ((created or {}).get("spec") or {}).get("suspend") is True
    if not suspended:
        return Check(
            "FAIL",
            name,
            f"a queued Job created in {namespace} (dry run) is not suspended: the webhook did not mutate it",
            "check kueue-webhook-mutating's rules and namespaceSelector, and that integrations.frameworks "
            "has batch/job",
        )
    return Check("OK", name, f"it answers: a queued Job created in {namespace} (dry run) is suspended")
