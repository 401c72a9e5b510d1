"""``kueue_webhook_leader`` follows the Lease: 0 while campaigning, 1 while leading, 0 again after stepping
down, when the leader's queue gauges are dropped too. Summed over replicas it is what the "no leader
anywhere" alert reads (manifests/components/observability). Runs on looptime's fake clock."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from kueue_webhook.control.replica.controller import Controller
from kueue_webhook.control.replica.controller_settings import ControllerSettings
from tests.unit.control.fakes import MemoryApi

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 1.5, 1.0, 0.2


def leader_value(registry: CollectorRegistry) -> float | None:
    return registry.get_sample_value("kueue_webhook_leader")


@pytest.mark.looptime
async def test_leader_gauge_is_one_only_while_the_lease_is_held() -> None:
    api = MemoryApi()
    controller = Controller(
        client=api,  # type: ignore[arg-type]
        namespace="kueue-system",
        identity="a",
        settings=ControllerSettings(
            lease_duration=LEASE_DURATION, renew_deadline=RENEW_DEADLINE, retry_period=RETRY_PERIOD
        ),
    )
    registry = controller.metrics.registry
    assert leader_value(registry) == 0.0
    assert controller.elector is not None
    electing = asyncio.create_task(controller.elector.run())
    try:
        await controller.leading.wait()
        assert leader_value(registry) == 1.0
        controller.metrics.pending_workloads.labels("a100", "active", "leader").set(3)
        controller.metrics.admitted_workloads.labels("a100", "", "leader").inc()

        api.down = True  # renewals fail: the replica steps down by its renew deadline
        await asyncio.wait_for(controller.following.wait(), LEASE_DURATION)
        assert leader_value(registry) == 0.0
        # the leader's queue gauges go with the leadership (the next leader reports them); counts stay
        pending = {"cluster_queue": "a100", "status": "active", "replica_role": "leader"}
        assert registry.get_sample_value("kueue_pending_workloads", pending) is None
        admitted = {"cluster_queue": "a100", "priority_class": "", "replica_role": "leader"}
        assert registry.get_sample_value("kueue_admitted_workloads_total", admitted) == 1.0
    finally:
        electing.cancel()
        await asyncio.wait([electing], timeout=RENEW_DEADLINE + 1)
