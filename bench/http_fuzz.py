"""Fuzzing the whole HTTPS port at length: 100,000 requests and more, with timings, loop lag and memory.

The server runs as its own process (the application of :func:`kueue_webhook.http.app.create_app`, the
visibility
API over a ClusterQueue with pending Workloads, over TLS on 127.0.0.1) with a loop-lag probe inside: a task
that asks to wake every 5 ms and records how late it wakes, which is how long the event loop was blocked.
This process plays every caller: requests from :mod:`bench.http_surface` (every admission path,
``/convert``, the visibility API, ``/metrics``, the probes; damaged, huge, deep, random), over a few
keep-alive connections, plus a ``/readyz`` probe every 100 ms as kubelet would send it. Requests are drawn
in batches before they are sent, so drawing a large body never delays the timing of another answer.

Reported: answers by status, 5xx (goal 0), answers that break the contract of
:func:`bench.http_surface.problems` (goal 0), the slowest answers (goal: none over 100 ms) overall and for
ordinary reviews, the ``/readyz`` probe's slowest answer, the event loop's worst block (goal: under 50 ms)
and the server's memory before and after (goal: bounded). Results go to ``bench/results/http-fuzz.md`` and
``.json`` with the machine and the date.

    .venv/bin/python -m bench.http_fuzz --requests 100000 [--connections 8] [--seed 1] [--big 0.02]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import random
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from prometheus_client import CollectorRegistry

from bench.http_surface import FuzzRequest, draw_request, problems, visibility_of_research
from bench.webhook import _machine
from kueue_webhook import runtime
from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration
from kueue_webhook.http.app import create_app
from kueue_webhook.http.certs import ensure_certificates
from kueue_webhook.http.limits import INLINE_BODY_BYTES
from kueue_webhook.http.server import WebhookServer
from kueue_webhook.memory import freeze_survivors

RESULTS = Path(__file__).resolve().parent / "results"
PROBE_INTERVAL = 0.005
STATS = "/bench-stats"


# ---- the server process ---------------------------------------------------------------------------------
@dataclass
class LoopLag:
    """How late a task that asks to wake every :data:`PROBE_INTERVAL` wakes: the loop's blocks.

    For the worst block it also keeps the CPU time the loop's thread and the whole process spent meanwhile:
    the loop's close to the block's length when the loop ran code all along; the process's close to it when
    the worker thread held the interpreter; both far less when the process waited for a CPU (a loaded
    machine). ``worst_own`` is the longest block the process itself can have caused: no block is longer than
    the CPU time the process used meanwhile.
    """

    worst: float = 0.0
    worst_loop_cpu: float = 0.0
    worst_process_cpu: float = 0.0
    worst_own: float = 0.0
    over_10ms: int = 0
    over_50ms: int = 0
    samples: int = 0

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            expected = loop.time() + PROBE_INTERVAL
            cpu, process_cpu = time.thread_time(), time.process_time()
            await asyncio.sleep(PROBE_INTERVAL)
            late = loop.time() - expected
            self.samples += 1
            used = time.process_time() - process_cpu
            if late > self.worst:
                self.worst, self.worst_loop_cpu = late, time.thread_time() - cpu
                self.worst_process_cpu = used
            # the part of the block this process can have caused: it cannot block the loop longer than it ran
            self.worst_own = max(self.worst_own, min(late, used))
            self.over_10ms += late > 0.010
            self.over_50ms += late > 0.050


@dataclass
class Collections:
    """The cyclic garbage collector's runs in the server and how long the longest held the interpreter."""

    runs: Counter[int] = field(default_factory=Counter)
    collected: int = 0
    worst: float = 0.0
    worst_cpu: float = 0.0
    _started: tuple[float, float] = (0.0, 0.0)

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = (time.perf_counter(), time.thread_time())
            return
        self.runs[info["generation"]] += 1
        self.collected += info["collected"]
        self.worst = max(self.worst, time.perf_counter() - self._started[0])
        self.worst_cpu = max(self.worst_cpu, time.thread_time() - self._started[1])


