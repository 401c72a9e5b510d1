"""Freed memory goes back to the system (kueue_webhook.memory): a replica's resident size follows what it
holds,
not the largest requests it once answered."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from kueue_webhook.memory import release_freed_memory


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
