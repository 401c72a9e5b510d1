"""The Event recorder: best-effort, paced like a client-go client, and never growing without bound."""

from __future__ import annotations

import asyncio
from typing import Any

from kueue_webhook.control.kube.kinds import Kind
from kueue_webhook.control.output.events import Recorder

JSON = dict[str, Any]


class Client:
    def __init__(self, expected: int) -> None:
        self.reasons: list[str] = []
        self.expected = expected
        self.done = asyncio.Event()

    async def create(self, kind: Kind, body: JSON, *, namespace: str | None = None) -> JSON:
        self.reasons.append(body["reason"])
        if len(self.reasons) >= self.expected:
            self.done.set()
        return body


def workload(name: str) -> JSON:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}"},
    }


class Budget:
    """Grants ``tokens`` writes, then asks for a wait; records how much room each taker left."""

    def __init__(self, tokens: int) -> None:
        self.tokens = tokens
        self.keeps: list[float] = []
        self.refused = asyncio.Event()

    def take(self, *, keep: float = 0.0) -> float:
        self.keeps.append(keep)
        if self.tokens > 0:
            self.tokens -= 1
            return 0.0
        self.refused.set()
        return 3600.0


async def test_events_are_written_only_while_the_write_budget_has_room_to_spare() -> None:
    client = Client(expected=2)
    budget = Budget(tokens=2)
    recorder = Recorder(client=client, instance="r", budget=budget)
    for reason in ("QuotaReserved", "Admitted", "Preempted"):
        recorder.record(workload(reason.lower()), type="Normal", reason=reason, message="m")
    task = asyncio.get_running_loop().create_task(recorder.run())
    try:
        await asyncio.wait_for(budget.refused.wait(), 5)
    finally:
        task.cancel()
    assert client.reasons == ["QuotaReserved", "Admitted"]  # the third waits for the budget
    assert recorder.pending == 1
    assert set(budget.keeps) == {0.5}  # Events leave half the bucket to pending reasons and queue status


async def test_a_full_queue_drops_the_oldest_counts_it_and_writes_the_newest() -> None:
    client = Client(expected=2)
    drops: list[int] = []
    recorder = Recorder(
        client=client, instance="r", budget=Budget(10), max_queue=2, on_drop=lambda: drops.append(1)
    )
    for reason in ("QuotaReserved", "Admitted", "Preempted"):
        recorder.record(workload(reason.lower()), type="Normal", reason=reason, message="m")
    assert recorder.dropped == 1 and drops == [1] and recorder.pending == 2
    task = asyncio.get_running_loop().create_task(recorder.run())
    try:
        await asyncio.wait_for(client.done.wait(), 5)
    finally:
        task.cancel()
    assert client.reasons == ["Admitted", "Preempted"]


async def test_a_repeat_within_the_fold_window_is_not_written_twice() -> None:
    recorder = Recorder(client=Client(0), instance="r", budget=Budget(10))
    for _ in range(3):
        recorder.record(workload("a"), type="Warning", reason="Pending", message="same")
    recorder.record(workload("a"), type="Warning", reason="Pending", message="other")
    assert recorder.pending == 2
