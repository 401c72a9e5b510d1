"""``internalCertManagement``: Kueue's field names and checks, our names and our default
(docs/certificates.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kueue_webhook.api.config import (
    Configuration,
    ConfigurationErrors,
    InternalCertManagement,
    parse_configuration,
)

MANIFESTS = Path(__file__).resolve().parents[3] / "manifests" / "controller"


def parsed(text: str) -> Configuration:
    result = parse_configuration(text)
    assert isinstance(result, Configuration), result
    return result


def rejected(text: str) -> tuple[str, ...]:
    result = parse_configuration(text)
    assert isinstance(result, ConfigurationErrors), result
    return result.errors


def shipped(path: Path) -> Configuration:
    return parsed(yaml.safe_load(path.read_text())["data"]["config.yaml"])


def test_absent_means_off_so_nobody_rewrites_a_secret_unasked() -> None:
    assert parsed("logLevel: info\n").internal_cert_management == InternalCertManagement(enable=False)


def test_the_section_turns_it_on_with_our_names_as_kueues_defaulting_does_with_its_own() -> None:
    config = parsed("internalCertManagement: {}\n")
    assert config.internal_cert_management == InternalCertManagement(
        enable=True, webhook_service_name="kueue-webhook", webhook_secret_name="kueue-webhook-tls"
    )
    assert config.warnings == ()  # no longer "accepted for compatibility, no effect"


def test_kueue_field_names_are_read() -> None:
    config = parsed(
        "internalCertManagement:\n  enable: true\n"
        "  webhookServiceName: hooks\n  webhookSecretName: hooks.tls\n"
    )
    assert config.internal_cert_management == InternalCertManagement(True, "hooks", "hooks.tls")


@pytest.mark.parametrize(
    ("section", "path", "words"),
    [
        ("{enable: yes-please}", "internalCertManagement.enable", "must be true or false"),
        ("{webhookServiceName: 1hooks}", "internalCertManagement.webhookServiceName", "DNS-1035 label"),
        ("{webhookServiceName: Hooks}", "internalCertManagement.webhookServiceName", "DNS-1035 label"),
        ("{webhookSecretName: tls_secret}", "internalCertManagement.webhookSecretName", "RFC 1123 subdomain"),
        ("{webhookSecretName: ''}", "internalCertManagement.webhookSecretName", "a non-empty string"),
        ("{webhookServicName: hooks}", "internalCertManagement.webhookServicName", "unknown field"),
        ("true", "internalCertManagement", "must be a mapping"),
    ],
)
def test_bad_values_are_refused_with_the_field_and_the_rule(section: str, path: str, words: str) -> None:
    (error,) = rejected(f"internalCertManagement: {section}\n")
    assert error.startswith(f"{path}:") and words in error


def test_names_are_checked_only_when_enabled_as_kueue_validates_them() -> None:
    config = parsed("internalCertManagement: {enable: false, webhookServiceName: 1hooks}\n")
    assert config.internal_cert_management.enable is False


def test_the_in_cluster_install_enables_it_and_the_out_of_cluster_one_does_not() -> None:
    assert shipped(MANIFESTS / "configmap.yaml").internal_cert_management == InternalCertManagement(
        enable=True, webhook_service_name="kueue-webhook", webhook_secret_name="kueue-webhook-tls"
    )
    assert shipped(MANIFESTS / "local" / "configmap.yaml").internal_cert_management.enable is False
