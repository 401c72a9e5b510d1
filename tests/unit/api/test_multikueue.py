"""MultiKueue's rules as tables: the AdmissionCheck's Active condition, which kubeconfigs are refused, the
kinds' validation, v1beta1 conversion and the ``multiKueue`` configuration section."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_webhook.api.config import Configuration, ConfigurationErrors, MultiKueue, parse_configuration
from kueue_webhook.api.conversion import to_v1beta1, to_v1beta2
from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.objects import parse_object
from kueue_webhook.api.objects.multikueue import (
    KubeConfigSource,
    MultiKueueCluster,
    MultiKueueConfig,
    check_active,
    kubeconfig_problem,
    parameters_config,
)

JSON = dict[str, Any]
CONFIG = {"spec": {"clusters": ["a", "b"]}}


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        ({"a": True, "b": True}, ("True", "Active", "The admission check is active")),
        ({"a": True, "b": False}, ("True", "SomeActiveClusters", "Inactive clusters: [b]")),
        ({"a": True}, ("True", "SomeActiveClusters", "Missing clusters: [b]")),
        ({"a": False}, ("False", "NoUsableClusters", "Missing clusters: [b], Inactive clusters: [a]")),
        ({}, ("False", "NoUsableClusters", "Missing clusters: [a b]")),
    ],
    ids=["all-active", "one-inactive", "one-missing", "none-usable", "all-missing"],
)
def test_check_active_follows_the_clusters_as_kueue_acreconciler(
    states: dict[str, bool], expected: tuple[str, str, str]
) -> None:
    assert check_active(config_name="c", config_problem="", config=CONFIG, cluster_active=states) == expected


def test_check_active_names_a_missing_config_or_bad_parameters() -> None:
    assert check_active(config_name="c", config_problem="", config=None, cluster_active={}) == (
        "False",
        "BadConfig",
        'Cannot load the AdmissionChecks parameters: multikueueconfigs.kueue.x-k8s.io "c" not found',
    )
    name, problem = parameters_config({"spec": {"controllerName": "kueue.x-k8s.io/multikueue"}})
    assert (name, problem) == (None, "missing parameters reference")
    assert check_active(config_name=name, config_problem=problem, config=None, cluster_active={})[2] == (
        "Cannot load the AdmissionChecks parameters: missing parameters reference"
    )


SAFE_CLUSTER = {"server": "https://worker.example.com:6443", "certificate-authority-data": "Zm9v"}
SAFE_USER = {"token": "abc"}


@pytest.mark.parametrize(
    ("cluster", "user", "problem"),
    [
        ({}, {}, None),
        ({}, {"client-certificate-data": "x", "client-key-data": "y", "token": None}, None),
        ({"server": "https://10.0.0.1:6443"}, {}, None),
        ({"server": "https://[::1]:6443"}, {}, None),
        ({"server": "https://Worker.Example.COM"}, {}, None),
        ({"server": "https://under_score.example.com"}, {}, "untrusted server endpoint"),
        ({"insecure-skip-tls-verify": True}, {}, "insecure TLS verification is not allowed for cluster w"),
        (
            {"certificate-authority": "/etc/ca.crt", "certificate-authority-data": None},
            {},
            "certificate-authority file paths are not allowed, use certificate-authority-data for cluster w",
        ),
        ({"server": ""}, {}, "server URL is required for cluster w"),
        ({}, {"tokenFile": "/token"}, "tokenFile is not allowed (user u)"),
        (
            {},
            {"client-certificate": "/etc/passwd", "client-key-data": "y"},
            "client-certificate file paths are not allowed, use client-certificate-data for user u",
        ),
        ({}, {"username": "admin", "password": "x"}, "basic auth is not allowed"),
        ({}, {"exec": {"command": "sh"}}, "exec plugins are not allowed"),
        ({}, {"auth-provider": {"name": "oidc"}}, "auth providers are not allowed"),
    ],
)
def test_kubeconfig_problem_refuses_what_kueue_validatekubeconfig_refuses(
    cluster: JSON, user: JSON, problem: str | None
) -> None:
    cluster_body = {k: v for k, v in {**SAFE_CLUSTER, **cluster}.items() if v is not None}
    user_body = {k: v for k, v in {**SAFE_USER, **user}.items() if v is not None}
    found = kubeconfig_problem(
        clusters={"w": cluster_body},
        users={"u": user_body},
        selected_cluster=cluster_body,
        selected_user=user_body,
    )
    assert found == problem


def cluster(spec: JSON) -> JSON:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "MultiKueueCluster",
        "metadata": {"name": "w"},
        "spec": spec,
    }


def config(spec: JSON) -> JSON:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "MultiKueueConfig",
        "metadata": {"name": "c"},
        "spec": spec,
    }


def errors(obj: JSON) -> list[str]:
    parsed = parse_object(obj)
    assert isinstance(parsed, list)
    return [str(e) for e in parsed if isinstance(e, FieldError)]


def test_a_valid_cluster_and_config_parse_with_kueue_defaults() -> None:
    parsed = parse_object(cluster({"clusterSource": {"kubeConfig": {"location": "w-secret"}}}))
    assert isinstance(parsed, MultiKueueCluster)
    assert parsed.kubeconfig == KubeConfigSource("w-secret", "Secret")
    parsed_config = parse_object(config({"clusters": ["a", "b"], "quotaManagement": "Manual"}))
    assert isinstance(parsed_config, MultiKueueConfig) and parsed_config.clusters == ("a", "b")


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (cluster({}), ["spec.clusterSource: Required value"]),
        (
            cluster({"clusterSource": {}}),
            [
                'spec.clusterSource: Invalid value: "object": '
                "exactly one of the fields in [kubeConfig clusterProfileRef] must be set"
            ],
        ),
        (
            cluster({"clusterSource": {"kubeConfig": {"location": "s"}, "clusterProfileRef": {"name": "p"}}}),
            [
                'spec.clusterSource: Invalid value: "object": '
                "exactly one of the fields in [kubeConfig clusterProfileRef] must be set"
            ],
        ),
        (
            cluster({"clusterSource": {"kubeConfig": {"location": "s", "locationType": "Url"}}}),
            [
                "spec.clusterSource.kubeConfig.locationType: "
                'Unsupported value: "Url": supported values: "Secret", "Path"'
            ],
        ),
        (
            cluster({"clusterSource": {"kubeConfig": {"location": "x" * 257}}}),
            ["spec.clusterSource.kubeConfig.location: Too long: may not be more than 256 bytes"],
        ),
        (config({"clusters": []}), ["spec.clusters: Required value"]),
        (config({"clusters": ["a", "a"]}), ['spec.clusters: Invalid value: "array": must be unique']),
        (
            config({"clusters": [f"c{i}" for i in range(21)]}),
            ["spec.clusters: Too many: 21: must have at most 20 items"],
        ),
        (
            config({"clusters": ["a"], "quotaManagement": "Sometimes"}),
            ['spec.quotaManagement: Unsupported value: "Sometimes": supported values: "Manual", "Automated"'],
        ),
    ],
)
def test_the_kinds_are_validated_as_kueue_crd_rules_say(obj: JSON, expected: list[str]) -> None:
    assert errors(obj) == expected


def test_v1beta1_cluster_converts_to_cluster_source_and_back() -> None:
    old = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "MultiKueueCluster",
        "metadata": {"name": "w"},
        "spec": {"kubeConfig": {"location": "w-secret", "locationType": "Secret"}},
    }
    new = to_v1beta2(old)
    assert new["spec"] == {
        "clusterSource": {"kubeConfig": {"location": "w-secret", "locationType": "Secret"}}
    }
    assert to_v1beta1(new) == old
    profile = to_v1beta2(
        {**old, "spec": {"kubeConfig": {"location": ""}, "clusterProfileRef": {"name": "p"}}}
    )
    assert profile["spec"] == {"clusterSource": {"clusterProfileRef": {"name": "p"}}}


def test_v1beta2_config_loses_only_quota_management_in_v1beta1() -> None:
    new = config({"clusters": ["a"], "quotaManagement": "Manual"})
    assert to_v1beta1(new)["spec"] == {"clusters": ["a"]}


def test_multikueue_configuration_defaults_are_kueues() -> None:
    assert Configuration().multi_kueue == MultiKueue(
        gc_interval_seconds=60.0,
        origin="multikueue",
        worker_lost_timeout_seconds=900.0,
        dispatcher_name="kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
        incremental_step_size=3,
    )


def test_multikueue_configuration_is_read_and_unsupported_parts_warned() -> None:
    parsed = parse_configuration(
        """
