"""A ClusterQueue with a cpu quota, its LocalQueue and some pending Workloads, and an in-memory API that
applies status patches and keeps them: enough to watch the scheduler admit and see what it sent."""

from __future__ import annotations

import copy
from typing import Any

from tests.unit.control.fakes import MemoryApi
from webhook.control.cache.store import Store
from webhook.control.kube.kinds import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    Kind,
)
from webhook.control.kube.verbs import PatchType

JSON = dict[str, Any]
GROUP = "kueue.x-k8s.io/v1beta2"


class RecordingApi(MemoryApi):
    """``MemoryApi`` that also applies status patches and keeps every patch it was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.patched: list[str] = []

    async def patch(
        self,
        kind: Kind,
        *,
        name: str,
        patch: Any,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str = "",
    ) -> JSON:
        self.patched.append(f"{kind.plural}/{name}")
        stored = self.objects[(kind.plural, namespace or "", name)]
        stored["status"] = {**(stored.get("status") or {}), **patch["status"]}
        self.version += 1
        stored["metadata"]["resourceVersion"] = str(self.version)
        return copy.deepcopy(stored)


def cluster(workloads: int, *, cpus: int | None = None) -> list[tuple[Kind, JSON]]:
    """Namespace ``team``, flavor ``rf``, ClusterQueue ``cq`` with ``cpus`` (default: one per Workload),
    LocalQueue ``lq``, and Workloads ``w0``... of one cpu each, pending."""

    def workload(index: int) -> JSON:
        container = {"name": "c", "resources": {"requests": {"cpu": "1"}}}
        return {
            "apiVersion": GROUP,
            "kind": "Workload",
            "metadata": {"name": f"w{index}", "namespace": "team", "uid": f"uid-{index}"},
            "spec": {
                "queueName": "lq",
                "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [container]}}}],
            },
        }

    quota = [
        {
            "name": "rf",
            "resources": [{"name": "cpu", "nominalQuota": str(workloads if cpus is None else cpus)}],
        }
    ]
    return [
        (NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
        (RESOURCE_FLAVORS, {"apiVersion": GROUP, "kind": "ResourceFlavor", "metadata": {"name": "rf"}}),
        (
            CLUSTER_QUEUES,
            {
                "apiVersion": GROUP,
                "kind": "ClusterQueue",
                "metadata": {"name": "cq", "generation": 1},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [{"coveredResources": ["cpu"], "flavors": quota}],
                },
            },
        ),
        (
            LOCAL_QUEUES,
            {
                "apiVersion": GROUP,
                "kind": "LocalQueue",
                "metadata": {"name": "lq", "namespace": "team"},
                "spec": {"clusterQueue": "cq"},
            },
        ),
        *((WORKLOADS, workload(i)) for i in range(workloads)),
    ]


def install(api: MemoryApi, store: Store, objects: list[tuple[Kind, JSON]]) -> None:
    """Put ``objects`` in the API and, as the informers would have listed them, in the store."""
    for version, (kind, obj) in enumerate(objects, start=1):
        obj["metadata"]["resourceVersion"] = str(version)
        api.objects[(kind.plural, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])] = obj
        store.upsert(kind, copy.deepcopy(obj))
    api.version = 100
