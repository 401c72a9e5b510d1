"""The answers every path shares: a Kubernetes ``Status`` body for errors, JSON bodies for the rest."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

__all__ = ["JSON_CONTENT_TYPE", "json_response", "status_body", "status_response"]

JSON_CONTENT_TYPE = "application/json"


def status_body(code: int, reason: str, message: str) -> bytes:
    """A ``metav1.Status`` failure, as kube-apiserver writes it."""
    return orjson.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
    )


def status_response(code: int, reason: str, message: str) -> web.Response:
    return web.Response(status=code, body=status_body(code, reason, message), content_type=JSON_CONTENT_TYPE)


def json_response(body: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(body), content_type=JSON_CONTENT_TYPE)
