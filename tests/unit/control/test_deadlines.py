"""Per-Workload deadlines (kueue_webhook.control.scheduling.deadlines) on looptime's fake clock: each
Workload is acted on once, when its latest deadline comes, however many are armed, re-armed or dropped."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.control.scheduling.deadlines import DeadlineTimers
from tests.unit.control.fakes import control_context

JSON = dict[str, Any]


class Recorded(DeadlineTimers):
    """Due at the wall-clock second in the Workload's ``due`` annotation; acting records (name, loop time)."""

    def __init__(self, store: Store) -> None:
        super().__init__(control_context(store))
        self.acted: list[tuple[str, float]] = []

    def due(self, workload: JSON) -> float | None:
        due = (workload["metadata"].get("annotations") or {}).get("due")
        return float(due) if due is not None else None

    async def act(self, workload: JSON) -> None:
        self.acted.append((workload["metadata"]["name"], round(asyncio.get_running_loop().time())))


def workload(name: str, due: float | None, version: int = 1) -> JSON:
    annotations = {"due": str(due)} if due is not None else {}
    return {
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "resourceVersion": str(version),
            "annotations": annotations,
        }
    }


@pytest.mark.looptime
async def test_each_workload_is_acted_on_once_at_its_latest_deadline() -> None:
    store = Store()
    timers = Recorded(store)
    store.subscribe(timers.on_change)
    start = round(asyncio.get_running_loop().time())
    now = time.time()
    task = asyncio.create_task(timers.run())
    try:
        for index in range(1000):  # many armed at once, in no particular order
            store.upsert(WORKLOADS, workload(f"bulk-{index:04d}", now + 100 + (index * 7) % 50))
        store.upsert(WORKLOADS, workload("later", now + 10))
        store.upsert(WORKLOADS, workload("later", now + 30, version=2))  # re-armed later
        store.upsert(WORKLOADS, workload("sooner", now + 40))
        store.upsert(WORKLOADS, workload("sooner", now + 20, version=2))  # re-armed sooner
        for version in range(1, 6):  # changes that leave its deadline where it was
            store.upsert(WORKLOADS, workload("steady", now + 25, version=version))
        store.upsert(WORKLOADS, workload("dropped", now + 5))
        store.upsert(WORKLOADS, workload("dropped", None, version=2))  # nothing due any more
        await asyncio.sleep(60)
        first = [(name, at - start) for name, at in timers.acted]
        assert first == [("sooner", 20), ("steady", 25), ("later", 30)]
        await asyncio.sleep(100)
        bulk = [(name, at - start) for name, at in timers.acted[3:]]
        assert len(bulk) == 1000 and len({name for name, _ in bulk}) == 1000
        assert all(at == 100 + (int(name[5:]) * 7) % 50 for name, at in bulk)
        assert [at for _, at in bulk] == sorted(at for _, at in bulk)
    finally:
        task.cancel()
