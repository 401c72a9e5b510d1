"""How much one request body may make this process do, checked before the work starts.

Every caller of the HTTPS port may be hostile, and the process serves kube-apiserver's write path: a body that
takes seconds or gigabytes to answer stalls every Job and Pod create in the cluster (the webhooks fail
closed). So a body is measured before it is decoded, and the decoded document before any rule reads it:

* the body is at most :data:`MAX_BODY_BYTES`: kube-apiserver's own limit on a request body (3 MiB), so
  no review of an object the API server accepted is ever refused;
* it holds at most :data:`MAX_CONTAINERS` JSON objects and arrays, counted on the raw bytes (a brace inside
  a string counts too, which only errs on the safe side). A real object spends at least ~20 bytes per
  object or array (``{"name":"a","value":"b"}``), so a 3 MiB review of real objects holds far fewer; a
  body of ``[{},{},...]`` would cost a hundred milliseconds to decode and ~100 MB of memory;
* nothing is nested deeper than :data:`MAX_DEPTH`. The deepest field of any kind this webhook reads
  (a JobSet's pod template affinity, inside an AdmissionReview) is about 25 levels down; deeper input
  would only exhaust the recursion of the code that copies or serialises it.

The checks are pure and raise :class:`BoundsError` with a message for the user; the callers turn it into the
protocol's refusal (an HTTP 413/400 ``Status``, or a review failure).
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_BODY_BYTES", "MAX_CONTAINERS", "MAX_DEPTH", "BoundsError", "check_body", "check_depth"]

#: kube-apiserver's maximum request body (``--max-request-bytes`` default for its own API: 3 MiB)
MAX_BODY_BYTES = 3 * 1024 * 1024
#: JSON objects plus arrays in one body (~1 per 12 bytes of a maximal body; real objects use far fewer)
MAX_CONTAINERS = 250_000
#: nesting depth of JSON objects and arrays, counted from the body's top level
MAX_DEPTH = 100


class BoundsError(ValueError):
    """A body beyond one of the bounds; ``reason`` is the Kubernetes Status reason to answer with."""

    def __init__(self, message: str, *, reason: str = "BadRequest", code: int = 400) -> None:
        super().__init__(message)
        self.reason = reason
        self.code = code


def check_body(body: bytes) -> None:
    """Refuse a raw body that is too large, or holds too many objects and arrays to decode cheaply."""
    if len(body) > MAX_BODY_BYTES:
        raise BoundsError(
            f"request body of {len(body)} bytes exceeds {MAX_BODY_BYTES} bytes",
            reason="RequestEntityTooLarge",
            code=413,
        )
    containers = body.count(b"{") + body.count(b"[")
    if containers > MAX_CONTAINERS:
        raise BoundsError(
            f"request body holds {containers} JSON objects and arrays, more than the {MAX_CONTAINERS} "
            "any review of a real object needs"
        )


def check_depth(document: Any, limit: int = MAX_DEPTH) -> None:
    """Refuse a decoded document whose objects and arrays nest deeper than ``limit``.

    An explicit stack, so the check itself never recurses; it touches each value once.
    """
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if type(node) is dict else node if type(node) is list else ()
        nested = [child for child in children if type(child) is dict or type(child) is list]
        if not nested:
            continue
        if depth >= limit:
            raise BoundsError(f"request body nests objects and arrays deeper than {limit} levels")
        stack.extend((child, depth + 1) for child in nested)
