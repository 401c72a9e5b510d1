"""``kueue-webhook simulate FILE...``: replay manifests and a job trace through the scheduler, no cluster.

The input is ordinary multi-document YAML, the same manifests ``kubectl apply`` takes: Namespaces (their
labels feed ClusterQueue ``namespaceSelector``s), ResourceFlavors, Cohorts, ClusterQueues, LocalQueues,
WorkloadPriorityClasses, and the trace itself as ``batch/v1`` Jobs and/or ``kueue.x-k8s.io`` Workloads.
Two annotations on a Job (or Workload) place it on the simulated clock:

``simulate.kueue-webhook/arrival``
    when it is submitted, as an offset from the start of the replay (``30s``, ``2m``, ``1h30m``,
    ``500ms``, or plain seconds); default ``0s``.
``simulate.kueue-webhook/runtime``
    how long it runs once admitted, after which it finishes and releases its quota; default: it never
    finishes within the replay.

Every object goes through the same parsing and validation as on a cluster and every decision through
the same ``webhook.core`` scheduler the controller runs, so what ``simulate`` prints is what the cluster
would do (admissions, pending reasons and messages, queue positions). Events at the same instant are
applied together, then scheduling cycles run until nothing more can be decided, exactly as the
controller reacts to a burst of watch events.

The report shows, at ``--at`` (default: when the last Job has arrived), a ``kubectl get workloads``-style
table with the pending message of each waiting workload, and per ClusterQueue the admitted and pending
counts, usage against nominal quota per flavor and resource, and the wait-time p50/p95 over the whole
replay. ``--output json`` prints the same for machines; ``--plot FILE.png`` draws usage over time per
ClusterQueue (needs the ``plot`` extra: matplotlib).

Preemption is simulated end to end: when the scheduler evicts a workload to make room, simulate plays
the owner at once (the Job stops, the reservation is cleared, the workload queues again and, when
admitted again, runs its whole runtime from the start). The report lists every preemption: when, who
was evicted from which ClusterQueue, for which workload, and Kueue's reason (``InClusterQueue``,
``InCohortReclamation``, ``InCohortReclaimWhileBorrowing``, ``InCohortFairSharing``, or a drain's
``ClusterQueueStopped``/``LocalQueueStopped``); the plot marks them. A ``kueue-webhook-config`` ConfigMap
in the input turns on what it turns on in a cluster (``fairSharing``), and the report then shows each
ClusterQueue's weighted share. Admission checks are assumed to pass at once (nobody approves on a
simulated clock), and ``scheduling.k8s.io`` PriorityClasses give Jobs their pod priority.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import heapq
import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

import yaml

from webhook.api.config import Configuration, ConfigurationErrors, parse_configuration
from webhook.api.errors import FieldError
from webhook.api.jobs import (
    JOB_UID_LABEL,
    PRIORITY_CLASS_LABEL,
    job_pod_sets,
    job_queue_name,
    workload_name,
)
from webhook.api.objects import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    Meta,
    ResourceFlavor,
    Workload,
    WorkloadPriorityClass,
    parse_object,
    parse_workload,
)
from webhook.core.model import amount_quantity
from webhook.core.scheduler import Admit, Evict, SchedulerState, Wait
from webhook.core.status import cluster_queue_status

__all__ = [
    "Scenario",
    "SimulationError",
    "add_arguments",
    "load_scenario",
    "parse_duration",
    "replay",
    "run",
    "scenario_from_documents",
]

ARRIVAL_ANNOTATION = "simulate.kueue-webhook/arrival"
#: the controller's ConfigMap; in the input it switches on what the cluster's would (fair sharing)
CONFIGMAP_NAME = "kueue-webhook-config"
RUNTIME_ANNOTATION = "simulate.kueue-webhook/runtime"
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
_EPOCH_SECONDS = EPOCH.timestamp()

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|µs|ns)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


class SimulationError(ValueError):
    """Bad input: the message names the file, the document and the field."""


def parse_duration(text: Any) -> float:
    """Seconds in a Go-style duration (``1h30m``, ``2m``, ``500ms``) or a plain number of seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"{text!r}: must not be negative")
        return float(text)
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{text!r}: expected a duration like 30s, 2m or 1h30m")
    value = text.strip()
    head = value[:-1]
    if value[-1] == "s" and head.replace(".", "", 1).isdigit():  # the common ``12.5s``, without regex
        return float(head)
    try:
        seconds = float(value)
    except ValueError:
        pos, seconds = 0, 0.0
        for match in _DURATION_PART.finditer(value):
            if match.start() != pos:
                break
            seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
            pos = match.end()
        if pos != len(value) or pos == 0:
            raise ValueError(f"{text!r}: expected a duration like 30s, 2m or 1h30m") from None
    if seconds < 0:
        raise ValueError(f"{text!r}: must not be negative")
    return seconds


