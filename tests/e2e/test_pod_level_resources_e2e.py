"""Pod-level resources on a real API server, with kueue-webhook installed out of cluster: a Job whose pods
ask for their cpu as a whole (``spec.resources``, Kubernetes' PodLevelResources) is counted for that
request, not for its containers' smaller ones, as Kubernetes' PodRequests (and Kueue with it) counts it;
otherwise it would run outside quota."""

from __future__ import annotations

import pytest

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until, workload_of
from tests.e2e.install import Running
from tests.e2e.queues import team_queue

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)


def test_a_pod_level_cpu_request_is_what_the_job_is_counted_for(controller: tuple[Cluster, Running]) -> None:
    cluster, running = controller
    with team_queue(cluster, "e2e-podlevel", quota="1") as ns:
        cluster.apply(f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: whole-pod, namespace: {ns}, labels: {{kueue.x-k8s.io/queue-name: q}}}}
spec:
  template:
    spec:
      restartPolicy: Never
      resources: {{requests: {{cpu: "2"}}, limits: {{cpu: "2"}}}}
      containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: 100m}}}}}}]
""")

        def reserved() -> dict[str, object]:
            return condition(workload_of(cluster, ns, "whole-pod"), "QuotaReserved") or {}

        until(lambda: bool(reserved().get("message")), "the Job to say why it waits", timeout=60)
        assert reserved()["message"] == (
            "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor "
            f"{ns}, previously considered podsets requests (0) + current podset request (2) > maximum "
            "capacity (1)"
        ), running.tail()
        assert cluster.get("job", "whole-pod", "-n", ns)["spec"]["suspend"] is True
