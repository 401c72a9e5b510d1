"""A ClusterQueue with a cpu quota, its LocalQueue and some pending Workloads, and an in-memory API that
applies status patches and keeps them: enough to watch the scheduler admit and see what it sent."""

from __future__ import annotations

import copy
from typing import Any

from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.kube.kinds import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    Kind,
)
from kueue_webhook.control.kube.verbs import PatchType
from tests.support import builders
from tests.unit.control.fakes import MemoryApi

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


def queue(cpus: int) -> list[tuple[Kind, JSON]]:
    """Namespace ``team``, flavor ``rf``, ClusterQueue ``cq`` with ``cpus``, LocalQueue ``lq``."""
    return [
        (NAMESPACES, builders.namespace("team")),
        (RESOURCE_FLAVORS, builders.resource_flavor("rf")),
        (
            CLUSTER_QUEUES,
            builders.cluster_queue("cq", {"rf": {"cpu": str(cpus)}}, metadata={"generation": 1}),
        ),
        (LOCAL_QUEUES, builders.local_queue("lq", "team", "cq")),
    ]


def cluster(workloads: int, *, cpus: int | None = None) -> list[tuple[Kind, JSON]]:
    """:func:`queue` with ``cpus`` (default: one per Workload), and Workloads ``w0``... of one cpu each,
    pending."""
    pending = [
        (WORKLOADS, builders.workload(f"w{i}", uid=f"uid-{i}", pod_sets=[builders.pod_set()]))
        for i in range(workloads)
    ]
    return [*queue(workloads if cpus is None else cpus), *pending]


def install(api: MemoryApi, store: Store, objects: list[tuple[Kind, JSON]]) -> None:
    """Put ``objects`` in the API and, as the informers would have listed them, in the store."""
    for version, (kind, obj) in enumerate(objects, start=1):
        obj["metadata"]["resourceVersion"] = str(version)
        api.objects[(kind.plural, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])] = obj
        store.upsert(kind, copy.deepcopy(obj))
    api.version = 100
