"""A replica that does not lead answers the visibility API from a mirror of the queues: a scheduler loop fed
the same store changes but never running a cycle. For the same store contents it ranks every pending
Workload as the leader's loop does, whatever the leader's cycles parked, and whether it was fed change by
change or rebuilt from the store (as when leadership is lost)."""

from __future__ import annotations

import copy
from typing import Any

from kueue_webhook.control.cache.store import Change, Store, key_of
from kueue_webhook.control.kube.kinds import LOCAL_QUEUES, WORKLOADS, Kind
from kueue_webhook.control.scheduling.scheduler_loop import SchedulerLoop
from kueue_webhook.core import visibility as vis
from tests.unit.control.fakes import control_context
from tests.unit.control.scheduler_loops import admitted
from tests.unit.control.test_scheduler_loop_release import GROUP, SETUP, meta, workload

JSON = dict[str, Any]
PAGE = vis.Page()


def pending(name: str, version: int, *, priority: int, created: str, queue: str = "lq") -> JSON:
    obj = workload(name, version)
    obj["metadata"]["creationTimestamp"] = created
    obj["spec"]["priority"] = priority
    obj["spec"]["queueName"] = queue
    return obj


def answers(loop: SchedulerLoop, store: Store) -> list[Any]:
    def lookup(namespace: str, name: str) -> JSON | None:
        return store.get(WORKLOADS, name, namespace)

    return [
        vis.cluster_queue_pending(loop.state, "cq", PAGE, lookup),
        vis.local_queue_pending(loop.state, "team", "lq", PAGE, lookup),
        vis.local_queue_pending(loop.state, "team", "lq2", vis.Page(offset=1, limit=1), lookup),
    ]


def rebuilt(store: Store) -> SchedulerLoop:
    loop = SchedulerLoop(control_context(store))
    loop.rebuild()
    return loop


def test_the_mirror_ranks_pending_workloads_as_the_leader_does() -> None:
    store = Store()  # one store, both loops on it, as in a replica
    leader, mirror = SchedulerLoop(control_context(store)), SchedulerLoop(control_context(store))

    def feed(kind: Kind, obj: JSON) -> None:
        key = key_of(obj)
        old = store.get(kind, key[1], key[0])
        store.upsert(kind, obj)
        for loop in (leader, mirror):
            loop.on_change(Change(kind, key, old, copy.deepcopy(obj)))

    second_queue = {
        "apiVersion": GROUP,
        "kind": "LocalQueue",
        "metadata": meta("lq2", 7, namespace="team"),
        "spec": {"clusterQueue": "cq"},
    }
    changes = [
        *SETUP[:-1],  # "running" holds the ClusterQueue's 2 CPUs
        (LOCAL_QUEUES, second_queue),
        (WORKLOADS, pending("late", 8, priority=0, created="2026-01-01T00:00:03Z")),
        (WORKLOADS, pending("urgent", 9, priority=10, created="2026-01-01T00:00:02Z", queue="lq2")),
        (WORKLOADS, pending("early", 10, priority=0, created="2026-01-01T00:00:01Z", queue="lq2")),
        (WORKLOADS, pending("also-urgent", 11, priority=10, created="2026-01-01T00:00:04Z", queue="lq2")),
    ]
    for kind, obj in changes:
        feed(kind, obj)
    assert admitted(leader) == []  # nothing fits: the leader's cycles park them all

    leader_answer = answers(leader, store)
    assert [(i["metadata"]["name"], i["positionInClusterQueue"]) for i in leader_answer[0]["items"]] == [
        ("urgent", 0),
        ("also-urgent", 1),
        ("early", 2),
        ("late", 3),
    ]
    assert answers(mirror, store) == leader_answer
    assert answers(rebuilt(store), store) == leader_answer

    # the running Workload finishes: the leader admits the first in line, and once its write is in the store
    # the mirror, fed the same two changes, ranks the rest alike
    finished = [{"type": "QuotaReserved"}, {"type": "Admitted"}, {"type": "Finished", "reason": "Succeeded"}]
    done = workload("running", 12, owner=True, conditions=finished)
    feed(WORKLOADS, done)
    assert admitted(leader) == ["team/urgent"]
    urgent = pending("urgent", 13, priority=10, created="2026-01-01T00:00:02Z", queue="lq2")
    urgent["status"] = workload("x", 0, conditions=[{"type": "QuotaReserved"}, {"type": "Admitted"}])[
        "status"
    ]
    feed(WORKLOADS, urgent)
    leader_answer = answers(leader, store)
    assert [i["metadata"]["name"] for i in leader_answer[0]["items"]] == ["also-urgent", "early", "late"]
    assert answers(mirror, store) == leader_answer
    assert answers(rebuilt(store), store) == leader_answer
