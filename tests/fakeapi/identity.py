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
