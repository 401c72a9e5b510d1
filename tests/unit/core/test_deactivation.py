"""A Workload deactivated while it holds quota (``spec.active=false``, ``kubectl kueue stop workload``) is
evicted as Kueue's workload controller does it (Evicted ``Deactivated``, "The workload is deactivated"), and
its quota stays charged until the eviction has released it: its pods still run meanwhile, so nobody else
may be admitted into that room."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.objects import Workload
from kueue_webhook.core.scheduler import Admit, Evict

from .builders import admitted_status, cluster_queue, run_until_quiet, state_with, workload


def inactive(name: str, status: dict[str, Any] | None) -> Workload:
    return workload(name, {"cpu": "4"}, status=status, active=False)


def test_a_running_workload_deactivated_is_evicted_and_keeps_its_quota_until_released() -> None:
    s = state_with(cluster_queue("cq", {"default": {"cpu": 4}}), local_queues={"lq": "cq"})
    running = admitted_status("cq", {"cpu": "default"}, {"cpu": "4"})
    s.upsert_workload(workload("a", {"cpu": "4"}, status=running))
    s.upsert_workload(workload("b", {"cpu": "4"}, created=1))
    assert not [d for d in run_until_quiet(s) if isinstance(d, Admit)]

    s.upsert_workload(inactive("a", running))
    decisions = run_until_quiet(s)
    evictions = [(d.workload, d.reason, d.message) for d in decisions if isinstance(d, Evict)]
    assert evictions == [("ns/a", "Deactivated", "The workload is deactivated")]
    assert not [d for d in decisions if isinstance(d, Admit)]  # a's pods still run in that room
    assert s.ledger.usage("cq") == {("default", "cpu"): 4 * 10**9}

    s.upsert_workload(inactive("a", None))  # the reservation released
    assert [d.workload for d in run_until_quiet(s) if isinstance(d, Admit)] == ["ns/b"]


def test_a_pending_workload_deactivated_leaves_the_queue() -> None:
    s = state_with(cluster_queue("cq", {"default": {"cpu": 4}}), local_queues={"lq": "cq"})
    s.upsert_workload(inactive("a", None))
    assert not [d for d in run_until_quiet(s) if isinstance(d, (Admit, Evict))]
    assert s.pending_count("cq") == 0
