"""Keeping a serving process's garbage collection short and its resident size following what it holds.

Two effects, both measured by ``python -m bench.http_fuzz`` on the HTTPS port:

* A full collection of the cyclic garbage collector scans every tracked object, however old: with the
  modules, the application and a cluster view loaded, one took 37 ms of CPU on whichever thread triggered
  it, the event loop's included. :func:`freeze_survivors`, once a process is set up, moves everything alive
  out of the collector's reach (``gc.freeze``); the pauses then scale with what changed since (under 2 ms).
  The controller does the same once its caches are synced (``kueue_webhook.control.replica.controller``).
* Request bodies (up to 3 MiB) and conversion answers (up to 8 MiB) are allocated by the C library's malloc,
  not Python's small-object allocator. glibc keeps what is freed for reuse, and after a large block is freed
  it serves later ones from its heap rather than fresh mappings, so the resident size crept up by ~2 MiB
  every 10,000 fuzzed requests while the Python objects stayed the same; ``malloc_trim(0)`` handed ~10 MiB
  back each time. :func:`release_freed_memory` does that (a no-op where the C library has no malloc_trim);
  :class:`kueue_webhook.http.limits.OffLoop` calls it after large requests, at most every few seconds, on its
  worker thread (the call releases the interpreter, so the loop runs meanwhile).
* The controller's admission burst (thousands of Workload creations, status and Job patches, their JSON
  bodies and watch events) leaves its freed blocks in glibc's heap the same way: at 10,000 Jobs the resident
  size after the burst equalled its peak. :func:`trim_when_freed` checks every few seconds how much the
  allocator has handed out (``mallinfo2``) and trims once that dropped well below its high mark, so a settled
  controller shows what it keeps (``python -m bench.e2e --kubeconfig ...``, before and after in
  ``bench/results/memory-footprint.md``).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import functools
import gc
import logging
from collections.abc import Callable

__all__ = [
    "FreedMemoryTrimmer",
    "bytes_in_use",
    "freeze_survivors",
    "release_freed_memory",
    "trim_when_freed",
]

log = logging.getLogger("kueue_webhook.memory")

#: freed bytes the C allocator may keep before they are handed back: below it a trim is not worth a heap walk
TRIM_THRESHOLD = 8 * 1024 * 1024


def freeze_survivors() -> None:
    """Collect once, then exclude every object alive now from later collections (they live as long as the
    process: modules, the application, what was loaded at start-up)."""
    gc.collect()
    gc.freeze()


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c"))
    except (OSError, TypeError):  # no C library found
        return None


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (2.33 and later): every field a ``size_t``."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


@functools.cache
def _mallinfo2() -> Callable[[], _MallInfo2] | None:
    libc = _libc()
    function = getattr(libc, "mallinfo2", None) if libc is not None else None
    if function is None:  # musl, or a glibc older than 2.33
        return None
    function.restype = _MallInfo2
    function.argtypes = []
    info: Callable[[], _MallInfo2] = function
    return info


def bytes_in_use() -> int | None:
    """Bytes the C allocator has handed out and not had back (``uordblks + hblkhd``: its heaps and its
    large mapped blocks); None where the C library cannot say."""
    info = _mallinfo2()
    if info is None:
        return None
    now = info()
    return int(now.uordblks + now.hblkhd)


class FreedMemoryTrimmer:
    """Trims once the allocator's use has dropped by ``threshold`` bytes below its highest since the last
    trim: what a burst allocated and then freed. (Its count of freed bytes cannot say the same: a trim hands
    the pages back but leaves them counted as free.) One that never shrank, or shrank a little, costs no
    heap walk."""

    __slots__ = ("highest", "threshold")

    def __init__(self, threshold: int = TRIM_THRESHOLD) -> None:
        self.threshold = threshold
        self.highest = 0

    def step(self) -> bool:
        """Look once, trim if it pays; True when it trimmed."""
        used = bytes_in_use()
        if used is None:
            return False
        self.highest = max(self.highest, used)
        if self.highest - used <= self.threshold or not release_freed_memory():
            return False
        self.highest = used
        return True


async def trim_when_freed(*, every: float = 5.0, threshold: int = TRIM_THRESHOLD) -> None:
    """Until cancelled: every ``every`` seconds, hand freed memory back to the system after the allocator's
    use dropped by more than ``threshold`` bytes (:class:`FreedMemoryTrimmer`). Both run on a worker thread
    (they walk the heap without the interpreter lock), so the event loop goes on meanwhile. Returns at once
    where the C library has neither ``mallinfo2`` nor ``malloc_trim``."""
    if _mallinfo2() is None or _malloc_trim() is None:
        return
    trimmer = FreedMemoryTrimmer(threshold)
    while True:
        await asyncio.sleep(every)
        if await asyncio.to_thread(trimmer.step):
            log.debug("freed memory returned to the system", extra={"in_use_bytes": trimmer.highest})


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    libc = _libc()
    trim: Callable[[int], int] | None = getattr(libc, "malloc_trim", None) if libc is not None else None
    return trim  # None: no C library found, or one without malloc_trim (musl)


def release_freed_memory() -> bool:
    """Return the C allocator's freed pages to the system; False where that cannot be done."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
