"""The ``multiKueue`` section reloads live like every field: a valid edit applies, a bad one keeps the last
good section and names the field."""

from __future__ import annotations

from kueue_webhook.control.output.metrics import Metrics
from kueue_webhook.control.replica.live_config import LiveConfiguration
from tests.unit.control.test_config import CollectedEvents, change, configmap


def test_a_multikueue_edit_applies_live_and_a_bad_one_keeps_the_last_good() -> None:
    events = CollectedEvents()
    live = LiveConfiguration(namespace="kueue-system", events=events, metrics=Metrics())
    live.on_change(change(configmap("multiKueue: {origin: east-manager, workerLostTimeout: 5m}\n", 1)))
    assert (live.current.multi_kueue.origin, live.current.multi_kueue.worker_lost_timeout_seconds) == (
        "east-manager",
        300.0,
    )
    live.on_change(change(configmap("multiKueue: {origin: east-manager, workerLostTimeout: -5m}\n", 2)))
    assert live.current.multi_kueue.worker_lost_timeout_seconds == 300.0
    [(_, kind, reason, message)] = events.events
    assert (kind, reason) == ("Warning", "InvalidConfiguration")
    assert "multiKueue.workerLostTimeout" in message
