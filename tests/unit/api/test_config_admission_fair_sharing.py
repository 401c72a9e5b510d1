"""``admissionFairSharing`` as Kueue's Configuration has it: defaulting (a missing or zero sampling interval
is five minutes, apis/config/v1beta2/defaults.go) and validation (no negative half-life, interval or resource
weight, pkg/config/validation.go ``validateAdmissionFairSharing``)."""

from __future__ import annotations

from kueue_webhook.api.config_model import AdmissionFairSharing
from kueue_webhook.api.objects import ClusterQueue, LocalQueue, parse_cluster_queue, parse_local_queue
from tests.unit.api.test_config import parsed, rejected


def test_absent_means_off_and_present_means_on_with_kueues_defaults() -> None:
    assert parsed("{}").admission_fair_sharing is None
    assert parsed("admissionFairSharing: {}").admission_fair_sharing == AdmissionFairSharing(
        usage_half_life_seconds=0.0, usage_sampling_interval_seconds=300.0
    )
    config = parsed(
        "admissionFairSharing: {usageHalfLifeTime: 168h, usageSamplingInterval: 0s, "
        "resourceWeights: {cpu: 2, memory: 0.5}}"
    )
    assert config.admission_fair_sharing == AdmissionFairSharing(
        usage_half_life_seconds=604800.0,
        usage_sampling_interval_seconds=300.0,
        resource_weights=(("cpu", 2.0), ("memory", 0.5)),
    )
    assert config.warnings == ()  # no longer "accepted, no effect"


def test_negative_or_malformed_values_are_refused() -> None:
    assert rejected("admissionFairSharing: {resourceWeights: {cpu: -1}}") == (
        "admissionFairSharing.resourceWeights[cpu]: must be greater than or equal to 0, got -1",
    )
    assert rejected("admissionFairSharing: {usageHalfLifeTime: -1h}") == (
        'admissionFairSharing.usageHalfLifeTime: must be a duration such as "30s", "5m" or "1h30m", '
        "got '-1h'",
    )
    assert rejected("admissionFairSharing: {usageSamplingInterval: soon}")
    assert rejected("admissionFairSharing: {resourceWeights: [cpu]}") == (
        "admissionFairSharing.resourceWeights: must be a mapping, got a list",
    )
    assert rejected("admissionFairSharing: {decay: fast}") == ("admissionFairSharing.decay: unknown field",)


def test_a_cluster_queue_reads_its_admission_scope() -> None:
    def queue(scope: object) -> object:
        return parse_cluster_queue({"metadata": {"name": "cq"}, "spec": {"admissionScope": scope}})

    usage_based = queue({"admissionMode": "UsageBasedAdmissionFairSharing"})
    assert isinstance(usage_based, ClusterQueue) and usage_based.usage_based_admission
    off = queue({"admissionMode": "NoAdmissionFairSharing"})
    assert isinstance(off, ClusterQueue) and not off.usage_based_admission
    missing = queue({})
    assert (
        isinstance(missing, list) and str(missing[0]) == "spec.admissionScope.admissionMode: Required value"
    )
    wrong = queue({"admissionMode": "Sometimes"})
    assert isinstance(wrong, list) and "Unsupported value" in str(wrong[0])


def test_a_local_queue_reads_its_weight_and_the_consumed_resources_of_its_status() -> None:
    parsed_queue = parse_local_queue(
        {
            "metadata": {"name": "lq", "namespace": "ns"},
            "spec": {"clusterQueue": "cq", "fairSharing": {"weight": "2"}},
            "status": {
                "fairSharing": {
                    "weightedShare": 0,
                    "admissionFairSharingStatus": {
                        "consumedResources": {"cpu": "31999m", "memory": "bogus"},
                        "lastUpdate": "2025-06-03T14:25:15Z",
                    },
                }
            },
        }
    )
    assert isinstance(parsed_queue, LocalQueue)
    assert (
        parsed_queue.fair_sharing_weight is not None and parsed_queue.fair_sharing_weight.nanos == 2 * 10**9
    )
    assert parsed_queue.consumed_resources == (("cpu", 31_999_000_000),)  # what does not parse is left out
    assert parsed_queue.consumed_at == 1748960715.0


def test_a_local_queue_weight_is_taken_as_kueue_takes_it() -> None:
    """Kueue has no LocalQueue webhook: any weight its CRD's quantity pattern admits is accepted, a negative
    or tiny one included (ClusterQueues and Cohorts, which Kueue's webhooks check, refuse 0 < weight <=
    1n)."""
    for weight in ("-1", "1n", "0"):
        parsed_queue = parse_local_queue(
            {
                "metadata": {"name": "lq", "namespace": "ns"},
                "spec": {"clusterQueue": "cq", "fairSharing": {"weight": weight}},
            }
        )
        assert isinstance(parsed_queue, LocalQueue), parsed_queue
        assert (
            parsed_queue.fair_sharing_weight is not None and str(parsed_queue.fair_sharing_weight) == weight
        )
