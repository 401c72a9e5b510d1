"""Live configuration: a valid edit applies at once; a bad edit keeps the last good one and says why."""

from __future__ import annotations

import logging
from typing import Any

from kueue_webhook.api.config import Configuration
from kueue_webhook.control.cache.store import Change
from kueue_webhook.control.kube.kinds import CONFIGMAPS
from kueue_webhook.control.output.metrics import Metrics
from kueue_webhook.control.replica.controller import _apply_log_level
from kueue_webhook.control.replica.live_config import LiveConfiguration

JSON = dict[str, Any]


class CollectedEvents:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def record(self, obj: JSON, *, type: str, reason: str, message: str) -> None:
        self.events.append((obj["metadata"]["name"], type, reason, message))


def configmap(text: str, rv: int) -> JSON:
    return {
        "kind": "ConfigMap",
        "metadata": {"name": "kueue-webhook-config", "namespace": "kueue-system", "resourceVersion": str(rv)},
        "data": {"config.yaml": text},
    }


def change(new: JSON) -> Change:
    return Change(CONFIGMAPS, ("kueue-system", "kueue-webhook-config"), None, new)


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_valid_edit_applies_and_notifies_subscribers() -> None:
    metrics, events = Metrics(), CollectedEvents()
    live = LiveConfiguration(namespace="kueue-system", events=events, metrics=metrics)
    applied: list[Configuration] = []
    live.subscribe(applied.append)
    live.on_change(change(configmap("manageJobsWithoutQueueName: true\n", 1)))
    assert live.current.manage_jobs_without_queue_name is True
    assert len(applied) == 1
    assert sample(metrics, "kueue_webhook_config_reloads_total", result="applied") == 1
    assert events.events == []


def test_bad_edit_keeps_last_good_config_and_warns_naming_the_field() -> None:
    metrics, events = Metrics(), CollectedEvents()
    live = LiveConfiguration(namespace="kueue-system", events=events, metrics=metrics)
    live.on_change(change(configmap("manageJobsWithoutQueueName: true\n", 1)))
    live.on_change(change(configmap("manageJobsWithoutQueueName: maybe\nlogLevel: info\n", 2)))
    assert live.current.manage_jobs_without_queue_name is True
    [(name, kind, reason, message)] = events.events
    assert (name, kind, reason) == ("kueue-webhook-config", "Warning", "InvalidConfiguration")
    assert "manageJobsWithoutQueueName" in message
    assert sample(metrics, "kueue_webhook_config_reloads_total", result="rejected") == 1
    assert sample(metrics, "kueue_webhook_config_last_reload_successful") == 0


def test_unchanged_text_on_a_resync_is_not_reported_twice() -> None:
    metrics, events = Metrics(), CollectedEvents()
    live = LiveConfiguration(namespace="kueue-system", events=events, metrics=metrics)
    live.on_change(change(configmap("bogusField: 1\n", 1)))
    live.on_change(change(configmap("bogusField: 1\n", 2)))
    assert len(events.events) == 1


def test_other_configmaps_and_deletion_are_ignored() -> None:
    metrics, events = Metrics(), CollectedEvents()
    live = LiveConfiguration(namespace="kueue-system", events=events, metrics=metrics)
    live.on_change(change(configmap("manageJobsWithoutQueueName: true\n", 1)))
    other = Change(CONFIGMAPS, ("kueue-system", "something-else"), None, configmap("logLevel: nope\n", 2))
    live.on_change(other)
    live.on_change(Change(CONFIGMAPS, ("kueue-system", "kueue-webhook-config"), None, None))
    assert live.current.manage_jobs_without_queue_name is True
    assert events.events == []


def test_the_controllers_own_identity_survives_every_edit_of_the_configmap() -> None:
    live = LiveConfiguration(namespace="kueue-system", events=CollectedEvents(), metrics=Metrics())
    live.trust_controller("kubernetes-admin")
    assert live.current.controller_identity.trusts("kubernetes-admin")
    live.on_change(change(configmap("controllerIdentity: {username: ops-bot}\n", 1)))
    identity = live.current.controller_identity
    assert identity.usernames == ("ops-bot", "kubernetes-admin")
    assert not identity.trusts("system:serviceaccount:kueue-system:kueue-webhook")


def test_log_level_from_the_command_line_stands_until_the_configmap_sets_one() -> None:
    """``serve --log-level warning`` with a ConfigMap that names no logLevel logs no info lines; a logLevel
    in the ConfigMap overrides it live, and removing it gives the command line's level back."""
    package, root = logging.getLogger("kueue_webhook"), logging.getLogger()
    saved = (package.level, root.level)
    try:
        root.setLevel(logging.WARNING)  # what serve --log-level warning sets
        live = LiveConfiguration(namespace="kueue-system", events=CollectedEvents(), metrics=Metrics())
        live.subscribe(_apply_log_level)
        decisions = logging.getLogger("kueue_webhook.scheduler")
        live.on_change(change(configmap("manageJobsWithoutQueueName: true\n", 1)))
        assert not decisions.isEnabledFor(logging.INFO)
        live.on_change(change(configmap("logLevel: debug\n", 2)))
        assert decisions.isEnabledFor(logging.DEBUG)
        live.on_change(change(configmap("manageJobsWithoutQueueName: true\n", 3)))
        assert not decisions.isEnabledFor(logging.INFO)
    finally:
        package.setLevel(saved[0])
        root.setLevel(saved[1])
