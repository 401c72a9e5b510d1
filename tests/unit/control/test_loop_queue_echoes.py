"""A ClusterQueue's status write (ours, echoed by the watch) must not disturb the scheduler; its spec does.

Re-reading a ClusterQueue's unchanged spec on each status flush would wake every parked workload of its
cohort: under load, all of them retried about once a second, for nothing.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.unit.control.fakes import control_context
from webhook.control.kinds import CLUSTER_QUEUES, LOCAL_QUEUES, NAMESPACES, RESOURCE_FLAVORS, WORKLOADS, Kind
from webhook.control.loop import AdmissionLoop
from webhook.control.store import Change, Store, key_of
from webhook.core.scheduler import Admit

JSON = dict[str, Any]
GROUP = "kueue.x-k8s.io/v1beta2"


def cluster_queue(nominal: str, *, version: str, status: JSON | None = None) -> JSON:
    cq: JSON = {
        "apiVersion": GROUP,
        "kind": "ClusterQueue",
        "metadata": {"name": "cq", "resourceVersion": version, "generation": 1},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "rf", "resources": [{"name": "cpu", "nominalQuota": nominal}]}],
                }
            ],
        },
    }
    if status is not None:
        cq["status"] = status
    return cq


OBJECTS: list[tuple[Kind, JSON]] = [
    (
        NAMESPACES,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "resourceVersion": "1"}},
    ),
    (
        RESOURCE_FLAVORS,
        {"apiVersion": GROUP, "kind": "ResourceFlavor", "metadata": {"name": "rf", "resourceVersion": "2"}},
    ),
    (
        LOCAL_QUEUES,
        {
            "apiVersion": GROUP,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "team", "resourceVersion": "3"},
            "spec": {"clusterQueue": "cq"},
        },
    ),
    (
        WORKLOADS,
        {
            "apiVersion": GROUP,
            "kind": "Workload",
            "metadata": {
                "name": "big",
                "namespace": "team",
                "uid": "u1",
                "resourceVersion": "4",
                "creationTimestamp": "2026-01-01T00:00:00Z",
            },
            "spec": {
                "queueName": "lq",
                "podSets": [
                    {
                        "name": "main",
                        "count": 1,
                        "template": {
                            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}
                        },
                    }
                ],
            },
        },
    ),
]


def feed(loop: AdmissionLoop, store: Store, kind: Kind, obj: JSON) -> None:
    old = store.get(kind, key_of(obj)[1], key_of(obj)[0])
    store.upsert(kind, obj)
    loop.on_change(Change(kind, key_of(obj), old, copy.deepcopy(obj)))


def decide(loop: AdmissionLoop) -> list[Any]:
    decisions: list[Any] = []
    while loop.state.has_work():
        decisions.extend(loop.state.cycle())
    return decisions


def test_a_status_only_echo_wakes_nothing_and_a_spec_change_admits() -> None:
    store = Store()
    loop = AdmissionLoop(control_context(store))
    feed(loop, store, CLUSTER_QUEUES, cluster_queue("1", version="5"))
    for kind, obj in OBJECTS:
        feed(loop, store, kind, obj)
    assert not [d for d in decide(loop) if isinstance(d, Admit)]  # 2 cpu do not fit in 1: parked

    echoed = cluster_queue("1", version="6", status={"pendingWorkloads": 1})
    feed(loop, store, CLUSTER_QUEUES, echoed)
    assert not loop.state.has_work()  # nothing to retry: the spec it decides with did not change

    feed(loop, store, CLUSTER_QUEUES, cluster_queue("2", version="7", status={"pendingWorkloads": 1}))
    assert [d.workload for d in decide(loop) if isinstance(d, Admit)] == ["team/big"]
