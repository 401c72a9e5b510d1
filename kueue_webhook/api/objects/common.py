"""What every Kueue view shares: the parse-result convention, object metadata, conditions and the readers of
single fields (enums, references by name, quantities, lists, 32-bit integers).

Each kind's module builds on these, so a field of the same type is read, defaulted and reported the same way
everywhere, with one wording. Every reader appends to the caller's error list and returns a usable default
instead of raising: parsing goes on past the first problem, and the caller ends with :func:`finish`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeAlias, TypeGuard, TypeVar

from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.quantity import Quantity, QuantityError, parse_quantity
from kueue_webhook.api.validation import schema_name_errors, string_map

__all__ = [
    "API_VERSION",
    "GROUP",
    "Condition",
    "Meta",
    "NamedByMeta",
    "NamespacedByMeta",
    "Parsed",
    "enum_value",
    "finish",
    "int32_field",
    "is_int32",
    "list_field",
    "name_reference",
    "object_field",
    "object_items",
    "optional_object",
    "parse_conditions",
    "parse_meta",
    "parse_spec",
    "parse_timestamp",
    "quantity_field",
]

GROUP = "kueue.x-k8s.io"
API_VERSION = f"{GROUP}/v1beta2"

T = TypeVar("T")
#: a parse result: the typed view, or every error found
Parsed: TypeAlias = T | list[FieldError]


def finish(value: T, errors: list[FieldError]) -> Parsed[T]:
    return errors if errors else value


def parse_timestamp(raw: Any) -> float:
    """RFC 3339 ``metav1.Time`` -> seconds since the epoch (0.0 when absent or malformed)."""
    if not isinstance(raw, str) or not raw:
        return 0.0
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).astimezone(UTC).timestamp()
    except ValueError:
        return 0.0


# -- metadata ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Meta:
    """The parts of ``ObjectMeta`` the scheduler and controller need."""

    name: str
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    #: ``creation_timestamp`` already in seconds, when whoever built this view knows it (simulate)
    created_at: float | None = None
    #: set once a DELETE was accepted: the object is *deleting* until its finalizers are removed
    deletion_timestamp: str = ""

    @property
    def created(self) -> float:
        if self.created_at is not None:
            return self.created_at
        return parse_timestamp(self.creation_timestamp)


class NamedByMeta:
    """``name`` read from ``self.meta``, for the views of each kind (which keep their own ``__slots__``)."""

    __slots__ = ()
    meta: Meta

    @property
    def name(self) -> str:
        return self.meta.name


class NamespacedByMeta(NamedByMeta):
    """``name``, ``namespace`` and the ``namespace/name`` key, read from ``self.meta``."""

    __slots__ = ()

    @property
    def namespace(self) -> str:
        return self.meta.namespace

    @property
    def key(self) -> str:
        return f"{self.meta.namespace}/{self.meta.name}"


def parse_meta(obj: Mapping[str, Any], errors: list[FieldError], *, namespaced: bool) -> Meta:
    raw = obj.get("metadata")
    if not isinstance(raw, Mapping):
        errors.append(FieldError.required("metadata"))
        return Meta(name="")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        if not raw.get("generateName"):
            errors.append(FieldError.required("metadata.name", "name or generateName is required"))
        name = ""
    namespace = raw.get("namespace") or ""
    if namespaced and not namespace:
        errors.append(FieldError.required("metadata.namespace"))
    generation = raw.get("generation")
    return Meta(
        name=name,
        namespace=str(namespace),
        uid=str(raw.get("uid") or ""),
        resource_version=str(raw.get("resourceVersion") or ""),
        generation=generation if isinstance(generation, int) else 0,
        creation_timestamp=str(raw.get("creationTimestamp") or ""),
        labels=string_map(raw.get("labels"), "metadata.labels", errors),
        annotations=string_map(raw.get("annotations"), "metadata.annotations", errors),
        deletion_timestamp=str(raw.get("deletionTimestamp") or ""),
    )


# -- single fields ----------------------------------------------------------------------------------


def object_field(raw: Any, path: str, errors: list[FieldError]) -> Mapping[str, Any] | None:
    """A field that must be an object: the mapping, or ``None`` and "must be an object" on ``path``."""
    if isinstance(raw, Mapping):
        return raw
    errors.append(FieldError.invalid(path, None, "must be an object"))
    return None


def object_items(
    items: list[Any], path: str, errors: list[FieldError]
) -> Iterator[tuple[int, str, Mapping[str, Any]]]:
    """The entries of a list of objects, each with its index and path; an entry that is not an object gets
    "must be an object" on its path (appended as the caller reaches it, so errors keep the list's order)."""
    for index, raw in enumerate(items):
        item_path = f"{path}[{index}]"
        item = object_field(raw, item_path, errors)
        if item is not None:
            yield index, item_path, item


def optional_object(raw: Any, path: str, errors: list[FieldError]) -> Mapping[str, Any] | None:
    """An optional object field: ``None`` when absent, else as :func:`object_field`."""
    return None if raw is None else object_field(raw, path, errors)


def parse_spec(
    obj: Mapping[str, Any], errors: list[FieldError], *, required: bool = False
) -> Mapping[str, Any]:
    spec = obj.get("spec")
    if spec is None:
        if required:
            errors.append(FieldError.required("spec"))
        return {}
    return object_field(spec, "spec", errors) or {}


def list_field(raw: Any, path: str, errors: list[FieldError]) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        errors.append(FieldError.invalid(path, None, "must be a list"))
        return []
    return raw


def enum_value(raw: Any, path: str, allowed: tuple[str, ...], default: str, errors: list[FieldError]) -> str:
    if raw is None or raw == "":
        return default
    if raw not in allowed:
        errors.append(FieldError.not_supported(path, raw, allowed))
        return default
    return str(raw)


def name_reference(raw: Any, path: str, errors: list[FieldError], *, required: bool = False) -> str:
    """A reference to another Kueue object by name: the CRD schema's DNS-1123 subdomain of at most 253."""
    if raw is None or raw == "":
        if required:
            errors.append(FieldError.required(path))
        return ""
    if not isinstance(raw, str):
        errors.append(FieldError.invalid(path, str(raw), "must be a string"))
        return ""
    errors.extend(schema_name_errors(raw, path))
    return raw


def quantity_field(raw: Any, path: str, errors: list[FieldError]) -> Quantity | None:
    """A non-negative ``resource.Quantity`` (quotas, limits, usage, weights)."""
    try:
        quantity = parse_quantity(raw)
    except QuantityError as exc:
        errors.append(FieldError.invalid(path, raw if isinstance(raw, str | int) else str(raw), str(exc)))
        return None
    if quantity.nanos < 0:
        errors.append(FieldError.invalid(path, quantity.canonical(), "must be greater than or equal to 0"))
        return None
    return quantity


_INT32 = (-(2**31), 2**31 - 1)


def is_int32(raw: Any) -> TypeGuard[int]:
    """Whether ``raw`` is a JSON integer that fits Go's ``int32`` (a bool is not an integer here)."""
    return isinstance(raw, int) and not isinstance(raw, bool) and _INT32[0] <= raw <= _INT32[1]


def int32_field(raw: Any, path: str, errors: list[FieldError], *, minimum: int | None = None) -> int | None:
    if raw is None:
        return None
    if not is_int32(raw):
        errors.append(
            FieldError.invalid(path, raw if isinstance(raw, int | str) else None, "must be a 32-bit integer")
        )
        return None
    if minimum is not None and raw < minimum:
        errors.append(FieldError.invalid(path, raw, f"must be greater than or equal to {minimum}"))
        return None
    return raw


# -- conditions -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""
    observed_generation: int | None = None

    @property
    def is_true(self) -> bool:
        return self.status == "True"


def parse_conditions(raw: Any, errors: list[FieldError]) -> tuple[Condition, ...]:
    """``status.conditions``: each needs a ``type``; a missing status reads ``Unknown``."""
    out: list[Condition] = []
    for index, cond in enumerate(list_field(raw, "status.conditions", errors)):
        if not isinstance(cond, Mapping) or not cond.get("type"):
            errors.append(FieldError.required(f"status.conditions[{index}].type"))
            continue
        generation = cond.get("observedGeneration")
        out.append(
            Condition(
                type=str(cond["type"]),
                status=str(cond.get("status") or "Unknown"),
                reason=str(cond.get("reason") or ""),
                message=str(cond.get("message") or ""),
                last_transition_time=str(cond.get("lastTransitionTime") or ""),
                observed_generation=generation if isinstance(generation, int) else None,
            )
        )
    return tuple(out)