multiKueue:
  gcInterval: 30s
  origin: manager-east
  workerLostTimeout: 5m
  dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental
  incrementalDispatcherConfig: {stepSize: 2}
  clusterProfile: {accessProviders: [{name: x}]}
"""
    )
    assert isinstance(parsed, Configuration)
    assert parsed.multi_kueue == MultiKueue(
        30.0, "manager-east", 300.0, "kueue.x-k8s.io/multikueue-dispatcher-incremental", 2
    )
    assert parsed.warnings == (
        "multiKueue.clusterProfile: accepted for compatibility with Kueue, has no effect here",
    )


@pytest.mark.parametrize(
    ("section", "error"),
    [
        (
            "{gcInterval: -1m}",
            'multiKueue.gcInterval: must be a duration such as "30s", "5m" or "1h30m", got \'-1m\'',
        ),
        ("{origin: 'not a label!'}", "multiKueue.origin: 'not a label!': a valid label must be"),
        (
            "{incrementalDispatcherConfig: {stepSize: 2}}",
            "multiKueue.incrementalDispatcherConfig: only valid when dispatcherName is "
            "kueue.x-k8s.io/multikueue-dispatcher-incremental",
        ),
        (
            "{dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental, "
            "incrementalDispatcherConfig: {stepSize: 0}}",
            "multiKueue.incrementalDispatcherConfig.stepSize: must be greater than or equal to 1, got 0",
        ),
        ("{origns: x}", "multiKueue.origns"),
    ],
    ids=["negative-gc", "origin-not-a-label", "step-without-incremental", "step-zero", "typo"],
)
def test_a_bad_multikueue_section_is_refused_with_its_path(section: str, error: str) -> None:
    parsed = parse_configuration(f"multiKueue: {section}")
    assert isinstance(parsed, ConfigurationErrors)
    assert any(message.startswith(error) for message in parsed.errors), parsed.errors
