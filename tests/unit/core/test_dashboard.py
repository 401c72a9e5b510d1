"""The dashboard's document, computed from the scheduler's state: what each part of the page shows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_webhook.core.dashboard import dashboard_model
from kueue_webhook.core.recent_decisions import RecentDecision
from kueue_webhook.core.scheduler import SchedulerState

from .builders import cluster_queue, cohort, run_until_quiet, state_with, workload

GPU = {"nvidia.com/gpu": "2"}
NO_WORKLOADS: dict[tuple[str, str], dict[str, Any]] = {}


def model(
    state: SchedulerState | None,
    workloads: Mapping[tuple[str, str], dict[str, Any]] = NO_WORKLOADS,
    **kwargs: Any,
) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "workload": lambda namespace, name: workloads.get((namespace, name)),
        "recent": (),
        "replica": "replica-a",
        "leading": True,
        "generated_at": "2026-01-01T00:00:00Z",
        **kwargs,
    }
    return dashboard_model(state, **arguments)


def seed() -> SchedulerState:
    """The seed walk-through: 64 GPUs, 33 Workloads of 2 GPUs each."""
    state = state_with(
        cluster_queue("research", {"gpu-nodes": {"nvidia.com/gpu": 64}}),
        flavors=("gpu-nodes",),
        local_queues={"team-a-gpu": "research"},
    )
    for index in range(1, 34):
        state.upsert_workload(workload(f"train-{index:02d}", GPU, queue="team-a-gpu", created=index))
    run_until_quiet(state)
    return state


def test_the_seed_shows_32_admitted_1_pending_and_the_quota_full() -> None:
    document = model(seed())
    assert document["totals"] == {
        "clusterQueues": 1,
        "cohorts": 0,
        "admitted": 32,
        "reserving": 32,
        "pending": 1,
    }
    [research] = document["clusterQueues"]
    assert (research["name"], research["admitted"], research["pending"]) == ("research", 32, 1)
    assert research["active"]["status"] == "True"
    assert research["resources"] == [
        {
            "flavor": "gpu-nodes",
            "resource": "nvidia.com/gpu",
            "nominal": "64",
            "borrowingLimit": None,
            "lendingLimit": None,
            "used": "64",
            "borrowed": "0",
            "usedPercent": 100,
        }
    ]
    assert document["tree"] == [{"kind": "ClusterQueue", "name": "research"}]


def test_a_pending_workload_shows_the_reason_the_scheduler_gave_until_one_is_written() -> None:
    [group] = model(seed())["pending"]
    assert (group["clusterQueue"], group["total"]) == ("research", 1)
    [waiting] = group["workloads"]
    assert (waiting["name"], waiting["namespace"], waiting["localQueue"]) == ("train-33", "ns", "team-a-gpu")
    assert (waiting["position"], waiting["positionInLocalQueue"]) == (0, 0)
    assert waiting["message"] == (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
        "gpu-nodes, 2 more needed"
    )


def test_the_written_pending_condition_is_what_every_replica_shows() -> None:
    written = {
        "metadata": {
            "name": "train-33",
            "namespace": "ns",
            "creationTimestamp": "2026-01-01T00:00:33Z",
            "ownerReferences": [
                {"kind": "Pod", "name": "helper"},
                {"kind": "Job", "name": "train-33", "controller": True},
            ],
        },
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "as written"}
            ]
        },
    }
    [group] = model(seed(), {("ns", "train-33"): written}, leading=False)["pending"]
    [waiting] = group["workloads"]
    assert (waiting["reason"], waiting["message"]) == ("Pending", "as written")
    assert (waiting["owner"], waiting["createdAt"]) == ("Job/train-33", "2026-01-01T00:00:33Z")


def test_pending_lists_stop_at_the_limits_and_say_how_many_wait() -> None:
    [group] = model(seed(), pending_limit=0)["pending"]
    assert (group["total"], group["workloads"]) == (1, [])
    state = state_with(
        cluster_queue("a", {"default": {"cpu": 0}}),
        cluster_queue("b", {"default": {"cpu": 0}}),
        local_queues={"to-a": "a", "to-b": "b"},
    )
    for index in range(3):
        state.upsert_workload(workload(f"a{index}", queue="to-a", created=index))
        state.upsert_workload(workload(f"b{index}", queue="to-b", created=index))
    run_until_quiet(state)
    groups = model(state, pending_limit=2, pending_budget=3)["pending"]
    assert [(g["clusterQueue"], g["total"], [w["name"] for w in g["workloads"]]) for g in groups] == [
        ("a", 3, ["a0", "a1"]),
        ("b", 3, ["b0"]),
    ]


def test_the_cohort_tree_nests_cohorts_and_shows_borrowing_against_nominal() -> None:
    cpu2 = {"default": {"cpu": 2}}
    state = state_with(
        cluster_queue("a", {"default": {"cpu": {"nominalQuota": 2, "borrowingLimit": 2}}}, cohortName="team"),
        cluster_queue("b", cpu2, cohortName="team"),
        cluster_queue("c", cpu2, cohortName="org"),
        cluster_queue("solo", cpu2),
        local_queues={"lq": "a"},
    )
    state.upsert_cohort(cohort("team", parent="org"))
    state.upsert_workload(workload("big", {"cpu": "3"}))
    run_until_quiet(state)
    document = model(state)
    assert document["tree"] == [
        {
            "kind": "Cohort",
            "name": "org",
            "children": [
                {
                    "kind": "Cohort",
                    "name": "team",
                    "children": [
                        {"kind": "ClusterQueue", "name": "a"},
                        {"kind": "ClusterQueue", "name": "b"},
                    ],
                },
                {"kind": "ClusterQueue", "name": "c"},
            ],
        },
        {"kind": "ClusterQueue", "name": "solo"},
    ]
    queues = {queue["name"]: queue for queue in document["clusterQueues"]}
    [a_cpu] = queues["a"]["resources"]
    assert (a_cpu["used"], a_cpu["nominal"], a_cpu["borrowed"], a_cpu["usedPercent"]) == ("3", "2", "1", 150)
    assert (a_cpu["borrowingLimit"], a_cpu["lendingLimit"]) == ("2", None)
    assert queues["a"]["cohort"] == "team"
    assert queues["solo"]["resources"][0]["used"] == "0"
    assert document["totals"]["cohorts"] == 2


def test_a_cluster_queue_without_its_flavor_is_shown_inactive_with_kueues_reason() -> None:
    state = state_with(cluster_queue("research", {"missing": {"cpu": 1}}), flavors=())
    [queue] = model(state)["clusterQueues"]
    assert queue["active"] == {
        "status": "False",
        "reason": "FlavorNotFound",
        "message": "Can't admit new workloads: references missing ResourceFlavor(s): missing.",
    }


def test_a_replica_not_synced_yet_says_so_with_nothing_listed() -> None:
    recent = [RecentDecision("2026-01-01T00:00:01Z", "Admitted", "ns", "w", "research", "Admitted", "")]
    document = model(None, leading=False, recent=recent)
    assert document["ready"] is False
    assert document["replica"] == {"name": "replica-a", "role": "follower"}
    assert document["totals"]["admitted"] == 0 and document["clusterQueues"] == []
    assert document["recent"] == [
        {
            "at": "2026-01-01T00:00:01Z",
            "kind": "Admitted",
            "namespace": "ns",
            "name": "w",
            "clusterQueue": "research",
            "reason": "Admitted",
            "message": "",
        }
    ]
