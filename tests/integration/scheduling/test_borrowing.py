"""Borrowing in a cohort carried through the real controller to real Jobs on the fake API server.

``borrowWithinCohort``: a ClusterQueue whose Job must borrow to fit may preempt a lower-priority workload
of another (borrowing) ClusterQueue in its cohort only when its policy is ``LowerPriority`` and the
candidate's priority is at most ``maxPriorityThreshold``; the preempted Workload reads
``InCohortReclaimWhileBorrowing``. ``flavorFungibility``: with ``whenCanBorrow: TryNextFlavor`` a Job that
would borrow in the first flavor lands on the next one that fits without borrowing, and its Job gets that
flavor's nodeSelector.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.fakeapi import FakeApiServer
from tests.support.builders import (
    manifests,
    resource_flavor,
    team_queue,
    workload_priority_class,
)
from tests.support.fake_cluster import condition, running, workload_of
from tests.support.replica import replica
from tests.support.research import PRIORITIES
from tests.support.research import team_gpu_job as gpu_job

JSON = dict[str, Any]

FLAVORS = manifests(
    resource_flavor("on-demand", node_labels={"node-pool": "on-demand"}),
    resource_flavor("spot", node_labels={"node-pool": "spot"}),
)


def team(name: str, *, flavors: dict[str, int], cohort: str = "research", **spec: Any) -> str:
    """A namespace, a ClusterQueue of ``cohort`` with one GPU quota per flavor (in order), a LocalQueue."""
    quotas = {flavor: {"nvidia.com/gpu": gpus} for flavor, gpus in flavors.items()}
    return "---\n" + manifests(*team_queue(name, quotas, cohortName=cohort, **spec))


def pending(fake_api: FakeApiServer, namespace: str, name: str) -> bool:
    """The Job's Workload was looked at by the scheduler and left waiting for quota (no preemption)."""
    cond = condition(workload_of(fake_api, namespace, name), "QuotaReserved")
    return cond is not None and (cond["status"], cond["reason"]) == ("False", "WaitingForQuota")


def assigned_flavors(workload: JSON | None) -> dict[str, str]:
    admission = ((workload or {}).get("status") or {}).get("admission") or {}
    assignments = admission.get("podSetAssignments") or [{}]
    return dict(assignments[0].get("flavors") or {})


def borrowing_setup(borrow_within_cohort: str) -> str:
    """vision (2 GPUs) and nlp (2 GPUs) share a cohort; vision may reclaim, and borrow as configured."""
    preemption = {"reclaimWithinCohort": "Any", "borrowWithinCohort": yaml.safe_load(borrow_within_cohort)}
    return (
        PRIORITIES
        + team("vision", flavors={"gpu-nodes": 2}, preemption=preemption)
        + team("nlp", flavors={"gpu-nodes": 2})
    )


async def _borrower_runs_then_urgent_arrives(fake_api: FakeApiServer) -> None:
    """nlp runs a 4-GPU batch Job (borrowing vision's 2), then vision asks for 4 GPUs (it must borrow 2)."""
    await fake_api.create(gpu_job("nlp", "batch-1", gpus=4))
    await fake_api.wait_for(lambda: running(fake_api, "nlp", "batch-1"))
    await fake_api.create(gpu_job("vision", "urgent-1", gpus=4, priority="urgent"))


