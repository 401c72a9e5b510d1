"""Pending reasons are written behind admissions: once per Workload with the latest reason, never after it
was admitted."""

from __future__ import annotations

import asyncio
from typing import Any

from webhook.control.kinds import WORKLOADS, Kind
from webhook.control.metrics import Metrics
from webhook.control.pending_reasons import PendingReasons
from webhook.control.positions import QueuePositions
from webhook.control.store import Store
from webhook.core.model import WorkloadKey
from webhook.core.scheduler import SchedulerState, Wait

JSON = dict[str, Any]
FULL = (
    "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor rf, 1 more needed"
)


class RecordingWriter:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.messages: list[tuple[str, str]] = []
        self.version = 100

    async def patch_status(self, kind: Kind, obj: JSON, build: Any) -> JSON | None:
        current = self.store.get(kind, obj["metadata"]["name"], obj["metadata"]["namespace"]) or obj
        status = build(current)
        if status is None:
            return None
        await asyncio.sleep(0)  # a round trip: other submissions may arrive meanwhile
        self.version += 1
        meta = {**current["metadata"], "resourceVersion": str(self.version)}
        updated = {**current, "metadata": meta, "status": {**(current.get("status") or {}), **status}}
        self.store.upsert(kind, updated)
        self.messages.append((obj["metadata"]["name"], status["conditions"][0]["message"]))
        return updated


class Events:
    def record(self, obj: JSON, *, type: str, reason: str, message: str) -> None:
        pass


def workload(name: str) -> JSON:
    return {
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "team", "resourceVersion": "1", "generation": 1},
        "spec": {"queueName": "lq", "podSets": []},
    }


def setup() -> tuple[Store, RecordingWriter, PendingReasons]:
    store = Store()
    writer = RecordingWriter(store)
    positions = QueuePositions(
        store=store,
        writer=writer,
        state=SchedulerState,
        is_leader=lambda: True,  # type: ignore[arg-type]
    )
    pending = PendingReasons(
        store=store,
        writer=writer,  # type: ignore[arg-type]
        events=Events(),
        metrics=Metrics(),
        positions=positions,
        is_leader=lambda: True,
        max_in_flight=1,
    )
    return store, writer, pending


def wait(name: str, message: str, position: int) -> Wait:
    return Wait(WorkloadKey(f"team/{name}"), "cq", "Pending", message, position)


async def test_a_workload_decided_pending_twice_before_its_turn_is_written_once_with_the_latest() -> None:
    store, writer, pending = setup()
    for name in ("a", "b"):
        store.upsert(WORKLOADS, workload(name))
    runner = asyncio.get_running_loop().create_task(pending.run())
    pending.submit(wait("a", FULL, 1))
    pending.submit(wait("b", "first reason", 2))
    pending.submit(wait("b", FULL, 2))
    await pending.wait_idle()
    runner.cancel()
    assert writer.messages == [
        ("a", FULL + " (position 1 in ClusterQueue cq)"),
        ("b", FULL + " (position 2 in ClusterQueue cq)"),
    ]


async def test_an_admitted_workload_gets_no_pending_reason_and_a_shown_reason_is_not_rewritten() -> None:
    store, writer, pending = setup()
    admitted = workload("a")
    admitted["status"] = {
        "admission": {"clusterQueue": "cq", "podSetAssignments": []},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "m"}
        ],
    }
    store.upsert(WORKLOADS, admitted)
    store.upsert(WORKLOADS, workload("b"))
    store.upsert(WORKLOADS, workload("c"))
    runner = asyncio.get_running_loop().create_task(pending.run())
    pending.submit(wait("a", FULL, 1))
    pending.submit(wait("b", FULL, 1))
    pending.submit(wait("c", FULL, 2))
    pending.drop("team/c")  # admitted meanwhile
    await pending.wait_idle()
    pending.submit(wait("b", FULL, 3))  # only the rank moved: left to the position writer
    await pending.wait_idle()
    runner.cancel()
    assert writer.messages == [("b", FULL + " (position 1 in ClusterQueue cq)")]
