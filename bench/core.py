"""Benchmarks of the scheduling core and of ``simulate``: ``python -m bench.core`` (``make bench``).

1. Decision cost: 100 ClusterQueues in 10 cohorts, 3 flavors, 3 resources, with 1k, 10k and 100k
   pending workloads; the time of scheduling cycles divided by the decisions they return (admissions
   and waits), measured over the same number of decisions at each size, so a cost that grew with the
   backlog would show.
2. Replay: 100,000 Jobs (the same cluster, arrivals over time, runtimes, ~80% offered load) through
   ``kueue_webhook.simulate.replay``, Job parsing included; YAML loading is timed separately on a sample.
   No ClusterQueue preempts here, which is the path preemption must not slow down.
3. Replay with preemption: the same cluster with ``withinClusterQueue: LowerPriority`` and
   ``reclaimWithinCohort: Any`` everywhere, Jobs in three WorkloadPriorityClasses, at ~95% offered
   load, so urgent Jobs keep preempting batch ones: the cost of the preempting path.

Results go to ``bench/results/core.json`` and ``bench/results/core.md``. Timing is wall-clock on the
machine that runs it; nothing here asserts, the unit tests check behaviour.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from kueue_webhook.api.objects import ClusterQueue, ResourceFlavor, Workload, parse_object, parse_workload
from kueue_webhook.core.scheduler import Admit, SchedulerState
from kueue_webhook.simulate import replay, scenario_from_documents

RESULTS = Path(__file__).parent / "results"
FLAVORS = ("on-demand", "spot", "reserved")
RESOURCES = ("cpu", "memory", "nvidia.com/gpu")
QUEUES, COHORTS = 100, 10
SHAPES = (("1", "2Gi", 0), ("2", "4Gi", 0), ("4", "8Gi", 1), ("8", "16Gi", 2))


PRIORITIES = (("batch", 100), ("standard", 500), ("urgent", 1000))
PREEMPTING = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}


def _manifests(*, preemption: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}]
    if preemption:
        for name, value in PRIORITIES:
            docs.append(
                {
                    "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "kind": "WorkloadPriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                }
            )
    for flavor in FLAVORS:
        docs.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor",
                "metadata": {"name": flavor},
                "spec": {"nodeLabels": {"pool": flavor}},
            }
        )
    for index in range(QUEUES):
        flavors = [
            {
                "name": flavor,
                "resources": [
                    {"name": "cpu", "nominalQuota": 40},
                    {"name": "memory", "nominalQuota": "80Gi"},
                    {"name": "nvidia.com/gpu", "nominalQuota": 8},
                ],
            }
            for flavor in FLAVORS
        ]
        docs.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": f"cq-{index}"},
                "spec": {
                    "cohortName": f"cohort-{index % COHORTS}",
                    "namespaceSelector": {},
                    "resourceGroups": [{"coveredResources": list(RESOURCES), "flavors": flavors}],
                    **({"preemption": preemption} if preemption else {}),
                },
            }
        )
        docs.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": f"lq-{index}", "namespace": "bench"},
                "spec": {"clusterQueue": f"cq-{index}"},
            }
        )
    return docs


def _container(shape: tuple[str, str, int]) -> dict[str, Any]:
    cpu, memory, gpus = shape
    resources: dict[str, Any] = {"requests": {"cpu": cpu, "memory": memory}}
    if gpus:
        resources["limits"] = {"nvidia.com/gpu": gpus}
    return {"name": "main", "image": "busybox", "resources": resources}


def _state() -> SchedulerState:
    state = SchedulerState()
    state.upsert_namespace("bench", {})
    for doc in _manifests():
        parsed = parse_object(doc) if doc["kind"] != "Namespace" else None
        if isinstance(parsed, ResourceFlavor):
            state.upsert_resource_flavor(parsed)
        elif isinstance(parsed, ClusterQueue):
            state.upsert_cluster_queue(parsed)
        elif parsed is not None and not isinstance(parsed, list):
            state.upsert_local_queue(parsed)  # type: ignore[arg-type]
    return state


def _timestamp(seconds: int) -> str:
    return f"2026-01-01T{seconds // 3600 % 24:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}Z"


def _workload(index: int, rng: random.Random) -> Workload:
    shape = SHAPES[rng.randrange(len(SHAPES))]
    parsed = parse_workload(
        {
            "metadata": {
                "name": f"w-{index}",
                "namespace": "bench",
                "creationTimestamp": _timestamp(index),
            },
            "spec": {
                "queueName": f"lq-{rng.randrange(QUEUES)}",
                "priority": rng.choice((0, 0, 0, 100)),
                "podSets": [
                    {
                        "name": "main",
                        "count": rng.choice((1, 1, 2)),
                        "template": {"spec": {"containers": [_container(shape)]}},
                    }
                ],
            },
        }
    )
    assert isinstance(parsed, Workload)
    return parsed


def bench_decisions(pending: int, measured: int = 3000) -> dict[str, Any]:
    rng = random.Random(pending)
    state = _state()
    workloads = [_workload(i, rng) for i in range(pending)]
    start = time.perf_counter()
    for workload in workloads:
        state.upsert_workload(workload)
    ingest = time.perf_counter() - start
    decisions = admits = cycles = 0
    elapsed = 0.0
    while decisions < measured and state.has_work():
        t0 = time.perf_counter()
        result = state.cycle()
        elapsed += time.perf_counter() - t0
        cycles += 1
        decisions += len(result)
        admits += sum(1 for d in result if isinstance(d, Admit))
    return {
        "pending": pending,
        "ingest_us_per_workload": round(ingest / pending * 1e6, 1),
        "decisions": decisions,
        "admissions": admits,
        "cycles": cycles,
        "us_per_decision": round(elapsed / max(decisions, 1) * 1e6, 1),
    }


def _jobs(
    count: int, rng: random.Random, *, gap: float = 0.16, priorities: bool = False
) -> list[dict[str, Any]]:
    # capacity: 100 queues x 3 flavors = 12,000 CPU and 2,400 GPUs; a Job asks on average for 5 CPU
    # and 1 GPU for 300 s, so one arrival every 0.16 s offers ~80% of both
    jobs = []
    clock = 0.0
    for index in range(count):
        clock += rng.expovariate(1 / gap)
        shape = SHAPES[rng.randrange(len(SHAPES))]
        labels = {"kueue.x-k8s.io/queue-name": f"lq-{rng.randrange(QUEUES)}"}
        if priorities:
            labels["kueue.x-k8s.io/priority-class"] = rng.choice(("batch", "batch", "standard", "urgent"))
        jobs.append(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": f"job-{index}",
                    "namespace": "bench",
                    "uid": f"uid-{index}",
                    "labels": labels,
                    "annotations": {
                        "simulate.kueue-webhook/arrival": f"{clock:.3f}s",
                        "simulate.kueue-webhook/runtime": f"{rng.uniform(60, 540):.0f}s",
                    },
                },
                "spec": {
                    "parallelism": rng.choice((1, 1, 2)),
                    "template": {"spec": {"containers": [_container(shape)]}},
                },
            }
        )
    return jobs


def bench_replay(count: int) -> dict[str, Any]:
    rng = random.Random(7)
    docs = _manifests() + _jobs(count, rng)
    start = time.perf_counter()
    scenario = scenario_from_documents(("bench", index, doc) for index, doc in enumerate(docs))
    parsed = time.perf_counter()
    result = replay(scenario)
    done = time.perf_counter()
    admitted = sum(1 for r in result.records.values() if r.admitted_at is not None)
    sample = yaml.safe_dump_all(docs[: min(len(docs), 5000)])
    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    t0 = time.perf_counter()
    sample_docs = list(yaml.load_all(sample, Loader=loader))
    yaml_seconds = time.perf_counter() - t0
    return {
        "jobs": count,
        "parse_seconds": round(parsed - start, 2),
        "replay_seconds": round(done - parsed, 2),
        "total_seconds": round(done - start, 2),
        "jobs_per_second": round(count / (done - start)),
        "admitted": admitted,
        "cycles": result.cycles,
        "decisions": result.decisions,
        "simulated_seconds": round(result.end),
        "yaml_us_per_document": round(yaml_seconds / len(sample_docs) * 1e6, 1),
    }


def bench_preemption_replay(count: int) -> dict[str, Any]:
    rng = random.Random(11)
    docs = _manifests(preemption=PREEMPTING) + _jobs(count, rng, gap=0.135, priorities=True)
    start = time.perf_counter()
    scenario = scenario_from_documents(("bench", index, doc) for index, doc in enumerate(docs))
    parsed = time.perf_counter()
    result = replay(scenario)
    done = time.perf_counter()
    return {
        "jobs": count,
        "parse_seconds": round(parsed - start, 2),
        "replay_seconds": round(done - parsed, 2),
        "jobs_per_second": round(count / (done - start)),
        "preemptions": len(result.preemptions),
        "admissions": sum(1 for r in result.records.values() if r.admitted_at is not None),
        "decisions": result.decisions,
        "simulated_seconds": round(result.end),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="pending workloads per decision run")
    parser.add_argument("--jobs", type=int, default=100_000, help="Jobs in the replay")
    parser.add_argument("--preemption-jobs", type=int, default=10_000, help="Jobs in the preempting replay")
    args = parser.parse_args()
    decision_runs = [bench_decisions(int(size)) for size in args.sizes.split(",")]
    replay_run = bench_replay(args.jobs)
    preemption_run = bench_preemption_replay(args.preemption_jobs)
    machine = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }
    report = {
        "machine": machine,
        "decisions": decision_runs,
        "replay": replay_run,
        "preemption_replay": preemption_run,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "core.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        f"# Core benchmark ({machine['date']}, {machine['cpus']} CPUs, Python {machine['python']})",
        "",
        "| pending workloads | us per decision | decisions measured | admissions | ingest us/workload |",
        "|---:|---:|---:|---:|---:|",
    ]
    for run in decision_runs:
        lines.append(
            f"| {run['pending']:,} | {run['us_per_decision']} | {run['decisions']:,} | {run['admissions']:,} "
            f"| {run['ingest_us_per_workload']} |"
        )
    r = replay_run
    lines += [
        "",
        f"Replay of {r['jobs']:,} Jobs ({r['simulated_seconds']:,} simulated seconds, "
        f"{r['admitted']:,} admitted, {r['decisions']:,} decisions): {r['total_seconds']} s total = "
        f"{r['parse_seconds']} s parsing Jobs + {r['replay_seconds']} s replay "
        f"({r['jobs_per_second']:,} jobs/s). "
        f"YAML loading adds {r['yaml_us_per_document']} us per document.",
    ]
    p = preemption_run
    lines += [
        "",
        f"Replay with preemption ({p['jobs']:,} Jobs in 3 priority classes, LowerPriority within "
        f"ClusterQueues, reclaim Any in cohorts, ~95% offered load): {p['preemptions']:,} preemptions, "
        f"{p['decisions']:,} decisions, {p['parse_seconds']} s parsing + {p['replay_seconds']} s replay "
        f"({p['jobs_per_second']:,} jobs/s).",
    ]
    (RESULTS / "core.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
