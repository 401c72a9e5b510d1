"""Suspendable kinds described as data (``model``), the built-in entries (``builtin``), the enabled set
(``registry``), admin declarations from the ConfigMap (``declare``) and the one engine that reads and patches
objects of any of them (``engine``)."""

from webhook.api.integrations.builtin import BUILTIN, JOB
from webhook.api.integrations.model import Integration
from webhook.api.integrations.registry import Integrations

__all__ = ["BUILTIN", "JOB", "Integration", "Integrations"]
