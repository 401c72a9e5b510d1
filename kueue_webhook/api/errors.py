"""Field errors shaped like kube-apiserver's ``field.Error``.

Users meet these messages in ``kubectl apply`` output, so they must read exactly like the API server's
own (``spec.x: Invalid value: "5": must be ...``). Keeping the type, the offending value and the detail
apart (instead of pre-formatted strings) lets the admission webhook build a ``Status`` with
``details.causes`` (reason + field + message) and lets ``simulate`` prefix the document it came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = ["ErrorType", "FieldError", "WordedError", "render_value", "type_name"]


class ErrorType(Enum):
    """The error kinds of ``k8s.io/apimachinery/pkg/util/validation/field`` we produce, with their
    ``StatusCause`` reasons."""

    INVALID = ("Invalid value", "FieldValueInvalid")
    REQUIRED = ("Required value", "FieldValueRequired")
    NOT_SUPPORTED = ("Unsupported value", "FieldValueNotSupported")
    DUPLICATE = ("Duplicate value", "FieldValueDuplicate")
    FORBIDDEN = ("Forbidden", "FieldValueForbidden")
    TOO_MANY = ("Too many", "FieldValueTooMany")
    TOO_LONG = ("Too long", "FieldValueTooLong")

    @property
    def label(self) -> str:
        return self.value[0]

    @property
    def reason(self) -> str:
        return self.value[1]


def render_value(value: Any) -> str:
    """How kube-apiserver prints a bad value: strings quoted, numbers bare, ``null`` for nothing."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


@dataclass(frozen=True, slots=True)
class FieldError:
    """One validation failure: where (``path``), what kind, the value at fault and why."""

    path: str
    type: ErrorType
    detail: str = ""
    value: Any = None
    supported: tuple[str, ...] = ()

    @classmethod
    def invalid(cls, path: str, value: Any, detail: str) -> FieldError:
        return cls(path, ErrorType.INVALID, detail, value)

    @classmethod
    def required(cls, path: str, detail: str = "") -> FieldError:
        return cls(path, ErrorType.REQUIRED, detail)

    @classmethod
    def not_supported(cls, path: str, value: Any, supported: tuple[str, ...]) -> FieldError:
        return cls(path, ErrorType.NOT_SUPPORTED, "", value, supported)

    @classmethod
    def duplicate(cls, path: str, value: Any) -> FieldError:
        return cls(path, ErrorType.DUPLICATE, "", value)

    @classmethod
    def forbidden(cls, path: str, detail: str) -> FieldError:
        return cls(path, ErrorType.FORBIDDEN, detail)

    @classmethod
    def too_long(cls, path: str, limit: int) -> FieldError:
        """``field.TooLong`` on a string or a map: ``Too long: may not be more than 316 bytes``."""
        return cls(path, ErrorType.TOO_LONG, f"may not be more than {limit} bytes")

    @classmethod
    def too_many(cls, path: str, count: int, limit: int) -> FieldError:
        """``field.TooMany``: ``Too many: 9: must have at most 8 items``."""
        return cls(path, ErrorType.TOO_MANY, f"must have at most {limit} items", count)

    @property
    def reason(self) -> str:
        """The ``StatusCause.reason`` for this error (``FieldValueInvalid``...)."""
        return self.type.reason

    @property
    def message(self) -> str:
        """The message without the field path, as in ``StatusCause.message``."""
        kind = self.type
        if kind is ErrorType.INVALID or kind is ErrorType.TOO_MANY:
            text = f"{kind.label}: {render_value(self.value)}"
        elif kind is ErrorType.NOT_SUPPORTED:
            choices = ", ".join(render_value(s) for s in self.supported)
            text = f"{kind.label}: {render_value(self.value)}"
            if choices:
                text += f": supported values: {choices}"
            return text
        elif kind is ErrorType.DUPLICATE:
            return f"{kind.label}: {render_value(self.value)}"
        else:
            text = kind.label
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


@dataclass(frozen=True, slots=True)
class WordedError(FieldError):
    """A field error whose message apimachinery words in a way :class:`FieldError` has no kind for (a
    duplicate printed as a Go struct or as JSON, with a detail): the message body is kept verbatim so users
    read exactly what kube-apiserver or Kueue's webhook would have said."""

    body: str = ""

    @property
    def message(self) -> str:
        return self.body


def type_name(value: object) -> str:
    """What a configuration value is, for a message saying it has the wrong type."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {value!r}"
    return type(value).__name__
