"""What the live dashboard shows, as one JSON document computed from a replica's state.

The page (``kueue_webhook.http.dashboard``) renders this document and nothing else, so everything a user sees
is
decided here, by a pure function a test can call with any scheduler view:

* ``tree``: the cohort tree, cohorts (and the cohorts within them) holding their ClusterQueues, and the
  ClusterQueues in no cohort beside them;
* ``clusterQueues``: each ClusterQueue's ``Active`` condition, its counts, and per flavor and resource the
  quota reserved against the nominal quota, the limits, and what it borrows (the excess over nominal, in a
  cohort only), as ``kubectl describe clusterqueue`` shows them in ``status.flavorsReservation``;
* ``pending``: each ClusterQueue's pending Workloads in queue order (at most ``pending_limit`` of them, and
  the total), with the ranks the visibility API serves and the reason and message ``kubectl describe
  workload`` shows (the Workload's ``QuotaReserved=False`` condition; before it is written, the leader's
  latest decision);
* ``recent``: the latest admissions, preemptions and evictions (``kueue_webhook.core.recent_decisions``).

Amounts are Kubernetes quantities in Kueue's formatting (``64``, ``1536Mi``). Every string in it may come
from a user (names, messages): the page treats them as text, never as markup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kueue_webhook.core.ledger import Node
from kueue_webhook.core.model import FlavorResource, WorkloadInfo, format_amount
from kueue_webhook.core.recent_decisions import RecentDecision
from kueue_webhook.core.status import cluster_queue_active, reserved_usage
from kueue_webhook.core.view import SchedulerView
from kueue_webhook.core.visibility import WorkloadLookup

__all__ = ["DEFAULT_PENDING_BUDGET", "DEFAULT_PENDING_LIMIT", "MAX_TREE_DEPTH", "dashboard_model"]

JSON = dict[str, Any]
#: pending Workloads listed per ClusterQueue (the total is given too)
DEFAULT_PENDING_LIMIT = 50
#: pending Workloads listed in all, whatever the number of ClusterQueues (each is looked up in the store)
DEFAULT_PENDING_BUDGET = 500
#: cohorts nested deeper than this are not drawn (Kueue's own trees are a few levels deep)
MAX_TREE_DEPTH = 32


def _percent(used: int, nominal: int) -> int | None:
    return None if nominal <= 0 else (used * 100 + nominal // 2) // nominal


def _resources(view: SchedulerView, name: str) -> list[JSON]:
    spec = view.cluster_queue(name)
    if spec is None:
        return []
    usage: Mapping[FlavorResource, int] = reserved_usage(view, name)
    out: list[JSON] = []
    for group in spec.resource_groups:
        for flavor in group.flavors:
            quotas = {quota.name: quota for quota in flavor.resources}
            for resource in sorted(group.covered_resources):
                quota = quotas.get(resource)
                nominal = quota.nominal.nanos if quota is not None else 0
                used = usage.get((flavor.name, resource), 0)
                borrowed = max(0, used - nominal) if spec.cohort_name else 0
                limits = {
                    "borrowingLimit": quota.borrowing_limit if quota is not None else None,
                    "lendingLimit": quota.lending_limit if quota is not None else None,
                }
                out.append(
                    {
                        "flavor": flavor.name,
                        "resource": resource,
                        "nominal": format_amount(resource, nominal),
                        **{
                            key: None if limit is None else format_amount(resource, limit.nanos)
                            for key, limit in limits.items()
                        },
                        "used": format_amount(resource, used),
                        "borrowed": format_amount(resource, borrowed),
                        "usedPercent": _percent(used, nominal),
                    }
                )
    return out


def _cluster_queue(view: SchedulerView, name: str) -> JSON:
    spec = view.cluster_queue(name)
    status, reason, message = cluster_queue_active(view, name)
    reserving = view.reserving_in(name)
    return {
        "name": name,
        "cohort": spec.cohort_name if spec is not None else "",
        "active": {"status": status, "reason": reason, "message": message},
        "admitted": sum(1 for _, admitted in reserving if admitted),
        "reserving": len(reserving),
        "pending": view.pending_count(name),
        "resources": _resources(view, name),
    }


def _node(node: Node, depth: int) -> JSON:
    if not node.is_cohort:
        return {"kind": "ClusterQueue", "name": node.name}
    out: JSON = {"kind": "Cohort", "name": node.name}
    if depth >= MAX_TREE_DEPTH:
        out["truncated"] = True
        out["children"] = []
        return out
    children = sorted(node.children, key=lambda child: (not child.is_cohort, child.name))
    out["children"] = [_node(child, depth + 1) for child in children]
    return out


def _tree(view: SchedulerView, names: Sequence[str]) -> list[JSON]:
    roots = [_node(node, 0) for _, node in sorted(view.ledger.cohorts.items()) if node.parent is None]
    for name in names:
        spec = view.cluster_queue(name)
        if spec is not None and not spec.cohort_name:
            roots.append({"kind": "ClusterQueue", "name": name})
    return roots


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _waiting(view: SchedulerView, info: WorkloadInfo, workload: Mapping[str, Any] | None) -> tuple[str, str]:
    """(reason, message) as ``kubectl describe`` shows the Workload's pending condition; the leader's latest
    decision while none is written yet; empty before the Workload was ever tried."""
    status = (workload or {}).get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for condition in conditions if isinstance(conditions, list) else []:
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "QuotaReserved"
            and condition.get("status") == "False"
        ):
            return _text(condition.get("reason")), _text(condition.get("message"))
    last = view.last_wait(info.key)
    return last if last is not None else ("", "")


def _owner(workload: Mapping[str, Any] | None) -> str:
    """``Kind/name`` of the Workload's controlling owner (the Job a user knows), or of its first owner."""
    metadata = (workload or {}).get("metadata")
    refs = metadata.get("ownerReferences") if isinstance(metadata, Mapping) else None
    owners = [ref for ref in refs if isinstance(ref, Mapping)] if isinstance(refs, list) else []
    owners.sort(key=lambda ref: ref.get("controller") is not True)
    return f"{_text(owners[0].get('kind'))}/{_text(owners[0].get('name'))}" if owners else ""


