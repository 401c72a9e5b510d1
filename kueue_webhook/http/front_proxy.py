"""Who a request through kube-apiserver's aggregator comes from: the front proxy's client certificate, then
the requestheader headers.

kube-apiserver proxies an aggregated API request (``kubectl get --raw /apis/visibility.kueue.x-k8s.io/...``)
with a client certificate of its own (``--proxy-client-cert-file``) and names the user it authenticated in
headers (``X-Remote-User``, ``X-Remote-Group``, ``X-Remote-Extra-*``). Anyone can send those headers, so they
are believed only on a connection whose client certificate was issued by the requestheader client CA and, when
``requestheader-allowed-names`` is not empty, whose common name is one of those names: the rule of
k8s.io/apiserver's requestheader authenticator (x509 ``Verifier`` in front of the header reader), with the
settings it reads, from the ConfigMap ``kube-system/extension-apiserver-authentication`` that kube-apiserver
publishes. Pure: the caller passes the peer certificate (DER), the headers and the settings.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import unquote

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import NameOID

__all__ = [
    "CONFIGMAP_NAME",
    "CONFIGMAP_NAMESPACE",
    "RequestHeaderError",
    "RequestHeaderSettings",
    "UserInfo",
    "parse_settings",
    "user_from_headers",
    "verify_proxy_certificate",
]

CONFIGMAP_NAMESPACE = "kube-system"
CONFIGMAP_NAME = "extension-apiserver-authentication"


class RequestHeaderError(ValueError):
    """The requestheader settings in the ConfigMap are unusable."""


@dataclass(frozen=True, slots=True)
class UserInfo:
    """A user as a SubjectAccessReview names it."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    #: (key, values) pairs, sorted by key: hashable, so a decision can be cached by user
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class RequestHeaderSettings:
    """The ``requestheader-*`` keys of ``extension-apiserver-authentication``."""

    ca_pem: bytes
    authorities: tuple[x509.Certificate, ...]
    allowed_names: frozenset[str]
    username_headers: tuple[str, ...]
    uid_headers: tuple[str, ...] = ()
    group_headers: tuple[str, ...] = ()
    extra_prefixes: tuple[str, ...] = ()


def _header_list(data: Mapping[str, str], key: str) -> tuple[str, ...]:
    """A key holding a JSON list of strings (how kube-apiserver writes them); absent or empty: none."""
    text = data.get(key)
    if not text:
        return ()
    try:
        value = json.loads(text)
    except ValueError:
        raise RequestHeaderError(f"{key}: not a JSON list: {text[:200]!r}") from None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RequestHeaderError(f"{key}: not a list of strings: {text[:200]!r}")
    names = tuple(item.strip() for item in value)
    if any(not name for name in names):
        raise RequestHeaderError(f"{key}: an empty header name")
    return names


def parse_settings(data: Mapping[str, str]) -> RequestHeaderSettings | None:
    """The settings from the ConfigMap's ``data``; None when it has no requestheader CA (kube-apiserver runs
    without ``--requestheader-client-ca-file``: no front proxy can be believed)."""
    pem = data.get("requestheader-client-ca-file") or ""
    if not pem.strip():
        return None
    try:
        authorities = tuple(x509.load_pem_x509_certificates(pem.encode()))
    except ValueError as exc:
        raise RequestHeaderError(f"requestheader-client-ca-file: not PEM certificates: {exc}") from None
    username_headers = _header_list(data, "requestheader-username-headers")
    if not username_headers:
        raise RequestHeaderError("requestheader-username-headers: none configured")
    return RequestHeaderSettings(
        ca_pem=pem.encode(),
        authorities=authorities,
        allowed_names=frozenset(_header_list(data, "requestheader-allowed-names")),
        username_headers=username_headers,
        uid_headers=_header_list(data, "requestheader-uid-headers"),
        group_headers=_header_list(data, "requestheader-group-headers"),
        extra_prefixes=_header_list(data, "requestheader-extra-headers-prefix"),
    )


def verify_proxy_certificate(
    peer_der: bytes | None, settings: RequestHeaderSettings | None, now: datetime.datetime
) -> str | None:
    """None when ``peer_der`` is a front-proxy certificate to believe; else why not.

    The TLS layer has already checked the chain against every requestheader CA it was ever given; this
    checks it against the current ones (a CA removed from the ConfigMap stops counting at once), its
    validity at ``now`` and its common name.
    """
    if settings is None:
        return "no requestheader client CA is known"
    if not peer_der:
        return "no client certificate"
    try:
        certificate = x509.load_der_x509_certificate(peer_der)
    except ValueError:
        return "unreadable client certificate"
    if not certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc:
        return "client certificate expired or not yet valid"
    if not any(_issued_by(certificate, authority) for authority in settings.authorities):
        return "client certificate not issued by a requestheader client CA"
    if settings.allowed_names:
        names = [str(a.value) for a in certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
        if not any(name in settings.allowed_names for name in names):
            return f"client certificate common name {', '.join(names) or '(none)'} not allowed"
    return None


def _issued_by(certificate: x509.Certificate, authority: x509.Certificate) -> bool:
    try:
        certificate.verify_directly_issued_by(authority)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


class Headers(Protocol):
    """What :func:`user_from_headers` reads of a request's headers (aiohttp's ``CIMultiDictProxy``)."""

    def getall(self, key: str, default: list[str], /) -> list[str]: ...

    def items(self) -> Iterable[tuple[str, str]]: ...


def _first(headers: Headers, names: Iterable[str]) -> str:
    for name in names:
        for value in headers.getall(name, []):
            if value:
                return value
    return ""


def user_from_headers(headers: Headers, settings: RequestHeaderSettings) -> UserInfo | None:
    """The user the front proxy names (call only after :func:`verify_proxy_certificate` said yes): the first
    non-empty user header, every value of every group header, and the extra headers by prefix with the
    key lower-cased and %-decoded, as k8s.io/apiserver's requestheader authenticator reads them. None when
    no user header is set."""
    username = _first(headers, settings.username_headers)
    if not username:
        return None
    groups = tuple(value for name in settings.group_headers for value in headers.getall(name, []) if value)
    extra: dict[str, list[str]] = {}
    for prefix in settings.extra_prefixes:
        for name, value in headers.items():
            if len(name) >= len(prefix) and name[: len(prefix)].lower() == prefix.lower():
                extra.setdefault(unquote(name[len(prefix) :].lower()), []).append(value)
    return UserInfo(
        username=username,
        uid=_first(headers, settings.uid_headers),
        groups=groups,
        extra=tuple(sorted((key, tuple(values)) for key, values in extra.items())),
    )
