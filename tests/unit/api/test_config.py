"""The ConfigMap document: defaults that work, Kueue's field names, every bad edit named by its path."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueue_webhook.api.config import (
    DEFAULT_CONTROLLER_USERNAME,
    Configuration,
    ConfigurationErrors,
    ManualApproval,
    parse_configuration,
)


def parsed(text: str) -> Configuration:
    result = parse_configuration(text)
    assert isinstance(result, Configuration), result
    return result


def rejected(text: str) -> tuple[str, ...]:
    result = parse_configuration(text)
    assert isinstance(result, ConfigurationErrors), result
    return result.errors


@pytest.mark.parametrize("text", [None, "", "  \n", "{}", "# only a comment\n"])
def test_empty_document_gives_working_defaults(text: str | None) -> None:
    config = parse_configuration(text)
    assert config == Configuration()
    assert isinstance(config, Configuration)
    assert not config.manage_jobs_without_queue_name
    assert config.controller_identity.username == DEFAULT_CONTROLLER_USERNAME
    assert config.label_policy.enforced_namespace_selector is None
    assert config.label_policy.default_queue_for("anything") == "default"
    assert config.log_level is None  # serve --log-level stands


def test_default_managed_selector_excludes_kube_system_and_own_namespace_like_kueue() -> None:
    config = parsed("namespace: queues\n")
    assert config.manages_namespace({"kubernetes.io/metadata.name": "team-a"})
    assert not config.manages_namespace({"kubernetes.io/metadata.name": "kube-system"})
    assert not config.manages_namespace({"kubernetes.io/metadata.name": "queues"})
    assert config.manages_namespace({"kubernetes.io/metadata.name": "kueue-system"})


def test_full_document_is_read_with_kueue_field_names() -> None:
    config = parsed(
        """
manageJobsWithoutQueueName: true
managedJobsNamespaceSelector: {matchLabels: {team: "yes"}}
resources: {excludeResourcePrefixes: [example.com/]}
fairSharing: {preemptionStrategies: [LessThanInitialShare]}
waitForPodsReady: {timeout: 1h30m, requeuingStrategy: {backoffBaseSeconds: 10, backoffLimitCount: 3}}
labelPolicy:
  enforcedNamespaceSelector: {matchLabels: {enforce: "true"}}
  defaultQueues: {team-a: team-a-gpu}
controllerIdentity: {username: system:serviceaccount:ops:queue-controller}
logLevel: DEBUG
"""
    )
    assert config.manage_jobs_without_queue_name
    assert config.manages_namespace({"team": "yes"}) and not config.manages_namespace({})
    assert config.exclude_resource_prefixes == ("example.com/",)
    assert config.fair_sharing.enable  # present means enabled, as in Kueue v1beta2
    assert config.fair_sharing.preemption_strategies == ("LessThanInitialShare",)
    assert config.wait_for_pods_ready.enable
    assert config.wait_for_pods_ready.timeout_seconds == 5400
    assert config.wait_for_pods_ready.recovery_timeout_seconds == 5400  # defaults to timeout
    assert config.wait_for_pods_ready.requeuing_strategy.backoff_base_seconds == 10
    assert config.wait_for_pods_ready.requeuing_strategy.backoff_limit_count == 3
    assert config.label_policy.is_enforced({"enforce": "true"})
    assert not config.label_policy.is_enforced({"enforce": "false"})
    assert config.label_policy.default_queue_for("team-a") == "team-a-gpu"
    assert config.label_policy.default_queue_for("team-b") == "default"
    assert config.controller_identity.username == "system:serviceaccount:ops:queue-controller"
    assert config.log_level == "debug"


def test_wait_for_pods_ready_is_on_by_default_as_kueue_v1beta2_defaults_it() -> None:
    default = parsed("").wait_for_pods_ready
    assert default.enable and not default.block_admission
    assert default.timeout_seconds == 1800
    assert not parsed("waitForPodsReady: {enable: false}").wait_for_pods_ready.enable
    assert parsed("waitForPodsReady: {timeout: 0s}").wait_for_pods_ready.timeout_seconds == 1800


def test_every_error_is_reported_with_its_path_at_once() -> None:
    errors = rejected(
        """
manageJobsWithoutQueueName: "yes"
fairSharing: {preemptionStrategies: [LessThanInitialShare, LessThanOrEqualToFinalShare]}
waitForPodsReady: {timeout: soon}
labelPolicy:
  enforcedNamespaceSelector: {matchExpressions: [{key: a, operator: Maybe}]}
  defaultQueues: {team-a: Not_A_Name}
