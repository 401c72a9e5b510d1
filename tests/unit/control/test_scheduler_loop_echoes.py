"""A ClusterQueue's status write (ours, echoed by the watch) must not disturb the scheduler; its spec does.

Re-reading a ClusterQueue's unchanged spec on each status flush would wake every parked workload of its
cohort: under load, all of them retried about once a second, for nothing.
"""

from __future__ import annotations

from typing import Any

from kueue_webhook.control.kube.kinds import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    Kind,
)
from tests.support import builders
from tests.unit.control.scheduler_loops import admitted, feed, new_loop

JSON = dict[str, Any]


def cluster_queue(nominal: str, *, version: str, status: JSON | None = None) -> JSON:
    return builders.cluster_queue(
        "cq", {"rf": {"cpu": nominal}}, metadata={"resourceVersion": version, "generation": 1}, status=status
    )


OBJECTS: list[tuple[Kind, JSON]] = [
    (NAMESPACES, builders.namespace("team", resourceVersion="1")),
    (RESOURCE_FLAVORS, builders.resource_flavor("rf", resourceVersion="2")),
    (LOCAL_QUEUES, builders.local_queue("lq", "team", "cq", metadata={"resourceVersion": "3"})),
    (
        WORKLOADS,
        builders.workload(
            "big",
            uid="u1",
            resourceVersion="4",
            creationTimestamp="2026-01-01T00:00:00Z",
            pod_sets=[builders.pod_set(requests={"cpu": "2"})],
        ),
    ),
]


def test_a_status_only_echo_wakes_nothing_and_a_spec_change_admits() -> None:
    loop, store = new_loop()
    feed(loop, store, CLUSTER_QUEUES, cluster_queue("1", version="5"))
    for kind, obj in OBJECTS:
        feed(loop, store, kind, obj)
    assert not admitted(loop)  # 2 cpu do not fit in 1: parked

    echoed = cluster_queue("1", version="6", status={"pendingWorkloads": 1})
    feed(loop, store, CLUSTER_QUEUES, echoed)
    assert not loop.state.has_work()  # nothing to retry: the spec it decides with did not change

    feed(loop, store, CLUSTER_QUEUES, cluster_queue("2", version="7", status={"pendingWorkloads": 1}))
    assert admitted(loop) == ["team/big"]
