"""How much one request body may make this process do, checked before the work starts.

Every caller of the HTTPS port may be hostile, and the process serves kube-apiserver's write path: a body that
takes seconds or gigabytes to answer stalls every Job and Pod create in the cluster (the webhooks fail
closed). So a body is measured before it is decoded, and the decoded document before any rule reads it:

* the body is at most :data:`MAX_BODY_BYTES`: kube-apiserver's own limit on a request body (3 MiB), so
  no review of an object the API server accepted is ever refused;
* it holds at most :data:`MAX_CONTAINERS` JSON objects and arrays and at most :data:`MAX_VALUES` values,
  counted on the raw bytes (braces and brackets; values as at most one per comma and container), where a
  brace or comma inside a string counts too, which only errs on the safe side. Real objects spend ~40
  bytes per object or array and ~18 per value (at least ~24 and ~8 in a dense list of env vars), so a
  3 MiB review of real objects holds about half as many; a body of ``[{},{},...]`` or ``[0,0,...]`` would
  hold the interpreter for a hundred milliseconds or more while it is decoded and walked (stalling the
  event loop too), and take ~100 MB of memory;
* nothing is nested deeper than :data:`MAX_DEPTH`. The deepest field of any kind this webhook reads
  (a JobSet's pod template affinity, inside an AdmissionReview) is about 25 levels down; deeper input
  would only exhaust the recursion of the code that copies or serialises it.

The checks are pure and raise :class:`BoundsError` with a message for the user; the callers turn it into the
protocol's refusal (an HTTP 413/400 ``Status``, or a review failure).
"""

from __future__ import annotations

from itertools import chain, compress, islice, repeat
from typing import Any

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_CONTAINERS",
    "MAX_DEPTH",
    "MAX_VALUES",
    "BoundsError",
    "check_body",
    "check_depth",
    "shown",
]

#: kube-apiserver's maximum request body (``--max-request-bytes`` default for its own API: 3 MiB)
MAX_BODY_BYTES = 3 * 1024 * 1024
#: JSON objects plus arrays in one body: ~1 per 21 bytes of a maximal body; real objects spend ~40 bytes
#: each (Kubernetes' own JSON of Jobs, Pods, Workloads), a dense list of env vars ~24
MAX_CONTAINERS = 150_000
#: JSON values of any kind in one body: ~1 per 8 bytes of a maximal body; real objects spend ~18 bytes each
MAX_VALUES = 400_000
#: nesting depth of JSON objects and arrays, counted from the body's top level
MAX_DEPTH = 100


_CONTAINER_TYPES = frozenset((dict, list))
_SLICE = 4096


class BoundsError(ValueError):
    """A body beyond one of the bounds; ``reason`` is the Kubernetes Status reason to answer with."""

    def __init__(self, message: str, *, reason: str = "BadRequest", code: int = 400) -> None:
        super().__init__(message)
        self.reason = reason
        self.code = code


def check_body(body: bytes) -> None:
    """Refuse a raw body that is too large, or holds too many objects, arrays or values to decode cheaply."""
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
    # every value but the first follows a comma or is the first in its container
    values = containers + body.count(b",") + 1
    if values > MAX_VALUES:
        raise BoundsError(
            f"request body holds up to {values} JSON values, more than the {MAX_VALUES} any review of a real "
            "object needs"
        )


def check_depth(document: Any, limit: int = MAX_DEPTH, *, start: int = 1) -> None:
    """Refuse a decoded document whose objects and arrays nest deeper than ``limit``; ``start`` is the
    level ``document`` sits at in the body (1: the body's top).

    Level by level, so the check itself never recurses; it touches each value once, in C-speed passes
    (``map``, ``compress``) over at most :data:`_SLICE` values at a time, so that a thread waiting for the
    interpreter (the event loop) gets it in between.
    """
    objects: list[dict[str, Any]] = [document] if type(document) is dict else []
    arrays: list[list[Any]] = [document] if type(document) is list else []
    depth = start
    while objects or arrays:
        children = chain(chain.from_iterable(map(dict.values, objects)), chain.from_iterable(arrays))
        objects, arrays = [], []
        while part := list(islice(children, _SLICE)):
            if _CONTAINER_TYPES.isdisjoint(map(type, part)):  # scalars only: the common case
                continue
            objects += compress(part, map(isinstance, part, repeat(dict)))
            arrays += compress(part, map(isinstance, part, repeat(list)))
        if (objects or arrays) and depth >= limit:
            raise BoundsError(f"request body nests objects and arrays deeper than {limit} levels")
        depth += 1


def shown(value: Any, limit: int = 80) -> str:
    """A value from the request as a message shows it: ``repr`` of a scalar, the type of anything else, cut
    to ``limit`` characters, so an answer never echoes a huge input."""
    text = repr(value) if isinstance(value, str | int | float | bool | None) else type(value).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
