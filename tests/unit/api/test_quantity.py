"""Kubernetes quantities parse, compare and print as kube-apiserver does (resource.Quantity)."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_webhook.api.quantity import MAX_QUANTITY_LENGTH, Format, Quantity, QuantityError, parse_quantity


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("0", "0"),
        ("500m", "500m"),
        ("2", "2"),
        ("1Gi", "1Gi"),
        ("1536Mi", "1536Mi"),
        ("1024Mi", "1Gi"),
        ("1000Mi", "1000Mi"),
        ("0.5Gi", "512Mi"),
        ("1.5", "1500m"),
        (".5", "500m"),
        ("5.", "5"),
        ("1000", "1k"),
        ("1500", "1500"),
        ("2048", "2048"),
        ("1e3", "1e3"),
        ("1.5e3", "1500"),
        ("12E", "12E"),
        ("-1.5Gi", "-1536Mi"),
        ("1e-10", "1e-9"),  # finer than a nano rounds up to 1n
        ("0.0000000001", "1n"),
        ("512", "512"),
        ("1Ki", "1Ki"),
        ("+3", "3"),
        ("100u", "100u"),
    ],
)
def test_canonical_form_matches_kubernetes(text: str, canonical: str) -> None:
    assert parse_quantity(text).canonical() == canonical


@pytest.mark.parametrize(
    "text", ["", "1.5.5", "abc", "1K", "1Gb", "1e1.5", "+", ".", "1 Gi", "12e", "Gi", "--1"]
)
def test_invalid_quantities_are_rejected_with_a_reason(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_numbers_from_yaml_are_quantities() -> None:
    assert parse_quantity(64) == parse_quantity("64")
    assert parse_quantity(0.5) == parse_quantity("500m")
    with pytest.raises(QuantityError):
        parse_quantity(True)
    with pytest.raises(QuantityError):
        parse_quantity(float("nan"))


def test_equality_is_by_value_across_formats() -> None:
    assert parse_quantity("1Gi") == parse_quantity("1024Mi")
    assert parse_quantity("1") == parse_quantity("1000m")
    assert parse_quantity("1k") < parse_quantity("1Ki")


def test_addition_is_exact_and_keeps_the_first_nonzero_format() -> None:
    total = Quantity.zero()
    for _ in range(10):
        total = total + parse_quantity("100m")
    assert total == parse_quantity("1")
    assert str(parse_quantity("1Gi") + parse_quantity("512Mi")) == "1536Mi"
    assert (Quantity.zero() + parse_quantity("1Gi")).format is Format.BINARY_SI


@given(st.integers(min_value=-(10**15), max_value=10**15), st.sampled_from(list(Format)))
def test_canonical_form_parses_back_to_the_same_value(nanos: int, fmt: Format) -> None:
    quantity = Quantity(nanos, fmt)
    assert parse_quantity(quantity.canonical()) == quantity


@given(st.fractions(min_value=0, max_value=10**6, max_denominator=1000))
def test_from_units_rounds_up_to_a_nano(value: Fraction) -> None:
    quantity = Quantity.from_units(value)
    assert quantity.value() >= value
    assert quantity.value() - value < Fraction(1, 10**9)


@pytest.mark.parametrize(
    "text",
    [
        "1" * 5000,  # beyond Python's 4300-digit int conversion limit: a QuantityError, not a bare ValueError
        "1" * 100_000,  # kube-apiserver v1.36 stores this in a Job; nothing can use it
        "0." + "0" * 5000 + "1",
        "1e" + "0" * 5000 + "3",  # the exponent's leading zeros alone are too long
        "1" * (MAX_QUANTITY_LENGTH - 1) + "Ei",
    ],
)
def test_quantities_longer_than_any_usable_value_are_refused_as_invalid(text: str) -> None:
    with pytest.raises(QuantityError, match="must not be longer than 128 characters"):
        parse_quantity(text)


def test_the_longest_accepted_quantity_round_trips() -> None:
    longest = "9" * (MAX_QUANTITY_LENGTH - 2) + "Ei"
    quantity = parse_quantity(longest)
    assert parse_quantity(quantity.canonical()) == quantity
    assert parse_quantity(parse_quantity("1e1000").canonical()) == parse_quantity("1e1000")
    with pytest.raises(QuantityError, match="exponent out of range"):
        parse_quantity("1e1001")


def test_an_integer_too_large_for_any_quantity_is_refused() -> None:
    assert parse_quantity(10**100) == parse_quantity("1e100")
    with pytest.raises(QuantityError):
        parse_quantity(10**5000)
