"""Live configuration from ConfigMap ``kueue-webhook-config`` (key ``config.yaml``), last good one kept.

Operators edit the ConfigMap and expect the change to apply without a restart, and a typo not to take the
controller down. So every observed version is parsed in full: a valid one replaces the configuration in
force and is announced to subscribers; an invalid one changes nothing and is reported (a Warning Event, a
log line, a metric: docs/configuration.md). Deleting the ConfigMap keeps the configuration in force, so an
accidental delete cannot reset the policy.

The controller's own user name, as the API server reported it (``kueue_webhook.control.kube.identity``), is
not in
the
ConfigMap: it is stamped on every configuration that comes into force, so an edit of ``controllerIdentity``
never drops it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kueue_webhook.api.config import CONFIG_KEY, CONFIGMAP_NAME, Configuration, parse_configuration
from kueue_webhook.control.cache.store import Change
from kueue_webhook.control.kube.kinds import CONFIGMAPS
from kueue_webhook.control.output.events import EventSink
from kueue_webhook.control.output.metrics import Metrics

log = logging.getLogger("kueue_webhook.config")
JSON = dict[str, Any]


class LiveConfiguration:
    """The configuration in force; feed it ConfigMap changes with ``on_change`` (a store listener)."""

    def __init__(
        self,
        *,
        namespace: str,
        events: EventSink,
        metrics: Metrics,
        initial: Configuration | None = None,
        name: str = CONFIGMAP_NAME,
        records_events: Callable[[], bool] = lambda: True,
    ) -> None:
        self.namespace = namespace
        self.name = name
        self.events = events
        self.metrics = metrics
        self.records_events = records_events
        self.current = initial if initial is not None else Configuration(namespace=namespace)
        self.last_errors: tuple[str, ...] = ()
        self._subscribers: list[Callable[[Configuration], None]] = []
        self._seen_text: str | None = None
        self._discovered_username = ""

    def trust_controller(self, username: str) -> None:
        """Trust ``username`` (the controller's own credentials) as well as the configured identity."""
        self._discovered_username = username
        self.current = self._with_discovered(self.current)

    def _with_discovered(self, configuration: Configuration) -> Configuration:
        identity = replace(configuration.controller_identity, discovered=self._discovered_username)
        return replace(configuration, controller_identity=identity)

    def subscribe(self, callback: Callable[[Configuration], None]) -> None:
        self._subscribers.append(callback)

    def on_change(self, change: Change) -> None:
        if change.kind is not CONFIGMAPS or change.key != (self.namespace, self.name) or change.new is None:
            return
        self.load(change.new)

    def load(self, configmap: JSON) -> bool:
        """Apply the ConfigMap's ``config.yaml`` if valid; True if it is now in force."""
        text = (configmap.get("data") or {}).get(CONFIG_KEY)
        if text == self._seen_text:
            return not self.last_errors
        self._seen_text = text
        parsed = parse_configuration(text)
        if not isinstance(parsed, Configuration):  # ConfigurationErrors, every bad field
            self.last_errors = parsed.errors
            self.metrics.config_reloads.labels("rejected").inc()
            self.metrics.config_last_reload_success.set(0)
            message = f"Invalid {CONFIG_KEY}, keeping the last good configuration: {parsed}"
            log.error("configuration rejected", extra={"configmap": self.name, "errors": list(parsed.errors)})
            if self.records_events():  # every replica rejects the edit; one of them says so
                self.events.record(
                    configmap, type="Warning", reason="InvalidConfiguration", message=message[:1000]
                )
            return False
        self.last_errors = ()
        parsed = self._with_discovered(parsed)
        self.current = parsed
        self.metrics.config_reloads.labels("applied").inc()
        self.metrics.config_last_reload_success.set(1)
        log.info("configuration applied", extra={"configmap": self.name, "warnings": list(parsed.warnings)})
        for callback in self._subscribers:
            callback(parsed)
        return True
