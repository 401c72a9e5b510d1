"""``kueue_webhook_serving_certificate_expiry_seconds``: how long the serving certificate in force is valid.

The API server refuses a webhook whose certificate has expired, and with ``failurePolicy: Fail`` every Job
create in a managed namespace fails with it, so the time left is the number an alert needs. The server's
certificate reloader records the ``notAfter`` of each pair it puts in force; the gauge is computed from it
when scraped, so it counts down between reloads and jumps up when a renewed certificate is loaded. Before a
certificate is loaded (or in a process without the HTTPS server) there is no series at all rather than a
zero that would read as "expired".
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

__all__ = ["NAME", "CertificateExpiry"]

NAME = "kueue_webhook_serving_certificate_expiry_seconds"
_HELP = "Seconds until the serving certificate in force expires (its notAfter), updated on every reload."


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class CertificateExpiry(Collector):
    """A collector reading ``not_after`` (None: no certificate loaded) at each scrape."""

    def __init__(self, *, clock: Callable[[], dt.datetime] = _now) -> None:
        self.not_after: Callable[[], dt.datetime | None] = lambda: None
        self.clock = clock

    def describe(self) -> list[GaugeMetricFamily]:
        """Registers the name even while no certificate is loaded, so a clash is found at start."""
        return [GaugeMetricFamily(NAME, _HELP)]

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(NAME, _HELP)
        not_after = self.not_after()
        if not_after is not None:
            family.add_metric([], (not_after - self.clock()).total_seconds())
        yield family
