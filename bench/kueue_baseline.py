"""Kueue's own scheduler benchmark (test/performance/scheduler: baseline, large-scale, tas), end to end.

With ``--kubeconfig`` (an admin's) and ``--serve`` it installs the CRDs and RBAC on that real API server
and runs ``kueue-webhook serve`` from here against it as its ServiceAccount: the figures users get, and the
ones docs/benchmarks.md leads with (writes per Workload read from the API server's own
apiserver_request_total).
With ``--kubeconfig`` alone it runs against whatever that cluster runs (our controller or Kueue itself).
Without it, it starts the fake API server and ``kueue-webhook serve`` as two processes (fast, but the fake
costs a fraction of a real request: its figures overstate what users get). It writes
``bench/results/kueue_baseline[-<scale>][-real].json`` and ``.md`` with the server, the machine, the date and
Kueue's figures side by side:

    .venv/bin/python -m bench.kueue_baseline [--kubeconfig PATH [--serve]]
        [--scale ...]     # baseline, large, tas (640 Nodes, a Topology, TAS flavor), tas-tenth, smoke
        [--profile]       # py-spy record the controller and the fake API server: where the time goes
        [--commit REV]    # measure that commit's controller, not the working tree being edited
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import real_cluster
from bench.baseline import processes, profile, scenario
from bench.baseline.figures import compute, finish_lag, over_admission_summary, windows
from bench.baseline.runner import Run
from bench.baseline.timeline import Change, QuotaLimits, check_over_admission
from kueue_webhook import runtime
from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import NAMESPACES

RESULTS = Path(__file__).resolve().parent / "results"
JSON = dict[str, Any]

#: Kueue v0.20 on a 2-core machine with kube-apiserver v1.36.2, two runs (the issue's bar)
KUEUE_BASELINE = {
    "label": "Kueue v0.20, 2 cores (two runs)",
    "wall_s": [365, 380],
    "usage_percent": [55.6, 51.2],
    "mean_time_to_admission_s": {"small": [205, 226], "medium": [82, 89], "large": [29, 22]},
}
#: Kueue v0.20 on the real kube-apiserver v1.36.2 + etcd of ../shared/kube on this 2-core machine (Kueue's own
#: runner, in-cluster mode, --qps=1000 --burst=2000); the goals on a real API server are fractions of it
KUEUE_REAL = {
    "label": "Kueue v0.20, kube-apiserver v1.36.2, 2 cores",
    "wall_s": [527],
    "usage_percent": [],
    "mean_time_to_admission_s": {"small": [308], "medium": [176], "large": [75.6]},
    "writes_per_workload": 6.1,
    "cpu_cores": "kube-apiserver ~1.06, etcd 0.25, controller 0.44",
    #: the goals: 0.45 x Kueue's wall, 0.35 x its mean times to admission, at most 1.2 writes per Workload
    #: and 0.15 of a core for the controller (every core-second it spends is taken from kube-apiserver)
    "wall_target_s": 237,
    "admission_target_factor": 0.35,
    "writes_target": 1.2,
    "controller_cores_target": 0.15,
}
#: the goals beside the fake API server: 1.5 x the lower bound, 0.2 x Kueue's mean times to admission
KUEUE_BASELINE["admission_target_factor"] = 0.2
#: Kueue's own pass/fail limits for large-scale (configs/large-scale/rangespec.yaml: max wall, min usage,
#: max mean time to admission), calibrated at 1.2 x the mean of its CI runs
KUEUE_LARGE = {
    "label": "Kueue's limits (rangespec.yaml)",
    "wall_s": [1416],
    "usage_percent": [31.6],
    "mean_time_to_admission_s": {"small": [841], "medium": [308], "large": [128]},
}

#: Kueue's calibration for configs/tas (rangespec.yaml: the means of its 10 CI runs, 640 nodes)
KUEUE_TAS = {
    "label": "Kueue's CI mean (tas/rangespec.yaml; its limit is 1.2 x)",
    "wall_s": [401.5],
    "usage_percent": [62.41],
    "mean_time_to_admission_s": {
        "large-balanced-rack": [37.9],
        "large-preferred-rack": [39.6],
        "large-required-rack": [39.6],
        "medium-balanced-rack": [106.3],
        "medium-preferred-rack": [106.3],
        "medium-required-rack": [107.1],
        "small-balanced-rack": [237.8],
        "small-preferred-rack": [246.1],
        "small-required-rack": [246.8],
    },
}


def limits_of(plan: scenario.Plan) -> QuotaLimits:
    cohort_of = {q.name: q.cohort for q in plan.queues}
    cohort: dict[str, int] = {}
    for queue in plan.queues:
        cohort[queue.cohort] = cohort.get(queue.cohort, 0) + queue.queue_set.nominal_cpu * 1000
    per_queue = {
        q.name: min((q.queue_set.nominal_cpu + q.queue_set.borrowing_limit_cpu) * 1000, cohort[q.cohort])
        for q in plan.queues
    }
    return QuotaLimits(per_queue, cohort_of, cohort)


def parse_writes(exposition: str) -> dict[str, int]:
    """``kueue_webhook_api_writes_total`` samples as {"<kind> <verb>": count}."""
    out: dict[str, int] = {}
    pattern = re.compile(r"^kueue_webhook_api_writes_total\{([^}]*)\}\s+([0-9.e+]+)$")
    for line in exposition.splitlines():
        match = pattern.match(line)
        if match:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1)))
            out[f"{labels.get('kind')} {labels.get('verb')}"] = int(float(match.group(2)))
    return out


#: the resources whose writes the controller sends in this scenario (the Lease renewals, one every 2 s, and
#: the kube-controller-manager's writes for new namespaces are left out)
CONTROLLER_RESOURCES = frozenset(
    {"workloads", "workloads/status", "clusterqueues/status", "localqueues/status", "events"}
)


def apiserver_write_figures(seen: dict[str, int], run: Run, plan: scenario.Plan) -> JSON:
    """Controller writes per Workload from the API server's own apiserver_request_total: writes to the
    resources the controller touches, minus those this benchmark sent itself (every attempt counts)."""
    counters = run.counters
    workloads = counters.created
    runner = {
        "POST workloads": counters.created + counters.create_failures,
        # the actor's status writes: server-side applies (Kueue's actor) or JSON Patches (the concurrent one)
        f"{'APPLY' if run.actor == 'kueue' else 'PATCH'} workloads/status": counters.actor_writes
        + counters.actor_retries,
    }
    controller: dict[str, int] = {}
    for key, count in seen.items():
        if key.split(" ", 1)[1] in CONTROLLER_RESOURCES:
            own = count - runner.get(key, 0)
            if own > 0:
                controller[key] = own
    total = sum(controller.values())
    return {
        "all_by_verb_and_resource": seen,
        "benchmark_runner": runner,
        "controller_by_verb_and_resource": controller,
        "controller_total": total,
        "controller_per_workload": round(total / workloads, 3) if workloads else None,
        "setup_objects": 1 + 3 * len(plan.queues),
    }


def dump_timeline(run: Run, path: Path) -> None:
    """Every transition and every Workload's record, one JSON object a line, for post-mortems."""
    with gzip.open(path, "wt") as out:
        for t in run.timeline.transitions:
            row = {"seq": t.seq, "at": round(t.at, 4), "workload": t.workload, "change": t.change.value}
            out.write(json.dumps({**row, "cq": t.cluster_queue, "cpu_milli": t.cpu_milli}) + "\n")
        for key, record in run.timeline.records.items():
            out.write(json.dumps({"workload": key, **asdict(record)}) + "\n")


