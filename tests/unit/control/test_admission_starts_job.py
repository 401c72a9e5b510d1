"""The admission write's task starts the admitted Job itself while write slots are free (one Job finishing,
the next admitted: no worker's turn to wait for), and leaves it to the reconciler's workers when every slot
is taken (a burst: the slots go back to the admissions waiting for them)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from typing import Any

from kueue_webhook.control.cache.store import Change, Store, key_of
from kueue_webhook.control.kube.kinds import WORKLOADS, Kind
from kueue_webhook.control.scheduling.scheduler_loop import SchedulerLoop
from tests.support import builders
from tests.unit.control.fakes import control_context
from tests.unit.control.small_cluster import queue

JSON = dict[str, Any]


class AnsweringWriter:
    """Answers each status write with the object as built, into the store, as the Writer does."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.version = 100

    async def patch_status(self, kind: Kind, obj: JSON, build: Any) -> JSON | None:
        await asyncio.sleep(0)  # the answer comes on a later turn, as from the API server
        status = build(obj)
        if status is None:
            return None
        self.version += 1
        updated = copy.deepcopy(obj)
        updated["metadata"]["resourceVersion"] = str(self.version)
        updated["status"] = {**(obj.get("status") or {}), **status}
        self.store.upsert(kind, updated)
        return updated


def pending(name: str) -> JSON:
    return builders.workload(
        name,
        pod_sets=[builders.pod_set(requests={"cpu": "1"})],
        uid=f"uid-{name}",
        resourceVersion="1",
        creationTimestamp="2026-01-01T00:00:00Z",
    )


async def admitted_and_started(slots: int) -> tuple[list[str], list[str]]:
    """Two Workloads admitted by a loop with ``slots`` write slots: (admitted, started by the admissions)."""
    store = Store()
    loop = SchedulerLoop(control_context(store, writer=AnsweringWriter(store)), max_in_flight=slots)
    started: list[str] = []

    async def start_admitted(workload: JSON) -> None:
        started.append(workload["metadata"]["name"])

    loop.start_admitted = start_admitted
    for kind, obj in (*queue(cpus=4), (WORKLOADS, pending("first")), (WORKLOADS, pending("second"))):
        store.upsert(kind, obj)
        loop.on_change(Change(kind, key_of(obj), None, copy.deepcopy(obj)))
    running = asyncio.create_task(loop.run())
    try:

        async def both_admitted() -> None:
            while loop.admitted < 2:
                await asyncio.sleep(0)  # turns of the loop only: the admissions are its tasks

        await asyncio.wait_for(both_admitted(), 5)  # bounds a hang only
        await asyncio.wait_for(loop.wait_writes(), 5)
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
    admitted = sorted(
        w["metadata"]["name"] for w in store.items(WORKLOADS) if (w.get("status") or {}).get("admission")
    )
    return admitted, sorted(started)


async def test_with_write_slots_free_the_admission_task_starts_each_admitted_job() -> None:
    assert await admitted_and_started(slots=16) == (["first", "second"], ["first", "second"])


async def test_with_every_write_slot_taken_the_start_is_left_to_the_reconciler() -> None:
    assert await admitted_and_started(slots=1) == (["first", "second"], [])
