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

import time
from typing import Any

from kueue_webhook.api.conditions import condition_of, is_true
from kueue_webhook.api.execution_time import total_execution_seconds
from kueue_webhook.api.objects import admitted_cluster_queue, has_quota_reservation, parse_timestamp
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
    if (ready_for := pods_ready_to_evicted(evicted)) is not None:
        metrics.series(metrics.pods_ready_to_evicted_time, *labels[:3], role).observe(ready_for)
    if evictions_of(evicted, reason, cause) == 1:
        metrics.series(metrics.evicted_workloads_once, *labels).inc()
    if (local_queue := exposed_local_queue(context, evicted)) is not None:
        metrics.series(metrics.lq_evicted_workloads, *local_queue, reason, cause, priority_class, role).inc()


def pods_ready_to_evicted(workload: JSON) -> float | None:
    """Seconds from PodsReady=True to Evicted=True, both as the Workload shows them (Kueue's
    workloadsWithPodsReadyToEvictedTime); None unless both are True."""
    ready, evicted = condition_of(workload, "PodsReady"), condition_of(workload, "Evicted")
    if ready is None or evicted is None or ready.get("status") != "True" or evicted.get("status") != "True":
        return None
    return parse_timestamp(evicted.get("lastTransitionTime")) - parse_timestamp(
        ready.get("lastTransitionTime")
    )


def eviction_latency(old: JSON | None, new: JSON, now: float) -> tuple[str, str, float] | None:
    """(ClusterQueue, reason, seconds) when ``new`` is an evicted Workload whose quota has just been
    released: reserved before, pending now, Evicted=True (Kueue's EvictionPendingLatency; never negative)."""
    if (
        old is None
        or not has_quota_reservation(old)
        or has_quota_reservation(new)
        or is_true(new, "Finished")
    ):
        return None
    evicted = condition_of(new, "Evicted")
    cluster_queue = admitted_cluster_queue(old)
    if evicted is None or evicted.get("status") != "True" or not cluster_queue:
        return None
    return (
        cluster_queue,
        str(evicted.get("reason", "")),
        max(0.0, now - parse_timestamp(evicted.get("lastTransitionTime"))),
    )


class FinishedWorkloads:
    """Counts each Workload the leader sees turn Finished (not those already finished when first listed),
    and times the release of each evicted Workload's quota."""

    def __init__(self, context: ControlContext) -> None:
        self.context = context

    def on_change(self, change: Change) -> None:
        new = change.new
        if change.kind is not WORKLOADS or new is None or change.added:
            return
        if not is_true(new, "Finished"):
            if is_true(new, "Evicted"):  # the old state is read (decoded) only for an evicted Workload
                self._released_after_eviction(change.old, new)
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

    def _released_after_eviction(self, old: JSON | None, new: JSON) -> None:
        found = eviction_latency(old, new, time.time())
        if found is not None:
            cluster_queue, reason, seconds = found
            metrics = self.context.metrics
            metrics.series(metrics.workload_eviction_latency, cluster_queue, reason, metrics.role).observe(
                seconds
            )
