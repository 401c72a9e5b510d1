"""A ClusterQueue is inactive while its AdmissionChecks are missing, inactive or break MultiKueue's rules
(Kueue's scheduler cache: ``clusterQueue.updateWithAdmissionChecks`` and ``inactiveReason``): it reserves
no quota, its pending Workloads say why they wait, and it reopens when the check is fixed."""

from __future__ import annotations

from kueue_webhook.api.multikueue import MULTIKUEUE_CONTROLLER
from kueue_webhook.core.scheduler import Wait
from kueue_webhook.core.status import cluster_queue_active, local_queue_status

from .builders import admission_check, admitted, cluster_queue, run_until_quiet, state_with, workload

QUOTA = {"default": {"cpu": 4}}


def test_missing_check_keeps_the_queue_inactive_until_it_is_created_active() -> None:
    state = state_with(cluster_queue("cq", QUOTA, admissionChecks=["approval"]))
    state.upsert_workload(workload("w", {"cpu": "1"}))
    (decision,) = run_until_quiet(state)
    assert decision == Wait("ns/w", "cq", "Suspended", "ClusterQueue cq is inactive")
    assert cluster_queue_active(state, "cq") == (
        "False",
        "AdmissionCheckNotFound",
        "Can't admit new workloads: references missing AdmissionCheck(s): approval.",
    )
    assert local_queue_status(state, "ns", "lq")["conditions"][0]["reason"] == "ClusterQueueIsInactive"

    state.apply(admission_check("approval"))
    assert cluster_queue_active(state, "cq") == ("True", "Ready", "Can admit new workloads")
    assert admitted(run_until_quiet(state)) == ["ns/w"]


def test_inactive_check_blocks_until_its_controller_marks_it_active() -> None:
    state = state_with(cluster_queue("cq", QUOTA, admissionChecks=["approval"]))
    state.apply(admission_check("approval", active=False))
    state.upsert_workload(workload("w", {"cpu": "1"}))
    assert admitted(run_until_quiet(state)) == []
    assert cluster_queue_active(state, "cq") == (
        "False",
        "AdmissionCheckInactive",
        "Can't admit new workloads: references inactive AdmissionCheck(s): approval.",
    )
    state.apply(admission_check("approval"))
    assert admitted(run_until_quiet(state)) == ["ns/w"]


def test_deleted_check_closes_the_queue_and_tells_its_pending_workloads() -> None:
    state = state_with(
        cluster_queue("cq", {"default": {"cpu": 1}}, admissionChecks=["approval"]), checks=("approval",)
    )
    state.upsert_workload(workload("first", {"cpu": "1"}, created=1))
    state.upsert_workload(workload("second", {"cpu": "1"}, created=2))
    assert admitted(run_until_quiet(state)) == ["ns/first"]
    state.delete_admission_check("approval")
    assert cluster_queue_active(state, "cq")[1] == "AdmissionCheckNotFound"
    assert Wait("ns/second", "cq", "Suspended", "ClusterQueue cq is inactive") in run_until_quiet(state)


def test_reasons_follow_kueues_order_with_every_problem_in_one_message() -> None:
    strategy = {
        "admissionChecks": [
            {"name": "zeta-missing"},
            {"name": "alpha-missing"},
            {"name": "dormant"},
            {"name": "mk-b", "onFlavors": ["default"]},
            {"name": "mk-a"},
        ]
    }
    groups = ({"default": {"cpu": 1}}, {"gone": {"memory": 1}})
    queue = cluster_queue("cq", *groups, admissionChecksStrategy=strategy, stopPolicy="Hold")
    state = state_with(queue, local_queues={})
    state.apply(admission_check("dormant", active=False))
    state.apply(admission_check("mk-a", controller=MULTIKUEUE_CONTROLLER))
    state.apply(admission_check("mk-b", controller=MULTIKUEUE_CONTROLLER))
    status, reason, message = cluster_queue_active(state, "cq")
    assert (status, reason) == ("False", "Stopped")
    assert message == (
        "Can't admit new workloads: is stopped, references missing ResourceFlavor(s): gone, "
        "references missing AdmissionCheck(s): alpha-missing,zeta-missing, "
        "references inactive AdmissionCheck(s): dormant, "
        "Cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue, found: mk-a,mk-b, "
        "Cannot specify MultiKueue AdmissionCheck per flavor, found: mk-b."
    )


def test_one_multikueue_check_on_every_flavor_is_allowed() -> None:
    every_flavor = {"admissionChecks": [{"name": "mk", "onFlavors": ["default"]}]}
    state = state_with(cluster_queue("cq", QUOTA, admissionChecksStrategy=every_flavor), local_queues={})
    state.apply(admission_check("mk", controller=MULTIKUEUE_CONTROLLER))
    assert cluster_queue_active(state, "cq") == ("True", "Ready", "Can admit new workloads")


def test_multikueue_check_on_some_flavors_only_is_refused() -> None:
    some_flavors = {"admissionChecks": [{"name": "mk", "onFlavors": ["default"]}]}
    state = state_with(
        cluster_queue("cq", QUOTA, {"spot": {"memory": 1}}, admissionChecksStrategy=some_flavors),
        flavors=("default", "spot"),
        local_queues={},
    )
    state.apply(admission_check("mk", controller=MULTIKUEUE_CONTROLLER))
    assert cluster_queue_active(state, "cq") == (
        "False",
        "MultiKueueAdmissionCheckAppliedPerFlavor",
        "Can't admit new workloads: Cannot specify MultiKueue AdmissionCheck per flavor, found: mk.",
    )