def machine() -> JSON:
    model = platform.processor()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = re.sub(r"\s+", " ", line.split(":", 1)[1]).strip()
                break
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        # the machine is shared: how busy it was when the run ended says how far to trust the figures
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),
    }


def summarize(run: Run, plan: scenario.Plan, *, controller: JSON) -> JSON:
    figures = compute(
        run.timeline,
        expected=plan.workload_count,
        nominal_cpu=plan.nominal_cpu(),
        first_creation_at=run.first_creation_at or 0.0,
        end_at=run.end_at,
    )
    limits = limits_of(plan)
    report = check_over_admission(run.timeline.transitions, limits)
    admissions = sum(1 for t in run.timeline.transitions if t.change is Change.ADMITTED)
    start = run.first_creation_at or 0.0
    counters = run.counters
    observed_writes = counters.workload_modified - counters.actor_writes + counters.cluster_queue_modified
    result: JSON = {
        "scale": plan.shape.name,
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
        "scenario": {
            "cluster_queues": len(plan.queues),
            "workloads": plan.workload_count,
            "cpu_seconds_of_work": plan.cpu_seconds(),
            "nominal_cpu": plan.nominal_cpu(),
            "lower_bound_wall_s": round(plan.cpu_seconds() / plan.nominal_cpu(), 1),
        },
        "server": controller.get("server", "a cluster's own controller"),
        "timed_out": run.timed_out,
        "wall_s": figures.wall_s,
        "generation_s": round((run.generation_done_at or run.end_at) - start, 3),
        "queues_idle_after_s": round(run.queues_idle_at - start, 3)
        if run.queues_idle_at is not None
        else None,
        "usage_percent": figures.usage_percent,
        "kueue_end_after_s": round(run.kueue_end_at - start, 3) if run.kueue_end_at is not None else None,
        # Kueue's recorder's own figures (bench/baseline/kueue_recorder.py), beside ours
        "kueue_recorder": run.kueue_recorder.summary(),
        "classes": {name: asdict(c) for name, c in figures.classes.items()},
        "actor": {
            "kind": run.actor,
            "finish_lag": finish_lag(run.timeline, run.runtime_ms),
            "writes": counters.actor_writes,
            "conflicts": counters.actor_retries,
            "peak_in_flight": run.kueue_actor.peak_in_flight if run.actor == "kueue" else None,
        },
        "every_workload_finished": figures.every_workload_finished,
        "unfinished": figures.unfinished,
        "evictions": figures.evictions,
        "over_admission": over_admission_summary(
            report,
            queue_limit=max(limits.cluster_queue.values()),
            cohort_limit=max(limits.cohort.values()),
        ),
        "admissions": admissions,
        "writes": {
            "observed_per_admission": round(observed_writes / admissions, 3) if admissions else None,
            "workload_status_writes_observed": counters.workload_modified - counters.actor_writes,
            "cluster_queue_status_writes_observed": counters.cluster_queue_modified,
            "actor_writes": counters.actor_writes,
            "actor_retries": counters.actor_retries,
        },
        "topology": run.topology_check.summary() if run.topology_check else None,
        "create_failures": counters.create_failures,
        "errors": counters.errors[:10],
        "controller": controller,
    }
    width = 10.0 if figures.wall_s <= 200 else float(round(figures.wall_s / 15))
    result["phases"] = [
        asdict(w)
        for w in windows(
            run.timeline.transitions, nominal_cpu=plan.nominal_cpu(), start=start, end=run.end_at, width=width
        )
    ]
    seen = controller.get("apiserver_writes")
    if seen is not None:
        result["writes"]["apiserver"] = apiserver_write_figures(seen, run, plan)
    by_verb = controller.get("api_writes") or {}
    if by_verb and admissions:
        result["writes"]["controller_per_admission"] = round(sum(by_verb.values()) / admissions, 3)
        result["writes"]["controller_by_kind_and_verb"] = by_verb
    return result


