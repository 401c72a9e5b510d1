"""The dashboard's recent admissions, preemptions and evictions, read from the Workloads' conditions: each
transition once, the newest kept, no more than the capacity."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_webhook.core.recent_decisions import RecentDecisions, decisions_between


def workload(name: str, *conditions: tuple[str, str, str], cluster_queue: str = "research") -> dict[str, Any]:
    """A Workload whose conditions are (type, reason, lastTransitionTime), all True."""
    return {
        "metadata": {"name": name, "namespace": "team-a"},
        "status": {
            "admission": {"clusterQueue": cluster_queue},
            "conditions": [
                {
                    "type": kind,
                    "status": "True",
                    "reason": reason,
                    "message": f"{kind} {name}",
                    "lastTransitionTime": at,
                }
                for kind, reason, at in conditions
            ],
        },
    }


ADMITTED = ("Admitted", "Admitted", "2026-01-01T00:00:05Z")


def test_an_admission_is_recorded_once_however_often_the_workload_changes() -> None:
    recent = RecentDecisions()
    pending = {"metadata": {"name": "w", "namespace": "team-a"}}
    admitted = workload("w", ADMITTED)
    recent.observe(None, pending)
    recent.observe(pending, admitted)
    recent.observe(admitted, workload("w", ADMITTED))  # another write that left Admitted as it was
    recent.observe(None, admitted)  # a relist: the same transition
    assert [d.to_json() for d in recent.latest()] == [
        {
            "at": "2026-01-01T00:00:05Z",
            "kind": "Admitted",
            "namespace": "team-a",
            "name": "w",
            "clusterQueue": "research",
            "reason": "Admitted",
            "message": "Admitted w",
        }
    ]


def test_a_preemption_is_one_preempted_entry_and_another_eviction_keeps_its_reason() -> None:
    preempted = workload(
        "victim",
        ("Evicted", "Preempted", "2026-01-01T00:01:00Z"),
        ("Preempted", "InClusterQueue", "2026-01-01T00:01:00Z"),
    )
    assert [(d.kind, d.reason) for d in decisions_between(workload("victim", ADMITTED), preempted)] == [
        ("Preempted", "InClusterQueue")
    ]
    stopped = workload("halted", ("Evicted", "ClusterQueueStopped", "2026-01-01T00:02:00Z"))
    assert [(d.kind, d.reason) for d in decisions_between(None, stopped)] == [
        ("Evicted", "ClusterQueueStopped")
    ]


def test_a_readmission_after_an_eviction_is_a_new_entry() -> None:
    recent = RecentDecisions()
    first = workload("w", ADMITTED)
    again = workload("w", ("Admitted", "Admitted", "2026-01-01T00:09:00Z"))
    recent.observe(None, first)
    recent.observe(first, again)
    assert [d.at for d in recent.latest()] == ["2026-01-01T00:09:00Z", "2026-01-01T00:00:05Z"]


def test_only_the_newest_are_kept_whatever_order_they_are_seen_in() -> None:
    recent = RecentDecisions(capacity=3)
    # a replica listing Workloads sees them in name order, not in time order
    for name, second in (("a", 4), ("b", 1), ("c", 5), ("d", 2), ("e", 3)):
        recent.observe(None, workload(name, ("Admitted", "Admitted", f"2026-01-01T00:00:0{second}Z")))
    assert [d.name for d in recent.latest()] == ["c", "a", "e"]
    assert len(recent) == 3


def test_a_deleted_workload_or_one_that_never_ran_records_nothing() -> None:
    assert decisions_between(workload("w", ADMITTED), None) == []
    assert decisions_between(None, {"metadata": {"name": "w"}, "status": {"conditions": "garbage"}}) == []


def test_the_capacity_must_hold_something() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RecentDecisions(capacity=0)
