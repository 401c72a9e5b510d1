"""What of a Job is counted against quota, on a real API server with kueue-webhook installed out of cluster:
a Job that also asks for an extended resource its ClusterQueue does not cover waits with Kueue's message,
until the ConfigMap's ``resources.excludeResourcePrefixes`` names that resource's prefix; the change is
applied live and the waiting Job is admitted and started without being touched."""

from __future__ import annotations

import pytest
import yaml

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until, workload_of
from tests.e2e.install import Running
from tests.e2e.queues import CONFIGMAP, configure, team_queue

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)


def excluding(cluster: Cluster, running: Running, prefixes: str) -> None:
    """The shipped configuration with ``excludeResourcePrefixes: prefixes``, applied live."""
    document = yaml.safe_load(CONFIGMAP.read_text())
    shipped = document["data"]["config.yaml"]
    assert "excludeResourcePrefixes: []" in shipped
    document["data"]["config.yaml"] = shipped.replace(
        "excludeResourcePrefixes: []", f"excludeResourcePrefixes: {prefixes}"
    )
    applied = running.log.read_text().count('"configuration applied"')
    cluster.apply(yaml.safe_dump(document))
    until(lambda: running.log.read_text().count('"configuration applied"') > applied, "the new configuration")


def test_an_excluded_resource_prefix_lets_a_waiting_job_in(controller: tuple[Cluster, Running]) -> None:
    cluster, running = controller
    with team_queue(cluster, "e2e-exclude") as ns:
        cluster.apply(f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: widgets, namespace: {ns}, labels: {{kueue.x-k8s.io/queue-name: q}}}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: c
          image: busybox
          resources: {{requests: {{cpu: 100m}}, limits: {{example.com/widget: "1"}}}}
""")

        def reserved() -> dict[str, object]:
            return condition(workload_of(cluster, ns, "widgets"), "QuotaReserved") or {}

        until(lambda: bool(reserved().get("message")), "the Job to say why it waits", timeout=60)
        assert reserved()["message"] == (
            "couldn't assign flavors to pod set main: resource example.com/widget unavailable in ClusterQueue"
        ), running.tail()
        try:
            excluding(cluster, running, "[example.com/]")
            until(
                lambda: cluster.get("job", "widgets", "-n", ns)["spec"]["suspend"] is False,
                "the Job to start once the resource is not counted",
                timeout=60,
            )
            usage = workload_of(cluster, ns, "widgets")["status"]["admission"]["podSetAssignments"][0]
            assert usage["resourceUsage"] == {"cpu": "100m"}
        finally:
            configure(cluster, running)
