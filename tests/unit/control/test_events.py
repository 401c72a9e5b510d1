"""The Event recorder: best-effort, paced like a client-go client, and never growing without bound."""

from __future__ import annotations

import asyncio
from typing import Any

from webhook.control.events import Recorder
from webhook.control.kinds import Kind

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


def test_writes_beyond_the_burst_wait_for_tokens_at_the_configured_rate() -> None:
    now = [100.0]
    recorder = Recorder(client=Client(0), instance="r", rate=4.0, burst=2, clock=lambda: now[0])
    assert recorder._take_token() == 0.0
    assert recorder._take_token() == 0.0
    assert recorder._take_token() == 0.25  # empty: one token comes every 1/rate seconds
    now[0] += 0.25
    assert recorder._take_token() == 0.0
    now[0] += 60.0  # a long quiet spell refills up to the burst, not beyond
    assert [recorder._take_token() for _ in range(3)][:2] == [0.0, 0.0]
    assert recorder._take_token() > 0.0


async def test_a_full_queue_drops_the_oldest_counts_it_and_writes_the_newest() -> None:
    client = Client(expected=2)
    drops: list[int] = []
    recorder = Recorder(client=client, instance="r", max_queue=2, on_drop=lambda: drops.append(1))
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
    recorder = Recorder(client=Client(0), instance="r")
    for _ in range(3):
        recorder.record(workload("a"), type="Warning", reason="Pending", message="same")
    recorder.record(workload("a"), type="Warning", reason="Pending", message="other")
    assert recorder.pending == 2
