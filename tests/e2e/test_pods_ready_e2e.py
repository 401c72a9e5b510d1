"""waitForPodsReady on a real API server, with kueue-webhook installed out of cluster.

A Job whose pod never becomes ready (no kubelet runs it) is evicted once ``timeout`` has passed since its
admission, requeued after its backoff, admitted again, and deactivated when it runs out of requeues: each
step with Kueue's conditions. A Job whose pod the test reports ready (as a kubelet would) turns
``PodsReady=True``. With ``blockAdmission`` a second Job that fits waits, with Kueue's reason and message,
until the first one's pod is reported ready. The configuration is changed through the ConfigMap, live, and
put back afterwards.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from kueue_webhook.api.pods_ready import BLOCKED_MESSAGE, WAITING_FOR_PODS_READY
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until
from tests.e2e.install import Running
from tests.e2e.queues import configure, team_queue

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, object]


@pytest.fixture
def queue(controller: tuple[Cluster, Running]) -> Iterator[tuple[Cluster, Running, str]]:
    """A namespace with LocalQueue ``q`` of a ClusterQueue of one CPU; the configuration is put back after."""
    cluster, running = controller
    with team_queue(cluster, "e2e-ready") as name:
        try:
            yield cluster, running, name
        finally:
            configure(cluster, running, "")


def create_job(cluster: Cluster, namespace: str, name: str = "train") -> None:
    cluster.apply(f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}, namespace: {namespace}, labels: {{kueue.x-k8s.io/queue-name: q}}}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: 500m}}}}}}]
""")


def workload(cluster: Cluster, namespace: str, job: str | None = None) -> dict[str, object]:
    """The namespace's (only) Workload, or the one ``job`` owns; {} while there is none."""
    for item in cluster.items("workloads", "-n", namespace):
        owners = {ref.get("name") for ref in item["metadata"].get("ownerReferences") or []}
        if job is None or job in owners:
            return dict(item)
    return {}


def report_ready(cluster: Cluster, namespace: str, job: str | None = None) -> None:
    """Report the (Job's) Pod Running and Ready through the status subresource, as a kubelet would."""
    pod = next(
        p
        for p in cluster.items("pods", "-n", namespace)
        if job is None or (p["metadata"].get("labels") or {}).get("job-name") == job
    )
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    running_status = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
        "containerStatuses": [
            {
                "name": "c",
                "image": "busybox",
                "imageID": "",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
            }
        ],
    }
    cluster.kubectl(
        "-n", namespace, "patch", "pod", pod["metadata"]["name"], "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": running_status}),
    )  # fmt: skip


def test_a_job_whose_pods_never_get_ready_is_evicted_requeued_then_deactivated(
    queue: tuple[Cluster, Running, str],
) -> None:
    cluster, running, ns = queue
    configure(
        cluster,
        running,
        "waitForPodsReady:\n  timeout: 3s\n"
        "  requeuingStrategy: {backoffBaseSeconds: 1, backoffLimitCount: 1}\n",
    )
    create_job(cluster, ns)
    seen: list[tuple[str, str, str]] = []

    def step() -> bool:
        w = workload(cluster, ns)
        for kind in ("PodsReady", "Evicted", "Requeued"):
            c = condition(w, kind)
            row = (kind, str(c.get("status")), str(c.get("reason")))
            if c and row not in seen:
                seen.append(row)
        return (w.get("spec") or {}).get("active") is False  # type: ignore[union-attr]

    until(step, "the Workload to be evicted, requeued and deactivated", timeout=90, every=0.25)
    final = workload(cluster, ns)
    name = final["metadata"]["name"]  # type: ignore[index]
    assert ("PodsReady", "False", "WaitForStart") in seen, seen
    assert ("Evicted", "True", "PodsReadyTimeout") in seen, seen
    assert ("Requeued", "True", "BackoffFinished") in seen, seen
    evicted = condition(final, "Evicted")
    assert evicted["reason"] == "DeactivatedDueToRequeuingLimitExceeded", (evicted, running.tail())
    job = cluster.get("job", "train", "-n", ns)
    assert job["spec"]["suspend"] is True
    reasons = json.loads(
        cluster.kubectl(
            "get", "events", "-n", ns, "-o", "json", "--field-selector", f"involvedObject.name={name}"
        ).stdout
    )["items"]
    assert "EvictedDueToPodsReadyTimeout" in {e["reason"] for e in reasons}


def test_a_job_whose_pod_is_ready_has_pods_ready_true(queue: tuple[Cluster, Running, str]) -> None:
    cluster, _, ns = queue
    create_job(cluster, ns)
    until(lambda: bool(cluster.items("pods", "-n", ns)), "the Job's pod")
    assert condition(workload(cluster, ns), "PodsReady")["reason"] == "WaitForStart"
    report_ready(cluster, ns)
    until(lambda: condition(workload(cluster, ns), "PodsReady").get("status") == "True", "PodsReady=True")
    assert condition(workload(cluster, ns), "PodsReady")["reason"] == "Started"


def test_block_admission_holds_the_second_job_until_the_first_ones_pod_is_ready(
    queue: tuple[Cluster, Running, str],
) -> None:
    """As Kueue's scheduler with blockAdmission (waitForPodsReadyIfNeeded): while an admitted Workload is not
    PodsReady=True, the next one waits with QuotaReserved=False WaitingForPodsReady, though it fits."""
    cluster, running, ns = queue
    configure(cluster, running, "waitForPodsReady:\n  timeout: 2m\n  blockAdmission: true\n")
    create_job(cluster, ns, "first")
    until(lambda: bool(cluster.items("pods", "-n", ns)), "the first Job's pod")
    assert condition(workload(cluster, ns, "first"), "Admitted").get("status") == "True"
    create_job(cluster, ns, "second")  # 500m of the 1 CPU left: it fits

    def held() -> dict[str, object]:
        return condition(workload(cluster, ns, "second"), "QuotaReserved")

    until(lambda: held().get("reason") == WAITING_FOR_PODS_READY, "the second Workload to be held")
    assert (held()["status"], held()["message"]) == ("False", BLOCKED_MESSAGE), running.tail()
    assert cluster.get("job", "second", "-n", ns)["spec"]["suspend"] is True
    assert condition(workload(cluster, ns, "first"), "PodsReady")["status"] == "False"

    report_ready(cluster, ns, "first")
    until(
        lambda: condition(workload(cluster, ns, "first"), "PodsReady").get("status") == "True",
        "PodsReady=True on the first Workload",
    )
    until(
        lambda: condition(workload(cluster, ns, "second"), "Admitted").get("status") == "True",
        "the second Workload to be admitted",
        timeout=30,
    )
    assert held()["status"] == "True", held()
    until(
        lambda: cluster.get("job", "second", "-n", ns)["spec"].get("suspend") is False,
        "the second Job to be unsuspended",
    )