def _seconds(value: float | None) -> str:
    """A short delay to the millisecond: the finish lag of a fast server is well under 0.1 s."""
    return "n/a" if value is None else f"{value:.3f} s"


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.1f}{unit}"
    return f"{value}{unit}"


def _ratio(part: int | None, whole: int) -> float | None:
    return round(part / whole, 2) if part is not None and whole else None


def _runs(values: list[Any]) -> str:
    return " / ".join(str(v) for v in values) or "n/a"


def _apiserver_lines(result: JSON, kueue: JSON) -> list[str]:
    seen = result["writes"].get("apiserver")
    if not seen:
        return []
    parts = ", ".join(f"{k} {v:,}" for k, v in seen["controller_by_verb_and_resource"].items())
    lines = [
        f"| controller writes per Workload (kube-apiserver's apiserver_request_total) | "
        f"{_fmt(seen['controller_per_workload'])} ({seen['controller_total']:,}: {parts}) | "
        f"{kueue.get('writes_per_workload', '')} | {_at_most(kueue.get('writes_target'))} |"
    ]
    cpu = result["controller"].get("control_plane_cpu_s") or {}
    wall = result["wall_s"] or 0.0
    if cpu and wall:
        own = result["controller"].get("cpu_s")
        cores = ", ".join(f"{name} {value / wall:.2f}" for name, value in cpu.items())
        controller_cores = f"controller {own / wall:.2f}, " if own is not None else ""
        lines.append(
            f"| CPU while it runs (cores: CPU seconds / wall) | {controller_cores}{cores} | "
            f"{kueue.get('cpu_cores', '')} | "
            f"{_at_most(kueue.get('controller_cores_target'), 'controller ')} |"
        )
    return lines


