"""A Workload becoming Admitted: Kueue's ``Admitted`` Event and admission metrics, recorded here only (and
those of its quota reservation, which comes first).

A Workload is admitted once, by one of two paths: with its quota reservation when its ClusterQueue has no
admission checks (the scheduler loop), or later, when the last of its checks turns Ready (the admission-check
controller), as Kueue's scheduler and workload controller each do. Both paths call ``record_admitted``, so
the Event's wording and ``kueue_admitted_workloads_total`` / ``kueue_admission_wait_time_seconds`` cannot
drift apart between them.
"""

from __future__ import annotations

import time
from typing import Any

from kueue_webhook.api.objects import parse_timestamp
from kueue_webhook.control.kube.kinds import LOCAL_QUEUES
from kueue_webhook.control.output.conditions import find
from kueue_webhook.control.output.context import ControlContext

JSON = dict[str, Any]


def seconds_since(timestamp: object) -> float:
    """Seconds from an RFC 3339 timestamp until now; 0 when it is absent or malformed."""
    since = parse_timestamp(timestamp)
    return max(0.0, time.time() - since) if since else 0.0


def queued_for(workload: JSON) -> float:
    """How long the Workload has waited since it was created, or requeued after an eviction: the wait
    Kueue's admission and readiness metrics observe (``workload.QueuedWaitTime``)."""
    requeued = find((workload.get("status") or {}).get("conditions"), "Requeued")
    if requeued is not None:
        return seconds_since(requeued.get("lastTransitionTime"))
    return seconds_since((workload.get("metadata") or {}).get("creationTimestamp"))


def priority_class_of(workload: JSON) -> str:
    """The ``priority_class`` label of Kueue's Workload metrics ("" without a WorkloadPriorityClass)."""
    return str(((workload.get("spec") or {}).get("priorityClassRef") or {}).get("name", ""))


def local_queue_exposed(context: ControlContext, namespace: str, name: str) -> bool:
    """Whether the LocalQueue exists and its ``kueue_local_queue_*`` series are exposed
    (``metrics.localQueueMetrics``: on, and its selector, if any, matching the LocalQueue's labels)."""
    settings = context.configuration().local_queue_metrics
    if not settings.enable or not name:
        return False
    if settings.selector is None:
        return context.store.contains(LOCAL_QUEUES, name, namespace)
    local_queue = context.store.get(LOCAL_QUEUES, name, namespace)
    if local_queue is None:
        return False
    return settings.exposes((local_queue.get("metadata") or {}).get("labels") or {})


def exposed_local_queue(context: ControlContext, workload: JSON) -> tuple[str, str] | None:
    """The (name, namespace) of the Workload's LocalQueue when its series are exposed."""
    name = str((workload.get("spec") or {}).get("queueName") or "")
    namespace = str((workload.get("metadata") or {}).get("namespace") or "")
    return (name, namespace) if local_queue_exposed(context, namespace, name) else None


def record_quota_reserved(context: ControlContext, workload: JSON, *, cluster_queue: str) -> None:
    """Count the quota reservation just written and tell the Workload's watchers (Kueue's scheduler)."""
    waited = queued_for(workload)
    priority_class = priority_class_of(workload)
    metrics, role = context.metrics, context.metrics.role
    metrics.series(metrics.quota_reserved_workloads, cluster_queue, priority_class, role).inc()
    metrics.series(metrics.quota_reserved_wait_time, cluster_queue, priority_class, role).observe(waited)
    if (local_queue := exposed_local_queue(context, workload)) is not None:
        labels = (*local_queue, priority_class, role)
        metrics.series(metrics.lq_quota_reserved_workloads, *labels).inc()
        metrics.series(metrics.lq_quota_reserved_wait_time, *labels).observe(waited)
    context.events.record(
        workload,
        type="Normal",
        reason="QuotaReserved",
        message=f"Quota reserved in ClusterQueue {cluster_queue}, wait time since queued was {waited:.0f}s",
    )


def record_admitted(
    context: ControlContext, workload: JSON, *, cluster_queue: str, since_reservation: float
) -> None:
    """Count the admission and tell the Workload's watchers, ``since_reservation`` seconds after its quota
    was reserved (0 when both happen in one write)."""
    priority_class = priority_class_of(workload)
    metrics, role = context.metrics, context.metrics.role
    waited = queued_for(workload)
    checked = bool((workload.get("status") or {}).get("admissionChecks"))
    metrics.series(metrics.admitted_workloads, cluster_queue, priority_class, role).inc()
    metrics.series(metrics.admission_wait_time, cluster_queue, priority_class, role).observe(waited)
    if checked:
        # Kueue's ReportAdmissionChecksWaitTime: 0 when the checks were Ready as the quota was reserved
        metrics.series(metrics.admission_checks_wait_time, cluster_queue, priority_class, role).observe(
            since_reservation
        )
    if (local_queue := exposed_local_queue(context, workload)) is not None:
        labels = (*local_queue, priority_class, role)
        metrics.series(metrics.lq_admitted_workloads, *labels).inc()
        metrics.series(metrics.lq_admission_wait_time, *labels).observe(waited)
        if checked:
            metrics.series(metrics.lq_admission_checks_wait_time, *labels).observe(since_reservation)
    message = (
        f"Admitted by ClusterQueue {cluster_queue}, wait time since reservation was {since_reservation:.0f}s"
    )
    context.events.record(workload, type="Normal", reason="Admitted", message=message)
