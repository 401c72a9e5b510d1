"""A latency model of the controller on Kueue's baseline scenario: ``python -m bench.latency_model``.

The live benchmark (``bench.kueue_baseline``) measures everything at once: scheduling decisions, API
latency, three processes sharing two cores. This model keeps the first and replaces the rest with fixed
delays, to tell what the scheduling rules themselves allow. The pure core (``SchedulerState``) is fed by a
discrete-event loop playing the controller and the benchmark's actor:

* a decision to admit lands (``confirm``) ``write`` seconds later; the actor sees it ``watch`` seconds
  after that, runs the Workload for its run time, and its ``Finished`` write reaches the core ``write +
  watch`` seconds later (``finish_workload``);
* a decision to evict reaches the actor after ``write + watch``, whose cleared reservation reaches the core
  ``write + watch`` later (the Workload fed back pending);
* cycles run until the core has nothing left to decide, at most once every ``batch`` seconds.

A run takes ~30 s of one core (every release retries the parked Workloads that may preempt). It prints,
per setting, the wall time, usage (work over nominal quota times wall: unlike the live
benchmark, evicted partial runs are not counted as used), evictions and the mean and maximum time to
admission per class, and writes ``bench/results/latency_model.{json,md}``. No figure here stands for the
live system; the docs quote it only for what the rules allow.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import platform
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.baseline import scenario
from kueue_webhook.api.objects import (
    parse_cluster_queue,
    parse_local_queue,
    parse_resource_flavor,
    parse_workload,
)
from kueue_webhook.core.scheduler import Admit, Evict, SchedulerState

RESULTS = Path(__file__).parent / "results"
CREATED, CONFIRMED, RUN_OVER, FINISHED, EVICTION_SEEN, RETRY = range(6)


@dataclass
class Outcome:
    write: float
    watch: float
    batch: float
    wall: float = 0.0
    usage: float = 0.0
    evictions: Counter[str] = field(default_factory=Counter)
    mean_wait: dict[str, float] = field(default_factory=dict)
    max_wait: dict[str, float] = field(default_factory=dict)
    unfinished: int = 0


def run(shape: scenario.Shape, *, write: float, watch: float, batch: float) -> Outcome:
    plan = scenario.plan(shape)
    state = SchedulerState()
    state.upsert_resource_flavor(parse_resource_flavor(scenario.resource_flavor()))
    for queue in plan.queues:
        state.upsert_namespace(queue.name, {})
        state.upsert_cluster_queue(parse_cluster_queue(scenario.cluster_queue(queue)))
        state.upsert_local_queue(parse_local_queue(scenario.local_queue(queue)))
    events: list[tuple[float, int, int, str, int]] = []
    order = itertools.count()
    objects: dict[str, dict[str, Any]] = {}
    planned: dict[str, tuple[str, int, float, float]] = {}  # key -> class, cpu, run time, created at
    for stream in plan.streams:
        at = 0.0
        for wl in stream.workloads:
            at += stream.interval_ms / 1000
            key = f"{wl.namespace}/{wl.name}"
            obj = scenario.workload(wl)
            obj["metadata"].update(uid=key, creationTimestamp="2026-01-01T00:00:00Z")
            objects[key] = obj
            planned[key] = (wl.template.class_name, wl.template.cpu, wl.template.runtime_ms / 1000, at)
            heapq.heappush(events, (at, next(order), CREATED, key, 0))
    epoch: Counter[str] = Counter()
    admitted_at: dict[str, float] = {}
    finished_at: dict[str, float] = {}
    outcome = Outcome(write, watch, batch)
    next_cycle, retry_pending = 0.0, False
    now = 0.0
    while events:
        now, _, kind, key, seen_epoch = heapq.heappop(events)
        if kind == CREATED:
            state.upsert_workload(parse_workload(objects[key]))
        elif kind == RETRY:
            retry_pending = False
        elif seen_epoch != epoch[key]:
            pass  # about an admission that an eviction has since undone
        elif kind == CONFIRMED:
            state.confirm(key)
            admitted_at[key] = now
            heapq.heappush(events, (now + watch + planned[key][2], next(order), RUN_OVER, key, seen_epoch))
        elif kind == RUN_OVER:
            heapq.heappush(events, (now + write + watch, next(order), FINISHED, key, seen_epoch))
        elif kind == FINISHED:
            finished_at[key] = now
            state.finish_workload(key)
        elif kind == EVICTION_SEEN:
            epoch[key] += 1
            outcome.evictions[planned[key][0]] += 1
            state.upsert_workload(parse_workload(objects[key]))
        if events and events[0][0] == now:
            continue  # apply everything of this instant before deciding, as a burst of watch events
        if now < next_cycle:
            if not retry_pending:
                heapq.heappush(events, (next_cycle, next(order), RETRY, key, 0))
                retry_pending = True
            continue
        while state.has_work():
            for decision in state.cycle():
                target = str(decision.workload)
                if isinstance(decision, Admit):
                    heapq.heappush(events, (now + write, next(order), CONFIRMED, target, epoch[target]))
                elif isinstance(decision, Evict):
                    landed = now + 2 * (write + watch)
                    heapq.heappush(events, (landed, next(order), EVICTION_SEEN, target, epoch[target]))
        next_cycle = now + batch
    outcome.unfinished = len(planned) - len(finished_at)
    outcome.wall = max(finished_at.values(), default=now)
    work = sum(cpu * runtime for _, cpu, runtime, _ in planned.values())
    outcome.usage = 100 * work / (plan.nominal_cpu() * outcome.wall) if outcome.wall else 0.0
    waits: dict[str, list[float]] = defaultdict(list)
    for key, at in admitted_at.items():
        waits[planned[key][0]].append(at - planned[key][3])
    outcome.mean_wait = {c: round(sum(v) / len(v), 1) for c, v in sorted(waits.items())}
    outcome.max_wait = {c: round(max(v), 1) for c, v in sorted(waits.items())}
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.latency_model", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(scenario.SHAPES), default="baseline")
    parser.add_argument("--write-ms", type=float, nargs="+", default=[0.0, 5.0, 20.0])
    parser.add_argument("--watch-ms", type=float, default=None, help="default: the same as --write-ms")
    parser.add_argument("--batch-ms", type=float, nargs="+", default=[0.0])
    args = parser.parse_args()
    outcomes = []
    for write_ms in args.write_ms:
        watch_ms = write_ms if args.watch_ms is None else args.watch_ms
        for batch_ms in args.batch_ms:
            outcome = run(
                scenario.SHAPES[args.scale],
                write=write_ms / 1000,
                watch=watch_ms / 1000,
                batch=batch_ms / 1000,
            )
            outcomes.append(outcome)
            print(
                f"write {write_ms:g} ms, watch {watch_ms:g} ms, batch {batch_ms:g} ms: "
                f"wall {outcome.wall:.1f} s, usage {outcome.usage:.1f} %, "
                f"evictions {dict(outcome.evictions)}, mean wait {outcome.mean_wait}, "
                f"max {outcome.max_wait}, unfinished {outcome.unfinished}",
                flush=True,
            )
    date = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows = [
        {
            "write_ms": o.write * 1000,
            "watch_ms": o.watch * 1000,
            "batch_ms": o.batch * 1000,
            "wall_s": round(o.wall, 1),
            "usage_percent": round(o.usage, 1),
            "evictions": dict(o.evictions),
            "mean_wait_s": o.mean_wait,
            "max_wait_s": o.max_wait,
            "unfinished": o.unfinished,
        }
        for o in outcomes
    ]
    RESULTS.mkdir(exist_ok=True)
    name = "latency_model" if args.scale == "baseline" else f"latency_model-{args.scale}"
    report = {"date": date, "scale": args.scale, "python": platform.python_version(), "runs": rows}
    (RESULTS / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        f"# Latency model of the scheduling core, `{args.scale}` scenario ({date})",
        "",
        "The pure core with fixed write and watch delays (`bench/latency_model.py`); usage counts the work",
        "itself, not evicted partial runs.",
        "",
        "| write / watch / batch (ms) | wall (s) | usage | evictions | mean wait large / medium / small (s) "
        "| max wait (s) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        mean, most = r["mean_wait_s"], r["max_wait_s"]
        delays = f"{r['write_ms']:g} / {r['watch_ms']:g} / {r['batch_ms']:g}"
        means = f"{mean.get('large')} / {mean.get('medium')} / {mean.get('small')}"
        maxima = f"{most.get('large')} / {most.get('medium')} / {most.get('small')}"
        evictions = sum(r["evictions"].values())
        lines.append(
            f"| {delays} | {r['wall_s']} | {r['usage_percent']} % | {evictions} | {means} | {maxima} |"
        )
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
