"""Benchmark of a leadership term's start and end: ``python -m bench.term_start [--scale tas]``.

A replica's store holds the objects of one of Kueue's benchmark configs (``bench.baseline.scenario``: the
ClusterQueues, LocalQueues, Namespaces and every Workload, all pending, as the informers would have listed
them); the replica wins the Lease, starts its term (the core rebuilt, every controller's resync) until the
scheduler's tasks would run, then loses it (the standby's queues rebuilt), twice. Reported per transition:
CPU seconds (``time.process_time``: the machine is shared), wall seconds, and the longest the event loop
went without a turn, which is what the Lease's renewal waits behind (a task yields every turn to measure
it). No API server: the replica's client points nowhere, and nothing is sent before the term's tasks start.

Results go to ``bench/results/term_start.json`` and ``.md``. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.baseline import scenario
from kueue_webhook.control.kube import kinds
from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.replica.controller import Controller

RESULTS = Path(__file__).parent / "results"
JSON = dict[str, Any]


def _listed(obj: JSON, version: int) -> JSON:
    """``obj`` as an informer lists it: with a uid, a resourceVersion and a creation time."""
    meta = obj.setdefault("metadata", {})
    meta.update(uid=f"uid-{version}", resourceVersion=str(version), creationTimestamp="2026-01-01T00:00:00Z")
    return obj


def fill(controller: Controller, shape: scenario.Shape) -> int:
    """The config's objects in the replica's store; the number of Workloads."""
    plan = scenario.plan(shape)
    store, version = controller.store, 1
    flavor = scenario.resource_flavor(shape)
    store.upsert(kinds.RESOURCE_FLAVORS, _listed(flavor, version))
    if shape.topology is not None:
        store.upsert(kinds.TOPOLOGIES, _listed(scenario.topology_object(shape.topology), version))
    for queue in plan.queues:
        version += 1
        store.upsert(kinds.NAMESPACES, _listed(scenario.namespace(queue), version))
        cluster_queue = scenario.cluster_queue(queue, flavor["metadata"]["name"])
        store.upsert(kinds.CLUSTER_QUEUES, _listed(cluster_queue, version))
        store.upsert(kinds.LOCAL_QUEUES, _listed(scenario.local_queue(queue), version))
    for stream in plan.streams:
        for workload in stream.workloads:
            version += 1
            store.upsert(kinds.WORKLOADS, _listed(scenario.workload(workload), version))
    return store.count(kinds.WORKLOADS)


class Turns:
    """The longest time between two turns of the event loop since ``reset``."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.count = 0
        self._last = time.monotonic()

    def reset(self) -> None:
        self.longest, self.count, self._last = 0.0, 0, time.monotonic()

    async def run(self) -> None:
        while True:
            await asyncio.sleep(0)
            now = time.monotonic()
            self.longest = max(self.longest, now - self._last)
            self.count += 1
            self._last = now


async def measure(scale: str, terms: int) -> JSON:
    shape = scenario.SHAPES[scale]
    client = KubeClient(host="http://127.0.0.1:9")
    controller = Controller(client=client, namespace="kueue-system", identity="bench")
    workloads = fill(controller, shape)
    controller.synced.set()
    turns = Turns()
    watcher = asyncio.create_task(turns.run())
    rows: list[JSON] = []

    async def timed(what: str, transition: Any, done: Any) -> None:
        turns.reset()
        cpu, wall = time.process_time(), time.monotonic()
        transition()
        await done()
        rows.append(
            {
                "transition": what,
                "cpu_s": round(time.process_time() - cpu, 3),
                "wall_s": round(time.monotonic() - wall, 3),
                "longest_without_a_turn_ms": round(turns.longest * 1000, 1),
                "turns": turns.count,
            }
        )

    async def mirror_rebuilt() -> None:
        while controller.pending_queues() is None:
            await asyncio.sleep(0.001)

    try:
        for _ in range(terms):
            await timed("term start", controller._start_leading, controller.term_open.wait)
            # the term's tasks would now talk to the API server: only the transitions are measured
            await timed("step down", controller._stop_leading, mirror_rebuilt)
    finally:
        watcher.cancel()
        controller._stop_leading(shutting_down=True)
        controller._stop_mirror_rebuild()
        await client.close()
    return {"scale": scale, "workloads": workloads, "transitions": rows}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", choices=sorted(scenario.SHAPES), default="tas")
    parser.add_argument("--terms", type=int, default=2)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    result = asyncio.run(measure(args.scale, args.terms))
    result.update(
        date=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        machine=f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        python=platform.python_version(),
        load_average=round(os.getloadavg()[0], 2),
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "term_start.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"# A leadership term's start and end, `{args.scale}` ({result['date']})",
        "",
        f"{result['workloads']:,} Workloads, all pending, in the store; {result['machine']}, Python "
        f"{result['python']}, load average {result['load_average']} at the end (the wall times are the "
        "machine's; the CPU seconds are this process's).",
        "",
        "| transition | CPU s | wall s | longest without a turn of the event loop (ms) | turns |",
        "|---|---|---|---|---|",
        *(
            f"| {r['transition']} | {r['cpu_s']} | {r['wall_s']} | {r['longest_without_a_turn_ms']} | "
            f"{r['turns']} |"
            for r in result["transitions"]
        ),
    ]
    (RESULTS / "term_start.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