def _cpu_seconds(pid: str) -> float:
    """User plus system CPU time of a process, from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _status(pid: str) -> dict[str, int]:
    found = {}
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    for line in lines:
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


def _memory() -> dict[str, float]:
    """Resident set size now and at its peak, in KiB, and CPU time, of the server and of its worker
    processes."""
    own = _status("self")
    tasks = Path("/proc/self/task").iterdir()
    pids = [pid for task in tasks for pid in (task / "children").read_text().split()]
    children = [_status(pid) for pid in pids]
    return {
        "rss_kib": own.get("VmRSS", 0),
        "peak_rss_kib": own.get("VmHWM", 0),
        "workers_rss_kib": sum(c.get("VmRSS", 0) for c in children),
        "workers_peak_rss_kib": sum(c.get("VmHWM", 0) for c in children),
        "cpu_s": _cpu_seconds("self"),
        "workers_cpu_s": sum(_cpu_seconds(pid) for pid in pids),
    }


def serve(cert: str, key: str, port_file: str, pending: int) -> None:
    """The server process: the webhook's application plus :data:`STATS` (loop lag and memory)."""
    lag = LoopLag()
    collections = Collections()
    gc.callbacks.append(collections)
    view = StaticClusterView(
        namespaces={"golden-hooked": {"kubernetes.io/metadata.name": "golden-hooked"}},
        local_queues={"golden-hooked": {"team-a-gpu", "default"}, "golden": {"team-a-gpu"}},
    )
    configuration = Configuration()
    app = create_app(
        view=view,
        config=lambda: configuration,
        registry=CollectorRegistry(),
        visibility=visibility_of_research(pending),
    )

    async def stats(request: web.Request) -> web.Response:
        body = {
            "loop_lag_worst_ms": round(lag.worst * 1000, 2),
            "loop_lag_worst_loop_cpu_ms": round(lag.worst_loop_cpu * 1000, 2),
            "loop_lag_worst_process_cpu_ms": round(lag.worst_process_cpu * 1000, 2),
            "loop_lag_worst_own_ms": round(lag.worst_own * 1000, 2),
            "loop_lag_over_10ms": lag.over_10ms,
            "loop_lag_over_50ms": lag.over_50ms,
            "loop_lag_samples": lag.samples,
            "gc_runs": {str(generation): n for generation, n in sorted(collections.runs.items())},
            "gc_collected": collections.collected,
            "gc_worst_ms": round(collections.worst * 1000, 2),
            "gc_worst_cpu_ms": round(collections.worst_cpu * 1000, 2),
            **_memory(),
        }
        if request.method == "POST":  # reset: the measurement starts now
            lag.worst, lag.worst_loop_cpu, lag.worst_process_cpu, lag.worst_own = 0.0, 0.0, 0.0, 0.0
            lag.over_10ms, lag.over_50ms, lag.samples = 0, 0, 0
            collections.runs.clear()
            collections.collected, collections.worst, collections.worst_cpu = 0, 0.0, 0.0
        return web.json_response(body)

    app.router.add_get(STATS, stats)
    app.router.add_post(STATS, stats)
    server = WebhookServer(app, cert_file=cert, key_file=key, host="127.0.0.1", port=0)

    async def main() -> None:
        await server.start()
        freeze_survivors()  # as the webhook's own server does once it listens
        probe = asyncio.create_task(lag.run())
        Path(port_file).write_text(str(server.port))
        try:
            await asyncio.Event().wait()
        finally:
            probe.cancel()
            await server.stop()

    runtime.run(main())  # the event loop the webhook serves on (uvloop where installed)


# ---- the load -------------------------------------------------------------------------------------------
@dataclass
class Answer:
    request: FuzzRequest
    status: int
    seconds: float
    size: int
    problems: list[str]


