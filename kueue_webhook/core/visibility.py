"""Kueue's visibility API (``visibility.kueue.x-k8s.io/v1beta2``): where a pending Workload stands in line.

Kueue does not write queue positions on Workloads (one admission would move every rank behind it, a write
each); it serves them on request from its in-memory queues through an aggregated API. This module answers the
same two requests from the scheduler's queues, in the same shape (Kueue's apis/visibility/v1beta2 types and
pkg/visibility/storage), so ``kubectl get --raw .../pendingworkloads`` and Kueue's tooling read both alike:

* ``clusterqueues/<cq>/pendingworkloads``: the ClusterQueue's pending Workloads in queue order, from
  ``offset``, at most ``limit``; ``positionInClusterQueue`` is the 0-based rank in the ClusterQueue and
  ``positionInLocalQueue`` the 0-based rank among those of the same LocalQueue.
* ``namespaces/<ns>/localqueues/<lq>/pendingworkloads``: the same ranks for that LocalQueue's Workloads only;
  ``offset`` and ``limit`` count the LocalQueue's Workloads.

Queue order is the scheduler's own (priority, then queue-order time, then name), parked Workloads included
(Kueue's ClusterQueue.Snapshot lists its inadmissible ones too). Pure: the caller passes the scheduler view
and a lookup for the metadata Kueue copies (name, namespace, ownerReferences, creationTimestamp).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kueue_webhook.core.model import WorkloadInfo
from kueue_webhook.core.view import SchedulerView

__all__ = [
    "DEFAULT_LIMIT",
    "GROUP",
    "GROUP_VERSION",
    "MAX_LIMIT",
    "VERSION",
    "Page",
    "VisibilityError",
    "api_group",
    "api_group_list",
    "api_resource_list",
    "cluster_queue_pending",
    "local_queue_pending",
    "not_found",
    "parse_page",
]

JSON = dict[str, Any]
GROUP = "visibility.kueue.x-k8s.io"
VERSION = "v1beta2"
GROUP_VERSION = f"{GROUP}/{VERSION}"
#: Kueue's constants.DefaultPendingWorkloadsLimit and MaxPendingWorkloadsLimit
DEFAULT_LIMIT = 1000
MAX_LIMIT = 100_000
_INTEGER = re.compile(r"[+-]?[0-9]{1,20}")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
#: the metadata of a Workload by (namespace, name); None when the store no longer holds it
WorkloadLookup = Callable[[str, str], Mapping[str, Any] | None]


class VisibilityError(ValueError):
    """A request that cannot be answered as asked (HTTP 400)."""


@dataclass(frozen=True, slots=True)
class Page:
    """``offset`` and ``limit``, bounded as Kueue bounds them (boundedLimitOffset)."""

    offset: int = 0
    limit: int = DEFAULT_LIMIT


def parse_page(query: Mapping[str, str]) -> Page:
    """``?limit=&offset=``: whole numbers; ``limit`` 0 or absent means 1000 (Kueue's defaulting), a
    negative one none, and at most 100,000; a negative ``offset`` is 0."""
    values: dict[str, int] = {}
    for name in ("limit", "offset"):
        text = query.get(name)
        if text is None or text == "":
            continue
        shown = text if len(text) <= 40 else text[:37] + "..."
        if not _INTEGER.fullmatch(text):
            raise VisibilityError(f"{name}: not a whole number: {shown!r}")
        value = int(text)
        if not _INT64_MIN <= value <= _INT64_MAX:
            # Kueue reads both as int64: a value beyond is a bad request, not a huge page
            raise VisibilityError(f"{name}: {shown} is out of range for a 64-bit integer")
        values[name] = value
    limit = values.get("limit", 0) or DEFAULT_LIMIT
    return Page(offset=max(values.get("offset", 0), 0), limit=min(max(limit, 0), MAX_LIMIT))


def _summary(items: list[JSON]) -> JSON:
    return {
        "kind": "PendingWorkloadsSummary",
        "apiVersion": GROUP_VERSION,
        "metadata": {"creationTimestamp": None},
        "items": items,
    }


def _pending_workload(info: WorkloadInfo, lookup: WorkloadLookup, *, in_cq: int, in_lq: int) -> JSON:
    """One item as Kueue's newPendingWorkload builds it: a few metadata fields and the two ranks."""
    meta = (lookup(info.namespace, info.name) or {}).get("metadata") or {}
    metadata: JSON = {"name": info.name, "namespace": info.namespace}
    owners = [
        {key: ref[key] for key in ("apiVersion", "kind", "name", "uid") if key in ref}
        for ref in meta.get("ownerReferences") or []
        if isinstance(ref, Mapping)
    ]
    if owners:
        metadata["ownerReferences"] = owners
    metadata["creationTimestamp"] = meta.get("creationTimestamp")
    return {
        "metadata": metadata,
        "priority": info.priority,
        "localQueueName": info.queue_name,
        "positionInClusterQueue": in_cq,
        "positionInLocalQueue": in_lq,
    }


def cluster_queue_pending(
    view: SchedulerView, cluster_queue: str, page: Page, lookup: WorkloadLookup
) -> JSON | None:
    """The PendingWorkloadsSummary of a ClusterQueue; None when the scheduler knows no such ClusterQueue."""
    if view.cluster_queue(cluster_queue) is None:
        return None
    items: list[JSON] = []
    seen_in_lq: dict[tuple[str, str], int] = {}
    end = page.offset + page.limit
    for index, info in enumerate(view.pending_in(cluster_queue)):
        if index >= end:
            break
        local_queue = (info.namespace, info.queue_name)
        in_lq = seen_in_lq.get(local_queue, 0)
        seen_in_lq[local_queue] = in_lq + 1
        if index >= page.offset:
            items.append(_pending_workload(info, lookup, in_cq=index, in_lq=in_lq))
    return _summary(items)


def local_queue_pending(
    view: SchedulerView, namespace: str, local_queue: str, page: Page, lookup: WorkloadLookup
) -> JSON | None:
    """The PendingWorkloadsSummary of a LocalQueue; None when the scheduler knows no such LocalQueue."""
    queue = view.local_queues.get(f"{namespace}/{local_queue}")
    if queue is None:
        return None
    items: list[JSON] = []
    skipped = 0
    for index, info in enumerate(view.pending_in(queue.cluster_queue)):
        if len(items) >= page.limit:
            break
        if info.namespace != namespace or info.queue_name != local_queue:
            continue
        if skipped < page.offset:
            skipped += 1
            continue
        items.append(_pending_workload(info, lookup, in_cq=index, in_lq=len(items) + page.offset))
    return _summary(items)


def not_found(kind: str, name: str) -> JSON:
    """The Status Kueue answers for an unknown queue (``errors.NewNotFound(visibility.Resource(kind))``)."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{kind}.{GROUP} "{name}" not found',
        "reason": "NotFound",
        "details": {"name": name, "group": GROUP, "kind": kind},
        "code": 404,
    }


def _resource(name: str, *, namespaced: bool, verbs: list[str], singular: str = "") -> JSON:
    return {
        "name": name,
        "singularName": singular,
        "namespaced": namespaced,
        "kind": "PendingWorkloadsSummary",
        "verbs": verbs,
    }


def api_resource_list() -> JSON:
    """Discovery of the group version: the queues (no verbs of their own) and their pendingworkloads (get),
    as Kueue's storage registers them."""
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": GROUP_VERSION,
        "resources": [
            _resource("clusterqueues", namespaced=False, verbs=[], singular="clusterqueue"),
            _resource("clusterqueues/pendingworkloads", namespaced=False, verbs=["get"]),
            _resource("localqueues", namespaced=True, verbs=[], singular="localqueue"),
            _resource("localqueues/pendingworkloads", namespaced=True, verbs=["get"]),
        ],
    }


def api_group() -> JSON:
    version = {"groupVersion": GROUP_VERSION, "version": VERSION}
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": GROUP,
        "versions": [version],
        "preferredVersion": version,
    }


def api_group_list() -> JSON:
    group = api_group()
    del group["kind"], group["apiVersion"]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [group]}
