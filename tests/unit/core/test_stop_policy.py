"""stopPolicy on ClusterQueues and LocalQueues as Kueue's workload controller applies them.

``Hold`` stops admitting and leaves running work alone; ``HoldAndDrain`` also takes the quota back from
admitted workloads (Evicted with ``ClusterQueueStopped`` / ``LocalQueueStopped``), and they wait in the
stopped queue until it is resumed.
"""

from __future__ import annotations

from kueue_webhook.core.scheduler import Admit, Evict

from .builders import (
    admitted,
    cluster_queue,
    last_wait,
    local_queue,
    run_until_quiet,
    state_with,
    workload,
)

CPU = {"default": {"cpu": 4}}


def test_hold_keeps_admitted_work_and_stops_new_admissions() -> None:
    state = state_with(cluster_queue("cq", CPU))
    state.upsert_workload(workload("running", {"cpu": "1"}))
    run_until_quiet(state)
    state.upsert_cluster_queue(cluster_queue("cq", CPU, stopPolicy="Hold"))
    state.upsert_workload(workload("next", {"cpu": "1"}, created=1))
    decisions = run_until_quiet(state)
    assert not [d for d in decisions if isinstance(d, Evict | Admit)]
    assert last_wait(decisions, "ns/next").message == "ClusterQueue cq is stopped"


def test_hold_and_drain_on_the_cluster_queue_evicts_admitted_work_until_resumed() -> None:
    state = state_with(cluster_queue("cq", CPU))
    first = workload("running", {"cpu": "1"})
    state.upsert_workload(first)
    run_until_quiet(state)
    state.confirm("ns/running")  # its admission write landed
    state.upsert_cluster_queue(cluster_queue("cq", CPU, stopPolicy="HoldAndDrain"))
    decisions = run_until_quiet(state)
    evicts = [d for d in decisions if isinstance(d, Evict)]
    assert [(e.workload, e.reason, e.message) for e in evicts] == [
        ("ns/running", "ClusterQueueStopped", "The ClusterQueue is stopped")
    ]
    assert run_until_quiet(state) == []  # issued once
    state.upsert_workload(first)  # the owner cleared the reservation
    assert last_wait(run_until_quiet(state), "ns/running").message == "ClusterQueue cq is stopped"
    assert state.ledger.usage("cq") == {("default", "cpu"): 0}
    state.upsert_cluster_queue(cluster_queue("cq", CPU))
    assert admitted(run_until_quiet(state)) == ["ns/running"]


def test_hold_and_drain_on_a_local_queue_evicts_only_its_workloads() -> None:
    state = state_with(cluster_queue("cq", CPU), local_queues={"lq": "cq", "other": "cq"})
    state.upsert_workload(workload("mine", {"cpu": "1"}))
    state.upsert_workload(workload("theirs", {"cpu": "1"}, queue="other", created=1))
    run_until_quiet(state)
    state.upsert_local_queue(local_queue("lq", "cq", stopPolicy="HoldAndDrain"))
    evicts = [d for d in run_until_quiet(state) if isinstance(d, Evict)]
    assert [(e.workload, e.reason, e.message) for e in evicts] == [
        ("ns/mine", "LocalQueueStopped", "The LocalQueue is stopped")
    ]
