"""``serve --metrics-bind-address``: also serve ``/metrics`` over plain HTTP, with no authentication, on an
address of its own; off by default (``0``), as controller-runtime's flag of that name."""

from __future__ import annotations

import argparse

import pytest

from kueue_webhook.control.replica.main import add_arguments, metrics_bind_address


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def test_off_unless_asked_for() -> None:
    assert parsed().metrics_bind_address is None
    assert parsed("--metrics-bind-address", "0").metrics_bind_address is None


@pytest.mark.parametrize(
    ("value", "address"),
    [(":8080", ("0.0.0.0", 8080)), ("127.0.0.1:9090", ("127.0.0.1", 9090)), ("[::1]:8080", ("::1", 8080))],
)
def test_host_port_or_port(value: str, address: tuple[str, int]) -> None:
    assert metrics_bind_address(value) == address


@pytest.mark.parametrize("value", ["8080", "localhost", ":http", ":0", ":70000"])
def test_anything_else_is_refused_with_the_value_named(value: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="not host:port, :port or 0"):
        metrics_bind_address(value)
