"""Where the work of one request runs, so that no request stalls the event loop.

The event loop answers every request of this replica, the probes (``/readyz``: kube-apiserver drops a
replica that does not answer) and, in a controller, the informers and the scheduler. A review of an ordinary
object (a few KiB, a few hundred JSON objects) takes tens of microseconds, less than a hop to another thread,
so it runs inline. A review with a body above :data:`INLINE_BODY_BYTES` or holding more than
:data:`INLINE_CONTAINERS` JSON objects and arrays runs on :class:`OffLoop`'s worker thread (its rule reads
the cluster view, which lives in this process). A CRD conversion is as cheap as a review unless its body
is large or it expands more than :data:`INLINE_DOMAINS` topology domains (a compressed v1beta2 assignment may
expand a hundredfold); those run in :class:`OffLoop`'s worker *process*, because decoding and encoding
megabytes of JSON holds the interpreter for tens of milliseconds at a time, which in a thread of this
process would stall the loop just the same. The pure code bounds that work (:mod:`kueue_webhook.api.bounds`);
the
worker keeps it off the loop, and one request at a time keeps its memory bounded too.

At most :data:`MAX_WAITING` requests hold a large body or wait for the worker; beyond that a request is
refused with 429 and ``Retry-After`` before its body is read, and a body must arrive within
:data:`BODY_READ_SECONDS` (kube-apiserver sends it at once), so memory stays bounded and a slow sender cannot
hold a place for long. Ordinary reviews never wait: they never go to the worker. What large requests
freed is handed back to the system soon after (:func:`kueue_webhook.memory.release_freed_memory`).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from kueue_webhook.memory import release_freed_memory

__all__ = [
    "BODY_READ_SECONDS",
    "INLINE_BODY_BYTES",
    "INLINE_CONTAINERS",
    "MAX_WAITING",
    "Busy",
    "OffLoop",
    "runs_inline",
]

T = TypeVar("T")

#: bodies up to this size are answered on the event loop (an ordinary Job or Pod review is 5-20 KiB)
INLINE_BODY_BYTES = 64 * 1024
#: ... if they hold at most this many JSON objects and arrays (an ordinary review holds a few hundred)
INLINE_CONTAINERS = 2_000
#: ... and, for a conversion, expand at most this many v1beta1 topology domains
INLINE_DOMAINS = 1_000
#: requests holding a large body or waiting for the worker thread, at most; more are answered 429
MAX_WAITING = 8
#: time a large body has to arrive once its headers have
BODY_READ_SECONDS = 10.0
#: after a large request, the C allocator's freed pages go back to the system at most this often
TRIM_SECONDS = 5.0


class Busy(Exception):
    """Too many requests already wait for the worker; answer 429 with ``Retry-After``."""


def runs_inline(body: bytes) -> bool:
    """Whether answering ``body`` is cheap enough for the event loop (bounded by the body's size and the
    number of objects and arrays in it)."""
    return len(body) <= INLINE_BODY_BYTES and body.count(b"{") + body.count(b"[") <= INLINE_CONTAINERS


class OffLoop:
    """One worker thread and one worker process for the expensive requests, and a bounded number of
    requests holding a large body or waiting for them."""

    def __init__(self, *, max_waiting: int = MAX_WAITING) -> None:
        self.max_waiting = max_waiting
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="webhook-off-loop")
        self._process: ProcessPoolExecutor | None = None
        self._held = 0
        self._trimmed = -TRIM_SECONDS

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """A place in line, held while the request's body is read and its work waits and runs; raises
        :class:`Busy` when :attr:`max_waiting` requests hold one, so at most that many large bodies are in
        memory at once."""
        if self._held >= self.max_waiting:
            raise Busy(f"{self._held} large requests are already being answered; retry")
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            self._release_memory_soon()

    def _release_memory_soon(self) -> None:
        """Hand what large requests freed back to the system (:mod:`kueue_webhook.memory`), on the worker
        thread,
        after the work queued there."""
        now = time.monotonic()
        if now - self._trimmed >= TRIM_SECONDS:
            self._trimmed = now
            with contextlib.suppress(RuntimeError):  # closed meanwhile
                self._thread.submit(release_freed_memory)

    async def run(self, work: Callable[[], T]) -> T:
        """``work()`` on the worker thread, after the work queued before it; call within :meth:`slot`."""
        return await self._await(self._thread, work)

    async def run_in_process(self, work: Callable[[bytes], bytes], body: bytes) -> bytes:
        """``work(body)`` in the worker process (``work`` a module-level function: it is sent by name);
        started on first use, and again after it died (its memory exhausted, say)."""
        if self._process is None:
            # spawned, not forked: a fork would copy this process's threads' locks mid-flight
            self._process = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_exit_with_parent,
                initargs=(os.getpid(),),
            )
        try:
            return await self._await(self._process, work, body)
        except BrokenProcessPool:
            self._process.shutdown(wait=False, cancel_futures=True)
            self._process = None
            raise

    async def _await(self, executor: Executor, work: Callable[..., T], *args: object) -> T:
        """If the request is cancelled meanwhile, its place stays taken until the work is done, so cancelled
        requests cannot pile up work behind the line's bound."""
        future = asyncio.get_running_loop().run_in_executor(executor, work, *args)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            self._held += 1
            future.add_done_callback(self._release)
            raise

    def _release(self, _: object) -> None:
        self._held -= 1

    def close(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)
        if self._process is not None:
            self._process.shutdown(wait=False, cancel_futures=True)


def _exit_with_parent(parent: int) -> None:
    """In the worker process: exit as soon as the server process is gone, however it ended (a pool's
    worker otherwise waits for work forever once its parent was killed)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
