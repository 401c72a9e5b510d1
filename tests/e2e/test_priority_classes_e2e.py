"""A Job's priority class on a real API server, with kueue-webhook installed out of cluster.

As Kueue's jobframework resolves it (``ExtractPriority``): a Job naming a WorkloadPriorityClass that does not
exist gets no Workload, stays suspended and says why in a ``WorkloadPriorityClassNotFound`` Warning; once the
class is created the Job is queued with its value. A Job naming no class gets the cluster's globalDefault
PriorityClass.
"""

from __future__ import annotations

import uuid

import pytest

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, events_of, until, workload_of
from tests.e2e.install import Running
from tests.e2e.queues import create_job, team_queue

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, object]


def test_a_job_naming_an_absent_workload_priority_class_waits_for_it_then_queues_with_its_value(
    controller: tuple[Cluster, Running],
) -> None:
    cluster, running = controller
    wpc = f"e2e-urgent-{uuid.uuid4().hex[:6]}"
    with team_queue(cluster, "e2e-wpc") as ns:
        create_job(cluster, ns, "urgent", f", kueue.x-k8s.io/priority-class: {wpc}", cpu="100m")
        said = f'WorkloadPriorityClass "{wpc}" not found'
        until(
            lambda: (
                events_of(cluster, ns, "urgent", type="Warning").get("WorkloadPriorityClassNotFound") == said
            ),
            "the Job to say its class is missing",
            timeout=60,
        )
        assert workload_of(cluster, ns, "urgent") == {}, running.tail()
        assert cluster.get("job", "urgent", "-n", ns)["spec"]["suspend"] is True
        try:
            cluster.apply(f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {{name: {wpc}}}
value: 4242
""")
            until(
                lambda: bool(workload_of(cluster, ns, "urgent")), "the Job's Workload once its class exists"
            )
            spec = workload_of(cluster, ns, "urgent")["spec"]
            assert (spec["priority"], spec["priorityClassRef"]["name"]) == (4242, wpc)
            until(
                lambda: cluster.get("job", "urgent", "-n", ns)["spec"]["suspend"] is False,
                "the Job to start",
                timeout=60,
            )
        finally:
            cluster.kubectl("delete", "workloadpriorityclass", wpc, "--ignore-not-found", check=False)


def test_a_job_naming_no_class_gets_the_global_default_priority_class(
    controller: tuple[Cluster, Running],
) -> None:
    cluster, running = controller
    present = [c for c in cluster.items("priorityclasses") if c.get("globalDefault")]
    if present:
        pytest.skip(
            f"the cluster has a globalDefault PriorityClass of its own: {present[0]['metadata']['name']}"
        )
    default = f"e2e-default-{uuid.uuid4().hex[:6]}"
    cluster.apply(f"""
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {{name: {default}}}
value: 77
globalDefault: true
""")
    try:
        with team_queue(cluster, "e2e-pc-default") as ns:
            create_job(cluster, ns, "plain", cpu="100m")
            until(lambda: bool(workload_of(cluster, ns, "plain")), "the Job's Workload", timeout=60)
            spec = workload_of(cluster, ns, "plain")["spec"]
            assert spec["priority"] == 77, running.tail()
            assert spec["priorityClassRef"] == {
                "group": "scheduling.k8s.io",
                "kind": "PriorityClass",
                "name": default,
            }
    finally:
        cluster.kubectl("delete", "priorityclass", default, "--ignore-not-found", check=False)


def test_a_job_naming_no_workload_priority_class_is_labelled_with_the_default_one_when_it_exists(
    controller: tuple[Cluster, Running],
) -> None:
    """Kueue's WorkloadPriorityClassDefaulting (on by default since v0.20), through the mutating webhook."""
    cluster, running = controller
    if cluster.kubectl("get", "workloadpriorityclass", "default", check=False).returncode == 0:
        pytest.skip("the cluster has a WorkloadPriorityClass named default of its own")
    cluster.apply("""
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: default}
value: 31
""")
    try:
        with team_queue(cluster, "e2e-wpc-default") as ns:
            create_job(cluster, ns, "plain", cpu="100m")
            labels = cluster.get("job", "plain", "-n", ns)["metadata"]["labels"]
            assert labels["kueue.x-k8s.io/priority-class"] == "default", running.tail()
            until(lambda: bool(workload_of(cluster, ns, "plain")), "the Job's Workload", timeout=60)
            assert workload_of(cluster, ns, "plain")["spec"]["priority"] == 31
    finally:
        cluster.kubectl("delete", "workloadpriorityclass", "default", "--ignore-not-found", check=False)