def _timestamp(offset: float) -> str:
    moment = EPOCH + timedelta(seconds=offset)
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _format_offset(seconds: float) -> str:
    """Compact ``1h2m3s`` for reports."""
    if seconds < 60:
        return f"{seconds:g}s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    out = f"{hours}h" if hours else ""
    out += f"{minutes}m" if minutes or hours else ""
    return out + (f"{secs}s" if secs else "")


# -- the scenario ---------------------------------------------------------------------------------


@dataclass(slots=True)
class Submission:
    """One Workload of the trace, with when it arrives and how long it runs once admitted."""

    workload: Workload
    arrival: float
    runtime: float | None
    #: set when the Workload's priority must be resolved from a WorkloadPriorityClass at arrival
    priority_class: str = ""
    #: the pod template's ``priorityClassName`` (a scheduling.k8s.io PriorityClass), used when no
    #: WorkloadPriorityClass is named, as Kueue does
    pod_priority_class: str = ""


@dataclass(slots=True)
class Scenario:
    namespaces: dict[str, Mapping[str, str]] = field(default_factory=dict)
    flavors: list[ResourceFlavor] = field(default_factory=list)
    cohorts: list[Cohort] = field(default_factory=list)
    cluster_queues: list[ClusterQueue] = field(default_factory=list)
    local_queues: list[LocalQueue] = field(default_factory=list)
    priority_classes: list[WorkloadPriorityClass] = field(default_factory=list)
    #: ``scheduling.k8s.io`` PriorityClasses: name -> value
    pod_priority_classes: dict[str, int] = field(default_factory=dict)
    submissions: list[Submission] = field(default_factory=list)
    #: the ConfigMap ``kueue-webhook-config`` when the input has one (fair sharing and its strategies)
    configuration: Configuration = field(default_factory=Configuration)


class _Where:
    """``file: document N (Kind/name)`` for error messages, spelled out only when an error needs it."""

    __slots__ = ("doc", "index", "source")

    def __init__(self, source: str, index: int, doc: Mapping[str, Any]) -> None:
        self.source, self.index, self.doc = source, index, doc

    def __str__(self) -> str:
        doc = self.doc
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
        name = meta.get("name") if isinstance(meta, Mapping) else None
        kind = doc.get("kind") or "document"
        return f"{self.source}: document {self.index + 1} ({kind}{'/' + str(name) if name else ''})"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def _errors(where: _Where, errors: Sequence[FieldError]) -> SimulationError:
    return SimulationError(f"{where}: " + "; ".join(str(e) for e in errors))


def _timing(where: _Where, meta: Mapping[str, Any]) -> tuple[float, float | None]:
    annotations = meta.get("annotations") or {}
    try:
        arrival = parse_duration(annotations.get(ARRIVAL_ANNOTATION, 0))
    except ValueError as exc:
        raise SimulationError(f"{where}: metadata.annotations[{ARRIVAL_ANNOTATION}]: {exc}") from None
    runtime: float | None = None
    if RUNTIME_ANNOTATION in annotations:
        try:
            runtime = parse_duration(annotations[RUNTIME_ANNOTATION])
        except ValueError as exc:
            raise SimulationError(f"{where}: metadata.annotations[{RUNTIME_ANNOTATION}]: {exc}") from None
    return arrival, runtime


