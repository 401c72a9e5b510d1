"""Field paths in an object, written as admins write them: ``spec.runPolicy.suspend``,
``status.replicaStatuses.*.active``.

A declared integration names every field it reads or writes by such a path, so one small reader serves the
built-in kinds and the ones an admin declares in the ConfigMap alike. A segment is a field name; ``*`` stands
for every item of a list or every value of a map (for sums over replica statuses). Writes go out as JSON
Patch, so a path also turns into a JSON Pointer (RFC 6901) once list indices and map keys are known.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["FieldPath", "parse_path", "pointer"]

_SEGMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*|\*")


class FieldPath(tuple[str, ...]):
    """A parsed dotted path; ``str()`` gives it back as written."""

    __slots__ = ()

    def __str__(self) -> str:
        return ".".join(self)

    def get(self, obj: Any) -> Any:
        """The value at this path (no ``*``), None when any step is missing or not a map."""
        current = obj
        for segment in self:
            if not isinstance(current, Mapping):
                return None
            current = current.get(segment)
        return current

    def values(self, obj: Any) -> Iterator[Any]:
        """Every value the path reaches, ``*`` fanning out over list items and map values."""
        yield from _walk(obj, tuple(self))

    def pointer(self) -> str:
        """The JSON Pointer of a path without ``*``."""
        return pointer(self)


def _walk(obj: Any, rest: tuple[str, ...]) -> Iterator[Any]:
    if not rest:
        if obj is not None:
            yield obj
        return
    head, tail = rest[0], rest[1:]
    if head == "*":
        children: Sequence[Any] = (
            list(obj.values()) if isinstance(obj, Mapping) else obj if isinstance(obj, list) else ()
        )
        for child in children:
            yield from _walk(child, tail)
    elif isinstance(obj, Mapping):
        yield from _walk(obj.get(head), tail)


def parse_path(text: object, *, wildcard: bool = False) -> FieldPath | str:
    """``text`` as a FieldPath, or why it is not one (``*`` only where ``wildcard`` allows it)."""
    if not isinstance(text, str) or not text:
        return "must be a dotted field path such as spec.suspend"
    segments = text.split(".")
    for segment in segments:
        if not _SEGMENT.fullmatch(segment):
            return f"{segment!r} is not a field name (letters, digits, '_' and '-'; '*' for every item)"
        if segment == "*" and not wildcard:
            return "'*' is not allowed here: the path must name one field"
    return FieldPath(segments)


def pointer(segments: Sequence[str | int]) -> str:
    """A JSON Pointer from path segments (map keys escaped, list indices as numbers)."""
    return "".join("/" + str(s).replace("~", "~0").replace("/", "~1") for s in segments)
