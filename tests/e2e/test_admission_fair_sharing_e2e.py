"""Kueue's admission fair sharing on a real API server, with kueue-webhook installed out of cluster: in a
ClusterQueue with ``admissionScope.admissionMode: UsageBasedAdmissionFairSharing``, once quota frees up
the Job of the LocalQueue that used less starts before an older Job of the LocalQueue that used more,
and each LocalQueue's status shows the consumed resources sampled every ``usageSamplingInterval``."""

from __future__ import annotations

from contextlib import AbstractContextManager

import pytest

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, until
from tests.e2e.conftest import ControllerSetup, with_controller
from tests.e2e.install import Running
from tests.e2e.queues import create_job, team_queue

AFS = "admissionFairSharing:\n  usageHalfLifeTime: 1h\n  usageSamplingInterval: 2s\n"
pytestmark = [
    pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER),
    with_controller(ControllerSetup("admission-fair-sharing", config=AFS)),
]


def shared_queue(cluster: Cluster) -> AbstractContextManager[str]:
    """A namespace with LocalQueues ``q`` (the busy one) and ``quiet`` of one ClusterQueue of 1 cpu that
    orders by LocalQueue usage; yields the namespace."""
    usage_based = {"admissionScope": {"admissionMode": "UsageBasedAdmissionFairSharing"}}
    return team_queue(cluster, "e2e-afs", more_local_queues=("quiet",), cluster_queue_spec=usage_based)


def started(cluster: Cluster, namespace: str, name: str) -> bool:
    return cluster.get("job", name, "-n", namespace)["spec"]["suspend"] is False


def test_the_job_of_the_localqueue_that_used_less_starts_first(controller: tuple[Cluster, Running]) -> None:
    cluster, running = controller
    with shared_queue(cluster) as ns:
        create_job(cluster, ns, "first", cpu="1")  # LocalQueue q
        until(lambda: started(cluster, ns, "first"), "the first Job to start")
        create_job(cluster, ns, "busy-next", cpu="1")
        create_job(cluster, ns, "quiet-next", cpu="1", queue="quiet")
        until(lambda: bool(cluster.finish_pods(ns, jobs={"first"})), "the first Job's pod to succeed")
        until(
            lambda: started(cluster, ns, "quiet-next") or started(cluster, ns, "busy-next"),
            "a second Job to start",
            timeout=60,
        )
        assert started(cluster, ns, "quiet-next"), running.tail()
        assert not started(cluster, ns, "busy-next")

        def consumed(queue: str) -> dict[str, str]:
            status = cluster.get("localqueue", queue, "-n", ns).get("status") or {}
            fair = (status.get("fairSharing") or {}).get("admissionFairSharingStatus") or {}
            return dict(fair.get("consumedResources") or {})

        until(lambda: "cpu" in consumed("q"), "LocalQueue q's consumed resources in its status", timeout=30)
        assert set(consumed("q")) == {"cpu"}