@dataclass
class Tally:
    answers: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: int = 0
    broken: list[tuple[str, str, int, list[str]]] = field(default_factory=list)
    broken_count: int = 0
    slowest: list[tuple[float, str, str, int, int]] = field(default_factory=list)
    ordinary_seconds: list[float] = field(default_factory=list)
    large_seconds: list[float] = field(default_factory=list)
    largest_answer: int = 0
    readyz_seconds: list[float] = field(default_factory=list)
    readyz_failures: int = 0
    #: (requests sent, server RSS MiB, worker process RSS MiB) every 10,000 requests: a plateau, or a leak
    memory: list[tuple[int, float, float]] = field(default_factory=list)

    def add(self, answer: Answer) -> None:
        self.answers += 1
        self.statuses[answer.status] += 1
        self.server_errors += answer.status >= 500
        self.largest_answer = max(self.largest_answer, answer.size)
        if answer.problems:
            self.broken_count += 1
            if len(self.broken) < 20:
                self.broken.append(
                    (answer.request.path[:150], answer.request.what, answer.status, answer.problems[:3])
                )
        ordinary = len(answer.request.body) <= INLINE_BODY_BYTES and answer.request.path != "/convert"
        (self.ordinary_seconds if ordinary else self.large_seconds).append(answer.seconds)
        row = (
            answer.seconds,
            answer.request.path.split("?")[0][:70],
            answer.request.what,
            len(answer.request.body),
            answer.status,
        )
        self.slowest.append(row)
        if len(self.slowest) > 200:
            self.slowest = sorted(self.slowest, reverse=True)[:20]


async def _send(session: aiohttp.ClientSession, request: FuzzRequest) -> tuple[int, float, bytes]:
    """The answer's status, how long it took, and its body (checked later: decoding a large answer here
    would hold this process's loop while other answers arrive, and count against their time)."""
    headers = {"Content-Type": request.content_type} if request.method == "POST" else {}
    started = time.perf_counter()
    async with session.request(
        request.method, request.path, data=request.body or None, headers=headers
    ) as response:
        body = await response.read()
    return response.status, time.perf_counter() - started, body


def _checked(request: FuzzRequest, status: int, seconds: float, body: bytes) -> Answer:
    return Answer(request, status, seconds, len(body), problems(request, status, body))


async def _readyz(session: aiohttp.ClientSession, tally: Tally, stop: asyncio.Event) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        try:
            async with session.get("/readyz") as response:
                await response.read()
                tally.readyz_failures += response.status != 200
        except aiohttp.ClientError:
            tally.readyz_failures += 1
        tally.readyz_seconds.append(time.perf_counter() - started)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.1)


