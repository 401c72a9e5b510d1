"""A pod PriorityClass (scheduling.k8s.io/v1) as the priority of a Job's Workload, through the controller.

Kueue takes a Job's priority from the ``kueue.x-k8s.io/priority-class`` WorkloadPriorityClass label, else
from the PriorityClass its pod template names in ``priorityClassName``, else 0. What a user sees: the
Workload's ``spec.priority`` and ``spec.priorityClassRef`` (group ``scheduling.k8s.io``, kind
``PriorityClass``), and a low-priority Job preempted for it under ``withinClusterQueue: LowerPriority``.
"""

from __future__ import annotations

from typing import Any

from tests.fakeapi import FakeApiServer
from tests.support import fake_cluster as harness
from tests.support.builders import (
    gpu_limits,
    manifests,
    priority_class,
    queued_job,
    resource_flavor,
    team_queue,
)
from tests.support.fake_cluster import condition
from tests.support.replica import replica

JSON = dict[str, Any]

SETUP = manifests(
    priority_class("high", 1000, description="production training"),
    priority_class("low", 10),
    resource_flavor("gpu-nodes", node_labels={"node-pool": "gpu"}),
    *team_queue(
        "vision", {"gpu-nodes": {"nvidia.com/gpu": 4}}, preemption={"withinClusterQueue": "LowerPriority"}
    ),
)


def gpu_job(name: str, *, gpus: int, priority_class: str) -> JSON:
    return queued_job(
        "vision", name, queue="gpus", resources=gpu_limits(gpus), pod={"priorityClassName": priority_class}
    )


def workload_of(fake_api: FakeApiServer, job: str) -> JSON | None:
    return harness.workload_of(fake_api, "vision", job)


def running(fake_api: FakeApiServer, name: str) -> bool:
    return harness.running(fake_api, "vision", name)


async def test_the_fake_serves_priority_classes_with_their_defaults(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(SETUP)
    high = fake_api.get("priorityclasses", "high")
    assert high is not None
    assert (high["apiVersion"], high["kind"], high["value"]) == (
        "scheduling.k8s.io/v1",
        "PriorityClass",
        1000,
    )
    assert high["preemptionPolicy"] == "PreemptLowerPriority"
    assert "namespace" not in high["metadata"]
    assert fake_api.get("pc", "low") is not None


async def test_pod_priority_class_sets_the_workload_priority_and_preempts(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(SETUP)
    async with replica(fake_api.kubeconfig_path()):
        await fake_api.create(gpu_job("low-1", gpus=4, priority_class="low"))
        await fake_api.wait_for(lambda: running(fake_api, "low-1"))
        low = workload_of(fake_api, "low-1")
        assert low is not None
        assert low["spec"]["priority"] == 10
        assert low["spec"]["priorityClassRef"] == {
            "group": "scheduling.k8s.io",
            "kind": "PriorityClass",
            "name": "low",
        }

        await fake_api.create(gpu_job("high-1", gpus=4, priority_class="high"))
        await fake_api.wait_for(lambda: running(fake_api, "high-1"), timeout=20)

        high = workload_of(fake_api, "high-1")
        assert high is not None
        assert high["spec"]["priority"] == 1000
        assert high["spec"]["priorityClassRef"] == {
            "group": "scheduling.k8s.io",
            "kind": "PriorityClass",
            "name": "high",
        }
        admitted = condition(high, "Admitted")
        assert admitted is not None and admitted["status"] == "True"
        started = fake_api.get("jobs", "high-1", "vision")
        assert started is not None
        assert started["spec"]["template"]["spec"]["nodeSelector"] == {"node-pool": "gpu"}

        low = workload_of(fake_api, "low-1")
        preempted = condition(low, "Preempted")
        assert preempted is not None and (preempted["status"], preempted["reason"]) == (
            "True",
            "InClusterQueue",
        )
        evicted = condition(low, "Evicted")
        assert evicted is not None and (evicted["status"], evicted["reason"]) == ("True", "Preempted")
        assert not running(fake_api, "low-1")


async def test_workload_priority_class_label_wins_over_pod_priority_class(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(
        SETUP
        + """
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: background}
value: 1
"""
    )
    async with replica(fake_api.kubeconfig_path()):
        job = gpu_job("labelled", gpus=1, priority_class="high")
        job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "background"
        await fake_api.create(job)
        await fake_api.wait_for(lambda: running(fake_api, "labelled"))
        workload = workload_of(fake_api, "labelled")
        assert workload is not None
        assert workload["spec"]["priority"] == 1
        assert workload["spec"]["priorityClassRef"] == {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": "background",
        }
