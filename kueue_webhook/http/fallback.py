"""What the port answers for a path it does not serve, or a method a path does not take: a Kubernetes
``Status`` (404 ``NotFound``, 405 ``MethodNotAllowed`` with ``Allow``), as kube-apiserver answers, so every
answer of the port is JSON a Kubernetes client can read.

It is a route of its own, matched after every other (aiohttp tries the routes of the longest matching path
prefix first; this one sits at ``/``). Without it aiohttp answers such requests by raising an HTTP exception
inside its router, and each raised exception leaves a reference cycle (the exception, its traceback, the
frames) that only the cyclic garbage collector frees: a caller sending unknown paths would keep the
collector, and its pauses on the event loop, busy.
"""

from __future__ import annotations

from aiohttp import web

from kueue_webhook.http.responses import status_response

__all__ = ["add_fallback_route"]

_NOT_FOUND = "the server could not find the requested resource"
_NOT_ALLOWED = "the server does not allow this method on the requested resource"


def add_fallback_route(app: web.Application) -> None:
    """Answer every request no other route of ``app`` takes (call once, any time before the app starts)."""
    fallback = app.router.add_resource("/{path:.*}")

    async def answer(request: web.Request) -> web.Response:
        allowed: set[str] = set()
        for resource in request.app.router.resources():
            if resource is not fallback:
                allowed |= (await resource.resolve(request))[1]
        if allowed:
            response = status_response(405, "MethodNotAllowed", _NOT_ALLOWED)
            response.headers["Allow"] = ",".join(sorted(allowed))
            return response
        return status_response(404, "NotFound", _NOT_FOUND)

    fallback.add_route("*", answer)
