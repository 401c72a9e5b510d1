"""Freed memory goes back to the system (kueue_webhook.memory): a replica's resident size follows what it
holds,
not the largest requests it once answered."""

from __future__ import annotations

import gc
import os
import sys
import weakref
from pathlib import Path

import pytest

from kueue_webhook.memory import YOUNG_THRESHOLD, collect_less_often, release_freed_memory


def resident_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; malloc_trim is glibc's")
def test_pages_freed_below_a_live_block_are_handed_back() -> None:
    # 64 MiB in blocks small enough for malloc's heap, then one block above them that stays: freeing the
    # others leaves a hole the allocator keeps (it only returns the heap's top on its own)
    blocks = [bytes(100_000) + bytes([i % 256]) for i in range(640)]
    pin = bytes(100_000) + b"pin"
    held = resident_bytes()
    del blocks
    assert release_freed_memory()
    assert resident_bytes() < held - 32 * 1024 * 1024
    assert pin.endswith(b"pin")


class Node:
    """An object in a reference cycle with itself: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_collecting_less_often_still_frees_cyclic_garbage_on_its_own() -> None:
    before = gc.get_threshold()
    young_passes: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == 0:
            young_passes.append(1)

    gc.collect()
    gc.callbacks.append(count)
    try:
        collect_less_often()
        assert gc.get_threshold() == (YOUNG_THRESHOLD, before[1], before[2])
        first = weakref.ref(Node())
        for _ in range(YOUNG_THRESHOLD // 10):  # 2,000 net allocations: under the threshold
            Node()
        assert first() is not None and not young_passes
        for _ in range(YOUNG_THRESHOLD):  # 20,000 more: past it, so a young pass runs and frees them
            Node()
        assert young_passes and first() is None
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*before)
