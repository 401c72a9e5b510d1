"""End-to-end controller benchmark on the fake API server (a separate process, real HTTPS).

This process runs one controller replica exactly as ``kueue-webhook serve`` wires it (informers, store,
Lease, admission loop, reconciler, status reporter) and plays the cluster's users and kubelets through the
API. Figures:

* **throughput**: N queue-labelled Jobs exist (suspended, as the webhook leaves them); from the moment the
  caches are synced, how many Jobs per second end up running (Workload created, admitted, Job started);
* **API writes per admission** on the admission path (Workload status + Job patch; target <= 2), and all
  writes per Job including the Workload creation;
* **release latency**: a ClusterQueue with room for one Job and a queue behind it; a Job's completion is
  written, and the clock stops when the next Job is unsuspended (target p99 <= 50 ms);
* **RSS** of the controller process with N Jobs and their Workloads in its store (target <= 100 MB at
  10,000 Jobs); the fake API server's memory is not counted (it is another process).

Results go to ``bench/results/e2e.json`` and ``bench/results/e2e.md`` with the machine and the date. With
``--kubeconfig`` (an admin's, of a real kube-apiserver) the same figures are measured there instead, with
``kueue-webhook serve`` in its own process (``bench.e2e_real``), into ``bench/results/e2e-real.*``.

    .venv/bin/python -m bench.e2e [--jobs N] [--latency-samples 200] [--kubeconfig PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.e2e_common import job, p99
from kueue_webhook import runtime
from kueue_webhook.control.cache.store import Change
from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.kinds import (
    CLUSTER_QUEUES,
    JOBS,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
)
from kueue_webhook.control.replica.controller import Controller
from kueue_webhook.control.replica.controller_settings import ControllerSettings
from kueue_webhook.control.replica.wiring import API_CONNECTIONS

RESULTS = Path(__file__).resolve().parent / "results"
FAKE_SERVER = "fake API server (tests.fakeapi) in a separate process over HTTPS on loopback"
JSON = dict[str, Any]


def rss_mb() -> tuple[float, float]:
    """(current, peak) resident set size of this process in MiB."""
    fields = dict(
        line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line
    )
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def start_fake_api(workdir: Path) -> tuple[subprocess.Popen[str], Path]:
    kubeconfig = workdir / "kubeconfig.yaml"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakeapi", "--port", "0", "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("kubeconfig:"):
            return process, kubeconfig
    raise RuntimeError("the fake API server did not start")


def cluster_queue(name: str, gpus: int) -> JSON:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {"name": "gpu-nodes", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": gpus}]}
                    ],
                }
            ],
        },
    }


def local_queue(name: str, cq: str) -> JSON:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": "bench"},
        "spec": {"clusterQueue": cq},
    }


def completed(now: str) -> JSON:
    message = "Reached expected number of succeeded pods"
    return {
        "status": {
            "succeeded": 1,
            "completionTime": now,
            "conditions": [
                {
                    "type": "SuccessCriteriaMet",
                    "status": "True",
                    "reason": "CompletionsReached",
                    "message": message,
                },
                {"type": "Complete", "status": "True", "reason": "CompletionsReached", "message": message},
            ],
        }
    }


async def create_many(client: KubeClient, objects: list[JSON], *, concurrency: int = 4) -> None:
    slots = asyncio.Semaphore(concurrency)

    async def one(obj: JSON) -> None:
        async with slots:
            await client.create(JOBS, obj, namespace="bench")

    await asyncio.gather(*(one(obj) for obj in objects))


def create_in_another_process(kubeconfig: Path, *, prefix: str, queue: str, count: int) -> None:
    """The users' side runs elsewhere, so its memory is not counted as the controller's."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.e2e",
            "--create",
            str(count),
            "--prefix",
            prefix,
            "--queue",
            queue,
            "--kubeconfig",
            str(kubeconfig),
        ],
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )


async def create_jobs(kubeconfig: Path, *, prefix: str, queue: str, count: int) -> None:
    client = await KubeClient.connect(kubeconfig=str(kubeconfig), connections=8)
    try:
        await create_many(client, [job(f"{prefix}{i:05d}", queue) for i in range(count)], concurrency=8)
    finally:
        await client.close()


class RunningJobs:
    """Counts Jobs the controller's store shows unsuspended, and timestamps each start."""

    def __init__(self, queue_prefix: str) -> None:
        self.prefix = queue_prefix
        self.started: dict[str, float] = {}
        self.order: list[str] = []
        self.changed = asyncio.Event()

    def __call__(self, change: Change) -> None:
        if change.kind is not JOBS or change.new is None or not change.key[1].startswith(self.prefix):
            return
        if change.new.get("spec", {}).get("suspend") is False and change.key[1] not in self.started:
            self.started[change.key[1]] = time.perf_counter()
            self.order.append(change.key[1])
            self.changed.set()

    async def wait_for(self, count: int, timeout: float) -> None:
        deadline = time.perf_counter() + timeout
        while len(self.started) < count:
            self.changed.clear()
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(f"{len(self.started)}/{count} Jobs running after {timeout}s")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), remaining)


