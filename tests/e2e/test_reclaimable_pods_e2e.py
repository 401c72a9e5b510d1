"""Reclaimable pods on a real API server and Job controller, with kueue-webhook installed out of cluster.

A Job of 4 completions run 2 at a time, 2 GPUs a pod, fills a 4-GPU ClusterQueue; a one-pod Job of 2 GPUs
waits. The test plays the kubelet: it reports the Job's pods Succeeded one at a time, and kube's Job
controller counts them in ``status.succeeded`` and starts the next ones. After 2 successes both slots are
still needed; after 3 only one completion is left, so the controller writes ``reclaimablePods`` into the
first Job's Workload and the 2 GPUs it gave back admit the waiting Job while the first still runs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until
from tests.e2e.install import Running
from tests.e2e.queues import team_queue

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, object]
GPU = "nvidia.com/gpu"


@pytest.fixture
def queue(controller: tuple[Cluster, Running]) -> Iterator[tuple[Cluster, str]]:
    cluster, _ = controller
    with team_queue(cluster, "e2e-reclaim", resource=GPU, quota="4") as name:
        yield cluster, name


def create_job(cluster: Cluster, namespace: str, name: str, *, parallelism: int, completions: int) -> None:
    cluster.apply(f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}, namespace: {namespace}, labels: {{kueue.x-k8s.io/queue-name: q}}}}
spec:
  parallelism: {parallelism}
  completions: {completions}
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: c, image: busybox, resources: {{limits: {{{GPU}: 2}}}}}}]
""")


def job(cluster: Cluster, namespace: str, name: str) -> dict[str, object]:
    return dict(cluster.get("job", name, "-n", namespace))


def started(cluster: Cluster, namespace: str, name: str) -> bool:
    return job(cluster, namespace, name)["spec"].get("suspend") is False  # type: ignore[attr-defined]


def succeeded(cluster: Cluster, namespace: str, name: str) -> int:
    return int(job(cluster, namespace, name).get("status", {}).get("succeeded") or 0)  # type: ignore[attr-defined]


def workload_of(cluster: Cluster, namespace: str, name: str) -> dict[str, object]:
    for item in cluster.items("workloads", "-n", namespace):
        if name in {ref.get("name") for ref in item["metadata"].get("ownerReferences") or []}:
            return dict(item)
    return {}


def gpus_in_use(cluster: Cluster, queue: str) -> str:
    usage = (cluster.get("clusterqueue", queue).get("status") or {}).get("flavorsUsage") or []
    return str(usage[0]["resources"][0]["total"]) if usage else ""


def running_pods(cluster: Cluster, namespace: str, name: str) -> list[str]:
    return [
        p["metadata"]["name"]
        for p in cluster.items("pods", "-n", namespace)
        if (p["metadata"].get("labels") or {}).get("job-name") == name
        and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        and not p["metadata"].get("deletionTimestamp")
    ]


def finish_one_pod(cluster: Cluster, namespace: str, name: str) -> None:
    """Report one of the Job's pods Succeeded, as a kubelet would, and wait for the Job to count it."""
    before = succeeded(cluster, namespace, name)
    until(lambda: bool(running_pods(cluster, namespace, name)), f"a pod of {name} to finish")
    pod = running_pods(cluster, namespace, name)[0]
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    terminated = {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}
    status = {
        "phase": "Succeeded",
        "containerStatuses": [
            {
                "name": "c",
                "image": "busybox",
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": terminated},
            }
        ],
    }
    cluster.kubectl(
        "-n", namespace, "patch", "pod", pod, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": status}),
    )  # fmt: skip
    until(lambda: succeeded(cluster, namespace, name) > before, f"{name} to count its pod succeeded")


def test_the_gpus_of_a_jobs_idle_slots_admit_the_next_job_while_it_still_runs(
    queue: tuple[Cluster, str],
) -> None:
    cluster, ns = queue
    create_job(cluster, ns, "wide", parallelism=2, completions=4)
    until(lambda: started(cluster, ns, "wide"), "the first Job to start")
    until(lambda: gpus_in_use(cluster, ns) == "4", "the first Job to use the 4 GPUs")
    create_job(cluster, ns, "next", parallelism=1, completions=1)
    until(
        lambda: condition(workload_of(cluster, ns, "next"), "QuotaReserved").get("status") == "False",
        "the second Job to wait for quota",
    )

    finish_one_pod(cluster, ns, "wide")
    finish_one_pod(cluster, ns, "wide")
    # two completions left for two slots: nothing to give back, the second Job still waits
    assert not (workload_of(cluster, ns, "wide").get("status") or {}).get("reclaimablePods")  # type: ignore[attr-defined]
    assert not started(cluster, ns, "next")

    finish_one_pod(cluster, ns, "wide")
    until(
        lambda: (
            (workload_of(cluster, ns, "wide").get("status") or {}).get("reclaimablePods")  # type: ignore[attr-defined]
            == [{"name": "main", "count": 1}]
        ),
        "the first Job's Workload to report one reclaimable pod",
    )
    until(lambda: started(cluster, ns, "next"), "the second Job to start in the GPUs given back")
    assert started(cluster, ns, "wide") and succeeded(cluster, ns, "wide") == 3
    until(lambda: gpus_in_use(cluster, ns) == "4", "2 GPUs for each Job")
