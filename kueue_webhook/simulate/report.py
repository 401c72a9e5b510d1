"""What a replay shows: the text report (``kubectl get``-style), the same as JSON, and a usage plot.

Everything here reads a finished ``Result`` and the ``Scenario`` it came from; nothing is decided here.
Percentiles are nearest-rank so every reported wait is one that happened, and the plot needs the ``plot``
extra (matplotlib), imported only when a plot is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TextIO

from kueue_webhook.api.topology_assignment import decode
from kueue_webhook.core.model import amount_quantity
from kueue_webhook.simulate.replay import Result, Snapshot
from kueue_webhook.simulate.scenario import Scenario, SimulationError

__all__ = ["plot_usage", "report_json", "report_text", "require_matplotlib"]


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
        admitted = status.get("admittedWorkloads", 0)
        if any(check in scenario.multikueue_checks for check in queue.admission_checks):
            # MultiKueue: admitted once a worker runs it (its check Ready), as Kueue's manager shows it
            admitted = sum(
                1
                for r in snapshot.workloads
                if r.cluster_queue == name
                and r.worker
                and r.admitted_at is not None
                and r.admitted_at <= snapshot.at
                and not (r.finished_at is not None and r.finished_at <= snapshot.at)
            )
        out.append(
            {
                "name": name,
                "cohort": queue.cohort_name,
                "queueingStrategy": queue.queueing_strategy,
                "admitted": admitted,
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
        if r.worker and admitted:
            row["worker"] = r.worker
        if admitted:
            row["podSetCounts"] = dict(r.admitted_counts)
            if r.topology:
                # the domains each TAS pod set's pods go to, as v1beta1 would list them
                row["topology"] = {
                    name: {
                        "levels": list(assignment.get("levels") or []),
                        "domains": [
                            {"values": list(d.values), "count": d.count} for d in decode(dict(assignment))
                        ],
                    }
                    for name, assignment in r.topology
                }
        elif r.dispatching:  # MultiKueue: quota reserved in the manager, no worker has admitted it yet
            row["reservedIn"] = r.cluster_queue
            row["pending"] = {
                "reason": "MultiKueue",
                "message": f"quota reserved in {r.cluster_queue}; waiting for a worker cluster to admit it "
                f"({', '.join(r.dispatching)})",
                "position": None,
            }
        else:
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
    workers = bool(scenario.multikueue_clusters)
    headers = (["NAMESPACE"] if many_namespaces else []) + [
        "NAME",
        "QUEUE",
        "RESERVED IN",
        *(["WORKER"] if workers else []),
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
            *([row.get("worker", "")] if workers else []),
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


def require_matplotlib() -> None:
    """Raise SimulationError with the fix when matplotlib (the ``plot`` extra) is not installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise SimulationError(
            "--plot needs matplotlib, which is not installed: pip install 'kueue-webhook[plot]'"
        ) from None


def plot_usage(result: Result, scenario: Scenario, path: str) -> None:
    """Usage over time (percent of nominal) per ClusterQueue, one line per flavor/resource."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