async def bench(jobs: int, samples: int) -> JSON:
    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"kueue-webhook-bench-{os.getpid()}"
    workdir.mkdir(parents=True, exist_ok=True)
    process, kubeconfig = start_fake_api(workdir)
    try:
        # the users' side shares this process: keep its connection pool (128 KiB TLS buffer each) small
        setup = await KubeClient.connect(kubeconfig=str(kubeconfig), connections=4)
        for name in ("bench", "kueue-system"):
            await setup.create(
                NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            )
        await setup.create(
            RESOURCE_FLAVORS,
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor",
                "metadata": {"name": "gpu-nodes"},
            },
        )
        await setup.create(CLUSTER_QUEUES, cluster_queue("bulk", jobs))
        await setup.create(CLUSTER_QUEUES, cluster_queue("one-at-a-time", 1))
        await setup.create(LOCAL_QUEUES, local_queue("bulk", "bulk"), namespace="bench")
        await setup.create(LOCAL_QUEUES, local_queue("serial", "one-at-a-time"), namespace="bench")
        t0 = time.perf_counter()
        create_in_another_process(kubeconfig, prefix="bulk-", queue="bulk", count=jobs)
        creation_seconds = time.perf_counter() - t0

        client = await KubeClient.connect(kubeconfig=str(kubeconfig), connections=API_CONNECTIONS)
        controller = Controller(
            client=client,
            namespace="kueue-system",
            identity="bench",
            settings=ControllerSettings(status_interval=0.5),
        )
        bulk = RunningJobs("bulk-")
        serial = RunningJobs("serial-")
        controller.store.subscribe(bulk)
        controller.store.subscribe(serial)
        task = asyncio.create_task(controller.run())
        await asyncio.wait_for(controller.leading.wait(), 60)
        started = time.perf_counter()
        await bulk.wait_for(jobs, timeout=max(120.0, jobs / 20))
        throughput_seconds = max(bulk.started.values()) - started
        writes_after_bulk = dict(_writes(controller))
        await settle(controller)
        rss_now, rss_peak = rss_mb()
        if os.environ.get(
            "PYTHONTRACEMALLOC"
        ):  # where the memory goes: PYTHONTRACEMALLOC=1 python -m bench.e2e
            import tracemalloc

            snapshot = tracemalloc.take_snapshot()
            print("traced MB", tracemalloc.get_traced_memory()[0] / 2**20, file=sys.stderr)
            for stat in snapshot.statistics("filename")[:12]:
                print(stat, file=sys.stderr)
            for stat in snapshot.statistics("lineno")[:25]:
                print(stat, file=sys.stderr)
        admitted_bulk = controller.scheduler.admitted

        # release latency: one Job runs, the rest wait; finish the running one, time the next start
        await create_many(setup, [job(f"serial-{i:04d}", "serial") for i in range(samples + 1)])
        await serial.wait_for(1, timeout=60)
        latencies: list[float] = []
        round_trips: list[float] = []
        for index in range(samples):
            running = serial.order[index]  # queue order follows Workload creation, not Job names
            begin = time.perf_counter()
            await setup.patch(
                JOBS,
                name=running,
                namespace="bench",
                patch=completed(datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")),
                subresource="status",
            )
            round_trips.append(time.perf_counter() - begin)
            await serial.wait_for(index + 2, timeout=30)
            latencies.append(serial.started[serial.order[index + 1]] - begin)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await client.close()
        await setup.close()
    finally:
        process.terminate()
        process.wait(timeout=10)

    workload_status = writes_after_bulk.get(("Workload", "patch-status"), 0)
    job_patches = writes_after_bulk.get(("Job", "patch"), 0)
    latencies_ms = sorted(x * 1000 for x in latencies)
    round_trips_ms = sorted(x * 1000 for x in round_trips)
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "server": FAKE_SERVER,
        "machine": {
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "processor": _cpu_model(),
        },
        "jobs": jobs,
        "job_creation_seconds": round(creation_seconds, 2),
        "admitted_jobs_per_second": round(jobs / throughput_seconds, 1),
        "seconds_to_run_all_jobs": round(throughput_seconds, 2),
        "admission_path_writes_per_admission": round(
            (workload_status + job_patches) / max(admitted_bulk, 1), 3
        ),
        "all_writes_per_job": round(sum(writes_after_bulk.values()) / jobs, 3),
        "writes_by_kind_and_verb": {f"{k} {v}": n for (k, v), n in sorted(writes_after_bulk.items())},
        "release_latency_ms": {
            "samples": len(latencies_ms),
            "p50": round(statistics.median(latencies_ms), 2),
            "p99": round(p99(latencies_ms), 2),
            "max": round(latencies_ms[-1], 2),
        },
        "api_write_round_trip_ms": {
            "p50": round(statistics.median(round_trips_ms), 2),
            "p99": round(p99(round_trips_ms), 2),
            "max": round(round_trips_ms[-1], 2),
        },
        "rss_mb_with_all_jobs": round(rss_now, 1),
        "peak_rss_mb": round(rss_peak, 1),
        "targets": {"release_latency_p99_ms": 50, "writes_per_admission": 2, "rss_mb_at_10000_jobs": 100},
    }


