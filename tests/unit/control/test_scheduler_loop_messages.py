"""A pending reason's write (QuotaReserved=False with a new message) costs the scheduler nothing.

The core never reads a condition's message, so the answer of such a write, and its watch echo, are not fed
to it again; any other change of a Workload still is.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kueue_webhook.control.kube.kinds import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
)
from kueue_webhook.control.scheduling.unparsed_changes import only_messages_changed
from tests.support import builders
from tests.unit.control.scheduler_loops import admitted, feed, new_loop

JSON = dict[str, Any]


def pending(version: str, message: str, *, reason: str = "Pending", cpu: str = "2") -> JSON:
    return builders.workload(
        "big",
        uid="u1",
        resourceVersion=version,
        creationTimestamp="2026-01-01T00:00:00Z",
        pod_sets=[builders.pod_set(requests={"cpu": cpu})],
        status={
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "False",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": "2026-01-01T00:00:01Z",
                }
            ]
        },
    )


def test_only_a_conditions_message_and_the_write_bookkeeping_count_as_message_only() -> None:
    before = pending("5", "couldn't assign flavors: insufficient quota")
    after = pending("6", "couldn't assign flavors: insufficient quota for cpu")
    after["metadata"]["managedFields"] = [{"manager": "kueue-webhook"}]
    assert only_messages_changed(before, after)
    assert not only_messages_changed(None, after)
    assert not only_messages_changed(before, None)


@pytest.mark.parametrize(
    "edit",
    [
        lambda w: w["status"]["conditions"][0].update(reason="OnHold"),
        lambda w: w["status"]["conditions"][0].update(status="True"),
        lambda w: w["status"]["conditions"][0].update(lastTransitionTime="2026-01-01T00:00:09Z"),
        lambda w: w["status"]["conditions"].append({"type": "Evicted", "status": "True", "message": "x"}),
        lambda w: w["status"].update(admission={"clusterQueue": "cq"}),
        lambda w: w["spec"].update(priority=7),
        lambda w: w["metadata"].update(labels={"a": "b"}),
        lambda w: w["metadata"].update(deletionTimestamp="2026-01-01T00:00:02Z"),
        lambda w: w.update(kind="Other"),
    ],
)
def test_any_other_difference_is_not_message_only(edit: Any) -> None:
    before = pending("5", "waiting")
    after = copy.deepcopy(before)
    after["metadata"]["resourceVersion"] = "6"
    edit(after)
    assert not only_messages_changed(before, after)


def objects() -> list[tuple[Any, JSON]]:
    return [
        (NAMESPACES, builders.namespace("team", resourceVersion="1")),
        (RESOURCE_FLAVORS, builders.resource_flavor("rf", resourceVersion="2")),
        (
            CLUSTER_QUEUES,
            builders.cluster_queue("cq", {"rf": {"cpu": "1"}}, metadata={"resourceVersion": "3"}),
        ),
        (LOCAL_QUEUES, builders.local_queue("lq", "team", "cq", metadata={"resourceVersion": "4"})),
    ]


def test_a_pending_reasons_answer_is_not_fed_to_the_core_but_a_real_change_is() -> None:
    loop, store = new_loop()
    for kind, obj in objects():
        feed(loop, store, kind, obj)
    feed(loop, store, WORKLOADS, pending("5", "first"))
    assert not admitted(loop)  # 2 cpu do not fit in 1

    fed: list[Any] = []
    apply = loop.state.apply
    loop.state.apply = lambda parsed: (fed.append(parsed), apply(parsed))  # type: ignore[method-assign]
    feed(loop, store, WORKLOADS, pending("6", "couldn't assign flavors: insufficient quota for cpu"))
    assert fed == []

    feed(loop, store, WORKLOADS, pending("7", "couldn't assign flavors: insufficient quota for cpu", cpu="1"))
    assert len(fed) == 1
    assert admitted(loop) == ["team/big"]