def _job_submission(where: _Where, job: Mapping[str, Any], index: int) -> Submission:
    meta = job.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("name"):
        raise SimulationError(f"{where}: metadata.name: Required value")
    queue = job_queue_name(job)
    if queue is None:
        raise SimulationError(
            f"{where}: metadata.labels[kueue.x-k8s.io/queue-name]: Required value: "
            "a Job without a queue is not managed and would run outside any quota"
        )
    pod_sets = job_pod_sets(job)
    if isinstance(pod_sets, list):
        raise _errors(where, pod_sets)
    arrival, runtime = _timing(where, meta)
    name = str(meta["name"])
    uid = str(meta.get("uid") or f"simulated-{index}")
    namespace = str(meta.get("namespace") or "default")
    labels = meta.get("labels") or {}
    workload = Workload(
        meta=Meta(
            name=workload_name(name, uid),
            namespace=namespace,
            uid=uid,
            creation_timestamp=_timestamp(arrival),
            created_at=_EPOCH_SECONDS + arrival,
            labels={**labels, JOB_UID_LABEL: uid},
        ),
        pod_sets=pod_sets,
        queue_name=queue,
    )
    pod_spec = (job.get("spec") or {}).get("template", {}).get("spec") or {}
    pod_class = pod_spec.get("priorityClassName") if isinstance(pod_spec, Mapping) else None
    named = PRIORITY_CLASS_LABEL in labels or pod_class
    if isinstance(pod_spec, Mapping) and isinstance(pod_spec.get("priority"), int) and not named:
        workload = _with_priority(workload, pod_spec["priority"])
    return Submission(workload, arrival, runtime, pod_priority_class=str(pod_class or ""))


def _workload_submission(where: _Where, doc: Mapping[str, Any]) -> Submission:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    arrival, runtime = _timing(where, meta)
    stamped = dict(doc)
    stamped_meta = dict(meta)
    stamped_meta.setdefault("namespace", "default")
    stamped_meta["creationTimestamp"] = _timestamp(arrival)
    stamped["metadata"] = stamped_meta
    parsed = parse_workload(stamped)
    if isinstance(parsed, list):
        raise _errors(where, parsed)
    meta = dataclasses.replace(parsed.meta, created_at=_EPOCH_SECONDS + arrival)
    return Submission(dataclasses.replace(parsed, meta=meta), arrival, runtime)


def add_document(scenario: Scenario, doc: Any, *, source: str, index: int) -> None:
    """Add one YAML document to the scenario; raises SimulationError naming the document and field."""
    if doc is None:
        return
    if not isinstance(doc, Mapping):
        raise SimulationError(f"{source}: document {index + 1}: expected a Kubernetes object (a mapping)")
    where = _Where(source, index, doc)
    kind = doc.get("kind")
    if kind in ("List", "NamespaceList") and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            add_document(scenario, item, source=source, index=index)
        return
    if kind == "Namespace":
        meta = doc.get("metadata") or {}
        if not meta.get("name"):
            raise SimulationError(f"{where}: metadata.name: Required value")
        scenario.namespaces[str(meta["name"])] = dict(meta.get("labels") or {})
        return
    if kind == "Job":
        scenario.submissions.append(_job_submission(where, doc, index))
        return
    if kind == "PriorityClass" and str(doc.get("apiVersion", "")).startswith("scheduling.k8s.io/"):
        meta = doc.get("metadata") or {}
        value = doc.get("value")
        if not meta.get("name"):
            raise SimulationError(f"{where}: metadata.name: Required value")
        if not isinstance(value, int) or isinstance(value, bool):
            raise SimulationError(f"{where}: value: Required value: a 32-bit integer")
        scenario.pod_priority_classes[str(meta["name"])] = value
        return
    if kind == "ConfigMap":
        meta = doc.get("metadata") or {}
        if meta.get("name") != CONFIGMAP_NAME:
            return  # someone else's ConfigMap: nothing to simulate
        text = (doc.get("data") or {}).get("config.yaml")
        parsed_config = parse_configuration(text)
        if isinstance(parsed_config, ConfigurationErrors):
            raise SimulationError(f"{where}: data[config.yaml]: {parsed_config}")
        scenario.configuration = parsed_config
        return
    if kind == "Workload":
        scenario.submissions.append(_workload_submission(where, doc))
        return
    parsed = parse_object(doc)
    if isinstance(parsed, list):
        raise _errors(where, parsed)
    if isinstance(parsed, ResourceFlavor):
        scenario.flavors.append(parsed)
    elif isinstance(parsed, Cohort):
        scenario.cohorts.append(parsed)
    elif isinstance(parsed, ClusterQueue):
        scenario.cluster_queues.append(parsed)
    elif isinstance(parsed, LocalQueue):
        scenario.local_queues.append(parsed)
    elif isinstance(parsed, WorkloadPriorityClass):
        scenario.priority_classes.append(parsed)


