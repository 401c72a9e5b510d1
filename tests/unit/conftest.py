"""Fixtures of the unit tests that talk to the HTTPS server: ``webhook``, our admission webhook served on an
ephemeral port with fresh certificates, and ``http``, a client session that trusts them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.unit.admission.servers import Webhook, running_webhook


@pytest.fixture
async def webhook(tmp_path: Path) -> AsyncIterator[Webhook]:
    async with running_webhook(tmp_path / "certs") as running:
        yield running


@pytest.fixture
async def http(webhook: Webhook) -> AsyncIterator[aiohttp.ClientSession]:
    connector = aiohttp.TCPConnector(ssl=webhook.client_context())
    async with aiohttp.ClientSession(base_url=webhook.url, connector=connector) as session:
        yield session
