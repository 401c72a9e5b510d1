"""Benchmark of a leadership term's start and end: ``python -m bench.term_start [--scale tas]``.

A replica's store holds the objects of one of Kueue's benchmark configs (``bench.baseline.scenario``: the
ClusterQueues, LocalQueues, Namespaces and every Workload, all pending, as the informers would have listed
them); the replica wins the Lease, starts its term (the core rebuilt, every controller's resync) until the
scheduler's tasks would run, then loses it (the standby's queues rebuilt), twice. Reported per transition:
CPU seconds (``time.process_time``: the machine is shared), wall seconds, and the longest the event loop
went without a turn, which is what the Lease's renewal waits behind (a task yields every turn to measure
it). No API server: the replica's client points nowhere, and nothing is sent before the term's tasks start.

With ``--kubeconfig`` (an admin's) the same on a real API server: the config's Workloads are created in a
namespace of their own (queued to a LocalQueue that does not exist, so they stay pending and nothing is
admitted), then a replica runs in this process with leader election as ``serve`` does: its informers list
them, it wins the Lease, and each term's start is measured from the moment it led to the moment its tasks
run; then it steps down, takes the Lease back and starts again. The Workloads' namespace is deleted at
the end.

Results go to ``bench/results/term_start[-real].json`` and ``.md``. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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
from kueue_webhook.control.kube.client import ApiError, KubeClient
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


NAMESPACE = "term-start-bench"


async def create_workloads(api: KubeClient, shape: scenario.Shape) -> int:
    """The config's Workloads in ``NAMESPACE``, queued to a LocalQueue that does not exist."""
    with contextlib.suppress(ApiError):
        await api.create(
            kinds.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        )
    bodies = []
    for stream in scenario.plan(shape).streams:
        for planned in stream.workloads:
            body = scenario.workload(planned)
            body["metadata"].update(name=f"{planned.namespace}-{planned.name}", namespace=NAMESPACE)
            body["spec"]["queueName"] = "nowhere"
            bodies.append(body)
    slots = asyncio.Semaphore(24)

    async def create(body: JSON) -> None:
        async with slots:
            with contextlib.suppress(ApiError):  # already there from an interrupted run
                await api.create(kinds.WORKLOADS, body, namespace=NAMESPACE)

    await asyncio.gather(*(create(body) for body in bodies))
    return len(bodies)


async def measure_real(kubeconfig: str, scale: str, terms: int) -> JSON:
    api = await KubeClient.connect(kubeconfig=kubeconfig)
    created = await create_workloads(api, scenario.SHAPES[scale])
    controller = Controller(client=api, namespace="kueue-system", identity="bench-term-start")
    assert controller.elector is not None
    elector = controller.elector
    told = elector.on_change
    assert told is not None
    turns = Turns()
    rows: list[JSON] = []
    began: list[tuple[float, float]] = []

    def transition(leading: bool) -> None:
        if leading:
            turns.reset()
            began.append((time.process_time(), time.monotonic()))
        assert told is not None
        told(leading)

    elector.on_change = transition
    running = asyncio.create_task(controller.run())
    watcher = asyncio.create_task(turns.run())
    try:
        for _ in range(terms):
            await controller.term_open.wait()
            cpu, wall = began[-1]
            rows.append(
                {
                    "transition": "term start",
                    "cpu_s": round(time.process_time() - cpu, 3),
                    "wall_s": round(time.monotonic() - wall, 3),
                    "longest_without_a_turn_ms": round(turns.longest * 1000, 1),
                    "turns": turns.count,
                }
            )
            elector.step_down()  # the next tick takes the Lease back: a new term
    finally:
        running.cancel()
        watcher.cancel()
        await asyncio.gather(running, watcher, return_exceptions=True)
        with contextlib.suppress(ApiError):
            await api.delete(kinds.NAMESPACES, name=NAMESPACE)
        await api.close()
    return {
        "scale": scale,
        "workloads": controller.store.count(kinds.WORKLOADS),
        "created": created,
        "server": "real kube-apiserver",
        "transitions": rows,
    }


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
    parser.add_argument("--kubeconfig", help="an admin's: measure on that API server (see above)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.kubeconfig:
        result = asyncio.run(measure_real(args.kubeconfig, args.scale, args.terms))
    else:
        result = asyncio.run(measure(args.scale, args.terms))
    result.update(
        date=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        machine=f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        python=platform.python_version(),
        load_average=round(os.getloadavg()[0], 2),
    )
    RESULTS.mkdir(exist_ok=True)
    name = "term_start-real" if args.kubeconfig else "term_start"
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    where = "listed from a real kube-apiserver" if args.kubeconfig else "in the store"
    lines = [
        f"# A leadership term's start and end, `{args.scale}` ({result['date']})",
        "",
        f"{result['workloads']:,} Workloads, all pending, {where}; {result['machine']}, Python "
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
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
