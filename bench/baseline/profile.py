"""Where the controller's CPU goes, from ``py-spy record --format raw`` folded stacks.

Each sample is one stack; it is charged to one bucket so the buckets add up to the whole. JSON work is
recognised first (orjson/json frames anywhere: it hides inside writes and watches alike); otherwise the
innermost frame of our own code decides: ``kueue_webhook/core`` is scheduling, the client's write verbs are
API writes, informers and the store are watch handling, and so on. Helper frames from ``kueue_webhook/api``
(quantity parsing, typed views) are skipped over so that their cost lands on whoever called them, and so
are the entry points (``serve`` runs the event loop). Samples with no other frame of ours are transport
(aiohttp protocol callbacks, TLS) or the event loop itself.

A sample whose innermost Python frame is the loop's own ``run`` is mostly not CPU: py-spy counts uvloop's
wait for events as activity. Recorded with ``--native`` on the real kube-apiserver, 87 % of those samples
ended in ``epoll_pwait`` and the rest in libuv's reads; they are shown as their own bucket and left out when
the measured CPU time is shared among the others.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

FRAME = re.compile(r"^(?P<function>.*?) \((?P<where>[^()]*)\)$")

#: (bucket, predicate on "function (file:line)") checked in order on our innermost frame
_OURS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("scheduling (kueue_webhook/core)", re.compile(r"kueue_webhook/core/")),
    ("queue status and metrics", re.compile(r"status_reporter\.py|queue_status\.py|metrics\.py")),
    ("API writes (client verbs, writers)", re.compile(r"writers\.py|kube/client\.py")),
    ("watch handling (informers, store)", re.compile(r"informer\.py|store\.py")),
    ("admission loop glue", re.compile(r"loop\.py|workqueue\.py|reconciler\.py|conditions\.py")),
    ("events", re.compile(r"events\.py")),
    ("webhook server", re.compile(r"kueue_webhook/http/|admission/")),
)
#: helpers charged to their caller, and entry points whose callee (the event loop) is not ours
_PASS_THROUGH = re.compile(
    r"kueue_webhook/api/|__main__\.py|kueue_webhook/cli\.py|kueue_webhook/control/replica/main\.py|kueue_webhook/runtime\.py"
)
_WATCH_VERBS = re.compile(r"^(KubeClient\.)?(watch|list_pages|list_all) \(.*kube/client\.py")
#: the event loop's entry (asyncio's or uvloop's); a sample with no Python frame below it is in its wait
_LOOP_RUN = re.compile(r"^(Runner\.run|run_forever|run_until_complete|_run_once) \((asyncio|uvloop)/")
#: the bucket of those samples, whose share of the measured CPU time is not estimated
LOOP_WAIT = "event loop: waiting for events or a core (not CPU), and libuv's own code"


def _innermost_python(frames: list[str]) -> re.Match[str] | None:
    """The innermost frame of Python code (``function (file.py:line)``) of root-first ``frames``."""
    for frame in reversed(frames):
        match = FRAME.match(frame)
        if match is not None and ".py" in match.group("where"):
            return match
    return None


def bucket_of(frames: list[str]) -> str:
    """The bucket one sample (root-first frames) is charged to."""
    if any("importlib" in f for f in frames):
        return "start-up (imports)"
    innermost = _innermost_python(frames)
    if innermost is not None and _LOOP_RUN.match(innermost.group(0)):
        return LOOP_WAIT
    if any("orjson" in f or "json/" in f or "_json" in f for f in frames):
        return "JSON encode/decode"
    for frame in reversed(frames):
        match = FRAME.match(frame)
        where = match.group("where") if match else frame
        if "kueue_webhook/" not in where or _PASS_THROUGH.search(where):
            continue
        if "kube/client.py" in where and _WATCH_VERBS.match(frame):
            return "watch handling (informers, store)"
        for bucket, pattern in _OURS:
            if pattern.search(where):
                return bucket
        return "other controller code"
    if any("kueue_webhook/api/" in f for f in frames):
        return "object model (kueue_webhook/api)"
    joined = ";".join(frames)
    if re.search(r"aiohttp|sslproto|ssl\.py|libssl|libcrypto|_http_parser|yarl|multidict", joined):
        return "HTTP + TLS transport (aiohttp, ssl)"
    if re.search(r"gc_collect|\bgc\b", joined):
        return "garbage collection"
    return "event loop and runtime"


def parse(lines: Iterable[str]) -> dict[str, int]:
    """Samples per bucket from raw folded lines ``frame;frame;... count``."""
    out: dict[str, int] = {}
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        bucket = bucket_of(stack.split(";"))
        out[bucket] = out.get(bucket, 0) + int(count)
    return out


def breakdown(lines: Iterable[str], *, cpu_s: float | None) -> list[dict[str, object]]:
    """Buckets, largest first, with their share of the samples and of ``cpu_s`` (the process's measured
    CPU time: on a busy machine py-spy also samples a thread that is runnable but waiting for a core), which
    is shared among the buckets but ``LOOP_WAIT``."""
    samples = parse(lines)
    total = sum(samples.values()) or 1
    working = sum(count for name, count in samples.items() if name != LOOP_WAIT) or 1
    return [
        {
            "bucket": name,
            "cpu_s": round(cpu_s * count / working, 1) if cpu_s is not None and name != LOOP_WAIT else None,
            "percent": round(100 * count / total, 1),
        }
        for name, count in sorted(samples.items(), key=lambda item: -item[1])
    ]


def hot_spots(lines: Iterable[str], *, under: str, count: int = 12) -> list[dict[str, object]]:
    """The functions of ``under`` (a path fragment) found in most samples, inclusive of their callees."""
    inclusive: dict[str, int] = {}
    total = 0
    for line in lines:
        stack, _, number = line.rstrip("\n").rpartition(" ")
        if not number.isdigit():
            continue
        total += int(number)
        seen: set[str] = set()
        for frame in stack.split(";"):
            match = FRAME.match(frame)
            if match is None or match.group("function") == "<module>":
                continue
            if under not in match.group("where") or _PASS_THROUGH.search(match.group("where")):
                continue
            name = f"{match.group('function')} ({match.group('where').rsplit(':', 1)[0]})"
            if name not in seen:
                seen.add(name)
                inclusive[name] = inclusive.get(name, 0) + int(number)
    ranked = sorted(inclusive.items(), key=lambda item: -item[1])[:count]
    return [{"function": name, "percent": round(100 * n / max(total, 1), 1)} for name, n in ranked]


def own_time(lines: Iterable[str], *, count: int = 15) -> list[dict[str, object]]:
    """The functions whose own code (the innermost Python frame of a sample, any package) took most
    samples: where to cut, where ``hot_spots`` says through which caller."""
    own: dict[str, int] = {}
    total = 0
    for line in lines:
        stack, _, number = line.rstrip("\n").rpartition(" ")
        if not number.isdigit():
            continue
        total += int(number)
        match = _innermost_python(stack.split(";"))
        innermost = (
            f"{match.group('function')} ({match.group('where').rsplit(':', 1)[0]})"
            if match
            else "(native or idle)"
        )
        own[innermost] = own.get(innermost, 0) + int(number)
    ranked = sorted(own.items(), key=lambda item: -item[1])[:count]
    return [{"function": name, "percent": round(100 * n / max(total, 1), 1)} for name, n in ranked]
