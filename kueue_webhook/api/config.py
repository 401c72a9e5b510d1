"""The configuration: the ``config.yaml`` key of ConfigMap ``kueue-webhook-config`` (every field is
described in docs/configuration.md). The typed records are in ``config_model``, each section's reading and
checks in ``config_reader``; this module is the one entry point and re-exports the model, so callers import
from one place.

The controller reloads this document live, so a bad edit must never take the process down or half-apply:
:func:`parse_configuration` either returns a complete, typed :class:`Configuration` or a
:class:`ConfigurationErrors` listing every problem as ``path: reason`` (all at once, so one edit fixes them
all); it never raises. Field names follow Kueue's ``Configuration`` (``apis/config/v1beta2``) where the two
overlap, so a Kueue file can be pasted in: Kueue's fields that we do not implement are warnings, names that
neither Kueue nor we know are errors (a typo must not be silently ignored).
"""

from __future__ import annotations

import yaml

from kueue_webhook.api.config_model import (
    CONFIG_KEY,
    CONFIGMAP_NAME,
    DEFAULT_CONTROLLER_USERNAME,
    DEFAULT_QUEUE_NAME,
    Configuration,
    ConfigurationErrors,
    ControllerIdentity,
    FairSharing,
    InternalCertManagement,
    LabelPolicy,
    ManualApproval,
    MultiKueue,
    RequeuingStrategy,
    WaitForPodsReady,
)
from kueue_webhook.api.config_reader import ConfigurationReader

__all__ = [
    "CONFIGMAP_NAME",
    "CONFIG_KEY",
    "DEFAULT_CONTROLLER_USERNAME",
    "DEFAULT_QUEUE_NAME",
    "Configuration",
    "ConfigurationErrors",
    "ControllerIdentity",
    "FairSharing",
    "InternalCertManagement",
    "LabelPolicy",
    "ManualApproval",
    "MultiKueue",
    "RequeuingStrategy",
    "WaitForPodsReady",
    "parse_configuration",
    "parse_configuration_mapping",
]


def parse_configuration(text: str | bytes | None) -> Configuration | ConfigurationErrors:
    """Parse the YAML text of ``config.yaml``; None or blank text gives the defaults."""
    if text is None or not text.strip():
        return Configuration()
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        return ConfigurationErrors((f"config.yaml: not valid YAML{where}: {problem}",))
    return parse_configuration_mapping(data)


def parse_configuration_mapping(data: object) -> Configuration | ConfigurationErrors:
    """Validate an already-decoded document (e.g. from JSON)."""
    if data is None:
        return Configuration()
    reader = ConfigurationReader()
    config = reader.configuration(data)
    if reader.errors or config is None:
        return ConfigurationErrors(tuple(reader.errors) or ("config.yaml: could not be read",))
    return config