async def _run(url: str, context: ssl.SSLContext, args: argparse.Namespace) -> dict[str, Any]:
    tally = Tally()
    timeout = aiohttp.ClientTimeout(total=120)
    connector = aiohttp.TCPConnector(ssl=context, limit=args.connections)
    probe_connector = aiohttp.TCPConnector(ssl=context, limit=1)
    async with (
        aiohttp.ClientSession(base_url=url, connector=connector, timeout=timeout) as session,
        aiohttp.ClientSession(base_url=url, connector=probe_connector, timeout=timeout) as probe,
    ):
        for serial in range(200):  # warm up: the worker process starts on the first large conversion
            await _send(session, draw_request(random.Random(-1 - serial), big=0.5, serial=serial))
        async with session.get(STATS) as response:
            before = await response.json()
        async with session.post(STATS) as response:  # the loop-lag measurement starts here
            await response.read()
        stop = asyncio.Event()
        readyz = asyncio.create_task(_readyz(probe, tally, stop))
        started, load_cpu = time.monotonic(), time.process_time()
        sent = 0
        while sent < args.requests:
            batch = [
                draw_request(random.Random(args.seed * 1_000_003 + i), big=args.big, serial=i)
                for i in range(sent, min(sent + args.batch, args.requests))
            ]
            queue: asyncio.Queue[FuzzRequest] = asyncio.Queue()
            for request in batch:
                queue.put_nowait(request)

            answered: list[tuple[FuzzRequest, int, float, bytes]] = []

            async def worker(
                queue: asyncio.Queue[FuzzRequest] = queue,
                answered: list[tuple[FuzzRequest, int, float, bytes]] = answered,
            ) -> None:
                while not queue.empty():
                    request = queue.get_nowait()
                    try:
                        answered.append((request, *await _send(session, request)))
                    except (aiohttp.ClientError, TimeoutError) as exc:
                        tally.add(Answer(request, 599, 0.0, 0, [f"no answer: {exc!r}"]))

            await asyncio.gather(*(worker() for _ in range(args.connections)))
            for answer in answered:
                tally.add(_checked(*answer))
            del answered
            sent += len(batch)
            if sent % 10_000 < args.batch:
                async with session.get(STATS) as response:
                    now = await response.json()
                tally.memory.append(
                    (sent, round(now["rss_kib"] / 1024, 1), round(now["workers_rss_kib"] / 1024, 1))
                )
                print(f"{sent} requests, {tally.server_errors} 5xx, {tally.broken_count} broken", flush=True)
        elapsed, load_cpu = time.monotonic() - started, time.process_time() - load_cpu
        stop.set()
        await readyz
        async with session.get(STATS) as response:
            after = await response.json()
    return _summary(tally, before, after, elapsed, load_cpu)


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def _percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _summary(
    tally: Tally, before: dict[str, Any], after: dict[str, Any], elapsed: float, load_cpu: float
) -> dict[str, Any]:
    slowest = sorted(tally.slowest, reverse=True)[:10]
    server_cpu = after["cpu_s"] - before["cpu_s"]
    return {
        "requests": tally.answers,
        "elapsed_s": round(elapsed, 1),
        "statuses": {str(code): count for code, count in sorted(tally.statuses.items())},
        "server_errors_5xx": tally.server_errors,
        "contract_violations": tally.broken_count,
        "violations_sample": tally.broken,
        "slowest_ms": _ms(slowest[0][0]) if slowest else 0.0,
        "slowest_answers": [
            {"ms": _ms(s), "path": path, "what": what, "request_bytes": size, "status": status}
            for s, path, what, size, status in slowest
        ],
        "ordinary": {
            "answers": len(tally.ordinary_seconds),
            "p50_ms": _ms(_percentile(tally.ordinary_seconds, 0.5)),
            "p99_ms": _ms(_percentile(tally.ordinary_seconds, 0.99)),
            "max_ms": _ms(max(tally.ordinary_seconds, default=0.0)),
        },
        "large_or_conversion": {
            "answers": len(tally.large_seconds),
            "p50_ms": _ms(_percentile(tally.large_seconds, 0.5)),
            "p99_ms": _ms(_percentile(tally.large_seconds, 0.99)),
            "max_ms": _ms(max(tally.large_seconds, default=0.0)),
        },
        "largest_answer_bytes": tally.largest_answer,
        "readyz": {
            "probes": len(tally.readyz_seconds),
            "failures": tally.readyz_failures,
            "p50_ms": _ms(statistics.median(tally.readyz_seconds)) if tally.readyz_seconds else 0.0,
            "max_ms": _ms(max(tally.readyz_seconds, default=0.0)),
        },
        "loop_lag": {
            "worst_ms": after["loop_lag_worst_ms"],
            "worst_block_loop_cpu_ms": after["loop_lag_worst_loop_cpu_ms"],
            "worst_block_process_cpu_ms": after["loop_lag_worst_process_cpu_ms"],
            "worst_own_ms": after["loop_lag_worst_own_ms"],
            "over_10ms": after["loop_lag_over_10ms"],
            "over_50ms": after["loop_lag_over_50ms"],
            "samples": after["loop_lag_samples"],
        },
        "cpu": {
            "server_s": round(server_cpu, 1),
            "server_ms_per_request": round(1000 * server_cpu / max(tally.answers, 1), 3),
            "worker_s": round(after["workers_cpu_s"] - before["workers_cpu_s"], 1),
            "load_generator_s": round(load_cpu, 1),
        },
        "gc": {
            "runs_by_generation": after["gc_runs"],
            "collected": after["gc_collected"],
            "worst_ms": after["gc_worst_ms"],
            "worst_cpu_ms": after["gc_worst_cpu_ms"],
        },
        "memory": {
            "rss_before_mib": round(before["rss_kib"] / 1024, 1),
            "rss_after_mib": round(after["rss_kib"] / 1024, 1),
            "peak_rss_mib": round(after["peak_rss_kib"] / 1024, 1),
            "worker_rss_before_mib": round(before["workers_rss_kib"] / 1024, 1),
            "worker_rss_after_mib": round(after["workers_rss_kib"] / 1024, 1),
            "worker_peak_rss_mib": round(after["workers_peak_rss_kib"] / 1024, 1),
            "every_10000_requests": tally.memory,
        },
    }


