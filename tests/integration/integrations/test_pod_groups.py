"""Pod groups on the fake API server with the shipped webhook configurations, as Kueue's pod integration
treats them (pkg/controller/jobs/pod): the pod webhook refuses malformed group metadata, a group with more
pods than its total count loses the excess ones, and the pods of an evicted group are marked with the
``TerminationTarget`` condition before they are deleted."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.fakeapi import FakeApiServer
from tests.fakeapi.errors import ApiError
from tests.integration.integrations.test_pods import (  # the cluster fixture and its helpers
    HANG,
    cluster,
    member,
    pod,
    set_phase,
    started,
)
from tests.support.fake_cluster import condition, events_of

__all__ = ["cluster"]

GROUP = "kueue.x-k8s.io/pod-group-name"
TOTAL = "kueue.x-k8s.io/pod-group-total-count"
DENIED = 'admission webhook "vpod.kueue.x-k8s.io" denied the request: '


async def test_the_pod_webhook_refuses_half_declared_groups(cluster: FakeApiServer) -> None:
    with pytest.raises(ApiError) as missing_count:
        await cluster.create(pod("lonely", 1, labels={GROUP: "g"}), admit=True)
    assert missing_count.value.code == 403
    assert missing_count.value.message.startswith(f"{DENIED}metadata.annotations[{TOTAL}]: Required value: ")

    with pytest.raises(ApiError) as missing_name:
        await cluster.create(pod("counted", 1, annotations={TOTAL: "2"}), admit=True)
    assert missing_name.value.message.startswith(f"{DENIED}metadata.labels[{GROUP}]: Required value: ")

    with pytest.raises(ApiError) as zero:
        await cluster.create(member("empty", "g", 0), admit=True)
    assert zero.value.message.startswith(f'{DENIED}metadata.annotations[{TOTAL}]: Invalid value: "0": ')
    assert cluster.list("pods", "team") == []


async def test_a_group_name_cannot_change_but_the_total_count_can(cluster: FakeApiServer) -> None:
    await cluster.create(member("g-0", "trio", 3), admit=True)
    with pytest.raises(ApiError) as renamed:
        await cluster.patch(
            "pods", "g-0", {"metadata": {"labels": {GROUP: "other"}}}, namespace="team", admit=True
        )
    assert (
        renamed.value.message
        == f'{DENIED}metadata.labels[{GROUP}]: Invalid value: "other": field is immutable'
    )
    resized = await cluster.patch(
        "pods", "g-0", {"metadata": {"annotations": {TOTAL: "1"}}}, namespace="team", admit=True
    )
    assert resized["metadata"]["annotations"][TOTAL] == "1"
    # a group of one now: its Workload is made and the pod admitted
    await cluster.wait_for(started(cluster, "g-0"), timeout=HANG)


async def test_a_pod_beyond_the_groups_count_is_deleted_as_excess(cluster: FakeApiServer) -> None:
    """Kueue's removeExcessPods: the group keeps its started pods; a late extra one goes, with an Event."""
    for index in range(2):
        await cluster.create(member(f"g-{index}", "pair", 2), admit=True)
    await cluster.wait_for(lambda: started(cluster, "g-0")() and started(cluster, "g-1")(), timeout=HANG)
    await cluster.create(member("g-2", "pair", 2), admit=True)
    await cluster.wait_for(lambda: cluster.get("pods", "g-2", "team") is None, timeout=HANG)
    await cluster.wait_for(lambda: "ExcessPodDeleted" in events_of(cluster, "team", "g-2"), timeout=HANG)
    assert events_of(cluster, "team", "g-2")["ExcessPodDeleted"] == "Excess pod deleted"
    assert started(cluster, "g-0")() and started(cluster, "g-1")()
    workload = cluster.get("workloads", "pair", "team")
    assert workload is not None and {r["name"] for r in workload["metadata"]["ownerReferences"]} == {
        "g-0",
        "g-1",
    }


async def test_a_preempted_groups_pods_are_marked_termination_target_then_deleted(
    cluster: FakeApiServer,
) -> None:
    """Kueue's Pod.Stop: the TerminationTarget condition through pods/status first, then the delete."""
    hold = "test.example/hold"  # the test's own finalizer keeps the deleted pods visible
    for index in range(2):
        await cluster.create(member(f"g-{index}", "pair", 2), admit=True)
    await cluster.wait_for(lambda: started(cluster, "g-0")() and started(cluster, "g-1")(), timeout=HANG)
    for index in range(2):
        name = f"g-{index}"
        await set_phase(cluster, name, "Running")
        finalizers = (cluster.get("pods", name, "team") or {})["metadata"]["finalizers"]
        await cluster.patch("pods", name, {"metadata": {"finalizers": [*finalizers, hold]}}, namespace="team")
    await cluster.create(pod("high", 2, labels={"kueue.x-k8s.io/priority-class": "urgent"}), admit=True)

    def deleted(name: str) -> Callable[[], bool]:
        return lambda: bool(
            (cluster.get("pods", name, "team") or {}).get("metadata", {}).get("deletionTimestamp")
        )

    for index in range(2):
        await cluster.wait_for(deleted(f"g-{index}"), timeout=HANG)
        marked = condition(cluster.get("pods", f"g-{index}", "team"), "TerminationTarget") or {}
        assert (marked.get("status"), marked.get("reason")) == ("True", "WorkloadEvictedDueToPreempted")
        evicted = condition(cluster.get("workloads", "pair", "team"), "Evicted") or {}
        assert marked["message"] == evicted["message"] and marked.get("lastTransitionTime")
    for index in range(2):
        await cluster.patch("pods", f"g-{index}", {"metadata": {"finalizers": None}}, namespace="team")
    await cluster.wait_for(started(cluster, "high"), timeout=HANG)


async def test_a_started_pods_queue_label_is_immutable_a_gated_ones_is_not(cluster: FakeApiServer) -> None:
    """Kueue's validateUpdateForQueueName: the queue may change only while the pod is still gated."""
    queue = "kueue.x-k8s.io/queue-name"
    await cluster.create(member("g-0", "trio", 3), admit=True)  # one of three: stays gated
    moved = await cluster.patch(
        "pods", "g-0", {"metadata": {"labels": {queue: "elsewhere"}}}, namespace="team", admit=True
    )
    assert moved["metadata"]["labels"][queue] == "elsewhere"
    await cluster.create(pod("solo", 1), admit=True)
    await cluster.wait_for(started(cluster, "solo"), timeout=HANG)
    with pytest.raises(ApiError) as denied:
        await cluster.patch(
            "pods", "solo", {"metadata": {"labels": {queue: "elsewhere"}}}, namespace="team", admit=True
        )
    assert (
        denied.value.message
        == f'{DENIED}metadata.labels[{queue}]: Invalid value: "elsewhere": field is immutable'
    )


async def test_a_queued_jobs_pod_is_checked_too(cluster: FakeApiServer) -> None:
    """Kueue's pod webhook validates every pod it sees, also those left to their owner."""
    job = await cluster.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "train", "namespace": "team"},
            "spec": {"template": pod("x", 1) | {"metadata": {}}},
        }
    )
    child = pod("train-abcde", 1, labels={GROUP: "g"})
    child["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "train",
            "uid": job["metadata"]["uid"],
            "controller": True,
        }
    ]
    with pytest.raises(ApiError) as denied:
        await cluster.create(child, admit=True)
    assert denied.value.message.startswith(f"{DENIED}metadata.annotations[{TOTAL}]: Required value: ")