logLevel: verbose
managedJobsNamespacSelector: {}
"""
    )
    paths = [error.split(":", 1)[0] for error in errors]
    assert paths == [
        "managedJobsNamespacSelector",
        "logLevel",
        "manageJobsWithoutQueueName",
        "fairSharing.preemptionStrategies",
        "waitForPodsReady.timeout",
        "labelPolicy.enforcedNamespaceSelector.matchExpressions[0].operator",
        "labelPolicy.defaultQueues[team-a]",
    ]
    assert "unknown field" in errors[0]


def test_kueue_only_fields_are_accepted_with_a_warning() -> None:
    config = parsed("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nqueueVisibility: {}\n")
    assert config.warnings == ("queueVisibility: accepted for compatibility with Kueue, has no effect here",)


def test_broken_yaml_names_the_line() -> None:
    (error,) = rejected("labelPolicy:\n  defaultQueues: {a: b\n")
    assert error.startswith("config.yaml: not valid YAML at line")


def test_a_document_that_is_not_a_mapping_is_rejected() -> None:
    assert rejected("- a\n- b\n") == ("config.yaml: must be a mapping, got a list",)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda c: st.lists(c) | st.dictionaries(st.text(max_size=8), c),
        max_leaves=12,
    )
)
def test_any_decoded_document_gives_a_config_or_errors_never_an_exception(document: object) -> None:
    from kueue_webhook.api.config import parse_configuration_mapping

    result = parse_configuration_mapping(document)
    assert isinstance(result, Configuration | ConfigurationErrors)
    if isinstance(result, ConfigurationErrors):
        assert result.errors and all(": " in error for error in result.errors)


def test_manual_approval_approvers_are_users_or_groups() -> None:
    parsed = parse_configuration("manualApproval:\n  approvers: [alice, 'group:ml-leads']\n")
    assert isinstance(parsed, Configuration)
    assert parsed.manual_approval == ManualApproval(approvers=("alice", "group:ml-leads"))
    assert Configuration().manual_approval.approvers == ()


def test_manual_approval_rejects_empty_entries_and_non_lists() -> None:
    parsed = parse_configuration("manualApproval:\n  approvers: ['', 'group:', 3]\n")
    assert isinstance(parsed, ConfigurationErrors)
    assert parsed.errors == (
        "manualApproval.approvers[0]: must be a user name or group:<name>, got ''",
        "manualApproval.approvers[1]: must be a user name or group:<name>, got 'group:'",
        "manualApproval.approvers[2]: must be a user name or group:<name>, got 3",
    )
    parsed = parse_configuration("manualApproval: {approvers: alice}\n")
    assert isinstance(parsed, ConfigurationErrors)
    assert parsed.errors == (
        "manualApproval.approvers: must be a list of user names or group:<name>, got 'alice'",
    )


def test_the_documented_reference_is_a_configuration_that_applies_without_a_warning() -> None:
    """docs/configuration.md lists every field in its first YAML block; pasted as is, it applies cleanly."""
    page = (Path(__file__).resolve().parents[3] / "docs" / "configuration.md").read_text()
    reference = page.split("```yaml\n", 1)[1].split("```", 1)[0]
    configuration = parsed(reference)
    assert configuration.warnings == ()
    assert configuration.manual_approval.approvers == ("alice", "group:ml-leads")


def test_local_queue_metrics_are_on_by_default_and_configured_as_kueue_reads_them() -> None:
    """Kueue's ``metrics.localQueueMetrics``: a missing section means on for every LocalQueue; a section
    written without ``enable`` leaves it off (Kueue defaults only the missing section); a selector limits
    the series to the LocalQueues it matches. The other ``metrics`` fields are warned about."""
    assert parsed("").local_queue_metrics.exposes({})
    assert not parsed("metrics: {localQueueMetrics: {}}").local_queue_metrics.enable
    chosen = parsed(
        "metrics:\n  bindAddress: ':8443'\n  localQueueMetrics:\n    enable: true\n"
        "    localQueueSelector: {matchLabels: {tier: gold}}\n"
    )
    settings = chosen.local_queue_metrics
    assert settings.exposes({"tier": "gold"}) and not settings.exposes({"tier": "tin"})
    assert chosen.warnings == ("metrics.bindAddress: accepted for compatibility with Kueue, no effect here",)
    (error,) = rejected("metrics: {localQueueMetrics: {enable: true, localQueueSelector: {matchLabels: 3}}}")
    assert error.startswith("metrics.localQueueMetrics.localQueueSelector")
