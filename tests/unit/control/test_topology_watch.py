"""The topology watch keeps the pods Kueue's topology ungater looks at (its IsTAS), not every pod a queue
started: since every admitted pod set carries the pod set label its watch selects on, the label alone would
hold every running pod of every queue."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from kueue_webhook.control.kube.kinds import Kind
from kueue_webhook.control.topology.watch import PODS, TopologyWatch

JSON = dict[str, Any]


def pod(name: str, rv: int, **annotations: str) -> JSON:
    """A pod a queue started: its pod set label and Workload annotation, plus ``annotations``."""
    return {
        "metadata": {
            "name": name,
            "namespace": "ml",
            "uid": name,
            "resourceVersion": str(rv),
            "labels": {"kueue.x-k8s.io/podset": "main"},
            "annotations": {"kueue.x-k8s.io/workload": "wl", **annotations},
        }
    }


REQUIRED = {"kueue.x-k8s.io/podset-required-topology": "rack"}
IMPLICIT = {"kueue.x-k8s.io/podset-unconstrained-topology": "true"}


class OnePodList:
    """Lists ``pods`` once, then plays ``events`` on the pod watch once ``go`` is set; the Node watch stays
    idle."""

    def __init__(self, pods: list[JSON], events: list[JSON]) -> None:
        self.pods, self.events = pods, events
        self.go, self.played = asyncio.Event(), asyncio.Event()

    async def list_pages(
        self, kind: Kind, *, namespace: str | None = None, field_selector: str = "", label_selector: str = ""
    ) -> AsyncIterator[tuple[list[JSON], str]]:
        yield (self.pods if kind is PODS else []), "10"

    async def watch(self, kind: Kind, *, resource_version: str, **_: Any) -> AsyncIterator[JSON]:
        if kind is PODS:
            await self.go.wait()
            for event in self.events:
                yield event
            self.played.set()
        await asyncio.Event().wait()
        yield {}


async def test_only_topology_aware_pods_are_held_and_one_that_stops_being_one_is_let_go() -> None:
    api = OnePodList(
        [pod("placed", 5, **REQUIRED), pod("implicit", 6, **IMPLICIT), pod("plain", 7)],
        [
            {"type": "ADDED", "object": pod("plain-2", 11)},
            {"type": "MODIFIED", "object": pod("implicit", 12)},  # its topology annotation taken off
            {"type": "DELETED", "object": pod("plain", 13)},
        ],
    )
    watch = TopologyWatch(api)
    task = asyncio.create_task(watch.run())
    try:
        await asyncio.wait_for(watch.pod_informer.synced.wait(), 5)
        assert sorted(p["metadata"]["name"] for p in watch.store.items(PODS)) == ["implicit", "placed"]
        api.go.set()
        await asyncio.wait_for(api.played.wait(), 5)
        assert [p["metadata"]["name"] for p in watch.pods_of("ml", "wl")] == ["placed"]
        watch.remember(pod("written", 14))
        assert watch.store.keys(PODS) == [("ml", "placed")]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
