"""The cluster most controller tests start from: ClusterQueue ``research`` (4 GPUs of flavor ``gpu-nodes``),
LocalQueue ``team-a-gpu`` in namespace ``team-a``, and that team's GPU Jobs.

``HANG`` bounds only a hang (a loaded CI machine on 2 shared cores can be many times slower than a laptop);
every wait is on the fake API server's own change notifications, so it never paces a test.
"""

from __future__ import annotations

from typing import Any

from tests.fakeapi import FakeApiServer
from tests.support import fake_cluster as harness
from tests.support.fake_cluster import gpu_limits, queued_job

JSON = dict[str, Any]
HANG = 60.0  # seconds: generous, only so that a hang fails instead of blocking the suite

QUOTA = """
apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {kueue.x-k8s.io/queue: research}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu-nodes}
spec: {nodeLabels: {nvidia.com/gpu.present: "true"}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: research}
spec:
  namespaceSelector: {matchLabels: {kueue.x-k8s.io/queue: research}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: gpu-nodes
      resources: [{name: nvidia.com/gpu, nominalQuota: 4}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: team-a-gpu, namespace: team-a}
spec: {clusterQueue: research}
"""


def gpu_job(name: str, *, gpus: int = 2, suspend: bool = True) -> JSON:
    return queued_job("team-a", name, queue="team-a-gpu", resources=gpu_limits(gpus), suspend=suspend)


def workloads_of(fake_api: FakeApiServer, job_name: str) -> list[JSON]:
    return harness.workloads_of(fake_api, "team-a", job_name)


def running(fake_api: FakeApiServer, name: str) -> bool:
    return harness.running(fake_api, "team-a", name)
