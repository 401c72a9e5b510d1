"""Webhook load test: throughput and latency of AdmissionReviews over real TLS on loopback.

The server runs as its own process (``python -m kueue_webhook.http.server``, certificates from
``kueue-webhook certs``) and this process plays kube-apiserver: a few keep-alive HTTPS connections posting
the golden Job reviews (mutate create, validate create, and a denied validate update), as the API server
does for ``kubectl create job``. Two measurements:

* fixed rate (open loop): requests are sent on a schedule, and latency is counted from the scheduled
  send time, so a slow server cannot hide its queueing by slowing the sender down (p50/p99 reported);
* saturation (closed loop): every connection sends its next request as soon as the previous answer
  arrives; the completed reviews per second are the server's throughput.

Results go to ``bench/results/webhook.json`` with the machine and the date. Targets: >= 2,000 reviews/s,
p99 <= 5 ms at 500 reviews/s.

    .venv/bin/python -m bench.webhook [--rates 500 1000] [--duration 5] [--connections 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

from kueue_webhook.http.certs import ensure_certificates
from tests.golden import GOLDEN

RESULTS = Path(__file__).resolve().parent / "results" / "webhook.json"
MIX = [(0, "/mutate-batch-v1-job"), (1, "/validate-batch-v1-job"), (5, "/validate-batch-v1-job")]


def _requests() -> list[tuple[str, bytes]]:
    out = []
    for number, path in MIX:
        (capture,) = GOLDEN.glob(f"admission-{number:02d}-*.json")
        review = json.loads(capture.read_text())["review"]
        out.append((path + "?timeout=5s", json.dumps(review).encode()))
    return out


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def _fixed_rate(
    url: str, context: ssl.SSLContext, rate: int, duration: float, connections: int
) -> dict[str, Any]:
    bodies = _requests()
    latencies: list[float] = []
    errors = 0
    connector = aiohttp.TCPConnector(ssl=context, limit=connections)
    async with aiohttp.ClientSession(url, connector=connector) as session:
        await _warm_up(session, bodies)
        total = int(rate * duration)
        start = time.perf_counter() + 0.05

        async def one(index: int) -> None:
            nonlocal errors
            scheduled = start + index / rate
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            path, body = bodies[index % len(bodies)]
            async with session.post(
                path, data=body, headers={"Content-Type": "application/json"}
            ) as response:
                await response.read()
                if response.status != 200:
                    errors += 1
            latencies.append(time.perf_counter() - scheduled)

        await asyncio.gather(*(one(i) for i in range(total)))
        elapsed = time.perf_counter() - start
    return {
        "mode": "fixed-rate",
        "target_rate": rate,
        "requests": total,
        "achieved_rate": round(total / elapsed, 1),
        "errors": errors,
        "p50_ms": round(_percentile(latencies, 0.50) * 1000, 3),
        "p99_ms": round(_percentile(latencies, 0.99) * 1000, 3),
        "max_ms": round(max(latencies) * 1000, 3),
        "mean_ms": round(statistics.fmean(latencies) * 1000, 3),
    }


async def _warm_up(session: aiohttp.ClientSession, bodies: list[tuple[str, bytes]]) -> None:
    for path, body in bodies * 20:
        async with session.post(path, data=body, headers={"Content-Type": "application/json"}) as response:
            await response.read()


async def _saturation(url: str, context: ssl.SSLContext, duration: float, connections: int) -> dict[str, Any]:
    bodies = _requests()
    done = 0
    latencies: list[float] = []
    connector = aiohttp.TCPConnector(ssl=context, limit=connections)
    async with aiohttp.ClientSession(url, connector=connector) as session:
        await _warm_up(session, bodies)
        deadline = time.perf_counter() + duration

        async def worker(offset: int) -> None:
            nonlocal done
            index = offset
            while time.perf_counter() < deadline:
                path, body = bodies[index % len(bodies)]
                sent = time.perf_counter()
                async with session.post(
                    path, data=body, headers={"Content-Type": "application/json"}
                ) as response:
                    await response.read()
                latencies.append(time.perf_counter() - sent)
                done += 1
                index += 1

        start = time.perf_counter()
        await asyncio.gather(*(worker(i) for i in range(connections)))
        elapsed = time.perf_counter() - start
    return {
        "mode": "saturation",
        "connections": connections,
        "requests": done,
        "throughput_per_s": round(done / elapsed, 1),
        "p50_ms": round(_percentile(latencies, 0.50) * 1000, 3),
        "p99_ms": round(_percentile(latencies, 0.99) * 1000, 3),
    }


def _machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": model or platform.processor(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_before": os.getloadavg(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", type=int, nargs="+", default=[500, 1000])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per measurement")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    machine = _machine()
    with tempfile.TemporaryDirectory(prefix="kueue-webhook-bench-") as scratch:
        certs = ensure_certificates(Path(scratch) / "certs", ips=["127.0.0.1"])
        port_file = Path(scratch) / "port"
        server = subprocess.Popen(
            [sys.executable, "-m", "kueue_webhook.http.server", "--cert", str(certs.cert), "--key",
            str(certs.key),
             "--host", "127.0.0.1", "--port", "0", "--port-file", str(port_file)],
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while not port_file.exists() or not port_file.read_text():
                if server.poll() is not None or time.monotonic() > deadline:
                    print("webhook server did not start", file=sys.stderr)
                    return 1
                time.sleep(0.05)
            url = f"https://127.0.0.1:{port_file.read_text().strip()}"
            context = ssl.create_default_context(cafile=str(certs.ca_cert))
            results = [
                asyncio.run(_fixed_rate(url, context, rate, args.duration, args.connections))
                for rate in args.rates
            ]
            results.append(asyncio.run(_saturation(url, context, args.duration, args.connections)))
        finally:
            server.terminate()
            server.wait(timeout=10)
    report = {
        "benchmark": "webhook",
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine,
        "setup": {
            "transport": "HTTPS, keep-alive, 127.0.0.1; server and load generator in separate processes",
            "mix": "mutate create Job, validate create Job, validate update Job (denied): golden captures",
            "duration_s": args.duration,
        },
        "targets": {"throughput_per_s": 2000, "p99_ms_at_500_per_s": 5.0},
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    for row in results:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
