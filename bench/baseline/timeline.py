"""What happened to every Workload, in the order the API server committed it, and the quota it held.

The recorder sees Workloads through one cluster-wide watch, and a watch delivers events in resourceVersion
order, which is the order the API server committed the writes. So the sequence of transitions recorded here
is the true order of reservations and releases, independent of how late an event reached us: checking that
no ClusterQueue or cohort ever held more than its quota allows is then exact arithmetic over this sequence,
not a sampling of status fields. Wall-clock stamps (seconds since the run began, taken on receipt) serve
only the durations (time to admission, usage); the order comes from ``seq``.

A Workload holds quota from ``QuotaReserved=True`` until ``Finished=True`` or until its reservation is
cleared (``QuotaReserved=False``, as its owner does after an eviction) or it is deleted: the moments
Kueue's cache adds and removes its usage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from kueue_webhook.api.quantity import QuantityError, parse_quantity

JSON = dict[str, Any]
MILLI = 10**6  # nanos per milli-unit


class Change(Enum):
    RESERVED = "reserved"  # started holding quota
    RELEASED = "released"  # stopped holding quota
    ADMITTED = "admitted"
    UNADMITTED = "unadmitted"  # Admitted went back to False (eviction)
    EVICTED = "evicted"
    FINISHED = "finished"


@dataclass(frozen=True)
class Transition:
    seq: int
    at: float
    workload: str  # "namespace/name"
    change: Change
    cluster_queue: str
    cpu_milli: int


@dataclass
class WorkloadRecord:
    """The life of one Workload, as far as the figures need it."""

    class_name: str
    cluster_queue: str
    created_at: float | None = None
    admitted_at: float | None = None  # the last admission (Kueue's recorder keeps the last one too)
    finished_at: float | None = None
    evictions: int = 0
    # latest observed state
    reserved: bool = False
    admitted: bool = False
    evicted: bool = False
    finished: bool = False
    held_cpu_milli: int = 0
    holding: bool = False


def condition_true(obj: Mapping[str, Any], kind: str) -> bool:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind:
            return bool(cond.get("status") == "True")
    return False


def cpu_milli_of(obj: Mapping[str, Any]) -> int:
    """CPU the Workload holds: the admission's resourceUsage when present, else requests x count."""
    status = obj.get("status") or {}
    total = 0
    assignments = (status.get("admission") or {}).get("podSetAssignments") or ()
    try:
        if assignments:
            for assignment in assignments:
                usage = (assignment.get("resourceUsage") or {}).get("cpu")
                if usage is not None:
                    total += parse_quantity(usage).nanos
            return total // MILLI
        for pod_set in (obj.get("spec") or {}).get("podSets") or ():
            count = int(pod_set.get("count", 1))
            for container in ((pod_set.get("template") or {}).get("spec") or {}).get("containers") or ():
                resources = container.get("resources") or {}
                request = (resources.get("requests") or {}).get("cpu") or (resources.get("limits") or {}).get(
                    "cpu"
                )
                if request is not None:
                    total += parse_quantity(request).nanos * count
    except QuantityError as exc:
        meta = obj.get("metadata") or {}
        raise ValueError(
            f"Workload {meta.get('namespace')}/{meta.get('name')}: bad cpu quantity: {exc}"
        ) from exc
    return total // MILLI


