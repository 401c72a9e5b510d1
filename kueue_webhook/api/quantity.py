"""Exact Kubernetes ``resource.Quantity``: parse, compare, add and print like kube-apiserver.

Quotas are compared against sums of requests; a float would eventually admit one GPU too many, so a
quantity is held as an integer count of nano-units (``10**-9``), which is exactly the finest precision
Kubernetes keeps (finer values are rounded up to ``1n``, as ``resource.ParseQuantity`` does). The format
(decimal SI, binary SI, decimal exponent) is remembered from the input, because Kubernetes prints a
quantity back in the format it was written in: ``1536Mi`` stays ``1536Mi`` and ``1.5`` becomes ``1500m``.

Accepted syntax is the one of the ``quantity`` OpenAPI pattern that CRDs (and so Kueue's quotas) are
validated against: an optional sign, digits with an optional fraction (``5``, ``0.5``, ``.5``, ``5.``),
then at most one suffix: ``Ki Mi Gi Ti Pi Ei``, ``n u m k M G T P E``, or an integer exponent ``e3``/``E-2``.

Length is bounded where kube-apiserver's is not. Its parser takes a quantity of any length (measured on
v1.36: a Job requesting 100,000 digits of cpu, and a ClusterQueue with a 100,000-digit nominalQuota, are
both created), but nothing downstream can use such a value: Kubernetes and Kueue hold every quantity as a
64-bit count of units or milli-units (``Quantity.Value``/``MilliValue``), about 19 digits. Parsing it here
would cost time and memory proportional to a hostile length, and Python refuses to convert integers of
more than 4300 digits at all. So a quantity longer than ``MAX_QUANTITY_LENGTH`` characters, or an exponent
beyond ``MAX_EXPONENT``, is refused as invalid (``QuantityError``) before any arithmetic; a bound far
above any meaningful value (a nano-unit, ``1n``, up to ``2^63-1`` Ei in a plain decimal, fits easily).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction
from functools import lru_cache, total_ordering
from typing import Any

__all__ = ["MAX_QUANTITY_LENGTH", "Format", "Quantity", "QuantityError", "parse_quantity"]

NANO = 10**9
#: the longest quantity accepted, in characters (sign, digits, point and suffix)
MAX_QUANTITY_LENGTH = 128
#: the largest decimal exponent accepted (``1e1000``), either way
MAX_EXPONENT = 1000
#: integers (JSON numbers) up to as many bits as the longest accepted decimal quantity needs
_MAX_INTEGER_BITS = 4 * MAX_QUANTITY_LENGTH

_PATTERN = re.compile(r"^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$")

_DECIMAL_EXPONENTS = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIXES = {exp: suffix for suffix, exp in _DECIMAL_EXPONENTS.items()}
_BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_SUFFIXES = {exp: suffix for suffix, exp in _BINARY_EXPONENTS.items()}


class Format(Enum):
    """How a quantity prints; remembered from how it was written (Kubernetes keeps the same three)."""

    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


class QuantityError(ValueError):
    """A string that kube-apiserver would refuse as a quantity; the message says why."""


@total_ordering
@dataclass(frozen=True, slots=True)
class Quantity:
    """A Kubernetes quantity held exactly as a whole number of nano-units.

    Equality and ordering compare values only (``1Gi == 1024Mi``, ``1 == 1000m``), as
    ``Quantity.Cmp`` does; the format only affects printing.
    """

    nanos: int
    format: Format = Format.DECIMAL_SI

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str | int | float) -> Quantity:
        """Parse a quantity as written in a manifest; raises QuantityError with the reason."""
        return parse_quantity(text)

    @classmethod
    def from_units(cls, units: int | Fraction, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        """A quantity of ``units`` whole units (``from_units(2)`` is ``2``), rounded up to 1n."""
        nanos = Fraction(units) * NANO
        return cls(-((-nanos.numerator) // nanos.denominator), fmt)

    @classmethod
    def zero(cls, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        return cls(0, fmt)

    # -- arithmetic -------------------------------------------------------------------------------
    def __add__(self, other: Quantity) -> Quantity:
        # Quantity.Add keeps the receiver's format unless the receiver is zero.
        return Quantity(self.nanos + other.nanos, other.format if self.nanos == 0 else self.format)

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self.nanos - other.nanos, other.format if self.nanos == 0 else self.format)

    def __neg__(self) -> Quantity:
        return Quantity(-self.nanos, self.format)

    def __mul__(self, factor: int) -> Quantity:
        return Quantity(self.nanos * factor, self.format)

    __rmul__ = __mul__

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.nanos < other.nanos

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.nanos == other.nanos

    def __hash__(self) -> int:
        return hash(self.nanos)

    def __bool__(self) -> bool:
        return self.nanos != 0

    def is_zero(self) -> bool:
        return self.nanos == 0

    def value(self) -> Fraction:
        """The exact value in whole units."""
        return Fraction(self.nanos, NANO)

    def milli_value(self) -> int:
        """Value in milli-units rounded up, like ``Quantity.MilliValue`` (used for CPU)."""
        return -((-self.nanos) // 10**6)

    # -- printing ---------------------------------------------------------------------------------
    def __str__(self) -> str:
        return self.canonical()

    def __repr__(self) -> str:
        return f"Quantity({self.canonical()!r})"

    def canonical(self) -> str:
        """The string kube-apiserver returns for this quantity (``Quantity.String``)."""
        if self.nanos == 0:
            return "0"
        sign = "-" if self.nanos < 0 else ""
        magnitude = abs(self.nanos)
        fmt = self.format
        if fmt is Format.BINARY_SI:
            # Binary only for whole values of at least 1Ki; anything else prints as decimal SI.
            if magnitude % NANO == 0 and magnitude >= 1024 * NANO:
                return sign + _binary(magnitude // NANO)
            fmt = Format.DECIMAL_SI
        mantissa, exponent = _decimal_parts(magnitude)
        if fmt is Format.DECIMAL_EXPONENT:
            return f"{sign}{mantissa}" + (f"e{exponent}" if exponent else "")
        while exponent > 18:  # nothing above E: widen the mantissa instead
            mantissa, exponent = mantissa * 1000, exponent - 3
        return f"{sign}{mantissa}{_DECIMAL_SUFFIXES[exponent]}"

    def to_json(self) -> str:
        return self.canonical()


def _decimal_parts(nanos: int) -> tuple[int, int]:
    """Mantissa and base-10 exponent (a multiple of 3) with the smallest whole mantissa."""
    mantissa, exponent = nanos, -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    shift = exponent % 3
    return mantissa * 10**shift, exponent - shift


def _binary(units: int) -> str:
    exponent = 0
    while units % 1024 == 0 and exponent < 60:
        units //= 1024
        exponent += 10
    return f"{units}{_BINARY_SUFFIXES.get(exponent, '')}"


def parse_quantity(text: Any) -> Quantity:
    """Parse ``text`` the way kube-apiserver validates a quantity field.

    Integers (and integral floats, as YAML may produce) are accepted like the API server's
    int-or-string quantities. Anything else raises ``QuantityError`` naming the expected form.
    """
    if isinstance(text, bool):
        raise QuantityError(f"quantities must match the regular expression {_PATTERN.pattern!r}")
    if isinstance(text, int):
        if text.bit_length() > _MAX_INTEGER_BITS:
            raise QuantityError(f"quantities must not be longer than {MAX_QUANTITY_LENGTH} characters")
        return Quantity(text * NANO)
    if isinstance(text, float):
        if text != text or text in (float("inf"), float("-inf")):
            raise QuantityError(f"{text!r} is not a finite number")
        return Quantity.from_units(Fraction(repr(text)))
    if not isinstance(text, str):
        raise QuantityError(f"expected a string or number, got {type(text).__name__}")
    if len(text) > MAX_QUANTITY_LENGTH:  # before the pattern, the arithmetic and the cache see it
        raise QuantityError(
            f"{text[:20]!r}... ({len(text)} characters): quantities must not be longer than "
            f"{MAX_QUANTITY_LENGTH} characters"
        )
    return _parse_text(text)


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Quantity:
    """The string form; memoized because thousands of objects repeat the same few quantities ("1", "500m",
    "4Gi") and exact parsing through fractions costs microseconds each (a Quantity is immutable)."""
    if text == "":
        raise QuantityError("quantities must not be empty")
    match = _PATTERN.match(text)
    if match is None:
        raise QuantityError(
            f"{text!r}: quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' with one suffix of "
            "Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent like e3"
        )
    sign, number, suffix = match.group(1), match.group(2), match.group(3) or ""
    value = Fraction(number if not number.endswith(".") else number[:-1] or "0")
    if suffix in _BINARY_EXPONENTS:
        value *= 2 ** _BINARY_EXPONENTS[suffix]
        fmt = Format.BINARY_SI
    elif len(suffix) > 1 and suffix[0] in "eE":
        exponent = int(suffix[1:])
        if abs(exponent) > MAX_EXPONENT:
            raise QuantityError(f"{text!r}: exponent out of range (at most {MAX_EXPONENT} either way)")
        value *= Fraction(10) ** exponent
        fmt = Format.DECIMAL_EXPONENT
    else:
        value *= Fraction(10) ** _DECIMAL_EXPONENTS[suffix]
        fmt = Format.DECIMAL_SI
    quantity = Quantity.from_units(value, fmt)
    return -quantity if sign == "-" else quantity