async def test_borrow_within_cohort_lower_priority_preempts_the_borrower(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(borrowing_setup("{policy: LowerPriority, maxPriorityThreshold: 100}"))
    async with replica(fake_api.kubeconfig_path()) as serving:
        await _borrower_runs_then_urgent_arrives(fake_api)
        await fake_api.wait_for(lambda: running(fake_api, "vision", "urgent-1"), timeout=20)

        urgent = workload_of(fake_api, "vision", "urgent-1")
        admitted = condition(urgent, "Admitted")
        assert admitted is not None and admitted["status"] == "True"
        assert assigned_flavors(urgent) == {"nvidia.com/gpu": "gpu-nodes"}
        started = fake_api.get("jobs", "urgent-1", "vision")
        assert started is not None
        assert started["spec"]["template"]["spec"]["nodeSelector"] == {"node-pool": "gpu"}

        borrower = workload_of(fake_api, "nlp", "batch-1")
        preempted = condition(borrower, "Preempted")
        assert preempted is not None and (preempted["status"], preempted["reason"]) == (
            "True",
            "InCohortReclaimWhileBorrowing",
        )
        assert preempted["message"].endswith(
            "due to reclamation within the cohort while borrowing; preemptor path: /research/vision; "
            "preemptee path: /research/nlp"
        )
        evicted = condition(borrower, "Evicted")
        assert evicted is not None and (evicted["status"], evicted["reason"]) == ("True", "Preempted")
        assert not running(fake_api, "nlp", "batch-1")
        registry = serving.controller.metrics.registry
        assert (
            registry.get_sample_value(
                "kueue_preempted_workloads_total",
                {
                    "preempting_cluster_queue": "vision",
                    "reason": "InCohortReclaimWhileBorrowing",
                    "replica_role": "leader",
                },
            )
            == 1
        )


@pytest.mark.parametrize(
    "policy",
    [
        pytest.param("{policy: Never}", id="policy-never"),
        pytest.param("{policy: LowerPriority, maxPriorityThreshold: 99}", id="threshold-below-candidate"),
    ],
)
async def test_borrowing_job_does_not_preempt_without_borrow_within_cohort(
    fake_api: FakeApiServer, policy: str
) -> None:
    await fake_api.apply_manifests(borrowing_setup(policy))
    async with replica(fake_api.kubeconfig_path()):
        await _borrower_runs_then_urgent_arrives(fake_api)
        await fake_api.wait_for(lambda: pending(fake_api, "vision", "urgent-1"), timeout=20)

        assert running(fake_api, "nlp", "batch-1")
        assert not running(fake_api, "vision", "urgent-1")
        borrower = workload_of(fake_api, "nlp", "batch-1")
        assert condition(borrower, "Preempted") is None
        evicted = condition(borrower, "Evicted")
        assert evicted is None or evicted["status"] == "False"
        urgent = workload_of(fake_api, "vision", "urgent-1")
        assert "admission" not in (urgent or {}).get("status", {})
        reserved = condition(urgent, "QuotaReserved")
        assert reserved is not None
        assert reserved["message"] == (
            "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
            "gpu-nodes, 4 more needed"
        )


@pytest.mark.parametrize(
    ("when_can_borrow", "flavor", "node_pool"),
    [
        pytest.param("TryNextFlavor", "spot", "spot", id="try-next-flavor"),
        pytest.param("MayStopSearch", "on-demand", "on-demand", id="may-stop-search"),
    ],
)
async def test_when_can_borrow_picks_the_flavor(
    fake_api: FakeApiServer, when_can_borrow: str, flavor: str, node_pool: str
) -> None:
    await fake_api.apply_manifests(
        FLAVORS
        + "---\n"
        + manifests(workload_priority_class("batch", 100))  # the class its Jobs name
        + team(
            "vision",
            flavors={"on-demand": 2, "spot": 4},
            flavorFungibility={"whenCanBorrow": when_can_borrow},
        )
        + team("nlp", flavors={"on-demand": 4})
    )
    async with replica(fake_api.kubeconfig_path()):
        # 3 GPUs: on-demand fits only by borrowing 1 from nlp; spot fits within vision's own quota
        await fake_api.create(gpu_job("vision", "train", gpus=3))
        await fake_api.wait_for(lambda: running(fake_api, "vision", "train"), timeout=20)

        workload = workload_of(fake_api, "vision", "train")
        admitted = condition(workload, "Admitted")
        assert admitted is not None and admitted["status"] == "True"
        assert assigned_flavors(workload) == {"nvidia.com/gpu": flavor}
        started = fake_api.get("jobs", "train", "vision")
        assert started is not None
        assert started["spec"]["template"]["spec"]["nodeSelector"] == {"node-pool": node_pool}
