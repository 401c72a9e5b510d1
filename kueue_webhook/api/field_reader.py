"""Reading a document an admin wrote (the ConfigMap's ``config.yaml``, a kind declaration in it) field by
field, collecting every problem instead of stopping at the first.

Both documents are reloaded live and refused whole when anything is wrong, so the admin is told all that
is wrong at once, one ``path: reason`` per problem, and one edit can fix them all. ``FieldReader`` holds
that list and the checks both documents make the same way (a mapping of known fields, a string, a list of
strings, a number, a Go duration); ``config_reader.ConfigurationReader`` and
``integrations.declare.DeclarationReader`` add what each document means.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

from kueue_webhook.api.errors import FieldError, type_name

__all__ = ["FieldReader", "parse_go_duration"]

T = TypeVar("T")
_GO_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_GO_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_go_duration(value: object) -> float | None:
    """Seconds for a Go ``time.Duration`` string ("1h30m", "90s", "0"); None when it is not one."""
    if not isinstance(value, str) or not value:
        return None
    text = value[1:] if value[0] in "+-" else value
    if value[0] == "-":
        return None  # a negative timeout means nothing useful here
    if text == "0":
        return 0.0
    position, total = 0, 0.0
    for match in _GO_DURATION_PART.finditer(text):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _GO_DURATION_UNITS[match.group(2)]
        position = match.end()
    return total if position == len(text) and position > 0 else None


def _as_bool(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def _as_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _as_non_empty_string(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


class FieldReader:
    """Collects ``path: reason`` for every problem of one document, with the checks every document makes."""

    #: what the document's root is called in a message (its path is empty)
    ROOT: ClassVar[str] = "document"
    #: whether an absent section reads as an empty one (else: an error)
    ABSENT_IS_EMPTY: ClassVar[bool] = True
    #: whether an unknown field's message lists the known ones
    NAMES_KNOWN_FIELDS: ClassVar[bool] = False

    def __init__(self, errors: list[str] | None = None) -> None:
        self.errors: list[str] = [] if errors is None else errors

    def fail(self, path: str, reason: str) -> None:
        self.errors.append(f"{path}: {reason}")

    def invalid(self, errors: list[FieldError]) -> bool:
        """Record apimachinery-worded field errors; True if there were any."""
        self.errors.extend(str(error) for error in errors)
        return bool(errors)

    def mapping(self, value: object, path: str, known: frozenset[str]) -> Mapping[str, Any] | None:
        """``value`` as a mapping whose every field is ``known``; None (and an error) when it is none."""
        if value is None and self.ABSENT_IS_EMPTY:
            return {}
        if not isinstance(value, Mapping):
            self.fail(path or self.ROOT, f"must be a mapping, got {type_name(value)}")
            return None
        reason = "unknown field"
        if self.NAMES_KNOWN_FIELDS:
            reason += f"; known: {', '.join(sorted(known))}"
        for key in value:
            if key not in known:
                self.fail(f"{path}.{key}" if path else str(key), reason)
        return value

    def strings(self, value: object, path: str) -> tuple[str, ...]:
        """A list of non-empty strings; absent, none."""
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.fail(path, f"must be a list of non-empty strings, got {value!r}")
            return ()
        return tuple(value)

    def scalar(
        self, value: object, path: str, default: T, read: Callable[[object], T | None], expected: str
    ) -> T:
        """``value`` as ``read`` takes it; absent is ``default``, and so (with an error saying what was
        ``expected``) is anything ``read`` refuses."""
        if value is None:
            return default
        parsed = read(value)
        if parsed is None:
            self.fail(path, f"must be {expected}, got {value!r}")
            return default
        return parsed

    def boolean(self, value: object, path: str, default: bool) -> bool:
        return self.scalar(value, path, default, _as_bool, "true or false")

    def integer(self, value: object, path: str, default: int | None, minimum: int) -> int | None:
        number = self.scalar(value, path, None, _as_int, "an integer")
        if number is None:
            return default
        if number < minimum:
            self.fail(path, f"must be greater than or equal to {minimum}, got {number}")
            return default
        return number

    def string(self, value: object, path: str, default: str) -> str:
        return self.scalar(value, path, default, _as_non_empty_string, "a non-empty string")

    def duration(self, value: object, path: str, default: float) -> float:
        expected = 'a duration such as "30s", "5m" or "1h30m"'
        return self.scalar(value, path, default, parse_go_duration, expected)
