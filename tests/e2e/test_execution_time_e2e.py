"""A Job's time limit on a real API server, with kueue-webhook installed out of cluster.

A Job labelled ``kueue.x-k8s.io/max-exec-time-seconds: "3"`` is admitted and started; three seconds later its
Workload is deactivated with Kueue's reason, message and Event (pkg/controller/core/workload_controller.go,
reconcileMaxExecutionTime), the Job is suspended again by the controller (its pods deleted by the Job
controller) and the ClusterQueue's quota is free for the next Job.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until, workload_of
from tests.e2e.install import Running, out_of_cluster
from tests.e2e.queues import create_job, team_queue

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, object]


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Running]]:
    cluster = Cluster(Path(KUBECONFIG))
    with out_of_cluster(cluster, tmp_path_factory.mktemp("time-limit")) as running:
        yield cluster, running


def suspended(cluster: Cluster, namespace: str, job: str) -> bool:
    return bool(cluster.get("job", job, "-n", namespace)["spec"].get("suspend"))


def test_a_job_past_its_time_limit_is_stopped_deactivated_and_its_quota_goes_to_the_next_job(
    controller: tuple[Cluster, Running],
) -> None:
    cluster, running = controller
    with team_queue(cluster, "e2e-limit") as ns:  # one CPU: the two Jobs of 600m cannot run together
        create_job(cluster, ns, "short", ', kueue.x-k8s.io/max-exec-time-seconds: "3"')
        until(lambda: not suspended(cluster, ns, "short"), "the limited Job to start", timeout=60)
        create_job(cluster, ns, "next")
        until(
            lambda: (workload_of(cluster, ns, "short").get("spec") or {}).get("active") is False,
            "the limited Job's Workload to be deactivated",
            timeout=60,
        )
        final = workload_of(cluster, ns, "short")
        evicted = condition(final, "Evicted")
        assert (evicted["reason"], evicted["message"]) == (
            "DeactivatedDueToMaximumExecutionTimeExceeded",
            "The workload is deactivated due to exceeding the maximum execution time",
        ), running.tail()
        until(lambda: suspended(cluster, ns, "short"), "the limited Job to be suspended", timeout=60)
        until(
            lambda: not suspended(cluster, ns, "next"), "the next Job to start in the freed quota", timeout=60
        )
        name = final["metadata"]["name"]
        events = json.loads(
            cluster.kubectl(
                "get", "events", "-n", ns, "-o", "json", "--field-selector", f"involvedObject.name={name}"
            ).stdout
        )["items"]
        assert {
            "MaximumExecutionTimeExceeded",
            "EvictedDueToDeactivatedDueToMaximumExecutionTimeExceeded",
        } <= {e["reason"] for e in events}
