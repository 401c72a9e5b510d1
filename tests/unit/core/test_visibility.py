"""Kueue's visibility API answers (pkg/visibility/storage): ranks are 0-based, a LocalQueue's rank counts only
its own Workloads, ``offset``/``limit`` page the list, unknown queues are NotFound, discovery lists the four
resources Kueue registers."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_webhook.core import visibility as vis
from kueue_webhook.core.scheduler import SchedulerState

from .builders import admitted, cluster_queue, run_until_quiet, state_with, workload

ONE_GPU = {"gpu-nodes": {"nvidia.com/gpu": 1}}
METADATA: dict[tuple[str, str], dict[str, Any]] = {}


def lookup(namespace: str, name: str) -> dict[str, Any] | None:
    return METADATA.get((namespace, name))


def research() -> SchedulerState:
    """One GPU, taken by ``running``; five wait: a1 a2 (LocalQueue a), b1 (b), urgent (a), a3 (a)."""
    state = state_with(
        cluster_queue("research", ONE_GPU),
        flavors=("gpu-nodes",),
        local_queues={"a": "research", "b": "research"},
    )
    gpu = {"nvidia.com/gpu": "1"}
    state.upsert_workload(workload("running", gpu, queue="a"))
    assert admitted(run_until_quiet(state)) == ["ns/running"]
    for created, (name, queue) in enumerate((("a1", "a"), ("a2", "a"), ("b1", "b"), ("a3", "a")), start=1):
        state.upsert_workload(workload(name, gpu, queue=queue, created=created))
    state.upsert_workload(workload("urgent", gpu, queue="a", created=9, priority=100))
    run_until_quiet(state)
    return state


def ranks(summary: dict[str, Any] | None) -> list[tuple[str, str, int, int, int]]:
    assert summary is not None
    assert (summary["kind"], summary["apiVersion"]) == ("PendingWorkloadsSummary", vis.GROUP_VERSION)
    return [
        (
            item["metadata"]["name"],
            item["localQueueName"],
            item["priority"],
            item["positionInClusterQueue"],
            item["positionInLocalQueue"],
        )
        for item in summary["items"]
    ]


def test_cluster_queue_lists_pending_in_queue_order_with_both_ranks_from_zero() -> None:
    summary = vis.cluster_queue_pending(research(), "research", vis.Page(), lookup)
    assert ranks(summary) == [
        ("urgent", "a", 100, 0, 0),
        ("a1", "a", 0, 1, 1),
        ("a2", "a", 0, 2, 2),
        ("b1", "b", 0, 3, 0),
        ("a3", "a", 0, 4, 3),
    ]


def test_cluster_queue_pages_keep_the_ranks_of_the_whole_queue() -> None:
    summary = vis.cluster_queue_pending(research(), "research", vis.Page(offset=2, limit=2), lookup)
    assert ranks(summary) == [("a2", "a", 0, 2, 2), ("b1", "b", 0, 3, 0)]


def test_local_queue_lists_only_its_own_with_its_rank_and_the_cluster_queue_rank() -> None:
    state = research()
    assert ranks(vis.local_queue_pending(state, "ns", "b", vis.Page(), lookup)) == [("b1", "b", 0, 3, 0)]
    page = vis.local_queue_pending(state, "ns", "a", vis.Page(offset=1, limit=2), lookup)
    assert ranks(page) == [("a1", "a", 0, 1, 1), ("a2", "a", 0, 2, 2)]


def test_unknown_queues_are_none_and_answered_not_found_as_kueue_words_it() -> None:
    state = research()
    assert vis.cluster_queue_pending(state, "nope", vis.Page(), lookup) is None
    assert vis.local_queue_pending(state, "ns", "nope", vis.Page(), lookup) is None
    status = vis.not_found("clusterqueue", "nope")
    assert status["code"] == 404 and status["reason"] == "NotFound"
    assert status["message"] == 'clusterqueue.visibility.kueue.x-k8s.io "nope" not found'


def test_items_carry_the_metadata_kueue_copies_and_nothing_else() -> None:
    METADATA[("ns", "b1")] = {
        "metadata": {
            "name": "b1",
            "namespace": "ns",
            "creationTimestamp": "2026-01-01T00:00:03Z",
            "labels": {"not": "copied"},
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u", "controller": True}
            ],
        }
    }
    try:
        summary = vis.local_queue_pending(research(), "ns", "b", vis.Page(), lookup)
    finally:
        METADATA.clear()
    assert summary is not None
    assert summary["items"][0]["metadata"] == {
        "name": "b1",
        "namespace": "ns",
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u"}],
        "creationTimestamp": "2026-01-01T00:00:03Z",
    }


@pytest.mark.parametrize(
    ("query", "page"),
    [
        ({}, vis.Page(0, 1000)),  # Kueue's default limit
        ({"limit": "0"}, vis.Page(0, 1000)),  # 0 is defaulted like absent
        ({"limit": "5", "offset": "7"}, vis.Page(7, 5)),
        ({"limit": "-1", "offset": "-3"}, vis.Page(0, 0)),  # boundedLimitOffset
        ({"limit": "1000000"}, vis.Page(0, 100_000)),  # capped at MaxPendingWorkloadsLimit
    ],
)
def test_limit_and_offset_are_bounded_as_kueue_bounds_them(query: dict[str, str], page: vis.Page) -> None:
    assert vis.parse_page(query) == page


def test_a_limit_that_is_not_a_number_is_a_clear_error() -> None:
    with pytest.raises(vis.VisibilityError, match="limit: not a whole number: 'ten'"):
        vis.parse_page({"limit": "ten"})


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"offset": "9" * 5000}, r"offset: not a whole number: '9{37}\.\.\.'"),  # shown cut, never echoed
        ({"limit": "9223372036854775808"}, "limit: 9223372036854775808 is out of range for a 64-bit integer"),
        ({"offset": "1_000"}, "offset: not a whole number"),  # Go's ParseInt takes no underscores
        ({"limit": " 5"}, "limit: not a whole number"),
    ],
)
def test_limit_and_offset_beyond_kueues_int64_parameters_are_refused(
    query: dict[str, str], message: str
) -> None:
    with pytest.raises(vis.VisibilityError, match=message):
        vis.parse_page(query)


def test_the_largest_int64_offset_is_an_empty_page_not_an_error() -> None:
    assert vis.parse_page({"offset": str(2**63 - 1)}) == vis.Page(2**63 - 1, 1000)


def test_discovery_lists_the_queues_and_their_pendingworkloads_subresources() -> None:
    resources = vis.api_resource_list()
    assert resources["groupVersion"] == "visibility.kueue.x-k8s.io/v1beta2"
    listed = {(r["name"], r["namespaced"], tuple(r["verbs"])) for r in resources["resources"]}
    assert listed == {
        ("clusterqueues", False, ()),
        ("clusterqueues/pendingworkloads", False, ("get",)),
        ("localqueues", True, ()),
        ("localqueues/pendingworkloads", True, ("get",)),
    }
    assert vis.api_group()["preferredVersion"] == {"groupVersion": vis.GROUP_VERSION, "version": "v1beta2"}
    assert [g["name"] for g in vis.api_group_list()["groups"]] == [vis.GROUP]
