"""Who may call what on the HTTPS port.

* The visibility API's ``pendingworkloads`` reads are served as an aggregated API server serves them
  (k8s.io/apiserver's delegated authentication and authorization, which Kueue's visibility server uses):
  the user is the one kube-apiserver's front proxy names in its requestheader headers, believed only on a
  connection whose client certificate passes :func:`kueue_webhook.http.front_proxy.verify_proxy_certificate`,
  or
  else the owner of a bearer token (TokenReview); each read is then authorized with a SubjectAccessReview
  (``get`` on ``clusterqueues/pendingworkloads`` or ``localqueues/pendingworkloads`` with the namespace, the
  queue as the name). ``system:masters`` is allowed without asking, as k8s.io/apiserver's default
  ``AlwaysAllowGroups``. No user: 401; not allowed: 403 with kube-apiserver's wording. Unlike Kueue's server,
  an anonymous caller is refused outright (401) rather than authorized as ``system:anonymous``.
* ``/metrics`` is guarded as controller-runtime's metrics filter guards it: a bearer token (TokenReview, no
  anonymous) and a SubjectAccessReview of ``get`` on the non-resource URL ``/metrics``; the answers are its
  plain-text ``Unauthorized`` (401) and ``Authorization denied for user <name>`` (403).
* Discovery (``/apis``, the group, the group version), ``/healthz``, ``/readyz`` and the admission and
  conversion paths are open: discovery is the same public list for everyone, and the reviews only answer,
  they never write.

A review kube-apiserver does not answer is a 500 and is not remembered; the next request asks again.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web

from kueue_webhook.http.front_proxy import (
    RequestHeaderSettings,
    UserInfo,
    user_from_headers,
    verify_proxy_certificate,
)
from kueue_webhook.http.responses import json_response, status_response
from kueue_webhook.http.reviews import NonResource, Resource, Reviewer, ReviewFailed, forbidden_message

__all__ = ["METRICS", "PRIVILEGED_GROUP", "HttpsAuth", "peer_certificate"]

log = logging.getLogger("kueue_webhook.auth")
METRICS = NonResource(verb="get", path="/metrics")
#: k8s.io/apiserver's DelegatingAuthorizationOptions AlwaysAllowGroups
PRIVILEGED_GROUP = "system:masters"


def peer_certificate(request: web.Request) -> bytes | None:
    """The client certificate (DER) of the request's TLS connection, when it presented one."""
    transport = request.transport
    ssl_object: Any = transport.get_extra_info("ssl_object") if transport is not None else None
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    return der if isinstance(der, bytes) and der else None


def _bearer(request: web.Request) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class HttpsAuth:
    """The guards of the visibility reads and ``/metrics``; ``settings`` is kept current by
    :class:`kueue_webhook.http.requestheader.RequestHeaderSource` (None: no front proxy is believed)."""

    def __init__(
        self,
        *,
        visibility: Reviewer,
        metrics: Reviewer,
        now: Callable[[], datetime.datetime] = _utcnow,
    ) -> None:
        self.visibility_reviewer = visibility
        self.metrics_reviewer = metrics
        self.settings: RequestHeaderSettings | None = None
        self.now = now

    async def _visibility_user(self, request: web.Request) -> UserInfo | None:
        refusal = verify_proxy_certificate(peer_certificate(request), self.settings, self.now())
        if refusal is None and self.settings is not None:
            user = user_from_headers(request.headers, self.settings)
            if user is not None:
                return user
        token = _bearer(request)
        return await self.visibility_reviewer.authenticate(token) if token else None

    async def guard_visibility(self, request: web.Request, attributes: Resource) -> web.Response | None:
        """None when the caller may make this read; else the answer to give it."""
        try:
            user = await self._visibility_user(request)
            if user is None:
                return status_response(401, "Unauthorized", "Unauthorized")
            if PRIVILEGED_GROUP in user.groups:
                return None
            decision = await self.visibility_reviewer.authorize(user, attributes)
        except ReviewFailed as exc:
            return status_response(500, "InternalError", f"Internal error occurred: {exc}")
        if decision.allowed:
            return None
        log.info("visibility read refused", extra={"user": user.username, "path": request.path})
        return _forbidden(user, attributes, decision.reason)

    async def guard_metrics(self, request: web.Request) -> web.Response | None:
        token = _bearer(request)
        try:
            user = await self.metrics_reviewer.authenticate(token) if token else None
        except ReviewFailed:
            return web.Response(status=500, text="Authentication failed\n")
        if user is None:
            return web.Response(status=401, text="Unauthorized\n")
        try:
            decision = await self.metrics_reviewer.authorize(user, METRICS)
        except ReviewFailed:
            return web.Response(status=500, text=f"Authorization for user {user.username} failed\n")
        if not decision.allowed:
            return web.Response(status=403, text=f"Authorization denied for user {user.username}\n")
        return None


def _forbidden(user: UserInfo, attributes: Resource, reason: str) -> web.Response:
    """apierrors.NewForbidden of the resource (not the subresource), as kube-apiserver answers it."""
    qualified = f"{attributes.resource}.{attributes.group}"
    what = f'{qualified} "{attributes.name}"' if attributes.name else qualified
    message = f"{what} is forbidden: {forbidden_message(user, attributes, reason)}"
    details: dict[str, str] = {"group": attributes.group, "kind": attributes.resource}
    if attributes.name:
        details = {"name": attributes.name, **details}
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Forbidden",
        "details": details,
        "code": 403,
    }
    return json_response(body, 403)