async def settle(controller: Controller) -> None:
    """Steady state: the burst's Events posted and writes done, so RSS shows what is kept, not in flight."""
    for _ in range(600):
        if not controller.recorder.pending and not controller.scheduler.in_flight:
            break
        await asyncio.sleep(0.05)  # a benchmark waiting for background work to drain
    gc.collect()


def _writes(controller: Controller) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for metric in controller.metrics.api_writes.collect():
        for sample in metric.samples:
            if sample.name.endswith("_total"):
                out[(sample.labels["kind"], sample.labels["verb"])] = int(sample.value)
    return out


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return re.sub(r"\s+", " ", line.split(":", 1)[1]).strip()
    return platform.processor()


def markdown(result: JSON) -> str:
    latency = result["release_latency_ms"]
    api = result["api_write_round_trip_ms"]
    machine = result["machine"]
    return "\n".join(
        [
            f"# Controller end-to-end benchmark ({result['date']})",
            "",
            f"Server: {result.get('server', FAKE_SERVER)}. Machine: {machine['processor']}, "
            f"{machine['cpus']} CPUs, Python {machine['python']}.",
            "",
            "| figure | value | target |",
            "|---|---|---|",
            f"| Jobs admitted and started per second ({result['jobs']} Jobs) | "
            f"{result['admitted_jobs_per_second']} | |",
            f"| API writes per admission (Workload status + Job patch) | "
            f"{result['admission_path_writes_per_admission']} | <= 2 |",
            f"| all API writes per Job (incl. Workload creation, queue status) | "
            f"{result['all_writes_per_job']} | |",
            f"| Job finished -> next Job unsuspended, p50 / p99 / max (ms, {latency['samples']} samples) | "
            f"{latency['p50']} / {latency['p99']} / {latency['max']} | p99 <= 50 |",
            f"| for comparison: one API write round trip (the completion patch), p50 / p99 / max (ms) | "
            f"{api['p50']} / {api['p99']} / {api['max']} | |",
            f"| controller RSS with {result['jobs']} Jobs + Workloads, steady (MB), peak in the burst | "
            f"{result['rss_mb_with_all_jobs']} ({result['peak_rss_mb']}) | <= 100 at 10,000 |",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.e2e", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--jobs",
        type=int,
        help="default 10,000; 5,000 with --kubeconfig, where a run of 10,000 takes about 14 minutes here",
    )
    parser.add_argument("--latency-samples", type=int, default=200)
    parser.add_argument("--create", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--prefix", default="bulk-", help=argparse.SUPPRESS)
    parser.add_argument("--queue", default="bulk", help=argparse.SUPPRESS)
    parser.add_argument(
        "--kubeconfig", type=Path, help="admin kubeconfig of a real API server (default: a local fake one)"
    )
    parser.add_argument(
        "--run-seconds", type=float, default=0.1, help="with --kubeconfig: how long each timed Pod runs"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="with --kubeconfig: longest wait")
    parser.add_argument(
        "--trace-release",
        action="store_true",
        help="with --kubeconfig: split the release latency into the controller's time and its writes' "
        "round trips, from a trace the controller writes (bench/release_trace)",
    )
    parser.add_argument("--out", type=Path, help="result path without extension (default bench/results/...)")
    args = parser.parse_args()
    if args.create:  # helper mode: the users' side, in its own process
        asyncio.run(create_jobs(args.kubeconfig, prefix=args.prefix, queue=args.queue, count=args.create))
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.kubeconfig:
        from bench import e2e_real

        args.jobs = args.jobs or 5_000
        result = runtime.run(
            e2e_real.run(
                args.kubeconfig,
                jobs=args.jobs,
                samples=args.latency_samples,
                run_seconds=args.run_seconds,
                timeout=args.timeout,
                trace=args.trace_release,
            )
        )
        text, name = e2e_real.markdown(result), "e2e-real"
    else:
        result = runtime.run(bench(args.jobs or 10_000, args.latency_samples))
        text, name = markdown(result), "e2e"
    out = args.out or RESULTS / name
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    out.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
