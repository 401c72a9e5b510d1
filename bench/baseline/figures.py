"""The run's figures, computed from the recorded timeline: the numbers the issue compares with Kueue's.

Usage here integrates every Workload's held cpu over the time it held it (exact, from the Workload watch)
and divides by total nominal quota x wall time. Kueue's recorder instead integrates each ClusterQueue's
``status.flavorsUsage`` between status updates (so it depends on how often the controller writes queue
status) and takes its times to admission from the API's whole-second timestamps; ``kueue_recorder.py``
computes those beside these so the comparison with Kueue's published figures is like for like.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.baseline.timeline import Change, OverAdmissionReport, Timeline, Transition


@dataclass(frozen=True)
class ClassFigures:
    workloads: int
    admitted: int
    finished: int
    mean_time_to_admission_s: float | None
    max_time_to_admission_s: float | None
    evictions: int


@dataclass(frozen=True)
class Figures:
    wall_s: float
    usage_percent: float
    classes: dict[str, ClassFigures]
    every_workload_finished: bool
    unfinished: int
    evictions: int


def held_cpu_seconds(transitions: Sequence[Transition], *, end_at: float) -> float:
    """Sum of cpu x time over every reservation; one still held at the end counts up to ``end_at``."""
    since: dict[str, tuple[float, int]] = {}
    total_milli_seconds = 0.0
    for transition in sorted(transitions, key=lambda t: t.seq):
        if transition.change is Change.RESERVED:
            since[transition.workload] = (transition.at, transition.cpu_milli)
        elif transition.change is Change.RELEASED and transition.workload in since:
            start, cpu = since.pop(transition.workload)
            total_milli_seconds += cpu * (transition.at - start)
    for start, cpu in since.values():
        total_milli_seconds += cpu * max(0.0, end_at - start)
    return total_milli_seconds / 1000


def compute(
    timeline: Timeline, *, expected: int, nominal_cpu: int, first_creation_at: float, end_at: float
) -> Figures:
    wall = end_at - first_creation_at
    used = held_cpu_seconds(timeline.transitions, end_at=end_at)
    usage = 100 * used / (nominal_cpu * wall) if wall > 0 and nominal_cpu > 0 else 0.0
    by_class: dict[str, list[float]] = {}
    counts: dict[str, list[int]] = {}
    for record in timeline.records.values():
        tally = counts.setdefault(record.class_name, [0, 0, 0, 0])
        tally[0] += 1
        tally[3] += record.evictions
        if record.finished:
            tally[2] += 1
        if record.admitted_at is not None and record.created_at is not None:
            tally[1] += 1
            by_class.setdefault(record.class_name, []).append(record.admitted_at - record.created_at)
    classes: dict[str, ClassFigures] = {}
    for name, (total, admitted, finished, evictions) in sorted(counts.items()):
        waits = by_class.get(name, [])
        classes[name] = ClassFigures(
            workloads=total,
            admitted=admitted,
            finished=finished,
            mean_time_to_admission_s=round(sum(waits) / len(waits), 3) if waits else None,
            max_time_to_admission_s=round(max(waits), 3) if waits else None,
            evictions=evictions,
        )
    finished_total = sum(c.finished for c in classes.values())
    return Figures(
        wall_s=round(wall, 3),
        usage_percent=round(usage, 2),
        classes=classes,
        every_workload_finished=finished_total == expected,
        unfinished=expected - finished_total,
        evictions=sum(c.evictions for c in classes.values()),
    )


def over_admission_summary(
    report: OverAdmissionReport, *, queue_limit: int, cohort_limit: int
) -> dict[str, object]:
    """Peaks against limits, in cpu, for the report."""
    return {
        "violations": len(report.violations),
        "first_violations": [
            {
                "seq": v.seq,
                "at_s": round(v.at, 3),
                "scope": v.scope,
                "used_cpu": v.used_milli / 1000,
                "limit_cpu": v.limit_milli / 1000,
                "holders": [f"{workload}={milli / 1000:g}" for workload, milli in v.holders],
            }
            for v in report.violations[:5]
        ],
        "max_cluster_queue_cpu": max(report.max_cluster_queue.values(), default=0) / 1000,
        "cluster_queue_limit_cpu": queue_limit / 1000,
        "max_cohort_cpu": max(report.max_cohort.values(), default=0) / 1000,
        "cohort_limit_cpu": cohort_limit / 1000,
        "quota_still_held_at_end_cpu": sum(report.held_at_end.values()) / 1000,
    }


@dataclass(frozen=True)
class Window:
    start_s: float
    usage_percent: float
    admissions_per_s: float
    finished_per_s: float


def windows(
    transitions: Sequence[Transition], *, nominal_cpu: int, start: float, end: float, width: float
) -> list[Window]:
    """Usage and admission rate per ``width`` seconds from ``start``: which phase of the run loses time."""
    count = max(1, int((end - start) // width) + (1 if (end - start) % width else 0))
    held_milli_s = [0.0] * count
    admissions = [0] * count
    finishes = [0] * count
    held, last = 0, start

    def spread(until: float) -> None:
        nonlocal last
        at = last
        while at < until:
            index = min(count - 1, int((at - start) // width))
            edge = min(until, start + (index + 1) * width) if index < count - 1 else until
            held_milli_s[index] += held * (edge - at)
            at = edge
        last = max(last, until)

    for transition in sorted(transitions, key=lambda t: t.seq):
        at = min(max(transition.at, start), end)
        index = min(count - 1, int((at - start) // width))
        if transition.change is Change.ADMITTED:
            admissions[index] += 1
        elif transition.change is Change.FINISHED:
            finishes[index] += 1
        elif transition.change in (Change.RESERVED, Change.RELEASED):
            spread(at)
            held += transition.cpu_milli if transition.change is Change.RESERVED else -transition.cpu_milli
    spread(end)
    out = []
    for index in range(count):
        span = min(width, end - (start + index * width))
        out.append(
            Window(
                start_s=round(index * width, 3),
                usage_percent=round(100 * held_milli_s[index] / 1000 / (nominal_cpu * span), 1)
                if span > 0
                else 0.0,
                admissions_per_s=round(admissions[index] / span, 1) if span > 0 else 0.0,
                finished_per_s=round(finishes[index] / span, 1) if span > 0 else 0.0,
            )
        )
    return out


def finish_lag(timeline: Timeline, runtime_ms: dict[str, int]) -> dict[str, Any]:
    """How long past its run time each Workload held its quota: finish time minus (last) admission time
    minus run time, p50 and p90 over the finished Workloads (the actor's and the API server's delay)."""
    lags = sorted(
        record.finished_at - record.admitted_at - runtime_ms.get(key, 0) / 1000
        for key, record in timeline.records.items()
        if record.finished_at is not None and record.admitted_at is not None
    )
    if not lags:
        return {"workloads": 0, "p50_s": None, "p90_s": None, "max_s": None}

    def at(q: float) -> float:
        return round(lags[max(0, math.ceil(q * len(lags)) - 1)], 3)  # nearest rank

    return {"workloads": len(lags), "p50_s": at(0.5), "p90_s": at(0.9), "max_s": round(lags[-1], 3)}