def _at_most(limit: float | None, what: str = "") -> str:
    """A target cell, empty where the comparison has none."""
    return f"{what}<= {limit}" if limit is not None else ""


def _topology_lines(result: JSON) -> list[str]:
    tas = result.get("topology")
    if not tas:
        return []
    racks = "" if tas["hostnames_unique"] else " (hostnames repeat across racks: pod counts only)"
    return [
        f"| topology assignments checked{racks} | {tas['assignments_checked']:,}: required in one rack "
        f"{tas['required_in_one_rack']:,}, balanced with whole slices per rack "
        f"{tas['balanced_with_whole_slices_per_rack']:,}, preferred in one rack "
        f"{tas['preferred_in_one_rack']} | | |",
        f"| topology violations | {tas['violations']} {'; '.join(tas['first_violations'][:3])} | | 0 |",
    ]


def markdown(result: JSON, kueue: JSON) -> str:
    scale = result["scale"]
    mach = result["machine"]
    sc = result["scenario"]
    over = result["over_admission"]
    controller = result["controller"]
    wall_target = "completes"
    if scale == "baseline":
        wall_target = f"<= {kueue.get('wall_target_s') or round(1.5 * sc['lower_bound_wall_s'])} s"
    factor = kueue.get("admission_target_factor")
    lines = [
        f"# Kueue scheduler benchmark, `{scale}` scenario ({result['date']})",
        "",
        f"Machine: {mach['cpu']}, {mach['cores']} cores, Python {mach['python']}, "
        f"load average {mach.get('load_average_1m_at_end', 'n/a')} at the end. "
        f"{controller.get('target', '')}"
        f"{' Commit ' + controller['commit'] + '.' if controller.get('commit') else ''}",
        "",
        f"{sc['cluster_queues']} ClusterQueues, {sc['workloads']:,} Workloads, "
        f"{sc['cpu_seconds_of_work']:,.0f} cpu-seconds of work on {sc['nominal_cpu']} cpu of nominal quota: "
        f"no scheduler can finish under {sc['lower_bound_wall_s']} s.",
        "",
        f"| figure | kueue-webhook | {kueue.get('label', 'Kueue')} | target |",
        "|---|---|---|---|",
        f"| wall time (first creation to last Workload finished) | {_fmt(result['wall_s'], ' s')}"
        f"{' (TIMED OUT)' if result['timed_out'] else ''} | {_runs(kueue['wall_s'])} s | "
        f"{wall_target} |",
        f"| usage (cpu x time held / nominal x wall) | {_fmt(result['usage_percent'], ' %')} | "
        f"{_runs(kueue['usage_percent'])} % | {'>= 85 %' if scale == 'baseline' else ''} |",
    ]
    recorded = result.get("kueue_recorder") or {"clusterQueueClasses": {}, "workloadClasses": {}}
    for name, group in sorted(recorded["clusterQueueClasses"].items()):
        lines.append(
            f"| usage, Kueue's recorder (ClusterQueue class `{name}`: average of status.flavorsUsage / "
            f"nominal) | {_fmt(group.get('usagePercent'), ' %')} ({group['cpuAverageUsage'] / 1000:g} of "
            f"{group['nominalQuota'] / 1000:g} cpu) | | |"
        )
    for name, figures in result["classes"].items():
        theirs = kueue["mean_time_to_admission_s"].get(name, [])
        target = f"<= {factor * min(theirs):.1f} s" if theirs and factor else ""
        kueue_way = recorded["workloadClasses"].get(name) or {}
        kueue_mean = kueue_way.get("averageTimeToAdmissionMs")
        lines.append(
            f"| mean time to admission, {name}: Kueue's recorder (ours, max) | "
            f"{_fmt(kueue_mean / 1000 if kueue_mean is not None else None, ' s')} "
            f"({_fmt(figures['mean_time_to_admission_s'], ' s')}, "
            f"{_fmt(figures['max_time_to_admission_s'], ' s')}) | {_runs(theirs)} s | {target} |"
        )
    actor = result.get("actor") or {}
    lag = actor.get("finish_lag") or {}
    lines.append(
        f"| finish lag p50 / p90 (finish - admission - run time; actor `{actor.get('kind', '')}`, "
        f"{actor.get('conflicts', 0)} conflicts) | {_seconds(lag.get('p50_s'))} / "
        f"{_seconds(lag.get('p90_s'))} | | |"
    )
    lines += [
        f"| over-admission (instants above quota, from the timeline) | {over['violations']} | | 0 |",
        f"| peak ClusterQueue / cohort usage vs limit (cpu) | {over['max_cluster_queue_cpu']:g} / "
        f"{over['cluster_queue_limit_cpu']:g}, {over['max_cohort_cpu']:g} / "
        f"{over['cohort_limit_cpu']:g} | | |",
        f"| every Workload finished | {'yes' if result['every_workload_finished'] else 'no'} "
        f"({result['unfinished']} unfinished, {result['evictions']} evictions) | | yes |",
        f"| writes per admission (controller's count; seen on watches) | "
        f"{_fmt(result['writes'].get('controller_per_admission'))}; "
        f"{_fmt(result['writes']['observed_per_admission'])} | | |",
        *_apiserver_lines(result, kueue),
        f"| controller peak RSS (VmHWM) | {_fmt(controller.get('peak_rss_mb'), ' MB')} | | |",
        f"| scheduling cycles (per admission) | {_fmt(controller.get('scheduling_cycles'))} "
        f"({_fmt(_ratio(controller.get('scheduling_cycles'), result['admissions']))}) | | |",
        f"| CPU time during the run: controller / fake API server / benchmark | "
        f"{_fmt(controller.get('cpu_s'), ' s')} / {_fmt(controller.get('fake_api_cpu_s'), ' s')} / "
        f"{_fmt(controller.get('benchmark_process_cpu_s'), ' s')} | | |",
        *_topology_lines(result),
        f"| creation span (last Workload created) | {_fmt(result['generation_s'], ' s')} | | |",
        f"| Kueue's end condition (generation done, no Active ClusterQueue pending or reserving) at | "
        f"{_fmt(result.get('kueue_end_after_s'), ' s')} | | |",
        f"| ClusterQueue statuses idle after every Workload finished, at | "
        f"{_fmt(result['queues_idle_after_s'], ' s')} | | |",
        "| Kueue's recorder per Workload class: evictions, mean time to finish | "
        + "; ".join(
            f"{name} {c['totalEvictions']}, {c['averageTimeToFinishMs'] / 1000:.1f} s"
            for name, c in sorted(recorded["workloadClasses"].items())
        )
        + " | | |",
        "",
    ]
    if result.get("phases"):
        lines += [
            "The run by phase (from the timeline):",
            "",
            "| from (s) | usage | admissions/s | finished/s |",
            "|---|---|---|---|",
            *(
                f"| {w['start_s']:g} | {w['usage_percent']} % | {w['admissions_per_s']} | "
                f"{w['finished_per_s']} |"
                for w in result["phases"]
            ),
            "",
        ]
    if result.get("controller_profile"):
        lines += [
            "Where the controller's CPU goes (py-spy samples, each charged to one bucket; cpu s = share of "
            "the measured CPU time, shared among the buckets but the event loop's wait):",
            "",
            "| bucket | cpu s | share of samples |",
            "|---|---|---|",
            *(
                f"| {b['bucket']} | {'n/a' if b['cpu_s'] is None else b['cpu_s']} | {b['percent']} % |"
                for b in result["controller_profile"]
            ),
            "",
        ]
    for key, title in (("controller_hot_spots", "controller"), ("fake_api_hot_spots", "fake API server")):
        if result.get(key):
            lines += [
                f"Hot spots of the {title} (share of samples in the function or its callees):",
                "",
                "| function | share |",
                "|---|---|",
                *(f"| `{h['function']}` | {h['percent']} % |" for h in result[key]),
                "",
            ]
    if result.get("controller_own_time"):
        lines += [
            "The controller's functions by own time (share of samples whose innermost Python frame it is):",
            "",
            "| function | share |",
            "|---|---|",
            *(f"| `{h['function']}` | {h['percent']} % |" for h in result["controller_own_time"]),
            "",
        ]
    return "\n".join(lines)


