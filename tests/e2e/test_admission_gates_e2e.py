"""Admission gates on a real API server, with kueue-webhook installed out of cluster (Kueue's
AdmissionGatedBy, on by default since v0.19).

A Job created with ``kueue.x-k8s.io/admission-gated-by`` is queued but not admitted though its quota is
free: its Workload carries the gates and says ``AdmissionGated`` with Kueue's message and Event, and the Job
stays suspended. The webhook refuses a gate added later, as Kueue's does. Once the gate is removed from the
Job, the Workload follows and the Job is admitted and started.
"""

from __future__ import annotations

import pytest

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, events_of, until, workload_of
from tests.e2e.install import Running
from tests.e2e.queues import team_queue

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
GATES = "kueue.x-k8s.io/admission-gated-by"


def gated_job(cluster: Cluster, namespace: str, name: str, gates: str) -> None:
    cluster.apply(f"""
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: {namespace}
  labels: {{kueue.x-k8s.io/queue-name: q}}
  annotations: {{{GATES}: "{gates}"}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: 100m}}}}}}]
""")


def test_a_gated_job_waits_until_its_gate_is_removed(controller: tuple[Cluster, Running]) -> None:
    cluster, running = controller
    with team_queue(cluster, "e2e-gates") as ns:
        gated_job(cluster, ns, "scanned", "example.com/image-scan")

        def reserved() -> dict[str, object]:
            return condition(workload_of(cluster, ns, "scanned"), "QuotaReserved") or {}

        until(
            lambda: reserved().get("reason") == "AdmissionGated",
            "the Workload to say it is gated",
            timeout=60,
        )
        workload = workload_of(cluster, ns, "scanned")
        assert workload["metadata"]["annotations"][GATES] == "example.com/image-scan"
        assert (reserved()["status"], reserved()["message"]) == (
            "False",
            "Admission is gated by: example.com/image-scan",
        ), running.tail()
        name = workload["metadata"]["name"]
        until(
            lambda: (
                events_of(cluster, ns, name).get("AdmissionGated")
                == "Workload admission is gated by: example.com/image-scan"
            ),
            "Kueue's AdmissionGated Event on the Workload",
            timeout=30,
        )
        assert cluster.get("job", "scanned", "-n", ns)["spec"]["suspend"] is True

        added = cluster.kubectl(
            "annotate",
            "job",
            "scanned",
            "-n",
            ns,
            "--overwrite",
            f"{GATES}=example.com/image-scan,b.io/x",
            check=False,
        )
        assert added.returncode != 0
        assert "can only remove gates, not add new ones" in added.stderr

        cluster.kubectl("annotate", "job", "scanned", "-n", ns, f"{GATES}-")
        until(
            lambda: cluster.get("job", "scanned", "-n", ns)["spec"]["suspend"] is False,
            "the Job to start once its gate is gone",
            timeout=60,
        )
        assert GATES not in (workload_of(cluster, ns, "scanned")["metadata"].get("annotations") or {})
        assert events_of(cluster, ns, "scanned").get("UpdatedWorkload") == (
            'Updated workload AdmissionGatedBy to ""'
        )