def _pending(view: SchedulerView, name: str, lookup: WorkloadLookup, limit: int) -> JSON:
    ordered = view.pending_in(name)
    workloads: list[JSON] = []
    in_local_queue: dict[tuple[str, str], int] = {}
    for position, info in enumerate(ordered[:limit]):
        local_queue = (info.namespace, info.queue_name)
        rank = in_local_queue.get(local_queue, 0)
        in_local_queue[local_queue] = rank + 1
        workload = lookup(info.namespace, info.name)
        reason, message = _waiting(view, info, workload)
        metadata = (workload or {}).get("metadata")
        created = metadata.get("creationTimestamp") if isinstance(metadata, Mapping) else None
        workloads.append(
            {
                "position": position,
                "positionInLocalQueue": rank,
                "namespace": info.namespace,
                "name": info.name,
                "localQueue": info.queue_name,
                "priority": info.priority,
                "owner": _owner(workload),
                "createdAt": _text(created),
                "reason": reason,
                "message": message,
            }
        )
    return {"clusterQueue": name, "total": len(ordered), "workloads": workloads}


def dashboard_model(
    view: SchedulerView | None,
    *,
    workload: WorkloadLookup,
    recent: Sequence[RecentDecision],
    replica: str,
    leading: bool,
    generated_at: str,
    pending_limit: int = DEFAULT_PENDING_LIMIT,
    pending_budget: int = DEFAULT_PENDING_BUDGET,
) -> JSON:
    """The dashboard's document. ``view`` None (a replica whose caches are not synced yet) gives empty
    queues with ``ready`` false; ``recent`` is newest first. At most ``pending_limit`` pending Workloads
    are listed per ClusterQueue and ``pending_budget`` in all, in ClusterQueue name order; every
    ClusterQueue with pending Workloads still gives its total."""
    out: JSON = {
        "kind": "QueueDashboard",
        "generatedAt": generated_at,
        "replica": {"name": replica, "role": "leader" if leading else "follower"},
        "ready": view is not None,
        "totals": {"clusterQueues": 0, "cohorts": 0, "admitted": 0, "reserving": 0, "pending": 0},
        "tree": [],
        "clusterQueues": [],
        "pending": [],
        "recent": [decision.to_json() for decision in recent],
    }
    if view is None:
        return out
    names = view.cluster_queue_names()
    queues = [_cluster_queue(view, name) for name in names]
    out["tree"] = _tree(view, names)
    out["clusterQueues"] = queues
    pending: list[JSON] = []
    for queue in queues:
        if queue["pending"]:
            group = _pending(view, queue["name"], workload, max(0, min(pending_limit, pending_budget)))
            pending_budget -= len(group["workloads"])
            pending.append(group)
    out["pending"] = pending
    out["totals"] = {
        "clusterQueues": len(queues),
        "cohorts": len(view.ledger.cohorts),
        "admitted": sum(queue["admitted"] for queue in queues),
        "reserving": sum(queue["reserving"] for queue in queues),
        "pending": sum(queue["pending"] for queue in queues),
    }
    return out
