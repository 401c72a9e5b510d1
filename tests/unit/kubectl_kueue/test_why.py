"""``kubectl kueue why``: the report built from the objects as read, and the start replayed from them."""

from __future__ import annotations

from datetime import timedelta

from kueue_webhook.kubectl_kueue.estimate import LiveState, cohort_members, estimate_start
from kueue_webhook.kubectl_kueue.why import Subject, blocking, quota_rows, render, report
from tests.unit.kubectl_kueue.fixtures import (
    CLUSTER_QUEUE,
    FLAVOR,
    LOCAL_QUEUE,
    NOW,
    admitted,
    cond,
    waiting,
    workload,
)

POSITION = {"positionInClusterQueue": 1, "positionInLocalQueue": 0}


def state(
    *workloads: dict, cluster_queues: list[dict] | None = None, cohorts: list[dict] | None = None
) -> LiveState:
    return LiveState(
        cluster_queues=cluster_queues or [CLUSTER_QUEUE],
        local_queues=[LOCAL_QUEUE],
        resource_flavors=[FLAVOR],
        cohorts=cohorts or [],
        workloads=list(workloads),
        namespaces={"team-a": {}},
    )


def test_the_reason_is_the_condition_that_says_what_the_workload_waits_for() -> None:
    assert blocking(waiting("w", created=60)) == (
        "Pending",
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
        "gpu-nodes, 2 more needed",
    )
    checks = workload(
        "w",
        conditions=[
            cond("QuotaReserved", "True"),
            cond("Admitted", "False", "Pending", "waiting for checks: c1"),
        ],
    )
    assert blocking(checks) == ("Pending", "waiting for checks: c1")
    evicted = workload("w", conditions=[cond("Evicted", "True", "Preempted", "preempted by x")])
    assert blocking(evicted) == ("Preempted", "preempted by x")
    stopped = workload("w")
    stopped["spec"]["active"] = False
    assert blocking(stopped)[0] == "Deactivated"
    assert blocking(workload("w"))[0] == ""


def test_quota_rows_put_usage_and_reservation_beside_the_quota_per_flavor_and_resource() -> None:
    assert quota_rows(CLUSTER_QUEUE) == [
        {
            "flavor": "gpu-nodes",
            "resource": "nvidia.com/gpu",
            "usage": "4",
            "reserved": "4",
            "nominalQuota": "4",
            "borrowingLimit": None,
            "lendingLimit": None,
            "borrowed": "0",
        }
    ]


def test_the_start_is_when_running_workloads_reach_their_maximum_execution_time() -> None:
    # two 2-GPU Workloads fill research's 4 GPUs; one ends 10 minutes from now, the other 50
    first = admitted("a", since=50 * 60, max_seconds=60 * 60)
    second = admitted("b", since=10 * 60, max_seconds=60 * 60)
    ahead, target = waiting("c", created=120), waiting("d", created=60)
    found = estimate_start(target, state(first, second, ahead, target), now=NOW)
    # c takes a's GPUs at +10m and, with no limit of its own, keeps them: d gets b's at +50m
    assert found.start == NOW + timedelta(minutes=50)
    assert (found.admitted, found.pending, found.without_limit) == (2, 2, 1)
    assert estimate_start(ahead, state(first, second, ahead, target), now=NOW).start == NOW + timedelta(
        minutes=10
    )


def test_the_start_is_unknown_when_it_waits_for_a_workload_with_no_time_limit() -> None:
    running = [admitted("a", since=600), admitted("b", since=600, max_seconds=3600)]
    found = estimate_start(waiting("c", created=60), state(*running, waiting("c", created=60)), now=NOW)
    # b ends within the hour and c fits then: a's lack of a limit does not matter
    assert found.start == NOW + timedelta(minutes=50)
    both_unbounded = [admitted("a", since=600), admitted("b", since=600)]
    unknown = estimate_start(
        waiting("c", created=60), state(*both_unbounded, waiting("c", created=60)), now=NOW
    )
    assert unknown.start is None
    assert unknown.unknown.startswith("2 admitted and 0 other pending Workload(s) of the cohort have no")


def test_a_workload_that_fits_now_starts_now() -> None:
    found = estimate_start(waiting("c", created=60), state(waiting("c", created=60)), now=NOW)
    assert found.start == NOW


