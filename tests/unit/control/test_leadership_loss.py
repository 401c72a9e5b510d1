"""A replica that cannot renew its Lease stops writing: it steps down within the renew deadline, its decision
writes in flight are cancelled, and nothing more is issued, while admitting was in full flow.

The API server here answers Workload and ClusterQueue writes (slowly, so many are in flight at once) but
stops answering Lease requests: the renewal hangs rather than fails, which is what a stalled connection or a
saturated connection pool does. Runs on looptime's fake event-loop clock, so the instants are exact and
no real time passes.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from kueue_webhook.control.kube.kinds import (
    WORKLOADS,
    Kind,
)
from kueue_webhook.control.kube.verbs import PatchType
from kueue_webhook.control.replica.controller import Controller
from kueue_webhook.control.replica.controller_settings import ControllerSettings
from tests.support import builders
from tests.unit.control.small_cluster import RecordingApi, queue

JSON = dict[str, Any]
GROUP = "kueue.x-k8s.io/v1beta2"
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 1.5, 1.0, 0.2
WRITE_LATENCY = 0.25
WORKLOADS_QUEUED = 400


class SlowWritesStalledLeases(RecordingApi):
    """Leases as ``MemoryApi`` until ``leases_stalled``, then never answered; ``renewed`` records when each
    Lease write was applied. Status patches take ``WRITE_LATENCY`` each; ``issued`` records (loop time,
    plural, name) of every patch sent."""

    def __init__(self) -> None:
        super().__init__()
        self.leases_stalled = False
        self.renewed: list[float] = []
        self.issued: list[tuple[float, str, str]] = []

    async def _lease_answer(self) -> None:
        if self.leases_stalled:
            await asyncio.Event().wait()

    async def get(self, kind: Kind, *, name: str, namespace: str | None = None) -> JSON:
        await self._lease_answer()
        return await super().get(kind, name=name, namespace=namespace)

    async def create(self, kind: Kind, body: JSON, *, namespace: str | None = None) -> JSON:
        await self._lease_answer()
        created = await super().create(kind, body, namespace=namespace)
        self.renewed.append(asyncio.get_running_loop().time())
        return created

    async def replace(self, kind: Kind, body: JSON, *, subresource: str = "") -> JSON:
        await self._lease_answer()
        replaced = await super().replace(kind, body, subresource=subresource)
        self.renewed.append(asyncio.get_running_loop().time())
        return replaced

    async def patch(
        self,
        kind: Kind,
        *,
        name: str,
        patch: Any,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str = "",
    ) -> JSON:
        self.issued.append((asyncio.get_running_loop().time(), kind.plural, name))
        await asyncio.sleep(WRITE_LATENCY)
        return await super().patch(
            kind, name=name, patch=patch, namespace=namespace, patch_type=patch_type, subresource=subresource
        )


def workload(index: int) -> JSON:
    return builders.workload(
        f"w{index:04d}",
        uid=f"uid-{index}",
        resourceVersion=str(100 + index),
        creationTimestamp="2026-01-01T00:00:00Z",
        pod_sets=[builders.pod_set()],
    )


def cluster() -> list[tuple[Kind, JSON]]:
    """One ClusterQueue with room for every Workload, so the leader has a long run of admissions."""
    return [*queue(WORKLOADS_QUEUED), *((WORKLOADS, workload(i)) for i in range(WORKLOADS_QUEUED))]


@pytest.mark.looptime
async def test_a_leader_that_cannot_renew_stops_admitting_before_the_lease_can_pass_on() -> None:
    api = SlowWritesStalledLeases()
    controller = Controller(
        client=api,  # type: ignore[arg-type]
        namespace="kueue-system",
        identity="a",
        settings=ControllerSettings(
            lease_duration=LEASE_DURATION, renew_deadline=RENEW_DEADLINE, retry_period=RETRY_PERIOD
        ),
    )
    for version, (kind, obj) in enumerate(cluster(), start=1):
        obj["metadata"].setdefault("resourceVersion", str(version))
        api.objects[(kind.plural, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])] = obj
        controller.store.upsert(kind, copy.deepcopy(obj))
    api.version = 10_000
    assert controller.elector is not None
    electing = asyncio.create_task(controller.elector.run())
    try:
        await controller.leading.wait()
        await asyncio.sleep(1.0)  # admitting in full flow: writes answered, more queued behind them
        admitted_before_stall = controller.scheduler.admitted
        assert 0 < admitted_before_stall < WORKLOADS_QUEUED
        assert controller.scheduler.in_flight > 0

        api.leases_stalled = True
        await asyncio.wait_for(controller.following.wait(), LEASE_DURATION)
        stepped_down = asyncio.get_running_loop().time()
        # within the renew deadline of the last renewal, so before any other replica (which waits a whole
        # lease duration from when it saw that renewal) could take the lease
        assert stepped_down - api.renewed[-1] <= RENEW_DEADLINE < LEASE_DURATION
        assert controller.scheduler.in_flight == 0  # writes in flight were cancelled at once

        issued_by_then = len(api.issued)
        await asyncio.sleep(10 * LEASE_DURATION)  # long after, still nothing
        assert len(api.issued) == issued_by_then
        assert all(at <= stepped_down for at, _, _ in api.issued)
        assert controller.scheduler.admitted < WORKLOADS_QUEUED  # it did stop with work left to do
        assert not controller.is_leader()
    finally:
        electing.cancel()
        _, hung = await asyncio.wait([electing], timeout=RENEW_DEADLINE + 1)
        assert not hung
