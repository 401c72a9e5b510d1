"""Kueue's ``objectRetentionPolicies.workloads`` on a real API server, with kueue-webhook installed out of
cluster: a Job's finished Workload is deleted once ``afterFinished`` has passed (the Job stays), and a Job
whose Workload was deactivated by its time limit is deleted, with its pods, once
``afterDeactivatedByKueue`` has passed; each says so in a ``Deleted`` Event."""

from __future__ import annotations

import pytest

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, events_of, until, workload_of
from tests.e2e.conftest import ControllerSetup, with_controller
from tests.e2e.install import Running
from tests.e2e.queues import create_job, team_queue

RETENTION = "objectRetentionPolicies:\n  workloads: {afterFinished: 1s, afterDeactivatedByKueue: 0s}\n"
pytestmark = [
    pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER),
    with_controller(ControllerSetup("retention", config=RETENTION)),
]


def job_exists(cluster: Cluster, namespace: str, name: str) -> bool:
    return cluster.kubectl("get", "job", name, "-n", namespace, check=False).returncode == 0


def test_a_finished_workload_is_deleted_after_its_retention(controller: tuple[Cluster, Running]) -> None:
    cluster, running = controller
    with team_queue(cluster, "e2e-retain") as ns:
        create_job(cluster, ns, "done", cpu="100m")
        until(lambda: cluster.get("job", "done", "-n", ns)["spec"]["suspend"] is False, "the Job to start")
        name = workload_of(cluster, ns, "done")["metadata"]["name"]
        until(lambda: bool(cluster.finish_pods(ns, jobs={"done"})), "its pod to be reported Succeeded")
        until(
            lambda: workload_of(cluster, ns, "done") == {}, "the finished Workload to be deleted", timeout=60
        )
        until(
            lambda: (
                events_of(cluster, ns, name).get("Deleted")
                == "Deleted finished workload due to elapsed retention"
            ),
            "the Workload's Deleted Event",
            timeout=30,
        )
        assert job_exists(cluster, ns, "done"), running.tail()


def test_a_job_deactivated_by_its_time_limit_is_deleted(controller: tuple[Cluster, Running]) -> None:
    cluster, _ = controller
    with team_queue(cluster, "e2e-retain") as ns:
        create_job(cluster, ns, "limited", ", kueue.x-k8s.io/max-exec-time-seconds: '1'", cpu="100m")
        until(lambda: not job_exists(cluster, ns, "limited"), "the deactivated Job to be deleted", timeout=90)
        until(
            lambda: (
                events_of(cluster, ns, "limited").get("Deleted")
                == "Deleted job: deactivation retention period expired"
            ),
            "the Job's Deleted Event",
            timeout=30,
        )
        until(lambda: workload_of(cluster, ns, "limited") == {}, "its Workload to go with it", timeout=60)
