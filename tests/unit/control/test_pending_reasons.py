"""Pending reasons: Kueue's message with the rank appended, written only when the reason changes and never
over an admission."""

from __future__ import annotations

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
        self.version += 1
        meta = {**current["metadata"], "resourceVersion": str(self.version)}
        updated = {**current, "metadata": meta, "status": {**(current.get("status") or {}), **status}}
        self.store.upsert(kind, updated)
        self.messages.append((obj["metadata"]["name"], status["conditions"][0]["message"]))
        return updated


class Events:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def record(self, obj: JSON, *, type: str, reason: str, message: str) -> None:
        self.reasons.append(f"{type} {reason}")


def workload(name: str) -> JSON:
    return {
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "team", "resourceVersion": "1", "generation": 1},
        "spec": {"queueName": "lq", "podSets": []},
    }


def setup() -> tuple[Store, RecordingWriter, Events, PendingReasons]:
    store = Store()
    writer = RecordingWriter(store)
    events = Events()
    positions = QueuePositions(
        store=store,
        writer=writer,  # type: ignore[arg-type]
        state=SchedulerState,
        is_leader=lambda: True,
    )
    pending = PendingReasons(
        store=store,
        writer=writer,  # type: ignore[arg-type]
        events=events,
        metrics=Metrics(),
        positions=positions,
        is_leader=lambda: True,
    )
    return store, writer, events, pending


def wait(name: str, message: str, position: int) -> Wait:
    return Wait(WorkloadKey(f"team/{name}"), "cq", "Pending", message, position)


async def test_a_new_reason_is_written_with_the_rank_and_a_moved_rank_alone_is_not() -> None:
    store, writer, events, pending = setup()
    store.upsert(WORKLOADS, workload("b"))
    await pending.write(wait("b", "first reason", 2))
    await pending.write(wait("b", FULL, 2))
    await pending.write(wait("b", FULL, 1))  # only the rank moved: the position writer's business
    assert writer.messages == [
        ("b", "first reason (position 2 in ClusterQueue cq)"),
        ("b", FULL + " (position 2 in ClusterQueue cq)"),
    ]
    assert events.reasons == ["Warning Pending", "Warning Pending"]


async def test_an_admitted_workload_gets_no_pending_reason() -> None:
    store, writer, events, pending = setup()
    admitted = workload("a")
    admitted["status"] = {
        "admission": {"clusterQueue": "cq", "podSetAssignments": []},
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "m"}
        ],
    }
    store.upsert(WORKLOADS, admitted)
    await pending.write(wait("a", FULL, 1))
    assert writer.messages == [] and events.reasons == []
