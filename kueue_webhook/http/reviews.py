"""Asking kube-apiserver who a caller is (TokenReview) and whether it may (SubjectAccessReview), cached.

This is what an extension API server delegates to the cluster (k8s.io/apiserver's delegating authenticator
and authorizer; controller-runtime's metrics filter uses the same pair): the bearer token of a caller is sent
in a ``TokenReview``, and each request is checked with a ``SubjectAccessReview`` naming the user and what it
asks for. The controller's credentials need ``create`` on both (the ``system:auth-delegator`` ClusterRole).

Answers are cached for a short time, by a bounded table each, so a scraper or a busy ``kubectl`` does not
cost two API requests per request: a token for ``token_ttl`` (only tokens that authenticated, and only by
their SHA-256), an allowed and a denied decision for ``allow_ttl`` and ``deny_ttl``. A review that fails (no
connection, 5xx, 403 for lack of the auth-delegator role) is never cached: the caller is told 500 and the next
request asks again.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from kueue_webhook.http.front_proxy import UserInfo

__all__ = [
    "SUBJECT_ACCESS_REVIEWS",
    "TOKEN_REVIEWS",
    "Decision",
    "NonResource",
    "Resource",
    "ReviewClient",
    "ReviewFailed",
    "Reviewer",
    "TtlCache",
    "forbidden_message",
    "subject_access_review",
    "token_review",
]

JSON = dict[str, Any]
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
#: each cache's bound (entries); the oldest entry goes first when full
MAX_ENTRIES = 4096
log = logging.getLogger("kueue_webhook.auth")

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


class ReviewClient(Protocol):
    async def request(self, method: str, path: str, *, body: Any = ..., timeout: float = ...) -> JSON: ...


class ReviewFailed(RuntimeError):
    """kube-apiserver did not answer a review (the caller answers 500; nothing is cached)."""


@dataclass(frozen=True, slots=True)
class Resource:
    """A request on a resource, as a SubjectAccessReview's ``resourceAttributes`` names it."""

    verb: str
    group: str
    version: str
    resource: str
    subresource: str = ""
    name: str = ""
    namespace: str = ""


@dataclass(frozen=True, slots=True)
class NonResource:
    """A request on a plain URL path (``/metrics``), as ``nonResourceAttributes`` names it."""

    verb: str
    path: str


Attributes = Resource | NonResource


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""


class TtlCache(Generic[_K, _V]):
    """A bounded table whose entries expire: ``get`` forgets an expired entry, ``put`` evicts the oldest
    entry beyond ``max_entries``."""

    def __init__(
        self, *, max_entries: int = MAX_ENTRIES, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_entries = max_entries
        self.clock = clock
        self._entries: OrderedDict[_K, tuple[float, _V]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: _K) -> _V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, value = entry
        if self.clock() >= expires:
            del self._entries[key]
            return None
        return value

    def put(self, key: _K, value: _V, ttl: float) -> None:
        if ttl <= 0:
            return
        self._entries.pop(key, None)
        self._entries[key] = (self.clock() + ttl, value)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)


def token_review(token: str) -> JSON:
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}


def subject_access_review(user: UserInfo, attributes: Attributes) -> JSON:
    """The review k8s.io/apiserver's webhook authorizer sends: the user in full and what it asks for."""
    spec: JSON = {"user": user.username, "groups": list(user.groups)}
    if user.uid:
        spec["uid"] = user.uid
    if user.extra:
        spec["extra"] = {key: list(values) for key, values in user.extra}
    if isinstance(attributes, Resource):
        resource = {
            "namespace": attributes.namespace,
            "verb": attributes.verb,
            "group": attributes.group,
            "version": attributes.version,
            "resource": attributes.resource,
            "subresource": attributes.subresource,
            "name": attributes.name,
        }
        spec["resourceAttributes"] = {key: value for key, value in resource.items() if value}
    else:
        spec["nonResourceAttributes"] = {"path": attributes.path, "verb": attributes.verb}
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}


def forbidden_message(user: UserInfo, attributes: Attributes, reason: str = "") -> str:
    """k8s.io/apiserver's wording of a refusal (responsewriters.ForbiddenStatusError), the part after the
    resource: ``User "x" cannot get resource "clusterqueues/pendingworkloads" in API group ...``."""
    if isinstance(attributes, NonResource):
        message = f'User "{user.username}" cannot {attributes.verb} path "{attributes.path}"'
    else:
        resource = attributes.resource
        if attributes.subresource:
            resource = f"{resource}/{attributes.subresource}"
        where = (
            f'in the namespace "{attributes.namespace}"' if attributes.namespace else "at the cluster scope"
        )
        message = (
            f'User "{user.username}" cannot {attributes.verb} resource "{resource}" in API group '
            f'"{attributes.group}" {where}'
        )
    return f"{message}: {reason}" if reason else message


def _user_of(status: JSON) -> UserInfo | None:
    user = status.get("user") or {}
    username = user.get("username")
    if not isinstance(username, str) or not username:
        return None
    extra = user.get("extra") or {}
    return UserInfo(
        username=username,
        uid=str(user.get("uid") or ""),
        groups=tuple(str(g) for g in user.get("groups") or ()),
        extra=tuple(sorted((str(k), tuple(str(v) for v in values or ())) for k, values in extra.items())),
    )


class Reviewer:
    """TokenReviews and SubjectAccessReviews through ``client``, each answer cached for its TTL."""

    def __init__(
        self,
        client: ReviewClient,
        *,
        token_ttl: float = 10.0,
        allow_ttl: float = 10.0,
        deny_ttl: float = 10.0,
        max_entries: int = MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
        timeout: float = 10.0,
    ) -> None:
        self.client = client
        self.token_ttl, self.allow_ttl, self.deny_ttl = token_ttl, allow_ttl, deny_ttl
        self.timeout = timeout
        self.tokens: TtlCache[bytes, UserInfo] = TtlCache(max_entries=max_entries, clock=clock)
        self.decisions: TtlCache[tuple[UserInfo, Attributes], Decision] = TtlCache(
            max_entries=max_entries, clock=clock
        )

    async def _create(self, path: str, body: JSON) -> JSON:
        try:
            return await self.client.request("POST", path, body=body, timeout=self.timeout)
        except Exception as exc:  # any failure to get an answer: the caller says 500, nothing cached
            log.warning("review not answered", extra={"path": path, "error": repr(exc)})
            raise ReviewFailed(f"{body['kind']} failed: {exc}") from exc

    async def authenticate(self, token: str) -> UserInfo | None:
        """The user a bearer token belongs to; None when kube-apiserver does not authenticate it."""
        key = hashlib.sha256(token.encode()).digest()
        cached = self.tokens.get(key)
        if cached is not None:
            return cached
        answer = await self._create(TOKEN_REVIEWS, token_review(token))
        status = answer.get("status") or {}
        user = _user_of(status) if status.get("authenticated") is True else None
        if user is not None:
            self.tokens.put(key, user, self.token_ttl)
        return user

    async def authorize(self, user: UserInfo, attributes: Attributes) -> Decision:
        key = (user, attributes)
        cached = self.decisions.get(key)
        if cached is not None:
            return cached
        answer = await self._create(SUBJECT_ACCESS_REVIEWS, subject_access_review(user, attributes))
        status = answer.get("status") or {}
        allowed = status.get("allowed") is True and status.get("denied") is not True
        decision = Decision(allowed=allowed, reason=str(status.get("reason") or ""))
        self.decisions.put(key, decision, self.allow_ttl if allowed else self.deny_ttl)
        return decision
