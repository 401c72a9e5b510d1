"""ClusterQueue/LocalQueue status and queue metrics, written only when changed and at a bounded rate.

Under churn every admission changes a ClusterQueue's usage; writing its status on each would double the
API load of the admission path. Instead changes only mark queues dirty, and a flush at most every
``min_interval`` seconds recomputes the dirty ones from the core's ledger (the same numbers the scheduler
decides with) and writes those whose visible status differs, while the informational write budget
(``kueue_webhook.control.kube.api_health``) allows; a queue deferred stays dirty and is written by a later
pass
with the numbers of then. Quiet periods therefore cost nothing, a burst costs at most one write per queue per
interval, and on a congested API server far fewer. The same pass refreshes Kueue's per-queue gauges and adds
GPU-seconds for chargeback.

Computing a status costs as much as writing it is worth only when the write can go: with a thousand queues
busy and the budget letting ten writes a second through, recomputing every deferred queue on every pass
took most of the controller's CPU. So once the budget refuses a write, the rest of the pass defers its queues
without computing them, oldest first for the next pass; the gauges, which cost no write, are refreshed for
every queue marked since the previous pass, deferred or not.

Routing a change to the queues it touches must not read the store: decoding every LocalQueue on each
ClusterQueue event (most of them echoes of our own status writes) would cost in proportion to the number of
queues on every event. So the reporter keeps its own LocalQueue -> ClusterQueue index, built once from the
store and then kept current from LocalQueue changes, and a ClusterQueue change that only touched its
status (our echo) does not mark its LocalQueues: their status derives from the core's state, not from the
ClusterQueue's status.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kueue_webhook.api.conditions import is_true
from kueue_webhook.api.config_model import Configuration
from kueue_webhook.api.quantity import NANO
from kueue_webhook.control.cache.store import Change, key_of
from kueue_webhook.control.kube.kinds import (
    ADMISSION_CHECKS,
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    RESOURCE_FLAVORS,
    WORKLOADS,
)
from kueue_webhook.control.kube.leader import NotLeader
from kueue_webhook.control.output.admitted import local_queue_exposed, priority_class_of
from kueue_webhook.control.output.conditions import now_rfc3339, observed_generation
from kueue_webhook.control.output.context import ControlContext
from kueue_webhook.control.output.metrics import gauge_series
from kueue_webhook.control.output.paced import PacedReporter
from kueue_webhook.control.output.queue_status import merge_status, status_differs
from kueue_webhook.control.scheduling.cohort_metrics import CohortMetrics
from kueue_webhook.control.scheduling.workload_counts import (
    FinishedWorkloads,
    UnadmittedWorkloads,
    why_unadmitted,
)
from kueue_webhook.core.model import FlavorResource
from kueue_webhook.core.status import (
    cluster_queue_active,
    cluster_queue_status,
    local_queue_active,
    local_queue_status,
)
from kueue_webhook.core.view import SchedulerView

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.status")


def _newly_admitted(old: JSON | None, new: JSON) -> bool:
    """Whether ``new`` is Admitted and ``old`` was not (a Workload's admission, seen once)."""
    if not (new.get("status") or {}).get("admission") or not is_true(new, "Admitted"):
        return False
    return old is None or not is_true(old, "Admitted")


@dataclass(slots=True)
class _Held:
    """What one LocalQueue's Workloads hold in their ClusterQueue: how many reserve and are admitted, and
    the quota they reserve and use (admitted only) per flavor/resource."""

    reserving: int = 0
    admitted: int = 0
    reserved: dict[FlavorResource, int] = field(default_factory=dict)
    used: dict[FlavorResource, int] = field(default_factory=dict)

    def add(self, usage: Mapping[FlavorResource, int], *, admitted: bool) -> None:
        self.reserving += 1
        for fr, nanos in usage.items():
            self.reserved[fr] = self.reserved.get(fr, 0) + nanos
        if admitted:
            self.admitted += 1
            for fr, nanos in usage.items():
                self.used[fr] = self.used.get(fr, 0) + nanos

    def merge(self, other: _Held) -> None:
        self.reserving += other.reserving
        self.admitted += other.admitted
        for mine, theirs in ((self.reserved, other.reserved), (self.used, other.used)):
            for fr, nanos in theirs.items():
                mine[fr] = mine.get(fr, 0) + nanos


#: per ClusterQueue, what each of its LocalQueues' Workloads hold, read once per pass (``_held_in``)
HeldByQueue = dict[str, dict[tuple[str, str], _Held]]


def _held_in(state: SchedulerView, cluster_queue: str, seen: HeldByQueue) -> dict[tuple[str, str], _Held]:
    """What the Workloads reserving quota in ``cluster_queue`` hold, per LocalQueue (namespace, name);
    read from the core once per pass, whichever gauges ask first."""
    held = seen.get(cluster_queue)
    if held is None:
        held = seen[cluster_queue] = {}
        for info, admitted in state.reserving_in(cluster_queue):
            entry = held.get((info.namespace, info.queue_name))
            if entry is None:
                entry = held[(info.namespace, info.queue_name)] = _Held()
            entry.add(info.usage, admitted=admitted)
    return held


class QueueStatusReporter(PacedReporter):
    """Marks queues dirty on store changes; ``run`` flushes them (``kueue_webhook.control.output.paced``)."""

    def __init__(
        self, context: ControlContext, *, state: Callable[[], SchedulerView], min_interval: float = 1.0
    ) -> None:
        super().__init__(context, state=state, min_interval=min_interval)
        #: queues marked since the last pass, in the order they were first marked (dict keys: ordered sets)
        self._dirty_cq: dict[str, None] = {}
        self._dirty_lq: dict[tuple[str, str], None] = {}
        #: queues whose status write the budget deferred, not recomputed until it can go: first in the next
        #: pass, so the longest-waiting queue is written first
        self._deferred_cq: dict[str, None] = {}
        self._deferred_lq: dict[tuple[str, str], None] = {}
        #: LocalQueue -> its ClusterQueue, and the reverse; None until first needed (built from the store)
        self._cq_of_lq: dict[tuple[str, str], str] | None = None
        self._lqs_of_cq: dict[str, set[tuple[str, str]]] = {}
        self._last_gpu_tick = time.monotonic()
        self._local_queue_metrics = context.configuration().local_queue_metrics
        self.cohorts = CohortMetrics(context.metrics)
        self.unadmitted = UnadmittedWorkloads(context.metrics)
        self.finished = FinishedWorkloads(context.metrics)

    def on_change(self, change: Change) -> None:
        if change.kind is CLUSTER_QUEUES:
            self._dirty_cq.setdefault(change.key[1])
            if not change.only_status_changed():
                self._mark_local_queues_of(change.key[1])
        elif change.kind is LOCAL_QUEUES:
            self._dirty_lq.setdefault(change.key)
            queue = change.new or change.old or {}
            self._dirty_cq.setdefault(str((queue.get("spec") or {}).get("clusterQueue", "")))
            self._index_local_queue(change.key, change.new)
        elif change.kind in (RESOURCE_FLAVORS, ADMISSION_CHECKS):
            self.mark_all()
        elif change.kind is WORKLOADS:
            for obj in (change.old, change.new):
                if obj is None:
                    continue
                spec, status = obj.get("spec") or {}, obj.get("status") or {}
                queue_name = str(spec.get("queueName", ""))
                if queue_name:
                    lq_key = (change.key[0], queue_name)
                    self._dirty_lq.setdefault(lq_key)
                    cluster_queue = self._index().get(lq_key)
                    if cluster_queue is not None:
                        self._dirty_cq.setdefault(cluster_queue)
                admitted_to = (status.get("admission") or {}).get("clusterQueue")
                if admitted_to:
                    self._dirty_cq.setdefault(str(admitted_to))
            new = change.new
            if new is None:
                self.unadmitted.update(change.key, None)
                self.finished.update(change.key, None)
            else:
                lq_key = (change.key[0], str((new.get("spec") or {}).get("queueName", "")))
                cluster_queue = self._index().get(lq_key, "")
                self.unadmitted.update(change.key, why_unadmitted(new, cluster_queue))
                finished = is_true(new, "Finished")
                self.finished.update(change.key, (cluster_queue, lq_key) if finished else None)
            if new is not None and not change.added and _newly_admitted(change.old, new):
                admission = (new.get("status") or {}).get("admission") or {}
                self.cohorts.admitted(str(admission.get("clusterQueue", "")), priority_class_of(new))
        else:
            return
        self.kick()

    def mark_local_queues(self, keys: Iterable[str]) -> None:
        """Write the status of these LocalQueues ("namespace/name") in the next pass."""
        for key in keys:
            namespace, _, name = key.partition("/")
            self._dirty_lq.setdefault((namespace, name))
        self.kick()

    def mark_all(self) -> None:
        self.unadmitted.all_moved()
        self.finished.all_moved()
        self._dirty_cq.update(dict.fromkeys(key_of(cq)[1] for cq in self.context.store.items(CLUSTER_QUEUES)))
        self._dirty_lq.update(dict.fromkeys(self.context.store.keys(LOCAL_QUEUES)))
        super().mark_all()

    def _index(self) -> dict[tuple[str, str], str]:
        """LocalQueue key -> ClusterQueue name, built from the store on first use."""
        if self._cq_of_lq is None:
            self._cq_of_lq = {}
            self._lqs_of_cq = {}
            for lq in self.context.store.items(LOCAL_QUEUES):
                self._index_local_queue(key_of(lq), lq)
        return self._cq_of_lq

    def _index_local_queue(self, key: tuple[str, str], lq: JSON | None) -> None:
        if self._cq_of_lq is None:
            return  # not built yet: the first build reads the store, which already holds this change
        previous = self._cq_of_lq.pop(key, None)
        if previous is not None:
            self._lqs_of_cq.get(previous, set()).discard(key)
        cluster_queue = str(((lq or {}).get("spec") or {}).get("clusterQueue", "")) if lq else ""
        if cluster_queue:
            self._cq_of_lq[key] = cluster_queue
            self._lqs_of_cq.setdefault(cluster_queue, set()).add(key)

    def _mark_local_queues_of(self, cluster_queue: str) -> None:
        self._index()
        self._dirty_lq.update(dict.fromkeys(sorted(self._lqs_of_cq.get(cluster_queue, ()))))

    async def flush(self) -> None:
        marked_cq, self._dirty_cq = self._dirty_cq, {}
        marked_lq, self._dirty_lq = self._dirty_lq, {}
        cluster_queues = {**self._deferred_cq, **marked_cq}
        local_queues = {**self._deferred_lq, **marked_lq}
        self._deferred_cq, self._deferred_lq = {}, {}
        state = self.state()
        self._tick_gpu_seconds(state)
        held: HeldByQueue = {}
        for name in (n for n in marked_cq if n):  # "": a LocalQueue that names no ClusterQueue
            self._report_metrics(name, state, held)
        self._report_local_queue_metrics(marked_lq, state, held)
        self.cohorts.report(state, (n for n in marked_cq if n))
        self.unadmitted.report(local_queue_exposed=self._local_queue_exposed)
        self.finished.report(local_queue_exposed=self._local_queue_exposed)
        now = now_rfc3339()
        refused = False
        for name in (n for n in cluster_queues if n):
            if refused:
                self._deferred_cq[name] = None
                continue
            cq = self.context.store.get(CLUSTER_QUEUES, name)
            if cq is None or state.cluster_queue(name) is None:
                continue
            computed = cluster_queue_status(state, name)
            status = merge_status(cq.get("status"), computed, generation=observed_generation(cq), now=now)
            if status_differs(cq.get("status"), status):
                refused = self.context.budget.take() > 0
                if refused:
                    self._deferred_cq[name] = None  # a later pass writes the numbers of then
                else:
                    await self._write(CLUSTER_QUEUES, cq, status)
        for key in local_queues:
            if refused:
                self._deferred_lq[key] = None
                continue
            namespace, name = key
            lq = self.context.store.get(LOCAL_QUEUES, name, namespace)
            if lq is None or f"{namespace}/{name}" not in state.local_queues:
                continue
            computed = local_queue_status(state, namespace, name)
            status = merge_status(lq.get("status"), computed, generation=observed_generation(lq), now=now)
            if status_differs(lq.get("status"), status):
                refused = self.context.budget.take() > 0
                if refused:
                    self._deferred_lq[key] = None
                else:
                    await self._write(LOCAL_QUEUES, lq, status)
        if self._deferred_cq or self._deferred_lq:
            self.kick()

    async def _write(self, kind: Any, obj: JSON, status: JSON) -> None:
        try:
            await self.context.writer.patch_status(kind, obj, lambda _current: status)
        except NotLeader:
            pass  # said once by the elector; the next term reports every queue again
        except Exception as exc:  # the next change marks it dirty again
            log.warning("queue status write failed", extra={"kind": kind.kind, "error": repr(exc)})

    def _report_metrics(self, name: str, state: SchedulerView, held: HeldByQueue) -> None:
        """Kueue's per-queue gauges from the core's state (no status computed: they cost no write)."""
        metrics = self.context.metrics
        if not self.context.store.contains(CLUSTER_QUEUES, name):
            metrics.forget_cluster_queue(cluster_queue=name)
            self.cohorts.forget_cluster_queue(name)
            return
        spec = state.cluster_queue(name)
        if spec is None:
            return
        role = metrics.role
        total = _Held()
        for local_queue in _held_in(state, name, held).values():
            total.merge(local_queue)
        inadmissible = state.inadmissible_count(name)
        gauge_series(metrics.pending_workloads, name, "active", role).set(
            state.pending_count(name) - inadmissible
        )
        gauge_series(metrics.pending_workloads, name, "inadmissible", role).set(inadmissible)
        gauge_series(metrics.reserving_active_workloads, name, role).set(total.reserving)
        gauge_series(metrics.admitted_active_workloads, name, role).set(total.admitted)
        active = cluster_queue_active(state, name)[0] == "True"
        metrics.set_cluster_queue_state(cluster_queue=name, state="active" if active else "pending")
        self.cohorts.held(name, total.reserved, total.admitted)
        cohort = spec.cohort_name
        for group in spec.resource_groups:
            for flavor in group.flavors:
                for quota in flavor.resources:
                    labels = (cohort, name, flavor.name, quota.name, role)
                    fr = (flavor.name, quota.name)
                    gauge_series(metrics.nominal_quota, *labels).set(quota.nominal.nanos / NANO)
                    if quota.borrowing_limit is not None:
                        gauge_series(metrics.borrowing_limit, *labels).set(quota.borrowing_limit.nanos / NANO)
                    if quota.lending_limit is not None:
                        gauge_series(metrics.lending_limit, *labels).set(quota.lending_limit.nanos / NANO)
                    gauge_series(metrics.resource_usage, *labels).set(total.used.get(fr, 0) / NANO)
                    gauge_series(metrics.resource_reservation, *labels).set(total.reserved.get(fr, 0) / NANO)

    def reconfigure(self, configuration: Configuration) -> None:
        """A reload changed ``metrics.localQueueMetrics``: every LocalQueue's series are reported again, or
        dropped."""
        if configuration.local_queue_metrics != self._local_queue_metrics:
            self._local_queue_metrics = configuration.local_queue_metrics
            self.mark_all()

    def _local_queue_exposed(self, namespace: str, name: str) -> bool:
        return local_queue_exposed(self.context, namespace, name)

    def _report_local_queue_metrics(
        self, marked: Mapping[tuple[str, str], None], state: SchedulerView, seen: HeldByQueue
    ) -> None:
        """Kueue's per-LocalQueue gauges for the LocalQueues marked since the last pass, those the
        configuration exposes (``metrics.localQueueMetrics``); the others' series are dropped."""
        metrics = self.context.metrics
        index = self._index()
        by_cluster_queue: dict[str, list[tuple[str, str]]] = {}
        for key in marked:
            namespace, name = key
            if not name:
                continue
            if not self._local_queue_exposed(namespace, name):
                metrics.forget_local_queue(namespace=namespace, name=name)
                continue
            by_cluster_queue.setdefault(index.get(key, ""), []).append(key)
        role = metrics.role
        for cluster_queue, keys in by_cluster_queue.items():
            spec = state.cluster_queue(cluster_queue) if cluster_queue else None
            pending = state.pending_by_local_queue(cluster_queue) if spec is not None else {}
            # as in Kueue, a ClusterQueue that admits nothing has no active pending Workloads
            inactive = spec is None or cluster_queue_active(state, cluster_queue)[0] != "True"
            held = _held_in(state, cluster_queue, seen) if spec is not None else {}
            for namespace, name in keys:
                active, inadmissible = pending.get((namespace, name), (0, 0))
                if inactive:
                    active, inadmissible = 0, active + inadmissible
                gauge_series(metrics.lq_pending_workloads, name, namespace, "active", role).set(active)
                gauge_series(metrics.lq_pending_workloads, name, namespace, "inadmissible", role).set(
                    inadmissible
                )
                mine = held.get((namespace, name)) or _Held()
                gauge_series(metrics.lq_reserving_active_workloads, name, namespace, role).set(mine.reserving)
                gauge_series(metrics.lq_admitted_active_workloads, name, namespace, role).set(mine.admitted)
                status = local_queue_active(state, namespace, name)
                metrics.set_local_queue_state(namespace=namespace, name=name, active=status)
                usage = state.admission_usage(f"{namespace}/{name}")
                if usage is not None:
                    fair = metrics.lq_admission_fair_sharing_usage
                    gauge_series(fair, name, namespace, cluster_queue, role).set(usage)
                if spec is None:
                    continue
                for group in spec.resource_groups:
                    for flavor in group.flavors:
                        for quota in flavor.resources:
                            fr = (flavor.name, quota.name)
                            labels = (name, namespace, flavor.name, quota.name, role)
                            reserved, used = mine.reserved.get(fr, 0), mine.used.get(fr, 0)
                            gauge_series(metrics.lq_resource_reservation, *labels).set(reserved / NANO)
                            gauge_series(metrics.lq_resource_usage, *labels).set(used / NANO)

    def _tick_gpu_seconds(self, state: SchedulerView) -> None:
        """Charge each queue the GPUs its workloads held (their reservations; not the ledger, which also
        counts room claimed for a preemptor that is still waiting) since the previous pass."""
        now = time.monotonic()
        elapsed, self._last_gpu_tick = now - self._last_gpu_tick, now
        for name in state.cluster_queue_names():
            spec = state.cluster_queue(name)
            if spec is None or not any(
                "gpu" in resource for group in spec.resource_groups for resource in group.covered_resources
            ):
                continue  # a Workload reserves only what its ClusterQueue covers
            totals: dict[str, int] = {}
            for info, _ in state.reserving_in(name):
                for (_, resource), nanos in info.usage.items():
                    if "gpu" in resource and nanos > 0:
                        totals[resource] = totals.get(resource, 0) + nanos
            for resource, nanos in totals.items():
                self.context.metrics.gpu_seconds.labels(name, resource).inc(nanos / NANO * elapsed)
