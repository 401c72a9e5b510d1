"""A wait that needs no write (most: the Workload already shows the reason, or has not waited a second
yet) is judged as the cycle decides it: no task, no write slot. So cycles go on deciding while every slot
is taken by admissions in flight, and a wait that does need a write still gets one."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from kueue_webhook.control.cache.store import Change, Store, key_of
from kueue_webhook.control.kube.kinds import WORKLOADS, Kind
from kueue_webhook.control.output.metrics import Metrics
from kueue_webhook.control.scheduling.scheduler_loop import SchedulerLoop
from tests.support import builders
from tests.unit.control.fakes import control_context
from tests.unit.control.small_cluster import queue
from tests.unit.control.test_admission_starts_job import AnsweringWriter

JSON = dict[str, Any]


class HeldWriter(AnsweringWriter):
    """Holds every status write until ``go`` is set, then answers it into the store."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.go = asyncio.Event()
        self.started: list[str] = []

    async def patch_status(self, kind: Kind, obj: JSON, build: Any) -> JSON | None:
        self.started.append(obj["metadata"]["name"])
        await self.go.wait()
        return await super().patch_status(kind, obj, build)


def pending(name: str, created: str) -> JSON:
    return builders.workload(
        name,
        pod_sets=[builders.pod_set(requests={"cpu": "1"})],
        uid=f"uid-{name}",
        resourceVersion="1",
        creationTimestamp=created,
    )


def loop_with_one_slot() -> tuple[SchedulerLoop, HeldWriter, Metrics]:
    """A ClusterQueue of one cpu, Workloads ``first`` and ``second`` of one cpu each; one write slot."""
    store = Store()
    writer = HeldWriter(store)
    metrics = Metrics()
    loop = SchedulerLoop(control_context(store, writer=writer, metrics=metrics), max_in_flight=1)
    workloads = [
        (WORKLOADS, pending("first", "2026-01-01T00:00:00Z")),
        (WORKLOADS, pending("second", "2026-01-01T00:00:01Z")),
    ]
    for kind, obj in (*queue(cpus=1), *workloads):
        store.upsert(kind, obj)
        loop.on_change(Change(kind, key_of(obj), None, copy.deepcopy(obj)))
    return loop, writer, metrics


def attempts(metrics: Metrics, result: str = "inadmissible") -> float | None:
    """Cycles that tried heads, as Kueue counts admission attempts: success when one was admitted."""
    return metrics.registry.get_sample_value(
        "kueue_admission_attempts_total", {"result": result, "replica_role": metrics.role}
    )


async def test_a_cycle_whose_waits_need_no_write_goes_on_while_every_write_slot_is_taken() -> None:
    loop, writer, metrics = loop_with_one_slot()
    await loop._cycle()  # admits ``first``: its write takes the only slot and is held
    await asyncio.sleep(0)  # the write task's first turn
    assert writer.started == ["first"] and loop.in_flight == 1
    # ``second`` waits; it has not waited a second yet, so its condition is not worth a write: the cycle
    # neither waits for the slot nor starts a task (before, it waited here until ``first`` was answered)
    await asyncio.wait_for(loop._cycle(), 5)  # bounds a hang only
    assert loop.in_flight == 1
    # one cycle admitted, one only waited: Kueue's one attempt per cycle, each with its duration observed
    assert (attempts(metrics, "success"), attempts(metrics)) == (1, 1)
    timed = metrics.registry.get_sample_value(
        "kueue_admission_attempt_duration_seconds_count",
        {"result": "inadmissible", "replica_role": metrics.role},
    )
    assert timed == 1
    writer.go.set()
    await loop.wait_writes()
    assert writer.started == ["first"]


async def test_a_wait_that_needs_a_write_still_gets_one() -> None:
    loop, writer, metrics = loop_with_one_slot()
    loop.pending.debounce = 0.0  # every wait is worth its first condition at once
    writer.go.set()
    await loop._cycle()  # admits ``first``
    await loop._cycle()  # ``second`` waits, and is told why
    await loop.wait_writes()
    assert writer.started == ["first", "second"]
    shown = loop.context.store.get(WORKLOADS, "second", "team") or {}
    condition = next(c for c in shown["status"]["conditions"] if c["type"] == "QuotaReserved")
    assert (condition["status"], condition["reason"]) == ("False", "WaitingForQuota")
    assert attempts(metrics) == 1


async def test_the_cycle_reports_the_preemptors_it_passed_over_per_cluster_queue() -> None:
    """Kueue's kueue_admission_cycle_preemption_skips{cluster_queue}: what the core counted in the cycle
    (tests/unit/core/test_preemption.py shows the counting) is what the gauge says."""
    loop, _, metrics = loop_with_one_slot()
    decide = loop.state.cycle

    def cycle(now: float | None = None) -> list[Any]:
        decisions = decide(now)
        loop.state.last_cycle_preemption_skips = {"cq": 2}
        return decisions

    loop.state.cycle = cycle  # type: ignore[method-assign]
    await loop._cycle()
    skips = metrics.registry.get_sample_value(
        "kueue_admission_cycle_preemption_skips", {"cluster_queue": "cq", "replica_role": metrics.role}
    )
    assert skips == 2