def _markdown(report: dict[str, Any]) -> str:
    r = report["results"]
    machine = report["machine"]
    load = ", ".join(f"{x:.1f}" for x in machine["load_average_before"])
    load += "; after " + ", ".join(f"{x:.1f}" for x in report["load_average_after"])
    connections = report["setup"]["connections"]
    lines = [
        "# HTTP fuzz: the whole HTTPS port under damaged, huge and random requests",
        "",
        f"Date: {report['date']}. Machine: {machine['cpu']}, {machine['cores']} cores (shared; load average "
        f"before {load}), Python {machine['python']}, {machine['platform']}.",
        "",
        f"Command: `{report['command']}` at commit {report['commit']}. Server and load in separate "
        "processes over HTTPS on 127.0.0.1, "
        f"{connections} keep-alive connections plus a /readyz probe every 100 ms; requests "
        "drawn by `bench/http_surface.py` (every admission path, /convert, the visibility API, /metrics, the "
        f"probes; damaged, huge, deep, random), seed {report['setup']['seed']}, huge values in "
        f"{report['setup']['big']:.0%} of damages.",
        "",
        "| measure | goal | result |",
        "|---|---|---|",
        f"| requests answered | >= 100,000 | {r['requests']:,} in {r['elapsed_s']} s |",
        f"| 5xx answers | 0 | {r['server_errors_5xx']} |",
        f"| answers breaking the contract (not a review/Status, wrong uid, internal error, oversized) | 0 | "
        f"{r['contract_violations']} |",
        f"| slowest answer, any request | none over 100 ms | {r['slowest_ms']} ms |",
        f"| ordinary reviews (<= 64 KiB, answered on the loop): p50 / p99 / max | | "
        f"{r['ordinary']['p50_ms']} / {r['ordinary']['p99_ms']} / {r['ordinary']['max_ms']} ms "
        f"({r['ordinary']['answers']:,} answers) |",
        f"| large bodies and conversions (worker thread): p50 / p99 / max | | "
        f"{r['large_or_conversion']['p50_ms']} / {r['large_or_conversion']['p99_ms']} / "
        f"{r['large_or_conversion']['max_ms']} ms ({r['large_or_conversion']['answers']:,} answers) |",
        f"| /readyz during the run: p50 / max, failures | | {r['readyz']['p50_ms']} / "
        f"{r['readyz']['max_ms']} ms, {r['readyz']['failures']} of {r['readyz']['probes']} |",
        f"| event loop's worst block (5 ms lag probe) | under 50 ms | {r['loop_lag']['worst_ms']} ms, of "
        f"which the loop's thread ran {r['loop_lag']['worst_block_loop_cpu_ms']} ms and the whole server "
        f"{r['loop_lag']['worst_block_process_cpu_ms']} ms "
        f"({r['loop_lag']['over_10ms']} blocks over 10 ms, {r['loop_lag']['over_50ms']} over 50 ms, of "
        f"{r['loop_lag']['samples']:,} samples) |",
        f"| longest block the server itself can have caused (a block's length, at most the CPU time the "
        f"server used during it) | under 50 ms | {r['loop_lag']['worst_own_ms']} ms |",
        f"| CPU time: server (its ms per request), conversion worker, load generator | | "
        f"{r['cpu']['server_s']} s ({r['cpu']['server_ms_per_request']} ms), {r['cpu']['worker_s']} s, "
        f"{r['cpu']['load_generator_s']} s |",
        "| server's garbage collections by generation; objects collected; longest (CPU time) | | "
        + ", ".join(f"gen{g}: {n:,}" for g, n in r["gc"]["runs_by_generation"].items())
        + f"; {r['gc']['collected']:,}; {r['gc']['worst_ms']} ms ({r['gc']['worst_cpu_ms']} ms) |",
        f"| server RSS before / after / peak | bounded | {r['memory']['rss_before_mib']} / "
        f"{r['memory']['rss_after_mib']} / {r['memory']['peak_rss_mib']} MiB |",
        f"| conversion worker process RSS before / after / peak | bounded | "
        f"{r['memory']['worker_rss_before_mib']} / {r['memory']['worker_rss_after_mib']} / "
        f"{r['memory']['worker_peak_rss_mib']} MiB |",
        "| server / worker RSS every 10,000 requests (MiB) | a plateau | "
        + ", ".join(f"{server:g}/{worker:g}" for _, server, worker in r["memory"]["every_10000_requests"])
        + " |",
        f"| largest answer | | {r['largest_answer_bytes']:,} bytes |",
        "",
        "Answers by HTTP status: " + ", ".join(f"{code}: {n:,}" for code, n in r["statuses"].items()) + ".",
        "",
        "Slowest answers:",
        "",
        "| ms | path | request | bytes sent | status |",
        "|---|---|---|---|---|",
        *(
            f"| {s['ms']} | `{s['path']}` | {s['what']} | {s['request_bytes']:,} | {s['status']} |"
            for s in r["slowest_answers"]
        ),
        "",
    ]
    if r["violations_sample"]:
        lines += ["Contract violations (first 20):", ""]
        lines += [
            f"- `{path}` {what} -> {status}: {found}" for path, what, status, found in r["violations_sample"]
        ]
        lines.append("")
    return "\n".join(lines)


