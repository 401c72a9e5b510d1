"""Keeping a serving process's garbage collection short and its resident size following what it holds.

Two effects, both measured by ``python -m bench.http_fuzz`` on the HTTPS port:

* A full collection of the cyclic garbage collector scans every tracked object, however old: with the
  modules, the application and a cluster view loaded, one took 37 ms of CPU on whichever thread triggered
  it, the event loop's included. :func:`freeze_survivors`, once a process is set up, moves everything alive
  out of the collector's reach (``gc.freeze``); the pauses then scale with what changed since (under 2 ms).
  The controller does the same once its caches are synced (``kueue_webhook.control.replica.controller``).
* The youngest generation is collected every 700 container allocations net of those freed, by default.
  The controller allocates JSON at thousands of objects a second and refcounting frees nearly all of it;
  what a burst leaves alive (one parsed Workload each) was rescanned by pass after pass: 1,485 young
  collections took 2.1 of the controller's 51 CPU-seconds over Kueue's baseline on the fake API server.
  :func:`collect_less_often` raises that threshold to ``YOUNG_THRESHOLD``: 19 collections, 0.25 s, the
  same peak RSS (95 MB) (``docs/benchmarks.md``).
* Request bodies (up to 3 MiB) and conversion answers (up to 8 MiB) are allocated by the C library's malloc,
  not Python's small-object allocator. glibc keeps what is freed for reuse, and after a large block is freed
  it serves later ones from its heap rather than fresh mappings, so the resident size crept up by ~2 MiB
  every 10,000 fuzzed requests while the Python objects stayed the same; ``malloc_trim(0)`` handed ~10 MiB
  back each time. :func:`release_freed_memory` does that (a no-op where the C library has no malloc_trim);
  :class:`kueue_webhook.http.limits.OffLoop` calls it after large requests, at most every few seconds, on its
  worker thread (the call releases the interpreter, so the loop runs meanwhile).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
from collections.abc import Callable

__all__ = ["YOUNG_THRESHOLD", "collect_less_often", "freeze_survivors", "release_freed_memory"]

#: container allocations (net of those freed) between two collections of the youngest generation
YOUNG_THRESHOLD = 10_000


def collect_less_often() -> None:
    """Collect the youngest generation every ``YOUNG_THRESHOLD`` net allocations instead of 700 (the older
    generations keep their ratios to it)."""
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, oldest)


def freeze_survivors() -> None:
    """Collect once, then exclude every object alive now from later collections (they live as long as the
    process: modules, the application, what was loaded at start-up)."""
    gc.collect()
    gc.freeze()


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError, TypeError):  # no C library found, or one without malloc_trim (musl)
        return None
    return trim


def release_freed_memory() -> bool:
    """Return the C allocator's freed pages to the system; False where that cannot be done."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
