"""The informational write budget follows the API server's health: AIMD on latency and overload answers."""

from __future__ import annotations

from kueue_webhook.control.kube.api_health import ApiHealth, HealthSettings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def healthy_second(health: ApiHealth, clock: Clock, *, latency: float = 0.004) -> None:
    for _ in range(10):
        clock.now += 0.1
        health.observe(latency, 200)


def test_a_quiet_api_server_grants_the_whole_budget_at_once() -> None:
    clock = Clock()
    health = ApiHealth(HealthSettings(max_rate=20), clock=clock)
    healthy_second(health, clock)
    assert [health.take() for _ in range(20)] == [0.0] * 20
    assert health.take() > 0  # the 21st waits for a token
    assert not health.congested and health.rate == 20


def test_latency_well_above_the_floor_halves_the_rate_each_window_down_to_the_minimum() -> None:
    clock = Clock()
    health = ApiHealth(HealthSettings(max_rate=32, min_rate=2), clock=clock)
    for _ in range(3):
        healthy_second(health, clock, latency=0.004)  # the floor: 4 ms
    rates = []
    for _ in range(6):
        healthy_second(health, clock, latency=0.200)  # requests now queue inside the API server
        rates.append(health.rate)
    assert health.congested
    assert rates == [16, 8, 4, 2, 2, 2]  # halved once a window, never below the minimum


def test_a_server_far_away_is_not_congested_by_its_distance() -> None:
    """The judgement is relative to the floor: 80 ms a request every time is the network, not a queue."""
    clock = Clock()
    health = ApiHealth(HealthSettings(max_rate=10), clock=clock)
    for _ in range(5):
        healthy_second(health, clock, latency=0.080)
    assert not health.congested and health.rate == 10


def test_too_many_requests_is_congestion_whatever_the_latency_and_recovery_grows_by_half() -> None:
    clock = Clock()
    health = ApiHealth(HealthSettings(max_rate=40, min_rate=1), clock=clock)
    healthy_second(health, clock)
    clock.now += 0.1
    health.observe(0.002, 429)  # API Priority and Fairness shed one of our requests
    healthy_second(health, clock)
    assert health.congested and health.rate == 20
    healthy_second(health, clock)
    assert not health.congested and health.rate == 30
    healthy_second(health, clock)
    assert health.rate == 40  # back to the ceiling, never beyond


def test_a_low_priority_writer_leaves_half_the_bucket_to_the_others() -> None:
    clock = Clock()
    health = ApiHealth(HealthSettings(max_rate=10), clock=clock)
    granted_events = 0
    while health.take(keep=0.5) == 0.0:
        granted_events += 1
    assert granted_events == 5  # Events stop while half the bucket is left ...
    assert [health.take() for _ in range(5)] == [0.0] * 5  # ... for pending reasons and queue status
    assert health.take() > 0


def test_the_floor_forgets_what_it_saw_beyond_its_horizon() -> None:
    clock = Clock()
    health = ApiHealth(HealthSettings(floor_horizon=10), clock=clock)
    healthy_second(health, clock, latency=0.001)
    for _ in range(12):
        healthy_second(health, clock, latency=0.030)
    assert health.floor == 0.030  # the server moved: 30 ms is what a request costs there now
    assert not health.congested