class _GcPaused:
    """Pause the cyclic garbage collector: loading and replaying allocate millions of small objects
    that live until the end and hold no cycles, so its repeated scans would find nothing."""

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.was_enabled:
            gc.enable()


def scenario_from_documents(documents: Iterable[tuple[str, int, Any]]) -> Scenario:
    """A scenario from ``(source, index, document)`` triples; raises SimulationError at the first bad one."""
    scenario = Scenario()
    with _GcPaused():
        for source, index, doc in documents:
            add_document(scenario, doc, source=source, index=index)
    return scenario


def load_scenario(paths: Iterable[str | Path]) -> Scenario:
    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    def documents() -> Iterable[tuple[str, int, Any]]:
        for path in paths:
            source = str(path)
            try:
                text = Path(path).read_text(encoding="utf-8")
            except OSError as exc:
                raise SimulationError(f"{source}: {exc.strerror or exc}") from None
            try:
                loaded = list(yaml.load_all(text, Loader=loader))
            except yaml.YAMLError as exc:
                raise SimulationError(f"{source}: not valid YAML: {exc}") from None
            for index, doc in enumerate(loaded):
                yield source, index, doc

    return scenario_from_documents(documents())


# -- the replay -----------------------------------------------------------------------------------


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
DEFAULT_RESOLUTION = 1.0


def _step(moment: float, resolution: float) -> float:
    """The end of the step ``moment`` falls in (exact instants when ``resolution`` is 0)."""
    if resolution <= 0:
        return moment
    steps = -(-moment // resolution)
    return float(steps * resolution)


def _apply_config(state: SchedulerState, scenario: Scenario) -> None:
    fair = scenario.configuration.fair_sharing
    state.configure_fair_sharing(enabled=fair.enable, strategies=fair.preemption_strategies)
    for name, labels in scenario.namespaces.items():
        state.upsert_namespace(name, labels)
    for priority_class in scenario.priority_classes:
        state.upsert_priority_class(priority_class)
    for flavor in scenario.flavors:
        state.upsert_resource_flavor(flavor)
    for cohort in scenario.cohorts:
        state.upsert_cohort(cohort)
    for queue in scenario.cluster_queues:
        state.upsert_cluster_queue(queue)
    for local_queue in scenario.local_queues:
        state.upsert_local_queue(local_queue)


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
    # A replay allocates millions of small objects that live until it ends; the cyclic garbage
    # collector would rescan them over and over for nothing (there are no cycles to find).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _replay(
            scenario, at=at, resolution=resolution, record_timeline=record_timeline, progress=progress
        )
    finally:
        if collecting:
            gc.enable()


def _replay(
    scenario: Scenario,
    *,
    at: float | None,
    resolution: float,
    record_timeline: bool,
    progress: Callable[[int, int], None] | None,
) -> Result:
    state = SchedulerState()
    _apply_config(state, scenario)
    for submission in scenario.submissions:
        if submission.workload.priority is None and not submission.priority_class:
            labels = submission.workload.meta.labels
            wpc = labels.get("kueue.x-k8s.io/priority-class")
            submission.priority_class = wpc or ""
            if not wpc and submission.pod_priority_class:
                value = scenario.pod_priority_classes.get(submission.pod_priority_class, 0)
                submission.workload = _with_priority(submission.workload, value)
    priorities = {pc.name: pc.value for pc in scenario.priority_classes}
    records: dict[str, WorkloadRecord] = {}
    events: list[tuple[float, int, int, str]] = []
    by_key: dict[str, Submission] = {}
    for seq, submission in enumerate(scenario.submissions):
        workload = submission.workload
        key = workload.key
        if key in by_key:
            raise SimulationError(f"two submissions share the Workload name {key}")
        by_key[key] = submission
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
    now = 0.0
    total = len(scenario.submissions)

    def settle(moment: float) -> None:
        nonlocal cycles, decisions_total
        while state.has_work():
            decisions = state.cycle()
            cycles += 1
            decisions_total += len(decisions)
            for decision in decisions:
                record = records.get(decision.workload)
                if record is None:
                    continue
                if isinstance(decision, Admit):
                    state.confirm(decision.workload)  # the simulated status write lands at once
                    record.admitted_at = moment
                    record.cluster_queue = decision.cluster_queue
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
                    state.upsert_workload(_pending_again(by_key[decision.workload], priorities))
                else:
                    record.wait = decision
                    record.cluster_queue = decision.cluster_queue
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
            submission = by_key[key]
            if kind == _ARRIVE:
                workload = submission.workload
                if submission.priority_class:
                    workload = _with_priority(workload, priorities.get(submission.priority_class, 0))
                state.upsert_workload(workload)
                if workload.has_quota_reservation and workload.admission is not None:
                    record = records[key]  # already admitted when the replay starts (a restart)
                    record.admitted_at, record.cluster_queue = now, workload.admission.cluster_queue
                    if record.runtime is not None:
                        heapq.heappush(events, (_step(now + record.runtime, resolution), _FINISH, 0, key))
                done += 1
                if progress is not None and (done % 1000 == 0 or done == total):
                    progress(done, total)
            elif epoch == records[key].epoch:  # a finish planned before an eviction never happens
                records[key].finished_at = now
                state.finish_workload(key)
        settle(now)
    assert snapshot is not None
    return Result(snapshot, records, timeline, now, cycles, decisions_total, preemptions)


