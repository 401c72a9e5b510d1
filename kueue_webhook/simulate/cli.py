"""``kueue-webhook simulate``: its options, and the run that loads, replays and reports.

Options are checked before anything is loaded (a bad ``--at`` or a missing matplotlib must not cost a long
replay first), every input error ends as one line on stderr and exit code 2, and a progress bar is drawn
only on a terminal and only for a trace long enough to need one.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

import yaml

from kueue_webhook.simulate.replay import replay
from kueue_webhook.simulate.report import plot_usage, report_json, report_text, require_matplotlib
from kueue_webhook.simulate.scenario import (
    ARRIVAL_ANNOTATION,
    RUNTIME_ANNOTATION,
    SimulationError,
    load_scenario,
    parse_duration,
)

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "simulation annotations on each Job (or Workload):\n"
        f"  {ARRIVAL_ANNOTATION}: submission time as an offset from the start (30s, 2m, 1h30m; default 0s)\n"
        f"  {RUNTIME_ANNOTATION}: how long it runs once admitted (default: it never finishes)"
    )
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="multi-document YAML manifests and Jobs; with --from-cluster, the edits to try (optional)",
    )
    live = parser.add_argument_group("what-if on a live cluster (read only)")
    live.add_argument(
        "--from-cluster",
        action="store_true",
        help="replay the cluster's queues and Workloads as they are and with the edits in FILE, and "
        "report which Workloads would start sooner or later",
    )
    live.add_argument(
        "--kubeconfig", metavar="PATH", help="as kubectl (default: $KUBECONFIG, ~/.kube/config)"
    )
    live.add_argument("--context", metavar="NAME", help="the kubeconfig context to use")
    live.add_argument(
        "--assume-runtime",
        metavar="DURATION",
        default="1h",
        help="how long a Workload without spec.maximumExecutionTimeSeconds runs (default 1h)",
    )
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
    parser.add_argument(
        "--output", "-o", choices=("text", "json", "yaml"), default="text", help="report format"
    )
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
    if args.from_cluster:
        from kueue_webhook.simulate.from_cluster import run_from_cluster

        return run_from_cluster(args)
    try:
        if not args.files:
            raise SimulationError("give the FILEs to replay (or --from-cluster)")
        if args.plot:  # fail before a long replay, not after it
            require_matplotlib()
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
        elif args.output == "yaml":
            sys.stdout.write(yaml.safe_dump(report_json(result, scenario), sort_keys=False))
        else:
            report_text(result, scenario, sys.stdout)
        if args.plot:
            plot_usage(result, scenario, args.plot)
    except SimulationError as exc:
        print(f"kueue-webhook simulate: {exc}", file=sys.stderr)
        return 2
    return 0
