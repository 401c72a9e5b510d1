"""A failed node of a topology-aware Workload replaced through the real controller on the fake API server:
a Job asking for one rack is placed on two hosts of rack a; one of them turns NotReady, is recorded in
``status.unhealthyNodes``, and the scheduler's capacity tree finds the third host of rack a (not the roomier
rack b): the new assignment is written and the list cleared. When the rack has no host with room left, the
Workload is evicted with Kueue's message and queued again, and lands in rack b."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.topology_assignment import Domain
from tests.fakeapi import FakeApiServer
from tests.integration.scheduling.test_topology import SETUP, node, placed, rack_job, workload_of
from tests.support.fake_cluster import is_true
from tests.support.replica import replica

JSON = dict[str, Any]
NOT_READY = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}


def unhealthy(fake_api: FakeApiServer) -> list[JSON]:
    found = workload_of(fake_api, "ranks") or {}
    return list(found.get("status", {}).get("unhealthyNodes") or [])


async def test_a_failed_host_is_replaced_in_its_rack_and_without_room_the_workload_is_evicted(
    fake_api: FakeApiServer,
) -> None:
    await fake_api.apply_manifests(SETUP)
    for name, rack, cpu in (("a1", "a", "2"), ("a2", "a", "2"), ("a3", "a", "2"), ("b1", "b", "8")):
        await fake_api.create(node(name, rack, cpu))
    async with replica(fake_api.kubeconfig_path()):
        await fake_api.create(rack_job("ranks", 4))

        def admitted() -> bool:
            found = workload_of(fake_api, "ranks")
            return found is not None and is_true(found, "Admitted")

        await fake_api.wait_for(admitted, timeout=30)
        first = placed(fake_api, "ranks")
        assert [d.count for d in first] == [2, 2] and {d.values[0] for d in first} < {"a1", "a2", "a3"}
        failed, kept = first[1].values[0], first[0].values[0]
        spare = ({"a1", "a2", "a3"} - {failed, kept}).pop()

        await fake_api.patch("nodes", failed, NOT_READY, subresource="status")

        def replaced() -> bool:
            return not unhealthy(fake_api) and placed(fake_api, "ranks") != first

        await fake_api.wait_for(replaced, timeout=30)
        assert placed(fake_api, "ranks") == sorted(
            [Domain((kept,), 2), Domain((spare,), 2)], key=lambda d: d.values
        )
        found = workload_of(fake_api, "ranks")
        assert found is not None and is_true(found, "Admitted") and not is_true(found, "Evicted")

        # the spare host fails too: rack a has no host with room for two pods left
        await fake_api.patch("nodes", spare, NOT_READY, subresource="status")

        def evicted_for_no_replacement() -> bool:
            return any(
                e.get("reason") == "EvictedDueToNodeFailures"
                and e.get("message")
                == f"Workload was evicted as there was no replacement for unhealthy node(s): {spare}"
                for e in fake_api.list("events", "ml")
            )

        await fake_api.wait_for(evicted_for_no_replacement, timeout=30)
        # queued again, it is placed where four pods fit: rack b
        await fake_api.wait_for(
            lambda: admitted() and placed(fake_api, "ranks") == [Domain(("b1",), 4)], timeout=60
        )
