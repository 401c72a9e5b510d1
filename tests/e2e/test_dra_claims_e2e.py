"""A Job whose pods claim devices through dynamic resource allocation, on a real API server with
kueue-webhook installed out of cluster: the claimed devices appear in no container request, so admitting
the Job would run them outside every quota; its Workload is held ``Misconfigured`` as Kueue holds one
whose claims it cannot count, and the Job stays suspended."""

from __future__ import annotations

import pytest

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until, workload_of
from tests.e2e.install import Running
from tests.e2e.queues import claiming_job, team_queue

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)


def test_a_job_claiming_gpus_through_a_claim_template_is_held(controller: tuple[Cluster, Running]) -> None:
    cluster, running = controller
    with team_queue(cluster, "e2e-dra") as ns:
        cluster.apply(f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: eight-gpus, namespace: {ns}}}
spec:
  spec:
    devices:
      requests:
        - name: gpus
          exactly: {{deviceClassName: gpu.example.com, allocationMode: ExactCount, count: 8}}
""")
        claiming_job(cluster, ns, "claims", "eight-gpus")

        def reserved() -> dict[str, object]:
            return condition(workload_of(cluster, ns, "claims"), "QuotaReserved") or {}

        until(lambda: bool(reserved().get("message")), "the Job to say why it waits", timeout=60)
        assert reserved()["reason"] == "Misconfigured", running.tail()
        assert reserved()["message"] == (
            "spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName: Not found: "
            '"the DeviceClasses of ResourceClaimTemplate eight-gpus are not mapped in DRA configuration for '
            'podset main"'
        )
        assert cluster.get("job", "claims", "-n", ns)["spec"]["suspend"] is True
