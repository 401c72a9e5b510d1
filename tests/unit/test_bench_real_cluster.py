"""Writes per Workload on a real API server are read from its own apiserver_request_total."""

from __future__ import annotations

from collections import Counter

import pytest

from bench import real_cluster

#: the shape kube-apiserver v1.36.2 serves on /metrics (labels as captured from ../shared/kube)
EXPOSITION = """\
# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, ...
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="kueue.x-k8s.io",resource="workloads",scope="resource",subresource="status",system_client="",verb="PATCH",version="v1beta2"} 120
apiserver_request_total{code="409",component="apiserver",dry_run="",group="kueue.x-k8s.io",resource="workloads",scope="resource",subresource="status",system_client="",verb="PATCH",version="v1beta2"} 3
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="events",scope="namespace",subresource="",system_client="",verb="POST",version="v1"} 40
apiserver_request_total{code="200",component="apiserver",dry_run="",group="kueue.x-k8s.io",resource="workloads",scope="cluster",subresource="",system_client="",verb="WATCH",version="v1beta2"} 7
apiserver_request_total{code="200",component="",dry_run="",group="",resource="",scope="",subresource="/healthz",system_client="kube-controller-manager",verb="GET",version=""} 1
"""  # noqa: E501


def test_request_counts_sum_codes_and_key_by_verb_and_subresource(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(real_cluster, "kubectl", lambda *args, **kwargs: EXPOSITION)
    counts = real_cluster.request_counts(real_cluster.ROOT)
    assert counts["PATCH workloads/status"] == 123  # a refused write (409) still cost a request
    assert counts["POST events"] == 40
    assert counts["WATCH workloads"] == 7
    assert not any(key.endswith("/healthz") for key in counts)  # not a resource


def test_writes_between_two_readings_leave_out_reads_and_unchanged_counters() -> None:
    before = Counter({"PATCH workloads/status": 100, "POST events": 40, "LIST workloads": 2})
    after = Counter({"PATCH workloads/status": 160, "POST events": 40, "LIST workloads": 9, "PUT leases": 5})
    assert real_cluster.writes_between(before, after) == {"PATCH workloads/status": 60, "PUT leases": 5}


def test_the_controllers_writes_are_the_servers_minus_what_the_benchmark_sent() -> None:
    from types import SimpleNamespace

    from bench.kueue_baseline import apiserver_write_figures

    counters = SimpleNamespace(created=100, create_failures=0, actor_writes=100, actor_retries=4)
    run = SimpleNamespace(counters=counters, actor="concurrent")
    plan = SimpleNamespace(queues=[object()] * 2)
    seen = {
        "POST workloads": 100,  # the benchmark's creations
        "PATCH workloads/status": 214,  # 104 the benchmark's (Finished, retries), 110 the controller's
        "POST events": 12,
        "PATCH clusterqueues/status": 3,
        "PUT leases": 50,  # Lease renewals and the kube-controller-manager's: not counted
    }
    figures = apiserver_write_figures(seen, run, plan)  # type: ignore[arg-type]
    assert figures["controller_by_verb_and_resource"] == {
        "PATCH workloads/status": 110,
        "POST events": 12,
        "PATCH clusterqueues/status": 3,
    }
    assert figures["controller_per_workload"] == 1.25


def test_the_kueue_actors_applies_are_the_benchmarks_not_the_controllers() -> None:
    from types import SimpleNamespace

    from bench.kueue_baseline import apiserver_write_figures

    counters = SimpleNamespace(created=100, create_failures=0, actor_writes=100, actor_retries=4)
    run = SimpleNamespace(counters=counters, actor="kueue")
    plan = SimpleNamespace(queues=[object()] * 2)
    seen = {"POST workloads": 100, "APPLY workloads/status": 104, "PATCH workloads/status": 110}
    figures = apiserver_write_figures(seen, run, plan)  # type: ignore[arg-type]
    assert figures["controller_by_verb_and_resource"] == {"PATCH workloads/status": 110}
    assert figures["controller_per_workload"] == 1.1
