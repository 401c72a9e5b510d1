"""A running Job's Workload deactivated (``spec.active=false``, as ``kubectl kueue stop workload`` writes it)
on a real API server, with kueue-webhook installed out of cluster: the Workload is evicted as Kueue's
workload controller does (Evicted ``Deactivated``, "The workload is deactivated"), the Job is suspended,
and only then is the next Job admitted into the room: a deactivation never lets two Jobs run in room for
one."""

from __future__ import annotations

import pytest

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until, workload_of
from tests.e2e.install import Running
from tests.e2e.queues import create_job, team_queue

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)


def suspended(cluster: Cluster, namespace: str, job: str) -> bool:
    return bool(cluster.get("job", job, "-n", namespace)["spec"].get("suspend"))


def test_a_deactivated_running_job_is_stopped_before_the_next_one_starts(
    controller: tuple[Cluster, Running],
) -> None:
    cluster, running = controller
    with team_queue(cluster, "e2e-deactivate", quota="1") as ns:
        create_job(cluster, ns, "first", cpu="600m")
        until(lambda: not suspended(cluster, ns, "first"), "the first Job to start")
        create_job(cluster, ns, "second", cpu="600m")
        until(
            lambda: bool(condition(workload_of(cluster, ns, "second"), "QuotaReserved")), "the second to wait"
        )
        name = workload_of(cluster, ns, "first")["metadata"]["name"]
        cluster.kubectl(
            "patch", "workload", name, "-n", ns, "--type=merge", "-p", '{"spec":{"active":false}}'
        )

        def evicted() -> dict[str, object]:
            return condition(workload_of(cluster, ns, "first"), "Evicted") or {}

        until(lambda: evicted().get("status") == "True", "the deactivated Workload to be evicted", timeout=60)
        assert (evicted()["reason"], evicted()["message"]) == ("Deactivated", "The workload is deactivated")
        until(lambda: not suspended(cluster, ns, "second"), "the second Job to start", timeout=60)
        assert suspended(cluster, ns, "first"), running.tail()