def _pending_again(submission: Submission, priorities: Mapping[str, int]) -> Workload:
    """The Workload of ``submission`` after its owner cleared the reservation: no admission, no
    conditions, the same priority it was admitted with."""
    workload = dataclasses.replace(submission.workload, conditions=(), admission=None)
    if submission.priority_class:
        workload = _with_priority(workload, priorities.get(submission.priority_class, 0))
    return workload


def _with_priority(workload: Workload, priority: int) -> Workload:
    return Workload(
        meta=workload.meta,
        pod_sets=workload.pod_sets,
        queue_name=workload.queue_name,
        priority=priority,
        priority_class_name=workload.priority_class_name,
        priority_class_group=workload.priority_class_group,
        active=workload.active,
        conditions=workload.conditions,
        admission=workload.admission,
    )


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
                record.wait,
                positions.get(record.key),
            )
        )
    rows.sort(key=lambda r: (r.arrival, r.namespace, r.name))
    queues = {name: cluster_queue_status(state, name) for name in state.cluster_queue_names()}
    usage = {name: dict(state.ledger.usage(name)) for name in state.cluster_queue_names()}
    return Snapshot(at, rows, queues, usage)


# -- reporting ------------------------------------------------------------------------------------


def _percentile(values: Sequence[float], fraction: float) -> float | None:
    """Nearest-rank percentile (no interpolation: every reported wait is one that happened)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-int(fraction * 100) * len(ordered) // 100))
    return ordered[min(rank, len(ordered)) - 1]


def _queue_summary(result: Result, scenario: Scenario) -> list[dict[str, Any]]:
    snapshot = result.snapshot
    out = []
    for queue in scenario.cluster_queues:
        name = queue.name
        waits = [
            r.admitted_at - r.arrival
            for r in result.records.values()
            if r.admitted_at is not None and r.cluster_queue == name
        ]
        used = snapshot.state_usage.get(name, {})
        usage = []
        for group in queue.resource_groups:
            for flavor in group.flavors:
                for quota in flavor.resources:
                    amount = used.get((flavor.name, quota.name), 0)
                    usage.append(
                        {
                            "flavor": flavor.name,
                            "resource": quota.name,
                            "used": amount_quantity(quota.name, amount).canonical(),
                            "nominal": quota.nominal.canonical(),
                            "percent": round(100 * amount / quota.nominal.nanos, 1)
                            if quota.nominal.nanos
                            else None,
                        }
                    )
        status = snapshot.queues.get(name, {})
        finished = sum(
            1
            for r in snapshot.workloads
            if r.cluster_queue == name and r.finished_at is not None and r.finished_at <= snapshot.at
        )
        out.append(
            {
                "name": name,
                "cohort": queue.cohort_name,
                "queueingStrategy": queue.queueing_strategy,
                "admitted": status.get("admittedWorkloads", 0),
                "pending": status.get("pendingWorkloads", 0),
                "finished": finished,
                "preempted": sum(
                    1 for p in result.preemptions if p.cluster_queue == name and p.at <= snapshot.at
                ),
                "usage": usage,
                "waitSeconds": {
                    "p50": _percentile(waits, 0.5),
                    "p95": _percentile(waits, 0.95),
                    "max": max(waits) if waits else None,
                },
                "status": status,
            }
        )
    return out


def _workload_rows(snapshot: Snapshot) -> list[dict[str, Any]]:
    rows = []
    for r in snapshot.workloads:
        admitted = r.admitted_at is not None and r.admitted_at <= snapshot.at
        finished = r.finished_at is not None and r.finished_at <= snapshot.at
        row: dict[str, Any] = {
            "namespace": r.namespace,
            "name": r.name,
            "queue": r.queue,
            "reservedIn": r.cluster_queue if admitted else "",
            "admitted": admitted,
            "finished": finished,
            "arrival": r.arrival,
        }
        if not admitted:
            wait = r.wait
            row["pending"] = {
                "reason": wait.reason if wait is not None else "",
                "message": wait.message if wait is not None else "",
                "position": r.position,
            }
        rows.append(row)
    return rows


def report_json(result: Result, scenario: Scenario) -> dict[str, Any]:
    return {
        "at": result.snapshot.at,
        "end": result.end,
        "workloads": _workload_rows(result.snapshot),
        "clusterQueues": _queue_summary(result, scenario),
        "preemptions": _preemption_rows(result),
    }


def _preemption_rows(result: Result) -> list[dict[str, Any]]:
    """Every preemption up to the snapshot, oldest first."""
    return [
        {
            "at": p.at,
            "workload": p.workload,
            "clusterQueue": p.cluster_queue,
            "preemptor": p.preemptor,
            "preemptingClusterQueue": p.preempting_cluster_queue,
            "reason": p.reason,
            "message": p.message,
        }
        for p in result.preemptions
        if p.at <= result.snapshot.at
    ]


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    lines = ["   ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for row in rows:
        lines.append("   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)


def report_text(result: Result, scenario: Scenario, out: TextIO) -> None:
    snapshot = result.snapshot
    rows = _workload_rows(snapshot)
    many_namespaces = len({r["namespace"] for r in rows}) > 1
    headers = (["NAMESPACE"] if many_namespaces else []) + [
        "NAME",
        "QUEUE",
        "RESERVED IN",
        "ADMITTED",
        "FINISHED",
    ]
    table_rows = []
    for row in rows:
        cells = [row["namespace"]] if many_namespaces else []
        cells += [
            row["name"],
            row["queue"],
            row["reservedIn"],
            "True" if row["admitted"] else "",
            "True" if row["finished"] else "",
        ]
        table_rows.append(cells)
    print(f"Workloads at {_format_offset(snapshot.at)}:", file=out)
    print(_table(headers, table_rows), file=out)
    pending = [row for row in rows if "pending" in row]
    if pending:
        print("\nPending:", file=out)
        for row in pending:
            info = row["pending"]
            where = f" (position {info['position']})" if info["position"] is not None else ""
            why = (
                f"{info['reason']}: {info['message']}"
                if info["message"]
                else "not yet tried (behind the head)"
            )
            print(f"  {row['namespace']}/{row['name']}{where}: {why}", file=out)
    preempted = _preemption_rows(result)
    if preempted:
        print("\nPreemptions:", file=out)
        for row in preempted:
            print(
                f"  {_format_offset(row['at'])}  {row['workload']} ({row['clusterQueue']}) preempted by "
                f"{row['preemptor']} ({row['preemptingClusterQueue']}): {row['reason']}",
                file=out,
            )
    for queue in _queue_summary(result, scenario):
        cohort = f", cohort {queue['cohort']}" if queue["cohort"] else ""
        print(f"\nClusterQueue {queue['name']} ({queue['queueingStrategy']}{cohort})", file=out)
        active = queue["status"].get("conditions", [{}])[0]
        if active.get("status") != "True":
            print(f"  inactive: {active.get('message')}", file=out)
        counts = f"  admitted {queue['admitted']}   pending {queue['pending']}   finished {queue['finished']}"
        if queue["preempted"]:
            counts += f"   preempted {queue['preempted']}"
        share = queue["status"].get("fairSharing")
        if share is not None:
            counts += f"   weighted share {share['weightedShare']}"
        print(counts, file=out)
        usage_rows = [
            [
                u["flavor"],
                u["resource"],
                f"{u['used']} / {u['nominal']}",
                "" if u["percent"] is None else f"{u['percent']:g}%",
            ]
            for u in queue["usage"]
        ]
        for line in _table(["FLAVOR", "RESOURCE", "USAGE / NOMINAL", ""], usage_rows).splitlines():
            print(f"  {line}".rstrip(), file=out)
        waits = queue["waitSeconds"]
        if waits["p50"] is None:
            print("  wait time: nothing admitted", file=out)
        else:
            p50, p95, worst = (_format_offset(waits[k]) for k in ("p50", "p95", "max"))
            print(f"  wait time (whole replay): p50 {p50}   p95 {p95}   max {worst}", file=out)


def plot_usage(result: Result, scenario: Scenario, path: str) -> None:
    """Usage over time (percent of nominal) per ClusterQueue, one line per flavor/resource."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SimulationError(
            "--plot needs matplotlib, which is not installed: pip install 'kueue-webhook[plot]'"
        ) from None
    queues = scenario.cluster_queues
    fig, axes = plt.subplots(len(queues) or 1, 1, figsize=(9, 2.6 * max(1, len(queues))), squeeze=False)
    for axis, queue in zip(axes[:, 0], queues, strict=False):
        points = result.timeline.get(queue.name, [])
        for group in queue.resource_groups:
            for flavor in group.flavors:
                for quota in flavor.resources:
                    if not quota.nominal.nanos:
                        continue
                    xs = [t for t, _ in points]
                    ys = [100 * u.get((flavor.name, quota.name), 0) / quota.nominal.nanos for _, u in points]
                    axis.step(xs, ys, where="post", label=f"{flavor.name} {quota.name}")
        marked = False
        for p in result.preemptions:
            if queue.name in (p.cluster_queue, p.preempting_cluster_queue):
                label = None if marked else "preemption"
                axis.axvline(p.at, color="red", linestyle=":", linewidth=1, label=label)
                marked = True
        axis.set_title(f"ClusterQueue {queue.name}")
        axis.set_ylabel("% of nominal")
        axis.legend(loc="upper right", fontsize="small")
    axes[-1, 0].set_xlabel("seconds since start")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# -- CLI --------------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "simulation annotations on each Job (or Workload):\n"
        f"  {ARRIVAL_ANNOTATION}: submission time as an offset from the start (30s, 2m, 1h30m; default 0s)\n"
        f"  {RUNTIME_ANNOTATION}: how long it runs once admitted (default: it never finishes)"
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="multi-document YAML manifests and Jobs")
    parser.add_argument(
        "--at",
        metavar="DURATION",
        help="report the cluster at this offset (default: when the last Job arrived)",
    )
    parser.add_argument(
        "--resolution",
        metavar="DURATION",
        default="1s",
        help="scheduling step: events within one step are handled together (default 1s; 0 = every instant)",
    )
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text", help="report format")
    parser.add_argument(
        "--plot", metavar="FILE.png", help="draw usage over time per ClusterQueue (matplotlib)"
    )


