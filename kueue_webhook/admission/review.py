"""AdmissionReview v1 in, AdmissionReview v1 out: the only place that knows the wire shape.

Two kinds of failure are kept apart on purpose. A body that is not an AdmissionReview at all (not JSON, wrong
apiVersion, no ``request.uid``) cannot be answered as a review: :func:`parse_review` raises
:class:`ReviewError` and the server answers HTTP 400 with the message. A well-formed review whose object we
cannot make sense of still gets a proper review response with ``allowed: false`` and a status saying why,
because kube-apiserver shows that status to the user, while it turns an HTTP error into an opaque
"failed calling webhook". Handlers return a :class:`Verdict`; :func:`render_response` turns it into bytes.

Status codes follow controller-runtime, which Kueue's webhooks are built on: a denial is ``403 Forbidden``, a
request that could not be decoded is ``400 BadRequest``, an allowed response carries ``code: 200``.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from kueue_webhook.api.bounds import BoundsError, check_body, check_depth

__all__ = [
    "ADMISSION_API_VERSION",
    "AdmissionRequest",
    "GroupVersionKind",
    "ReviewError",
    "Verdict",
    "parse_review",
    "render_response",
]

ADMISSION_API_VERSION = "admission.k8s.io/v1"
_OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})


class ReviewError(ValueError):
    """The body is not an AdmissionReview v1 request, or is beyond the bounds of
    :mod:`kueue_webhook.api.bounds`; answered with an HTTP ``Status`` of ``code`` (400, 413 above the size
    bound) and ``reason``, or, when ``uid`` is known (a review nested too deep), with a review denying the
    request with that code: kube-apiserver shows a review's message to the user, not an HTTP error's."""

    def __init__(
        self, message: str, *, reason: str = "BadRequest", code: int = 400, uid: str | None = None
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.code = code
        self.uid = uid


def _review_uid(document: Any) -> str | None:
    """The uid of an AdmissionReview v1 document, None when it is not one."""
    if not isinstance(document, dict) or document.get("kind") != "AdmissionReview":
        return None
    if document.get("apiVersion") != ADMISSION_API_VERSION or not isinstance(document.get("request"), dict):
        return None
    uid = document["request"].get("uid")
    return uid if isinstance(uid, str) and uid else None


@dataclass(frozen=True, slots=True)
class GroupVersionKind:
    group: str
    version: str
    kind: str

    def __str__(self) -> str:
        return f"{self.group or 'core'}/{self.version}, Kind={self.kind}"


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    """The fields of ``request`` the handlers use; objects stay plain decoded JSON."""

    uid: str
    kind: GroupVersionKind
    operation: str
    namespace: str
    name: str
    sub_resource: str
    username: str
    groups: tuple[str, ...]
    object: Mapping[str, Any] | None
    old_object: Mapping[str, Any] | None
    dry_run: bool = False


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a handler decided; ``patch`` is a JSON Patch (RFC 6902) list, only for mutating handlers."""

    allowed: bool
    message: str = ""
    code: int = 200
    reason: str = ""
    patch: Sequence[Mapping[str, Any]] = ()
    warnings: tuple[str, ...] = field(default=())

    @classmethod
    def allow(cls, patch: Sequence[Mapping[str, Any]] = ()) -> Verdict:
        return cls(allowed=True, patch=tuple(patch))

    @classmethod
    def deny(cls, message: str, *, code: int = 403, reason: str = "Forbidden") -> Verdict:
        return cls(allowed=False, message=message, code=code, reason=reason)

    @classmethod
    def unprocessable(cls, message: str) -> Verdict:
        """A review we understood but whose object is malformed (controller-runtime's decode error)."""
        return cls(allowed=False, message=message, code=400, reason="BadRequest")


def parse_review(body: bytes) -> AdmissionRequest:
    """Decode an AdmissionReview v1 request body; raises ReviewError saying what is wrong.

    The body is measured before it is decoded, and the document before any rule reads it
    (:mod:`kueue_webhook.api.bounds`), so no review costs more than a bounded amount of time and memory.
    """
    try:
        check_body(body)
        document = orjson.loads(body)
    except BoundsError as exc:
        raise ReviewError(str(exc), reason=exc.reason, code=exc.code) from None
    except orjson.JSONDecodeError as exc:
        raise ReviewError(f"request body is not valid JSON: {exc}") from None
    try:
        check_depth(document)
    except BoundsError as exc:  # decoded: answered as a review when it says whose it is
        raise ReviewError(str(exc), reason=exc.reason, code=exc.code, uid=_review_uid(document)) from None
    if not isinstance(document, dict):
        raise ReviewError("request body must be a JSON object (an AdmissionReview)")
    if document.get("kind") != "AdmissionReview":
        raise ReviewError(f'kind must be "AdmissionReview", got {_show(document.get("kind"))}')
    if document.get("apiVersion") != ADMISSION_API_VERSION:
        raise ReviewError(
            f'apiVersion must be "{ADMISSION_API_VERSION}" (set admissionReviewVersions: [v1]), '
            f"got {_show(document.get('apiVersion'))}"
        )
    request = document.get("request")
    if not isinstance(request, dict):
        raise ReviewError("request must be an object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise ReviewError("request.uid must be a non-empty string")
    operation = request.get("operation")
    if not isinstance(operation, str) or operation not in _OPERATIONS:
        raise ReviewError(
            f"request.operation must be one of CREATE, UPDATE, DELETE, CONNECT, got {_show(operation)}"
        )
    kind = request.get("kind")
    if not isinstance(kind, dict) or not isinstance(kind.get("kind"), str):
        raise ReviewError("request.kind must be an object with group, version and kind")
    raw_user = request.get("userInfo")
    user: dict[str, Any] = raw_user if isinstance(raw_user, dict) else {}
    raw_groups = user.get("groups")
    groups: list[Any] = raw_groups if isinstance(raw_groups, list) else []
    return AdmissionRequest(
        uid=uid,
        kind=GroupVersionKind(_text(kind.get("group")), _text(kind.get("version")), kind["kind"]),
        operation=operation,
        namespace=_text(request.get("namespace")),
        name=_text(request.get("name")),
        sub_resource=_text(request.get("subResource")),
        username=_text(user.get("username")),
        groups=tuple(g for g in groups if isinstance(g, str)),
        object=_object(request.get("object"), "request.object"),
        old_object=_object(request.get("oldObject"), "request.oldObject"),
        dry_run=request.get("dryRun") is True,
    )


def render_response(uid: str, verdict: Verdict) -> bytes:
    """The AdmissionReview v1 response body kube-apiserver expects for ``uid``."""
    status: dict[str, Any] = {"code": verdict.code}
    if verdict.message:
        status["message"] = verdict.message
    if verdict.reason:
        status["reason"] = verdict.reason
    response: dict[str, Any] = {"uid": uid, "allowed": verdict.allowed, "status": status}
    if verdict.allowed and verdict.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(orjson.dumps(list(verdict.patch))).decode("ascii")
    if verdict.warnings:
        response["warnings"] = list(verdict.warnings)
    return orjson.dumps(
        {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "response": response}
    )


def _object(value: Any, where: str) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ReviewError(f"{where} must be an object or null")
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _show(value: Any) -> str:
    text = orjson.dumps(value).decode() if _jsonable(value) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _jsonable(value: Any) -> bool:
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return True
