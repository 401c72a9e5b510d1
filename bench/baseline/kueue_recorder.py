"""Kueue's recorder, read the way Kueue's runner reads it (test/performance/scheduler/runner/recorder).

Kueue's CI figures come from what its runner sees, not from an exact timeline, so to compare like with like
the benchmark keeps a second recorder that follows the same rules:

* **ClusterQueues**: every create and update event is a sample of the first flavor's first resource in
  ``status.flavorsUsage`` (and ``flavorsReservation``), ``pendingWorkloads``, ``reservingWorkloads``,
  ``admittedWorkloads`` and the ``Active`` condition. Usage is integrated per queue as the previous sample's
  value times the time to the next sample (milli-cpu x ms); per class of queue the used total is divided by
  the span from the class's first to its last sample (an average in milli-cpu, beside the class's summed
  nominal quota).
* **The end**: once generation is done, the run is over as soon as no ``Active`` ClusterQueue shows pending
  or reserving Workloads, checked on each ClusterQueue event and every 5 s.
* **Workloads**, by UID: when one is first seen ``Admitted``, its time to admission is its ``Admitted``
  condition's ``lastTransitionTime`` minus its ``creationTimestamp`` (whole seconds, as the API serialises
  them), or the time between the first event seen and this one when those are missing or out of order; a
  later admission (after an eviction) replaces it. Each ``Evicted`` False -> True counts one eviction; the
  time to finish is from the first event seen to the first ``Finished``.
* **Per class of Workload**: the means are over every Workload seen, an admitted one or not (one never
  admitted counts as 0), which is how the summary divides.

Our own figures (``figures.py``: creation to admission by the benchmark's clocks, usage from every
reservation in commit order) stay beside these; where they differ, the report shows both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kueue_webhook.api.quantity import QuantityError, parse_quantity

JSON = Mapping[str, Any]
#: the label Kueue's generator puts on every object it creates (runner/generator: ClassLabel)
CLASS_LABEL = "kueue.x-k8s.io/performance-scheduler-class"
EXIT_CHECK_EVERY_S = 5.0


def _milli(quantity: object) -> int:
    try:
        return parse_quantity(str(quantity)).nanos // 10**6
    except QuantityError:
        return 0


def _condition(obj: JSON, kind: str) -> JSON | None:
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition.get("type") == kind:
            return condition  # type: ignore[no-any-return]
    return None


def _is_true(obj: JSON, kind: str) -> bool:
    condition = _condition(obj, kind)
    return condition is not None and condition.get("status") == "True"


def _timestamp(value: object) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _first_total(entries: object) -> int:
    """``[0].resources[0].total`` in milli-units, as the recorder reads ``flavorsUsage``."""
    if not isinstance(entries, list) or not entries:
        return 0
    resources = entries[0].get("resources") or []
    return _milli(resources[0].get("total", "0")) if resources else 0


@dataclass(frozen=True)
class QueueSample:
    at_ms: float
    name: str
    class_name: str
    reserved_milli: int
    used_milli: int
    quota_milli: int
    pending: int
    reserving: int
    admitted: int
    active: bool


@dataclass
class QueueState:
    first_at_ms: float
    last: QueueSample
    used_milli_ms: float = 0.0
    max_used_milli: int = 0


@dataclass
class WorkloadState:
    class_name: str
    first_at_ms: float
    time_to_admit_ms: float = 0.0
    time_to_finish_ms: float = 0.0
    evictions: int = 0
    admitted: bool = False
    evicted: bool = False
    finished: bool = False


@dataclass
class KueueRecorder:
    """Feed it the benchmark's watch events with the time they arrived (seconds on any clock)."""

    queues: dict[str, QueueState] = field(default_factory=dict)
    workloads: dict[str, WorkloadState] = field(default_factory=dict)

    def record_cluster_queue(self, obj: JSON, *, at: float) -> None:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        quota = 0
        groups = spec.get("resourceGroups") or []
        if groups and groups[0].get("flavors"):
            resources = groups[0]["flavors"][0].get("resources") or []
            if resources:
                quota = _milli(resources[0].get("nominalQuota", "0"))
        sample = QueueSample(
            at_ms=at * 1000,
            name=str(meta.get("name")),
            class_name=str((meta.get("labels") or {}).get(CLASS_LABEL, "")),
            reserved_milli=_first_total(status.get("flavorsReservation")),
            used_milli=_first_total(status.get("flavorsUsage")),
            quota_milli=quota,
            pending=int(status.get("pendingWorkloads") or 0),
            reserving=int(status.get("reservingWorkloads") or 0),
            admitted=int(status.get("admittedWorkloads") or 0),
            active=_is_true(obj, "Active"),
        )
        state = self.queues.get(sample.name)
        if state is None:
            self.queues[sample.name] = state = QueueState(first_at_ms=sample.at_ms, last=sample)
        else:
            if state.last.used_milli > 0:
                state.used_milli_ms += state.last.used_milli * (sample.at_ms - state.last.at_ms)
            state.last = sample
        state.max_used_milli = max(state.max_used_milli, sample.used_milli)

    def expects_more(self) -> bool:
        """Kueue's ``expectMoreEvents``: an Active ClusterQueue still shows pending or reserving Workloads."""
        return any(
            (s.last.pending > 0 or s.last.reserving > 0) and s.last.active for s in self.queues.values()
        )

    def record_workload(self, obj: JSON, *, at: float) -> None:
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")
        at_ms = at * 1000
        state = self.workloads.get(uid)
        if state is None:
            state = WorkloadState(
                class_name=str((meta.get("labels") or {}).get(CLASS_LABEL, "")), first_at_ms=at_ms
            )
            self.workloads[uid] = state
        admitted = _is_true(obj, "Admitted")
        evicted = _is_true(obj, "Evicted")
        finished = _is_true(obj, "Finished")
        if admitted and not state.admitted:
            start, end = state.first_at_ms, at_ms
            created = _timestamp(meta.get("creationTimestamp"))
            condition = _condition(obj, "Admitted")
            transition = _timestamp(condition.get("lastTransitionTime")) if condition else None
            if created is not None and transition is not None and transition >= created:
                start, end = created * 1000, transition * 1000
            state.time_to_admit_ms = end - start
        if evicted and not state.evicted:
            state.evictions += 1
        if finished and not state.finished:
            state.time_to_finish_ms = at_ms - state.first_at_ms
        state.admitted, state.evicted, state.finished = admitted, evicted, finished

    def summary(self) -> dict[str, Any]:
        """Kueue's ``summary.yaml``: per ClusterQueue class and per Workload class (times in ms), plus the
        usage as a percentage of the class's nominal quota."""
        queue_classes: dict[str, dict[str, Any]] = {}
        for state in self.queues.values():
            group = queue_classes.setdefault(
                state.last.class_name,
                {"cpuUsed": 0.0, "nominalQuota": 0, "first": state.first_at_ms, "last": state.last.at_ms},
            )
            group["cpuUsed"] += state.used_milli_ms
            group["nominalQuota"] += state.last.quota_milli
            group["first"] = min(group["first"], state.first_at_ms)
            group["last"] = max(group["last"], state.last.at_ms)
        for group in queue_classes.values():
            span = group.pop("last") - group.pop("first")
            group["cpuAverageUsage"] = int(group["cpuUsed"] / span) if span > 0 else 0
            group["cpuUsed"] = int(group["cpuUsed"])
            group["usagePercent"] = (
                round(100 * group["cpuAverageUsage"] / group["nominalQuota"], 1)
                if group["nominalQuota"]
                else None
            )
        workload_classes: dict[str, dict[str, Any]] = {}
        for wl in self.workloads.values():
            tally = workload_classes.setdefault(
                wl.class_name, {"count": 0, "admit": 0.0, "finish": 0.0, "totalEvictions": 0}
            )
            tally["count"] += 1
            tally["admit"] += wl.time_to_admit_ms
            tally["finish"] += wl.time_to_finish_ms
            tally["totalEvictions"] += wl.evictions
        for tally in workload_classes.values():
            count = tally["count"]
            tally["averageTimeToAdmissionMs"] = int(tally.pop("admit") / count)
            tally["averageTimeToFinishMs"] = int(tally.pop("finish") / count)
        return {"clusterQueueClasses": queue_classes, "workloadClasses": workload_classes}
