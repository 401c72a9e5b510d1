"""ClusterQueue and LocalQueue status as Kueue writes it: the Active condition, usage, counters."""

from __future__ import annotations

from kueue_webhook.core.status import cluster_queue_active, cluster_queue_status, local_queue_status

from .builders import cluster_queue, flavor, local_queue, run_until_quiet, state_with, workload


def test_active_condition_names_missing_flavors_then_turns_ready() -> None:
    state = state_with(cluster_queue("research", {"gpu-nodes": {"nvidia.com/gpu": 64}}), flavors=())
    assert cluster_queue_active(state, "research") == (
        "False",
        "FlavorNotFound",
        "Can't admit new workloads: references missing ResourceFlavor(s): gpu-nodes.",
    )
    state.upsert_resource_flavor(flavor("gpu-nodes"))
    assert cluster_queue_active(state, "research") == ("True", "Ready", "Can admit new workloads")


def test_stopped_queue_reports_stopped_first() -> None:
    state = state_with(cluster_queue("cq", {"gone": {"cpu": 1}}, stopPolicy="Hold"), flavors=())
    status, reason, message = cluster_queue_active(state, "cq")
    assert (status, reason) == ("False", "Stopped")
    assert message == "Can't admit new workloads: is stopped, references missing ResourceFlavor(s): gone."


def test_cluster_queue_status_counts_and_usage() -> None:
    state = state_with(
        cluster_queue("research", {"gpu-nodes": {"nvidia.com/gpu": 64}}), flavors=("gpu-nodes",)
    )
    for index in range(33):
        state.upsert_workload(workload(f"job-{index:02d}", {"nvidia.com/gpu": "2"}, created=index))
    run_until_quiet(state)
    status = cluster_queue_status(state, "research")
    assert status["pendingWorkloads"] == 1
    assert status["reservingWorkloads"] == status["admittedWorkloads"] == 32
    assert status["flavorsUsage"] == [
        {"name": "gpu-nodes", "resources": [{"name": "nvidia.com/gpu", "total": "64", "borrowed": "0"}]}
    ]
    assert status["flavorsReservation"] == status["flavorsUsage"]
    assert status["conditions"][0]["reason"] == "Ready"


def test_borrowed_is_what_exceeds_nominal_inside_a_cohort() -> None:
    a = cluster_queue("a", {"default": {"cpu": 2, "memory": "1Gi"}}, cohortName="org")
    b = cluster_queue("b", {"default": {"cpu": 4, "memory": "1Gi"}}, cohortName="org")
    state = state_with(a, b, local_queues={"lq": "a"})
    state.upsert_workload(workload("w", {"cpu": "3", "memory": "512Mi"}))
    run_until_quiet(state)
    usage = cluster_queue_status(state, "a")["flavorsUsage"]
    assert usage == [
        {
            "name": "default",
            "resources": [
                {"name": "cpu", "total": "3", "borrowed": "1"},
                {"name": "memory", "total": "512Mi", "borrowed": "0"},
            ],
        }
    ]


def test_local_queue_status_counts_only_its_own_workloads() -> None:
    state = state_with(
        cluster_queue("cq", {"default": {"cpu": 2}}), local_queues={"mine": "cq", "theirs": "cq"}
    )
    state.upsert_workload(workload("m1", queue="mine", created=0))
    state.upsert_workload(workload("t1", queue="theirs", created=1))
    state.upsert_workload(workload("m2", queue="mine", created=2))
    run_until_quiet(state)
    status = local_queue_status(state, "ns", "mine")
    assert status["conditions"][0] == {
        "type": "Active",
        "status": "True",
        "reason": "Ready",
        "message": "Can submit new workloads to localQueue",
    }
    assert (status["pendingWorkloads"], status["reservingWorkloads"], status["admittedWorkloads"]) == (
        1,
        1,
        1,
    )
    assert status["flavorsUsage"] == [{"name": "default", "resources": [{"name": "cpu", "total": "1"}]}]


def test_local_queue_pointing_at_a_missing_cluster_queue() -> None:
    state = state_with(cluster_queue("cq", {"default": {"cpu": 2}}), local_queues={})
    state.upsert_local_queue(local_queue("lq", "nowhere"))
    condition = local_queue_status(state, "ns", "lq")["conditions"][0]
    assert (condition["status"], condition["reason"]) == ("False", "ClusterQueueDoesNotExist")


def test_with_admission_checks_quota_is_reserved_but_not_yet_admitted() -> None:
    state = state_with(
        cluster_queue("cq", {"default": {"cpu": 4}}, admissionChecks=["provisioning"]),
        checks=("provisioning",),
    )
    state.upsert_workload(workload("w", {"cpu": "2"}))
    (decision,) = run_until_quiet(state)
    assert getattr(decision, "admission_checks", None) == ("provisioning",)
    status = cluster_queue_status(state, "cq")
    assert (status["reservingWorkloads"], status["admittedWorkloads"]) == (1, 0)
    assert status["flavorsReservation"][0]["resources"][0]["total"] == "2"
    assert status["flavorsUsage"][0]["resources"][0]["total"] == "0"
