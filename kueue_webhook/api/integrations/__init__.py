"""Suspendable kinds described as data (``model``), the built-in entries (``builtin``), the enabled set
(``registry``), admin declarations from the ConfigMap (``declare``) and the one engine that reads and patches
objects of any of them (``engine``)."""

from kueue_webhook.api.integrations.builtin import BUILTIN, JOB
from kueue_webhook.api.integrations.model import Integration
from kueue_webhook.api.integrations.registry import Integrations

__all__ = ["BUILTIN", "JOB", "Integration", "Integrations"]
