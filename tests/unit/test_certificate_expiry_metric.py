"""``kueue_webhook_serving_certificate_expiry_seconds``: the time left on the certificate in force, counted
from its notAfter at each scrape, moved by a reload, and absent (not 0, which would read as expired) while no
certificate is loaded."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

from cryptography import x509
from prometheus_client import CollectorRegistry

from kueue_webhook.http.certificate_metrics import NAME, CertificateExpiry
from kueue_webhook.http.certs import ensure_certificates
from tests.unit.admission.servers import running_webhook

DAY = 86400.0


def not_after(path: Path) -> dt.datetime:
    return x509.load_pem_x509_certificate(path.read_bytes()).not_valid_after_utc


def test_no_certificate_loaded_means_no_series() -> None:
    registry = CollectorRegistry()
    registry.register(CertificateExpiry())
    assert registry.get_sample_value(NAME) is None


def test_the_value_counts_down_to_not_after() -> None:
    now = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    clock = [now]
    expiry = CertificateExpiry(clock=lambda: clock[0])
    expiry.not_after = lambda: now + dt.timedelta(days=10)
    registry = CollectorRegistry()
    registry.register(expiry)
    assert registry.get_sample_value(NAME) == 10 * DAY
    clock[0] = now + dt.timedelta(days=11)
    assert registry.get_sample_value(NAME) == -DAY  # expired: negative, so "< 0" alerts too


async def test_the_served_certificate_and_a_renewal_move_the_gauge(tmp_path: Path) -> None:
    async with running_webhook(tmp_path / "certs") as webhook:
        before = dt.datetime.now(dt.UTC)
        value = webhook.registry.get_sample_value(NAME)
        after = dt.datetime.now(dt.UTC)
        expires = not_after(webhook.certs.cert)
        assert value is not None
        assert (expires - after).total_seconds() <= value <= (expires - before).total_seconds()

        webhook.server.reloader.changed.clear()
        ensure_certificates(
            webhook.certs.directory, ips=["127.0.0.1"], hosts=["localhost"], days=3, force=True
        )
        await asyncio.wait_for(webhook.server.reloader.changed.wait(), timeout=60)  # bounds a hang only
        renewed = webhook.registry.get_sample_value(NAME)
        assert renewed is not None
        assert 2 * DAY < renewed <= 3 * DAY