@dataclass
class Timeline:
    """Workload records plus the ordered transitions; fed by the watcher and the creator."""

    class_label: str
    records: dict[str, WorkloadRecord] = field(default_factory=dict)
    transitions: list[Transition] = field(default_factory=list)
    _seq: int = 0

    def created(self, key: str, *, class_name: str, cluster_queue: str, at: float) -> None:
        record = self.records.setdefault(key, WorkloadRecord(class_name, cluster_queue))
        record.created_at = at

    def observe(self, obj: Mapping[str, Any], *, at: float, deleted: bool = False) -> list[Transition]:
        """Diff one observed state of a Workload against the previous one; return the new transitions."""
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        record = self.records.get(key)
        if record is None:
            record = WorkloadRecord(
                str((meta.get("labels") or {}).get(self.class_label, "")), str(meta.get("namespace"))
            )
            self.records[key] = record
        admission = (obj.get("status") or {}).get("admission") or {}
        if admission.get("clusterQueue"):
            record.cluster_queue = str(admission["clusterQueue"])
        reserved = condition_true(obj, "QuotaReserved") and not deleted
        admitted = condition_true(obj, "Admitted") and not deleted
        evicted = condition_true(obj, "Evicted") and not deleted
        finished = condition_true(obj, "Finished")
        holding = reserved and not finished
        out: list[Transition] = []

        def emit(change: Change, cpu: int = 0) -> None:
            self._seq += 1
            transition = Transition(self._seq, at, key, change, record.cluster_queue, cpu)
            self.transitions.append(transition)
            out.append(transition)

        if holding and not record.holding:
            record.held_cpu_milli = cpu_milli_of(obj)
            emit(Change.RESERVED, record.held_cpu_milli)
        if admitted and not record.admitted:
            record.admitted_at = at
            emit(Change.ADMITTED)
        if evicted and not record.evicted:
            record.evictions += 1
            emit(Change.EVICTED)
        if record.admitted and not admitted:
            emit(Change.UNADMITTED)
        if finished and not record.finished:
            record.finished_at = at
            emit(Change.FINISHED)
        if record.holding and not holding:
            emit(Change.RELEASED, record.held_cpu_milli)
        record.reserved, record.admitted, record.evicted = reserved, admitted, evicted
        record.finished, record.holding = finished, holding
        return out


@dataclass(frozen=True)
class QuotaLimits:
    """What quota allows at any instant: per ClusterQueue (nominal + borrowing limit) and per cohort."""

    cluster_queue: Mapping[str, int]  # milli-cpu
    cohort_of: Mapping[str, str]
    cohort: Mapping[str, int]  # milli-cpu: the sum of its members' nominal quota (nothing is lent out)


@dataclass(frozen=True)
class Violation:
    seq: int
    at: float
    scope: str  # "ClusterQueue <name>" or "cohort <name>"
    used_milli: int
    limit_milli: int
    #: who held the quota at that instant (workload, milli-cpu), so the cause can be looked up
    holders: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class OverAdmissionReport:
    max_cluster_queue: dict[str, int]
    max_cohort: dict[str, int]
    violations: list[Violation]
    held_at_end: dict[str, int]  # quota still held when the timeline ends, per ClusterQueue


def check_over_admission(transitions: Sequence[Transition], limits: QuotaLimits) -> OverAdmissionReport:
    """Replay reservations and releases in commit order; every instant must stay within ``limits``."""
    queue_usage: dict[str, int] = dict.fromkeys(limits.cluster_queue, 0)
    cohort_usage: dict[str, int] = dict.fromkeys(limits.cohort, 0)
    held: dict[str, dict[str, int]] = {}  # scope -> workload -> milli-cpu
    max_queue = dict(queue_usage)
    max_cohort = dict(cohort_usage)
    violations: list[Violation] = []
    for transition in sorted(transitions, key=lambda t: t.seq):
        if transition.change not in (Change.RESERVED, Change.RELEASED):
            continue
        queue = transition.cluster_queue
        cohort = limits.cohort_of.get(queue)
        delta = transition.cpu_milli if transition.change is Change.RESERVED else -transition.cpu_milli
        queue_usage[queue] = queue_usage.get(queue, 0) + delta
        if cohort is not None:
            cohort_usage[cohort] = cohort_usage.get(cohort, 0) + delta
        for scope in (f"ClusterQueue {queue}", f"cohort {cohort}" if cohort is not None else None):
            if scope is None:
                continue
            holders = held.setdefault(scope, {})
            if delta > 0:
                holders[transition.workload] = transition.cpu_milli
            else:
                holders.pop(transition.workload, None)
        if delta <= 0:
            continue
        checks = [(f"ClusterQueue {queue}", queue_usage[queue], limits.cluster_queue.get(queue, 0))]
        max_queue[queue] = max(max_queue.get(queue, 0), queue_usage[queue])
        if cohort is not None:
            max_cohort[cohort] = max(max_cohort.get(cohort, 0), cohort_usage[cohort])
            checks.append((f"cohort {cohort}", cohort_usage[cohort], limits.cohort.get(cohort, 0)))
        for scope, used, limit in checks:
            if used > limit:
                snapshot = tuple(sorted(held[scope].items())) if len(violations) < 20 else ()
                violations.append(Violation(transition.seq, transition.at, scope, used, limit, snapshot))
    return OverAdmissionReport(
        max_queue, max_cohort, violations, {q: used for q, used in queue_usage.items() if used}
    )
