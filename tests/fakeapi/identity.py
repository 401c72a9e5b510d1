"""Who is calling: a bearer-token table, as a static token file gives kube-apiserver.

Tests act as a user, or as the controller's service account, by choosing a token; the resulting user info is
what webhooks receive in `request.userInfo`, so identity-based admission rules can be tested end to end, and
what `POST /apis/authentication.k8s.io/v1/selfsubjectreviews` answers (`kubectl auth whoami`), as the golden
`selfsubjectreview-*.json` captures show: 201, `metadata.creationTimestamp` only, `status.userInfo` with the
groups including `system:authenticated`; the body sent is read only for its kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tests.fakeapi.errors import bad_request

ADMIN_TOKEN = "fake-admin-token"


@dataclass(frozen=True)
class UserInfo:
    username: str
    groups: tuple[str, ...] = ()
    uid: str | None = None
    extra: dict[str, list[str]] = field(default_factory=dict)

    def to_review(self) -> dict[str, Any]:
        """The `userInfo` of an AdmissionReview, with `system:authenticated` added as the apiserver does."""
        groups = list(self.groups)
        if "system:authenticated" not in groups:
            groups.append("system:authenticated")
        out: dict[str, Any] = {"username": self.username}
        if self.uid is not None:
            out["uid"] = self.uid
        out["groups"] = groups
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


ADMIN = UserInfo(username="admin", groups=("system:masters",), uid="admin")


def service_account(namespace: str, name: str) -> UserInfo:
    """The identity a pod's service-account token carries."""
    return UserInfo(
        username=f"system:serviceaccount:{namespace}:{name}",
        groups=("system:serviceaccounts", f"system:serviceaccounts:{namespace}"),
    )


class TokenTable:
    def __init__(self) -> None:
        self._tokens: dict[str, UserInfo] = {ADMIN_TOKEN: ADMIN}

    def add(self, token: str, user: UserInfo) -> None:
        self._tokens[token] = user

    def lookup(self, token: str) -> UserInfo | None:
        return self._tokens.get(token)


def self_subject_review(user: UserInfo, body: Any) -> dict[str, Any]:
    """kube-apiserver's answer to a SelfSubjectReview create: the caller's own user info."""
    sent = body if isinstance(body, dict) else {}
    kind, api_version = sent.get("kind") or "", sent.get("apiVersion") or ""
    if kind and kind != "SelfSubjectReview":
        version = api_version.rsplit("/", 1)[-1]
        raise bad_request(
            f'{kind} in version "{version}" cannot be handled as a SelfSubjectReview: converting '
            f"({version}.{kind}) to (authentication.SelfSubjectReview): unknown conversion"
        )
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": now},
        "status": {"userInfo": user.to_review()},
    }


@dataclass(frozen=True)
class Grant:
    """One RBAC-like rule: ``subject`` (a user name or a group) may ``verb`` a ``resource`` (``plural`` or
    ``plural/subresource``) of ``group``, optionally only in ``namespace`` or only the object ``name``; or a
    ``non_resource_url``."""

    subject: str
    verb: str = "get"
    group: str = ""
    resource: str = ""
    namespace: str = ""
    name: str = ""
    non_resource_url: str = ""

    def allows(self, subjects: set[str], spec: dict[str, Any]) -> bool:
        if self.subject not in subjects:
            return False
        if self.non_resource_url:
            attrs = spec.get("nonResourceAttributes") or {}
            return attrs.get("path") == self.non_resource_url and attrs.get("verb") == self.verb
        attrs = spec.get("resourceAttributes") or {}
        resource = attrs.get("resource", "")
        if attrs.get("subresource"):
            resource = f"{resource}/{attrs['subresource']}"
        return (
            attrs.get("verb") == self.verb
            and attrs.get("group", "") == self.group
            and resource == self.resource
            and (not self.namespace or attrs.get("namespace") == self.namespace)
            and (not self.name or attrs.get("name") == self.name)
        )


class Grants:
    """What kube-apiserver's authorizer would allow: ``system:masters`` all, others what was granted."""

    def __init__(self) -> None:
        self._grants: list[Grant] = []

    def add(self, grant: Grant) -> None:
        self._grants.append(grant)

    def allows(self, spec: dict[str, Any]) -> bool:
        subjects = {spec.get("user") or "", *(spec.get("groups") or ())}
        return "system:masters" in subjects or any(g.allows(subjects, spec) for g in self._grants)


def _review_of(kind: str, group_version: str, body: Any) -> dict[str, Any]:
    sent = body if isinstance(body, dict) else {}
    sent_kind = sent.get("kind") or kind
    if sent_kind != kind:
        version = str(sent.get("apiVersion") or "").rsplit("/", 1)[-1]
        raise bad_request(
            f'{sent_kind} in version "{version}" cannot be handled as a {kind}: converting '
            f"({version}.{sent_kind}) to ({group_version.split('.')[0]}.{kind}): unknown conversion"
        )
    spec = sent.get("spec")
    return spec if isinstance(spec, dict) else {}


def token_review(tokens: TokenTable, body: Any) -> dict[str, Any]:
    """kube-apiserver's answer to a TokenReview: the spec back, and the token's user or an error (the
    real server's words for an unknown token: ``invalid bearer token``)."""
    spec = _review_of("TokenReview", "authentication.k8s.io", body)
    user = tokens.lookup(str(spec.get("token") or ""))
    status: dict[str, Any]
    if user is None:
        status = {"user": {}, "error": "invalid bearer token"}
    else:
        status = {"authenticated": True, "user": user.to_review()}
    return {
        "kind": "TokenReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {},
        "spec": spec,
        "status": status,
    }


def subject_access_review(grants: Grants, body: Any) -> dict[str, Any]:
    """kube-apiserver's answer to a SubjectAccessReview: the spec back and ``allowed`` (a denial by RBAC
    carries no reason)."""
    spec = _review_of("SubjectAccessReview", "authorization.k8s.io", body)
    if not spec.get("user") and not spec.get("groups"):
        raise bad_request(
            'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least '
            "one of user or group must be specified"
        )
    return {
        "kind": "SubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {},
        "spec": spec,
        "status": {"allowed": grants.allows(spec)},
    }
