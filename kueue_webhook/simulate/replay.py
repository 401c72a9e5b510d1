"""The replay: a scenario's events on a simulated clock, fed to the same scheduler the controller runs.

``kueue_webhook.core.scheduler.SchedulerState`` is driven here exactly as the controller's scheduler loop
drives it:
objects go in through ``apply``, arrivals and finishes through ``upsert_workload``/``finish_workload``, and
cycles run until nothing more can be decided. Only what a cluster's other actors would do is played here,
at once: the status write of an admission lands, an admitted Job runs its runtime and finishes, and an
evicted Workload's owner clears the reservation so it queues again (``requeued``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kueue_webhook.api.objects import Admission, LocalQueue, Meta, Workload
from kueue_webhook.core.scheduler import Admit, Evict, SchedulerState, Wait
from kueue_webhook.core.status import cluster_queue_status
from kueue_webhook.simulate.multicluster import copy_name, worker_routes
from kueue_webhook.simulate.scenario import (
    CONFIG_KINDS,
    ConfigObject,
    Scenario,
    SimulationError,
    gc_paused,
    unresolved,
    with_job_priority,
)

__all__ = [
    "DEFAULT_RESOLUTION",
    "PreemptionRecord",
    "Result",
    "Snapshot",
    "WorkloadRecord",
    "replay",
    "requeued",
]


@dataclass(slots=True)
class WorkloadRecord:
    key: str
    namespace: str
    name: str
    queue: str
    arrival: float
    runtime: float | None
    admitted_at: float | None = None
    finished_at: float | None = None
    cluster_queue: str = ""
    wait: Wait | None = None
    #: 1-based rank in its ClusterQueue's queue at the snapshot (None when not queued there)
    position: int | None = None
    #: bumped at every eviction, so the finish scheduled by an earlier admission is ignored
    epoch: int = 0
    preemptions: int = 0
    #: pods admitted per pod set (fewer than asked under partial admission)
    admitted_counts: tuple[tuple[str, int], ...] = ()
    #: where topology-aware scheduling put each TAS pod set: its ``topologyAssignment`` (v1beta2)
    topology: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    #: MultiKueue: the worker running it, once one admitted it
    worker: str = ""
    #: MultiKueue: quota reserved in the manager's ClusterQueue, copies waiting in the workers'
    dispatching: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PreemptionRecord:
    """One eviction to make room: who went, for whom, and why (Kueue's reason and message)."""

    at: float
    workload: str
    cluster_queue: str
    preemptor: str
    preempting_cluster_queue: str
    reason: str
    message: str


@dataclass(slots=True)
class Snapshot:
    """What ``kubectl get`` would show at one instant."""

    at: float
    workloads: list[WorkloadRecord]
    queues: dict[str, dict[str, Any]]
    state_usage: dict[str, dict[tuple[str, str], int]]


@dataclass(slots=True)
class Result:
    snapshot: Snapshot
    records: dict[str, WorkloadRecord]
    timeline: dict[str, list[tuple[float, dict[tuple[str, str], int]]]]
    end: float
    cycles: int
    decisions: int
    preemptions: list[PreemptionRecord] = field(default_factory=list)


_ARRIVE, _FINISH = 1, 0  # finishes at an instant free quota before arrivals at the same instant queue
_REVISIT = 2  # the core's revisit of parked workloads falls due: only a cycle at that instant
DEFAULT_RESOLUTION = 1.0


def _step(moment: float, resolution: float) -> float:
    """The end of the step ``moment`` falls in (exact instants when ``resolution`` is 0)."""
    if resolution <= 0:
        return moment
    steps = -(-moment // resolution)
    return float(steps * resolution)


def _apply_rank(obj: ConfigObject) -> int:
    return CONFIG_KINDS.index(type(obj))


def _configure(state: SchedulerState, scenario: Scenario) -> None:
    fair = scenario.configuration.fair_sharing
    state.configure_fair_sharing(enabled=fair.enable, strategies=fair.preemption_strategies)
    state.configure_admission_fair_sharing(scenario.configuration.admission_fair_sharing)
    for name, labels in scenario.namespaces.items():
        state.upsert_namespace(name, labels)
    for obj in sorted(scenario.objects, key=_apply_rank):  # stable: input order within a kind
        state.apply(obj)


def requeued(workload: Workload) -> Workload:
    """The Workload once its owner has cleared the reservation after an eviction: no admission and no
    conditions, everything else (priority, admission checks) as it was."""
    return replace(workload, conditions=(), admission=None)


def replay(
    scenario: Scenario,
    *,
    at: float | None = None,
    resolution: float = DEFAULT_RESOLUTION,
    record_timeline: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> Result:
    """Run the scenario on a simulated clock; snapshot the cluster at ``at`` (default: last arrival).

    Events are handled in steps of ``resolution`` seconds: everything that happens within one step
    (arrivals, finishes) is applied, then scheduling cycles run until nothing more can be decided,
    as the controller does with a burst of watch events. Queue order still uses exact arrival times;
    admissions and finishes are stamped with the end of their step. ``0`` handles every instant alone.
    """
    unresolved(scenario)
    with gc_paused():
        return _replay(
            scenario, at=at, resolution=resolution, record_timeline=record_timeline, progress=progress
        )


def _replay(
    scenario: Scenario,
    *,
    at: float | None,
    resolution: float,
    record_timeline: bool,
    progress: Callable[[int, int], None] | None,
) -> Result:
    state = SchedulerState()
    _configure(state, scenario)
    routes = worker_routes(scenario)
    #: MultiKueue copies: copy key -> (the Workload's key, its worker)
    copies: dict[str, tuple[str, str]] = {}
    copy_workloads: dict[str, Workload] = {}
    worker_queues: set[tuple[str, str]] = set()
    classes = scenario.priority_classes
    records: dict[str, WorkloadRecord] = {}
    events: list[tuple[float, int, int, str]] = []
    workloads: dict[str, Workload] = {}
    for seq, submission in enumerate(scenario.submissions):
        workload = with_job_priority(submission, classes)
        key = workload.key
        if key in workloads:
            raise SimulationError(f"two submissions share the Workload name {key}")
        workloads[key] = workload
        records[key] = WorkloadRecord(
            key,
            workload.namespace,
            workload.name,
            workload.queue_name,
            submission.arrival,
            submission.runtime,
        )
        heapq.heappush(events, (_step(submission.arrival, resolution), _ARRIVE, seq, key))
    last_arrival = max((s.arrival for s in scenario.submissions), default=0.0)
    snapshot_at = _step(last_arrival, resolution) if at is None else at
    snapshot: Snapshot | None = None
    timeline: dict[str, list[tuple[float, dict[tuple[str, str], int]]]] = {
        name: [] for name in state.cluster_queue_names()
    }
    cycles = decisions_total = 0
    preemptions: list[PreemptionRecord] = []
    done = 0
    now = end = 0.0
    total = len(scenario.submissions)

    planned_revisit: float | None = None

    def dispatch(key: str) -> None:
        """Kueue's all-at-once dispatcher: a copy in every worker's ClusterQueue (through a LocalQueue of
        the Workload's namespace pointing there, which a worker's own LocalQueue stands for)."""
        record, workload = records[key], workloads[key]
        record.dispatching = routes[record.cluster_queue]
        for worker in record.dispatching:
            queue = f"multikueue-{worker}"
            if (workload.namespace, worker) not in worker_queues:
                worker_queues.add((workload.namespace, worker))
                state.apply(LocalQueue(Meta(queue, workload.namespace), worker))
            meta = replace(workload.meta, name=copy_name(workload.name, worker))
            copy = replace(workload, meta=meta, queue_name=queue, conditions=(), admission=None)
            copies[copy.key] = (key, worker)
            copy_workloads[copy.key] = copy
            state.upsert_workload(copy)

    def withdraw(key: str, *, keep: str = "") -> None:
        """Remove the Workload's copies from the workers (all but ``keep``)."""
        record = records[key]
        for worker in record.dispatching:
            copy_key = f"{record.namespace}/{copy_name(record.name, worker)}"
            if copy_key != keep and copies.pop(copy_key, None) is not None:
                state.delete_workload(copy_key)
        record.dispatching = ()

    def on_worker(decision: Admit | Evict | Wait, key: str, worker: str, moment: float) -> None:
        owner = records[key]
        if isinstance(decision, Admit):
            state.confirm(decision.workload)
            withdraw(key, keep=decision.workload)
            owner.worker, owner.admitted_at = worker, moment
            if owner.runtime is not None:
                finish = _step(moment + owner.runtime, resolution)
                heapq.heappush(events, (finish, _FINISH, owner.epoch, key))
        elif isinstance(decision, Evict) and owner.worker == worker:
            # preempted on the worker running it: the run is lost and every worker is asked again
            copies.pop(decision.workload, None)
            state.delete_workload(decision.workload)
            owner.worker, owner.admitted_at = "", None
            owner.epoch += 1
            owner.preemptions += 1
            dispatch(key)
        elif isinstance(decision, Evict):  # a copy still waiting: it queues there again
            state.upsert_workload(requeued(copy_workloads[decision.workload]))

    def settle(moment: float) -> None:
        nonlocal cycles, decisions_total, planned_revisit
        while state.has_work(moment):
            state.fairness.now = moment  # admission fair sharing's clock: the scenario's seconds
            decisions = state.cycle(moment)
            cycles += 1
            decisions_total += len(decisions)
            for decision in _workers_in_config_order(decisions, copies, routes, records):
                origin = copies.get(decision.workload)
                if origin is not None:  # a copy on a worker: the first to be admitted runs the Workload
                    on_worker(decision, *origin, moment)
                    continue
                record = records.get(decision.workload)
                if record is None:
                    continue
                if isinstance(decision, Admit) and decision.cluster_queue in routes:
                    state.confirm(decision.workload)  # quota reserved here; a worker must admit it
                    record.cluster_queue = decision.cluster_queue
                    record.admitted_counts = _counts(decision.admission)
                    record.wait = None
                    dispatch(decision.workload)
                elif isinstance(decision, Admit):
                    state.confirm(decision.workload)  # the simulated status write lands at once
                    record.admitted_at = moment
                    record.cluster_queue = decision.cluster_queue
                    record.admitted_counts = _counts(decision.admission)
                    record.topology = _placements(decision.admission)
                    record.wait = None
                    runtime = record.runtime
                    if runtime is not None:
                        finish = _step(moment + runtime, resolution)
                        heapq.heappush(events, (finish, _FINISH, record.epoch, decision.workload))
                elif isinstance(decision, Evict):
                    preemptions.append(
                        PreemptionRecord(
                            moment,
                            decision.workload,
                            decision.cluster_queue,
                            decision.preemptor or "",
                            decision.preempting_cluster_queue,
                            decision.preemption_reason or decision.reason,
                            decision.message,
                        )
                    )
                    # simulate plays the owner: the Job stops at once and the reservation is cleared,
                    # which releases the quota and queues the workload again; it restarts from scratch
                    record.admitted_at = None
                    record.epoch += 1
                    record.preemptions += 1
                    withdraw(decision.workload)  # its worker stops it too
                    worker_copy = f"{record.namespace}/{copy_name(record.name, record.worker)}"
                    if record.worker and copies.pop(worker_copy, None) is not None:
                        state.delete_workload(worker_copy)
                    record.worker = ""
                    state.upsert_workload(requeued(workloads[decision.workload]))
                else:
                    record.wait = decision
                    record.cluster_queue = decision.cluster_queue
        due = state.next_revisit()
        if due is not None and due != planned_revisit:
            planned_revisit = due
            heapq.heappush(events, (_step(due, resolution), _REVISIT, 0, ""))
        if record_timeline:
            for name in timeline:
                timeline[name].append((moment, dict(state.ledger.usage(name))))

    settle(0.0)
    while events or snapshot is None:
        if snapshot is None and (not events or events[0][0] > snapshot_at):
            snapshot = _snapshot(state, records, snapshot_at)
            if not events:
                break
        now = events[0][0]
        while events and events[0][0] == now:
            _, kind, epoch, key = heapq.heappop(events)
            if kind != _REVISIT:
                end = now  # revisits only re-word pending messages: the replay ends with its last event
            if kind == _ARRIVE:
                workload = workloads[key]
                state.upsert_workload(workload)
                if workload.has_quota_reservation and workload.admission is not None:
                    record = records[key]  # already admitted when the replay starts (a restart)
                    record.admitted_at, record.cluster_queue = now, workload.admission.cluster_queue
                    record.admitted_counts = _counts(workload.admission)
                    record.topology = _placements(workload.admission)
                    if record.runtime is not None:
                        heapq.heappush(events, (_step(now + record.runtime, resolution), _FINISH, 0, key))
                done += 1
                if progress is not None and (done % 1000 == 0 or done == total):
                    progress(done, total)
            elif kind == _REVISIT:
                continue  # the cycle below makes it
            elif epoch == records[key].epoch:  # a finish planned before an eviction never happens
                record = records[key]
                record.finished_at = now
                state.finish_workload(key)
                if record.worker:  # the worker's copy finishes with it
                    worker_copy = f"{record.namespace}/{copy_name(record.name, record.worker)}"
                    if copies.pop(worker_copy, None) is not None:
                        state.finish_workload(worker_copy)
        settle(now)
    assert snapshot is not None
    return Result(snapshot, records, timeline, end, cycles, decisions_total, preemptions)


def _snapshot(state: SchedulerState, records: Mapping[str, WorkloadRecord], at: float) -> Snapshot:
    positions: dict[str, int] = {
        info.key: rank
        for name in state.cluster_queue_names()
        for rank, info in enumerate(state.pending_in(name), start=1)
    }
    rows = []
    for record in records.values():
        if record.arrival > at:
            continue
        rows.append(
            WorkloadRecord(
                record.key,
                record.namespace,
                record.name,
                record.queue,
                record.arrival,
                record.runtime,
                record.admitted_at,
                record.finished_at,
                record.cluster_queue,
                _latest_wait(state, record.wait),
                positions.get(record.key),
                admitted_counts=record.admitted_counts,
                topology=record.topology,
                worker=record.worker,
                dispatching=record.dispatching if record.admitted_at is None else (),
            )
        )
    rows.sort(key=lambda r: (r.arrival, r.namespace, r.name))
    queues = {name: cluster_queue_status(state, name) for name in state.cluster_queue_names()}
    usage = {name: dict(state.ledger.usage(name)) for name in state.cluster_queue_names()}
    return Snapshot(at, rows, queues, usage)


def _latest_wait(state: SchedulerState, wait: Wait | None) -> Wait | None:
    """The wait as the workload would show it now: a revisit may have restated it without a decision."""
    if wait is None:
        return None
    latest = state.last_wait(wait.workload)
    if latest is None or latest == (wait.reason, wait.message):
        return wait
    return replace(wait, reason=latest[0], message=latest[1])


def _placements(admission: Admission) -> tuple[tuple[str, Mapping[str, Any]], ...]:
    return tuple(
        (assignment.name, assignment.topology_assignment)
        for assignment in admission.pod_set_assignments
        if assignment.topology_assignment is not None
    )


def _workers_in_config_order(
    decisions: list[Admit | Evict | Wait],
    copies: Mapping[str, tuple[str, str]],
    routes: Mapping[str, tuple[str, ...]],
    records: Mapping[str, WorkloadRecord],
) -> list[Admit | Evict | Wait]:
    """The cycle's decisions, those about copies on workers last and in their MultiKueueConfig's order, so
    that when several workers could take a Workload at the same moment the most preferred one does."""
    if not copies:
        return decisions

    def rank(decision: Admit | Evict | Wait) -> tuple[str, int]:
        key, worker = copies[decision.workload]
        return key, routes[records[key].cluster_queue].index(worker)

    own = [d for d in decisions if d.workload not in copies]
    return own + sorted((d for d in decisions if d.workload in copies), key=rank)


def _counts(admission: Admission) -> tuple[tuple[str, int], ...]:
    return tuple((assignment.name, assignment.count) for assignment in admission.pod_set_assignments)