def test_a_cluster_queue_with_admission_checks_is_estimated_as_if_they_pass_at_once() -> None:
    # the AdmissionChecks are not read: without them the replay would find the queue inactive
    checked = {**CLUSTER_QUEUE, "spec": {**CLUSTER_QUEUE["spec"], "admissionChecks": ["approval"]}}
    target = waiting("c", created=60)
    found = estimate_start(target, state(target, cluster_queues=[checked]), now=NOW)
    assert found.start == NOW


def test_the_cohort_is_every_cluster_queue_under_the_same_root() -> None:
    def cq(name: str, cohort: str = "") -> dict:
        return {"metadata": {"name": name}, "spec": {"cohortName": cohort} if cohort else {}}

    cohorts = [
        {"metadata": {"name": "team"}, "spec": {"parentName": "org"}},
        {"metadata": {"name": "org"}, "spec": {}},
    ]
    live = state(cluster_queues=[cq("a", "team"), cq("b", "org"), cq("c", "other"), cq("d")], cohorts=cohorts)
    assert cohort_members("a", live) == {"a", "b"}
    assert cohort_members("d", live) == {"d"}


def test_the_report_as_data_and_as_text() -> None:
    first = admitted("a", since=50 * 60, max_seconds=3600)
    second = admitted("b", since=10 * 60, max_seconds=3600)
    target = waiting("job-train-1a2b3", created=60)
    estimate = estimate_start(target, state(first, second, target), now=NOW)
    data = report(
        Subject(kind="Job", name="train", namespace="team-a"),
        target,
        local_queue=LOCAL_QUEUE,
        cluster_queue=CLUSTER_QUEUE,
        cluster_queue_name="research",
        position=POSITION,
        estimate=estimate,
        now=NOW,
    )
    assert data["workload"] == {
        "name": "job-train-1a2b3",
        "namespace": "team-a",
        "status": "pending",
        "active": True,
        "priority": 0,
        "localQueue": "team-a-gpu",
        "clusterQueue": "research",
    }
    assert data["position"] == POSITION
    assert data["estimatedStart"]["at"] == "2026-11-26T12:10:00Z"
    assert data["estimatedStart"]["in"] == "10m"
    assert render(data) == (
        "Job team-a/train -> Workload job-train-1a2b3\n"
        "Status:          PENDING\n"
        "Queue:           LocalQueue team-a-gpu -> ClusterQueue research\n"
        "Reason:          Pending\n"
        "Message:         couldn't assign flavors to pod set main: insufficient unused quota for "
        "nvidia.com/gpu in flavor gpu-nodes, 2 more needed\n"
        "Position:        1 in ClusterQueue, 0 in LocalQueue "
        "(counted from 0: 0 is the next to be considered)\n"
        "\n"
        "ClusterQueue research (no cohort, Active): 2 admitted, 2 pending\n"
        "  FLAVOR      RESOURCE         USAGE   RESERVED   NOMINAL QUOTA   BORROWING LIMIT   BORROWED\n"
        "  gpu-nodes   nvidia.com/gpu   4       4          4               -                 0\n"
        "\n"
        "Estimated start: in about 10m (2026-11-26T12:10:00Z)\n"
        "Assuming:        admitted Workloads run until their spec.maximumExecutionTimeSeconds after "
        "admission, pending ones for that long once admitted; a Workload without it runs for an "
        "unknown time\n"
    )
    coloured = render(data, colour=True)
    assert "\x1b[33mPENDING\x1b[0m" in coloured


def test_what_could_not_be_read_is_said_and_an_admitted_workload_has_no_estimate() -> None:
    running = admitted("a", since=60)
    data = report(
        Subject(kind="Workload", name="a", namespace="team-a"),
        running,
        local_queue=None,
        cluster_queue=None,
        cluster_queue_name="research",
        position=None,
        estimate=None,
        now=NOW,
        notes=[
            "ClusterQueue research: Error from server (Forbidden): "
            'clusterqueues.kueue.x-k8s.io "research" is forbidden'
        ],
    )
    assert "estimatedStart" not in data and "clusterQueue" not in data
    text = render(data)
    assert text.startswith("Workload team-a/a\nStatus:          ADMITTED\n")
    assert "Note: ClusterQueue research: Error from server (Forbidden)" in text