async def execute(args: argparse.Namespace) -> JSON:
    plan = scenario.plan(scenario.SHAPES[args.scale])
    workdir = Path(tempfile.mkdtemp(prefix="kueue-baseline-"))
    fake: Any = None
    controller: processes.Controller | None = None
    controller_info: JSON = {}
    kubeconfig = Path(args.kubeconfig) if args.kubeconfig else None
    try:
        if kubeconfig is None:
            root = processes.ROOT
            if args.commit:
                root = processes.snapshot(args.commit, workdir / "src")
                controller_info["commit"] = subprocess.run(
                    ["git", "-C", str(processes.ROOT), "rev-parse", "--short", args.commit],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout.strip()
            fake, kubeconfig = processes.start_fake_api(
                workdir, root=root, profile=workdir / "fakeapi.pyspy.txt" if args.profile else None
            )
            controller = processes.start_controller(
                kubeconfig=kubeconfig,
                workdir=workdir,
                profile=workdir / "controller.pyspy.txt" if args.profile else None,
                root=root,
            )
            controller_info["server"] = "fake API server (tests/fakeapi)"
            controller_info["target"] = (
                "kueue-webhook serve and the fake API server in separate processes, HTTPS on loopback."
            )
        elif args.serve:
            root = processes.ROOT
            if args.commit:
                root = processes.snapshot(args.commit, workdir / "src")
            admin = kubeconfig
            # a previous run's namespaces may still be terminating: their Workloads would count in this run
            await real_cluster.wait_namespaces_gone(admin, (q.name for q in plan.queues), timeout=900)
            real_cluster.install(admin)
            version = real_cluster.server_version(admin)
            controller = processes.start_controller(
                kubeconfig=real_cluster.service_account_kubeconfig(admin, workdir / "kubeconfig"),
                workdir=workdir,
                profile=workdir / "controller.pyspy.txt" if args.profile else None,
                root=root,
                # the defaults: leader election on, as installed (--no-leader-election: one replica without
                # a Lease, as Kueue's CI runs minimalkueue)
                flags=["--no-leader-election"] if args.no_leader_election else [],
            )
            controller_info["server"] = f"kube-apiserver {version} (real)"
            controller_info["commit"] = (
                subprocess.run(
                    ["git", "-C", str(processes.ROOT), "rev-parse", "--short", args.commit],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout.strip()
                if args.commit
                else processes.head_commit()
            )
            flags = "--no-leader-election" if args.no_leader_election else "default flags"
            controller_info["target"] = (
                f"kueue-webhook serve ({flags}, its ServiceAccount's credentials and RBAC) against "
                f"the real kube-apiserver {version} of {admin} on the same machine."
            )
        client = await KubeClient.connect(kubeconfig=str(kubeconfig), connections=24)
        try:
            if controller is not None:
                with contextlib.suppress(ApiError):
                    await client.create(
                        NAMESPACES,
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kueue-system"}},
                    )
                await controller.wait_ready(timeout=60)
            run = Run(
                api=client,
                plan=plan,
                timeout=args.timeout,
                progress=lambda m: print(m, flush=True),
                actor=args.actor,
            )
            requests_before = real_cluster.request_counts(kubeconfig) if args.serve else None
            # the instance's own processes: their command lines name its directory (../shared/kube's layout)
            instance = f"{Path(kubeconfig).resolve().parent}/"
            plane_before = real_cluster.ControlPlaneCpu.sample(under=instance)
            cpu_before = processes.cpu_seconds(controller.pid) if controller else None
            fake_cpu_before = processes.cpu_seconds(fake.pid) if fake else None
            own_before = time.process_time()
            try:
                await run.execute()
            except BaseException:
                if args.kubeconfig and not args.keep:
                    await run.cleanup()
                raise
            controller_info["benchmark_process_cpu_s"] = round(time.process_time() - own_before, 1)
            controller_info["control_plane_cpu_s"] = real_cluster.ControlPlaneCpu.sample(
                under=instance
            ).since(plane_before)
            if requests_before is not None:
                controller_info["apiserver_writes"] = real_cluster.writes_between(
                    requests_before, real_cluster.request_counts(kubeconfig)
                )
            if controller is not None:
                controller_info["peak_rss_mb"] = processes.peak_rss_mb(controller.pid)
                cpu_after = processes.cpu_seconds(controller.pid)
                if cpu_before is not None and cpu_after is not None:
                    controller_info["cpu_s"] = round(cpu_after - cpu_before, 1)
                if fake is not None:
                    controller_info["fake_api_peak_rss_mb"] = processes.peak_rss_mb(fake.pid)
                    controller_info["fake_api_cpu_s"] = processes.cpu_seconds(fake.pid)
                    if fake_cpu_before is not None and controller_info["fake_api_cpu_s"] is not None:
                        controller_info["fake_api_cpu_s"] = round(
                            controller_info["fake_api_cpu_s"] - fake_cpu_before, 1
                        )
                with contextlib.suppress(Exception):
                    exposition = await controller.metrics()
                    controller_info["api_writes"] = parse_writes(exposition)
                    cycles = re.search(r"^kueue_webhook_scheduling_cycles_total (\S+)$", exposition, re.M)
                    controller_info["scheduling_cycles"] = int(float(cycles.group(1))) if cycles else None
            if args.kubeconfig and not args.keep:
                await run.cleanup()
            dump_timeline(run, workdir / "timeline.jsonl.gz")
            print(f"timeline: {workdir / 'timeline.jsonl.gz'}", flush=True)
            return {**summarize(run, plan, controller=controller_info), "workdir": str(workdir)}
        finally:
            await client.close()
    finally:
        if controller is not None:
            controller.stop()
            print(f"logs and profiles: {workdir}", flush=True)
        if fake is not None:
            fake.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.kueue_baseline", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--kubeconfig", help="run against this cluster instead of a local fake + controller")
    parser.add_argument("--scale", choices=sorted(scenario.SHAPES), default="baseline")
    parser.add_argument(
        "--out", help="result path without extension (default bench/results/kueue_baseline[-<scale>][-real])"
    )
    parser.add_argument(
        "--timeout", type=float, default=None, help="seconds (default 900 baseline, 3600 large)"
    )
    parser.add_argument(
        "--profile", action="store_true", help="run the controller and fake API server under py-spy record"
    )
    parser.add_argument(
        "--serve",
        action="store_true",
        help="with --kubeconfig (an admin's, of a real API server): install the CRDs and RBAC and run "
        "kueue-webhook serve from here against it, as its ServiceAccount",
    )
    parser.add_argument(
        "--actor",
        choices=("kueue", "concurrent"),
        default="kueue",
        help="kueue: 5 workers and server-side apply, as Kueue's runner (default); concurrent: one task per "
        "finish with a JSON Patch, unbounded",
    )
    parser.add_argument("--keep", action="store_true", help="with --kubeconfig: leave the objects in place")
    parser.add_argument(
        "--no-leader-election",
        action="store_true",
        help="with --serve: one replica without a Lease (as Kueue's CI runs minimalkueue); on a machine so "
        "loaded that the API server answers in seconds the Lease lapses and leadership flaps",
    )
    parser.add_argument(
        "--commit", help="run the controller and fake API server of this commit (default: the working tree)"
    )
    args = parser.parse_args(argv)
    if args.serve and not args.kubeconfig:
        parser.error("--serve needs --kubeconfig: the admin kubeconfig of a real API server")
    suffix = ("" if args.scale == "baseline" else f"-{args.scale}") + ("-real" if args.serve else "")
    args.out = str(Path(args.out) if args.out else RESULTS / f"kueue_baseline{suffix}")
    if args.timeout is None:
        args.timeout = {"baseline": 900.0, "large": 3600.0, "large-tenth": 1800.0, "tas": 1200.0}.get(
            args.scale, 300.0
        )
    result = runtime.run(execute(args))
    kueue = (
        KUEUE_TAS
        if args.scale == "tas"
        else KUEUE_REAL
        if args.serve and args.scale == "baseline"
        else KUEUE_BASELINE
        if args.scale == "baseline"
        else KUEUE_LARGE
        if args.scale == "large"
        else {"label": "Kueue", "wall_s": [], "usage_percent": [], "mean_time_to_admission_s": {}}
    )
    result["kueue"] = kueue
    workdir = Path(result["workdir"])
    if (workdir / "controller.pyspy.txt").exists():
        with (workdir / "controller.pyspy.txt").open() as lines:
            result["controller_profile"] = profile.breakdown(lines, cpu_s=result["controller"].get("cpu_s"))
        with (workdir / "controller.pyspy.txt").open() as lines:
            result["controller_hot_spots"] = profile.hot_spots(lines, under="kueue_webhook/")
        with (workdir / "controller.pyspy.txt").open() as lines:
            result["controller_own_time"] = profile.own_time(lines)
    if (workdir / "fakeapi.pyspy.txt").exists():
        with (workdir / "fakeapi.pyspy.txt").open() as lines:
            result["fake_api_hot_spots"] = profile.hot_spots(lines, under="tests/fakeapi/")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    text = markdown(result, kueue)
    out.with_suffix(".md").write_text(text)
    print(text)
    topology_ok = not result.get("topology") or result["topology"]["violations"] == 0
    return 0 if not result["timed_out"] and result["over_admission"]["violations"] == 0 and topology_ok else 1


if __name__ == "__main__":
    sys.exit(main())
