"""Shared test configuration: deterministic hypothesis runs (CI must not flake on a new random seed)."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=100, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci")
