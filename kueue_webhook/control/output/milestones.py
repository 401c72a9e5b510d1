"""A Workload's later milestones as Kueue's metrics count them: its pods first ready, its evictions, and
its finish.

Kueue's job reconciler observes ``kueue_ready_wait_time_seconds`` (from creation or requeue) and
``kueue_admitted_until_ready_wait_time_seconds`` (from Admitted) when it writes PodsReady=True ``Started``,
not again on a recovery; its workload controller counts ``kueue_finished_workloads_total`` and observes
``kueue_execution_time_seconds`` on a Workload's transition to Finished, whoever wrote it. Here the
executor calls ``record_ready`` after that write and ``FinishedWorkloads`` listens to the leader's store.
Every eviction write is counted by ``count_eviction`` (``kueue_evicted_workloads_total``, and
``kueue_evicted_workloads_once_total`` when ``status.schedulingStats`` says it is the first for its reason).
"""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.conditions import is_true
from kueue_webhook.api.execution_time import total_execution_seconds
from kueue_webhook.api.objects import admitted_cluster_queue, parse_timestamp
from kueue_webhook.control.cache.store import Change
from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.control.output.admitted import exposed_local_queue, priority_class_of, queued_for
from kueue_webhook.control.output.conditions import evictions_of, find
from kueue_webhook.control.output.context import ControlContext

__all__ = ["FinishedWorkloads", "count_eviction", "record_created", "record_ready"]

JSON = dict[str, Any]


def record_created(context: ControlContext, obj: JSON, kind: str, workload: JSON) -> None:
    """A Workload was just created for ``obj`` (of ``kind``): Kueue's RecordWorkloadCreationLatency, from
    the object's creation to the Workload's, only while the object is at its first generation (whole
    seconds, as the API server stamps both)."""
    meta = obj.get("metadata") or {}
    generation = meta.get("generation")
    if isinstance(generation, int) and generation > 1:
        return
    since = parse_timestamp(meta.get("creationTimestamp"))
    at = parse_timestamp((workload.get("metadata") or {}).get("creationTimestamp"))
    if since and at:
        metrics = context.metrics
        metrics.series(metrics.workload_creation_latency, kind, metrics.role).observe(max(0.0, at - since))


def record_ready(context: ControlContext, workload: JSON) -> None:
    """The Workload's pods just became ready for the first time (PodsReady=True ``Started`` written)."""
    conditions = (workload.get("status") or {}).get("conditions")
    ready, admitted = find(conditions, "PodsReady") or {}, find(conditions, "Admitted") or {}
    since = parse_timestamp(admitted.get("lastTransitionTime"))
    at = parse_timestamp(ready.get("lastTransitionTime"))
    metrics, role = context.metrics, context.metrics.role
    priority_class, waited = priority_class_of(workload), queued_for(workload)
    labels = (admitted_cluster_queue(workload), priority_class, role)
    metrics.series(metrics.ready_wait_time, *labels).observe(waited)
    if since and at:
        metrics.series(metrics.admitted_until_ready_wait_time, *labels).observe(max(0.0, at - since))
    if (local_queue := exposed_local_queue(context, workload)) is not None:
        lq_labels = (*local_queue, priority_class, role)
        metrics.series(metrics.lq_ready_wait_time, *lq_labels).observe(waited)
        if since and at:
            ready_after = max(0.0, at - since)
            metrics.series(metrics.lq_admitted_until_ready_wait_time, *lq_labels).observe(ready_after)


def count_eviction(context: ControlContext, evicted: JSON, reason: str, cause: str) -> None:
    """An eviction just written (``evicted``: the Workload the write answered), as Kueue's evict.Evict
    counts it, by (``reason``, ``cause``): ``Deactivated`` with its cause for a deactivation."""
    metrics, role = context.metrics, context.metrics.role
    priority_class = priority_class_of(evicted)
    labels = (admitted_cluster_queue(evicted), reason, cause, priority_class, role)
    metrics.series(metrics.evicted_workloads, *labels).inc()
    if evictions_of(evicted, reason, cause) == 1:
        metrics.series(metrics.evicted_workloads_once, *labels).inc()
    if (local_queue := exposed_local_queue(context, evicted)) is not None:
        metrics.series(metrics.lq_evicted_workloads, *local_queue, reason, cause, priority_class, role).inc()


class FinishedWorkloads:
    """Counts each Workload the leader sees turn Finished (not those already finished when first listed)."""

    def __init__(self, context: ControlContext) -> None:
        self.context = context

    def on_change(self, change: Change) -> None:
        new = change.new
        if change.kind is not WORKLOADS or new is None or change.added or not is_true(new, "Finished"):
            return
        if is_true(change.old or {}, "Finished"):
            return
        metrics, role = self.context.metrics, self.context.metrics.role
        priority_class = priority_class_of(new)
        labels = (admitted_cluster_queue(new), priority_class, role)
        local_queue = exposed_local_queue(self.context, new)
        lq_labels = (*local_queue, priority_class, role) if local_queue is not None else None
        metrics.series(metrics.finished_workloads, *labels).inc()
        if lq_labels is not None:
            metrics.series(metrics.lq_finished_workloads, *lq_labels).inc()
        if (seconds := total_execution_seconds(new)) is not None:
            metrics.series(metrics.execution_time, *labels).observe(seconds)
            if lq_labels is not None:
                metrics.series(metrics.lq_execution_time, *lq_labels).observe(seconds)