def _commit() -> str:
    """The commit measured (with ``+`` when the work tree differs from it)."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--big", type=float, default=0.02, help="chance of a damage being a huge value")
    parser.add_argument("--batch", type=int, default=500, help="requests drawn before each round of sends")
    parser.add_argument(
        "--pending", type=int, default=2000, help="pending Workloads the visibility API lists"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "http-fuzz.md")
    parser.add_argument("--serve", nargs=3, metavar=("CERT", "KEY", "PORT_FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(*args.serve, pending=args.pending)
        return 0
    machine = _machine()
    with tempfile.TemporaryDirectory(prefix="kueue-webhook-fuzz-") as scratch:
        certs = ensure_certificates(Path(scratch) / "certs", ips=["127.0.0.1"])
        port_file = Path(scratch) / "port"
        server = subprocess.Popen(
            [sys.executable, "-m", "bench.http_fuzz", "--pending", str(args.pending),
             "--serve", str(certs.cert), str(certs.key), str(port_file)],
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while not port_file.exists() or not port_file.read_text():
                if server.poll() is not None or time.monotonic() > deadline:
                    print("webhook server did not start", file=sys.stderr)
                    return 1
                time.sleep(0.05)
            url = f"https://127.0.0.1:{port_file.read_text().strip()}"
            context = ssl.create_default_context(cafile=str(certs.ca_cert))
            results = runtime.run(_run(url, context, args))  # uvloop here too: less of the load's own delay
        finally:
            server.send_signal(signal.SIGINT)  # a clean stop: the worker process is shut down with it
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    report = {
        "benchmark": "http-fuzz",
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "python -m bench.http_fuzz " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine,
        "setup": {
            "connections": args.connections,
            "seed": args.seed,
            "big": args.big,
            "pending": args.pending,
        },
        "load_average_after": os.getloadavg(),
        "commit": _commit(),
        "goals": {"server_errors_5xx": 0, "slowest_ms": 100, "loop_lag_worst_ms": 50},
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(_markdown(report))
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    print(_markdown(report))
    return 0 if results["server_errors_5xx"] == 0 and results["contract_violations"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
