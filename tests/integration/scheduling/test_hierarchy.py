"""Hierarchical cohorts through the real controller on the fake API server: heads borrowing from a nearer
cohort go first, before priority and age.

Kueue's scheduler orders a cycle's heads by their borrowing level (the height of the smallest cohort subtree
whose quota holds them, 0 within their own quota) before priority (its scheduler_test "in a hierarchical
cohort, workload borrowing less is scheduled first"). ``guaranteed`` borrows from its own cohort (level 1);
``best-effort`` borrows from the root (level 2), though it has the higher priority and is older: both are
pending before the controller starts, so its first cycle sees them as heads together.
"""

from __future__ import annotations

from typing import Any

from tests.fakeapi import FakeApiServer
from tests.support.builders import (
    cluster_queue,
    cohort,
    local_queue,
    manifests,
    namespace,
    pod_set,
    resource_flavor,
    workload,
    workload_priority_class,
)
from tests.support.fake_cluster import condition, is_true
from tests.support.replica import replica

JSON = dict[str, Any]

TREE = manifests(
    namespace("eng"),
    resource_flavor("default"),
    workload_priority_class("high", 3),
    cohort("root"),
    cohort("guaranteed", {"default": {"cpu": 4}}, parent="root"),
    cluster_queue("guaranteed", {"default": {"cpu": 0}}, cohortName="guaranteed"),
    cluster_queue("best-effort", {"default": {"cpu": 0}}, cohortName="root"),
    local_queue("lq-guaranteed", "eng", "guaranteed"),
    local_queue("lq-best-effort", "eng", "best-effort"),
)


def cpu_workload(name: str, queue: str, *, priority: int | None = None) -> JSON:
    """A Workload with no owner (as Kueue's performance runner creates them) asking for 4 cpu."""
    cpu = pod_set(requests={"cpu": "4"}, image="x", restartPolicy="Never")
    body = workload(name, "eng", queue=queue, pod_sets=[cpu])
    if priority is not None:
        body["spec"]["priority"] = priority
        body["spec"]["priorityClassRef"] = {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": "high",
        }
    return body


async def test_the_head_borrowing_from_a_nearer_cohort_is_admitted_before_a_higher_priority_one(
    fake_api: FakeApiServer,
) -> None:
    await fake_api.apply_manifests(TREE)
    await fake_api.create(cpu_workload("best-effort", "lq-best-effort", priority=3))  # older, higher priority
    await fake_api.create(cpu_workload("guaranteed", "lq-guaranteed"))
    async with replica(fake_api.kubeconfig_path()):
        await fake_api.wait_for(lambda: is_true(fake_api.get("workloads", "guaranteed", "eng"), "Admitted"))

        def best_effort_waits() -> bool:
            reserved = condition(fake_api.get("workloads", "best-effort", "eng"), "QuotaReserved")
            return reserved is not None and reserved["message"].endswith("4 more needed")

        await fake_api.wait_for(best_effort_waits)
        best_effort = fake_api.get("workloads", "best-effort", "eng")
        reserved = condition(best_effort, "QuotaReserved")
        assert reserved is not None and (reserved["status"], reserved["reason"], reserved["message"]) == (
            "False",
            "WaitingForQuota",
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, "
            "4 more needed",
        )
        assert "admission" not in (best_effort or {}).get("status", {})
        borrowed = [{"name": "default", "resources": [{"name": "cpu", "borrowed": "4", "total": "4"}]}]
        await fake_api.wait_for(
            lambda: (
                (fake_api.get("clusterqueues", "guaranteed") or {}).get("status", {}).get("flavorsUsage")
                == borrowed
            )
        )
