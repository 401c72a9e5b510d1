"""One pass over every object of a kind in the store, in slices that leave the event loop its turns.

Becoming leader means reading every Workload: the scheduler's core is rebuilt from them, and half a dozen
controllers look for the ones they must act on (a timer to arm, a check to run, a finalizer left behind).
Each of those used to list the store on its own, so a term's start decoded each Workload eight times, and did
so in one go: with 15,000 Workloads, seconds of CPU during which nothing else on the loop ran, the Lease's
renewal included. A replica under load then lost the Lease it had just won, again and again.

``store_pass`` decodes each object once and hands it to every consumer, and gives the loop a turn whenever
a slice (a few milliseconds) is used up. Each object is read when its turn comes, not listed up front: one
deleted meanwhile is skipped (its deletion has been told to every listener already), one changed is seen
as it is now. Consumers are therefore fed exactly what a listener that also hears the store's changes
needs to end up consistent with the store.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.kube.kinds import Kind

JSON = dict[str, Any]
#: CPU-bound work between two turns of the event loop, in seconds
SLICE_SECONDS = 0.005


async def store_pass(
    store: Store,
    kind: Kind,
    consumers: Sequence[Callable[[JSON], None]],
    *,
    slice_seconds: float = SLICE_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Hand every ``kind`` object the store holds to each consumer, in order, decoded once; the number
    handed. Gives the event loop a turn at least every ``slice_seconds`` of work by ``clock`` (and once at
    the end)."""
    slice_end = clock() + slice_seconds
    handed = 0
    for namespace, name in store.keys(kind):
        obj = store.get(kind, name, namespace)
        if obj is None:
            continue
        for consume in consumers:
            consume(obj)
        handed += 1
        if clock() >= slice_end:
            await asyncio.sleep(0)
            slice_end = clock() + slice_seconds
    await asyncio.sleep(0)
    return handed