class _Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def __call__(self, done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        end = "\n" if done >= total else ""
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(f"\rreplaying [{bar}] {done}/{total} jobs{end}")
        self.stream.flush()


def run(args: argparse.Namespace) -> int:
    try:
        if args.plot:  # fail before a long replay, not after it
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                raise SimulationError(
                    "--plot needs matplotlib, which is not installed: pip install 'kueue-webhook[plot]'"
                ) from None
        at = None
        if args.at is not None:
            try:
                at = parse_duration(args.at)
            except ValueError as exc:
                raise SimulationError(f"--at: {exc}") from None
        try:
            resolution = parse_duration(args.resolution)
        except ValueError as exc:
            raise SimulationError(f"--resolution: {exc}") from None
        scenario = load_scenario(args.files)
        progress = (
            _Progress(sys.stderr) if sys.stderr.isatty() and len(scenario.submissions) >= 5000 else None
        )
        result = replay(
            scenario, at=at, resolution=resolution, record_timeline=bool(args.plot), progress=progress
        )
        if args.output == "json":
            json.dump(report_json(result, scenario), sys.stdout, indent=2)
            sys.stdout.write("\n")
        else:
            report_text(result, scenario, sys.stdout)
        if args.plot:
            plot_usage(result, scenario, args.plot)
    except SimulationError as exc:
        print(f"kueue-webhook simulate: {exc}", file=sys.stderr)
        return 2
    return 0
