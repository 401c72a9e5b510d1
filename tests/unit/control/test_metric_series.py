"""Counted series looked up once still count where a scrape sees them, per label set and role."""

from __future__ import annotations

from kueue_webhook.control.output.metrics import Metrics


def test_a_series_counts_in_the_scrape_under_its_own_labels() -> None:
    metrics = Metrics()
    metrics.series(metrics.api_writes, "Workload", "patch-status").inc()
    metrics.series(metrics.api_writes, "Workload", "patch-status").inc()
    metrics.series(metrics.api_writes, "Job", "patch").inc()
    metrics.series(metrics.admission_attempts, "success", "leader").inc()
    metrics.series(metrics.admission_attempts, "success", "follower").inc(3)
    text = metrics.exposition().decode()
    assert 'kueue_webhook_api_writes_total{kind="Workload",verb="patch-status"} 2.0' in text
    assert 'kueue_webhook_api_writes_total{kind="Job",verb="patch"} 1.0' in text
    assert 'kueue_admission_attempts_total{replica_role="leader",result="success"} 1.0' in text
    assert 'kueue_admission_attempts_total{replica_role="follower",result="success"} 3.0' in text


def test_losing_the_lease_keeps_the_counted_series_and_counting_goes_on() -> None:
    metrics = Metrics()
    metrics.series(metrics.admitted_workloads, "cq", "", "leader").inc()
    metrics.forget_role("leader")
    metrics.series(metrics.admitted_workloads, "cq", "", "leader").inc()
    text = metrics.exposition().decode()
    assert (
        'kueue_admitted_workloads_total{cluster_queue="cq",priority_class="",replica_role="leader"} 2.0'
        in text
    )
