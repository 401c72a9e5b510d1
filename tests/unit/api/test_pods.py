"""Per-pod requests: Kubernetes' PodRequests rule, limits as default requests, Kueue's rounding."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.pods import kueue_rounded, pod_requests

G = 10**9


def container(
    requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None, **extra: Any
) -> Any:
    return {"name": "c", "resources": {"requests": requests or {}, "limits": limits or {}}, **extra}


def test_containers_are_summed_and_a_missing_request_is_taken_from_its_limit() -> None:
    spec = {
        "containers": [
            container({"cpu": "500m"}, {"nvidia.com/gpu": 1}),
            container({"cpu": "1", "memory": "1Gi"}),
        ]
    }
    requests, errors = pod_requests(spec)
    assert errors == []
    assert requests == {"cpu": 1_500_000_000, "memory": 2**30 * G, "nvidia.com/gpu": G}


def test_an_explicit_request_beats_the_limit() -> None:
    requests, _ = pod_requests({"containers": [container({"cpu": "1"}, {"cpu": "4"})]})
    assert requests == {"cpu": G}


def test_init_containers_count_at_their_peak_not_their_sum() -> None:
    spec = {
        "containers": [container({"cpu": "1"})],
        "initContainers": [container({"cpu": "3"}), container({"cpu": "2"})],
    }
    assert pod_requests(spec)[0] == {"cpu": 3 * G}


def test_sidecars_add_to_the_app_containers_and_to_later_init_steps() -> None:
    spec = {
        "containers": [container({"cpu": "1"})],
        "initContainers": [container({"cpu": "500m"}, restartPolicy="Always"), container({"cpu": "2"})],
    }
    # init step 2 runs next to the sidecar: 2.5; app phase: 1 + 0.5 = 1.5; peak 2.5
    assert pod_requests(spec)[0] == {"cpu": 2_500_000_000}


def test_overhead_is_added() -> None:
    spec = {"containers": [container({"cpu": "1"})], "overhead": {"cpu": "250m"}}
    assert pod_requests(spec)[0] == {"cpu": 1_250_000_000}


def test_rounding_is_milli_for_cpu_and_whole_units_otherwise() -> None:
    assert kueue_rounded("cpu", 1) == 1_000_000
    assert kueue_rounded("nvidia.com/gpu", 500_000_000) == G
    assert kueue_rounded("memory", 3 * G) == 3 * G


def test_malformed_quantities_are_reported_with_their_path() -> None:
    requests, errors = pod_requests({"containers": [container({"cpu": "one"})]}, "spec")
    assert requests == {}
    assert [e.path for e in errors] == ["spec.containers[0].resources.requests[cpu]"]


def test_pod_level_requests_replace_the_containers_for_cpu_memory_and_huge_pages() -> None:
    """Kubernetes' PodRequests with PodLevelResources: a request in ``spec.resources`` is the pod's, for the
    resources a pod may request as a whole; others (a GPU) still come from the containers; overhead adds."""
    spec = {
        "containers": [container({"cpu": "100m", "memory": "1Gi"}, {"nvidia.com/gpu": 1})],
        "resources": {
            "requests": {"cpu": "8", "hugepages-2Mi": "2Mi", "nvidia.com/gpu": 4},
            "limits": {"memory": "4Gi"},
        },
        "overhead": {"cpu": "250m"},
    }
    requests, errors = pod_requests(spec)
    assert errors == []
    assert requests == {
        "cpu": 8_250_000_000,  # the pod's 8, not its container's 100m, and the overhead
        "memory": 2**30 * G,  # a pod-level limit alone changes nothing (only requests are read)
        "hugepages-2Mi": 2 * 2**20 * G,
        "nvidia.com/gpu": G,
    }
