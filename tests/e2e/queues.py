"""A team's queue on a real cluster, and the controller's configuration changed live, for the e2e modules.

Each e2e test works in a namespace of its own with a ResourceFlavor, a ClusterQueue selecting only that
namespace, a LocalQueue and (when it preempts) a WorkloadPriorityClass, all named after the namespace so that
tests never see each other's quota. :func:`team_queue` makes them and removes them afterwards, letting go of
any finalizer the controller left on the namespace's pods so that a failed test cannot hold the namespace.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import yaml

from tests.e2e.cluster import Cluster, until
from tests.e2e.install import REPO_ROOT, Running
from tests.support import builders

__all__ = ["CONFIGMAP", "MANAGED_FINALIZER", "claiming_job", "configure", "create_job", "team_queue"]

CONFIGMAP = REPO_ROOT / "manifests" / "controller" / "local" / "configmap.yaml"
MANAGED_FINALIZER = "kueue.x-k8s.io/managed"
PRIORITY_VALUE = 1000


def create_job(
    cluster: Cluster, namespace: str, name: str, labels: str = "", *, cpu: str = "600m", queue: str = "q"
) -> None:
    """A Job of one busybox pod requesting ``cpu``, queued in LocalQueue ``queue``; ``labels`` is appended to
    its labels' flow mapping (``, key: value``)."""
    cluster.apply(f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}, namespace: {namespace}, labels: {{kueue.x-k8s.io/queue-name: {queue}{labels}}}}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: {cpu}}}}}}}]
""")


def claiming_job(cluster: Cluster, namespace: str, name: str, template: str, *, parallelism: int = 1) -> None:
    """A Job of ``parallelism`` busybox pods of 100m cpu, each claiming devices through ResourceClaimTemplate
    ``template`` (DRA), queued in LocalQueue ``q``."""
    cluster.apply(f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}, namespace: {namespace}, labels: {{kueue.x-k8s.io/queue-name: q}}}}
spec:
  parallelism: {parallelism}
  completions: {parallelism}
  template:
    spec:
      restartPolicy: Never
      resourceClaims: [{{name: gpus, resourceClaimTemplateName: {template}}}]
      containers:
        - name: c
          image: busybox
          resources: {{requests: {{cpu: 100m}}, claims: [{{name: gpus}}]}}
""")


def configure(cluster: Cluster, running: Running, extra: str = "") -> None:
    """The shipped configuration plus ``extra`` (YAML appended to config.yaml), applied live; returns once
    the controller logs that it applied it (at once when nothing changes)."""
    document = yaml.safe_load(CONFIGMAP.read_text())
    document["data"]["config.yaml"] += extra
    current = cluster.get("configmap", "kueue-webhook-config", "-n", "kueue-system")
    if current["data"] == document["data"]:
        return
    applied = running.log.read_text().count('"configuration applied"')
    cluster.apply(yaml.safe_dump(document))
    until(lambda: running.log.read_text().count('"configuration applied"') > applied, "the new configuration")


@contextlib.contextmanager
def team_queue(
    cluster: Cluster,
    prefix: str,
    *,
    resource: str = "cpu",
    quota: str = "1",
    local_queue: str = "q",
    node_labels: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, str]] = (),
    preempting: bool = False,
    quotas: Mapping[str, str] | None = None,
    more_local_queues: Sequence[str] = (),
    cluster_queue_spec: Mapping[str, Any] | None = None,
    more: Callable[[str], Sequence[Mapping[str, Any]]] = lambda _: (),
) -> Iterator[str]:
    """A fresh namespace ``<prefix>-<random>`` with LocalQueue ``local_queue`` (and ``more_local_queues``) of
    a ClusterQueue holding ``quota`` of ``resource`` (or ``quotas``, resource -> quota) in one flavor
    (``node_labels``, default ``node-pool: <namespace>``, and ``tolerations``), with ``cluster_queue_spec``
    added to its spec; ``preempting``: the ClusterQueue preempts lower priorities and a WorkloadPriorityClass
    of value 1000 is made; ``more``: further objects, given the namespace. Everything is named after the
    namespace, which is yielded."""
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    preemption = {"withinClusterQueue": "LowerPriority"} if preempting else None
    documents = [
        builders.namespace(name),
        builders.resource_flavor(
            name, node_labels=node_labels or {"node-pool": name}, tolerations=list(tolerations) or None
        ),
        builders.cluster_queue(
            name,
            {name: dict(quotas) if quotas is not None else {resource: quota}},
            namespace_selector=builders.only(name),
            preemption=preemption,
            **(cluster_queue_spec or {}),
        ),
        *(builders.local_queue(queue, name, name) for queue in (local_queue, *more_local_queues)),
        *more(name),
    ]
    if preempting:
        documents.append(builders.workload_priority_class(name, PRIORITY_VALUE))
    cluster.apply(yaml.safe_dump_all(documents))
    try:
        yield name
    finally:
        _release_pods(cluster, name)
        cluster.kubectl("delete", "namespace", name, "--wait=true", "--timeout=120s", check=False)
        kinds = "clusterqueue,resourceflavor" + (",workloadpriorityclass" if preempting else "")
        cluster.kubectl("delete", kinds, name, "--ignore-not-found", check=False)


def _release_pods(cluster: Cluster, namespace: str) -> None:
    """The controller lets go of its finalizers; whatever it left must not hold the namespace forever."""
    for pod in cluster.items("pods", "-n", namespace):
        if MANAGED_FINALIZER in (pod["metadata"].get("finalizers") or []):
            cluster.kubectl(
                "-n", namespace, "patch", "pod", pod["metadata"]["name"], "--type=json",
                "-p", json.dumps([{"op": "remove", "path": "/metadata/finalizers"}]), check=False,
            )  # fmt: skip
