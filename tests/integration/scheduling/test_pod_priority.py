"""A pod PriorityClass (scheduling.k8s.io/v1) as the priority of a Job's Workload, through the controller.

Kueue takes a Job's priority from the ``kueue.x-k8s.io/priority-class`` WorkloadPriorityClass label, else
from the PriorityClass its pod template names in ``priorityClassName``, else from the cluster's
``globalDefault`` PriorityClass, else 0 (jobframework's ``ExtractPriority``). What a user sees: the
Workload's ``spec.priority`` and ``spec.priorityClassRef`` (group ``scheduling.k8s.io``, kind
``PriorityClass``), and a low-priority Job preempted for it under ``withinClusterQueue: LowerPriority``. A
class that is named but does not exist gives no Workload at all until it is created: the Job stays
suspended (with a ``WorkloadPriorityClassNotFound`` Warning for a WorkloadPriorityClass).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakeapi import FakeApiServer
from tests.fakeapi.errors import ApiError
from tests.support import fake_cluster as harness
from tests.support.builders import (
    gpu_limits,
    manifests,
    priority_class,
    queued_job,
    resource_flavor,
    team_queue,
    workload_priority_class,
)
from tests.support.fake_cluster import condition, events_of
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


async def test_a_job_naming_a_workload_priority_class_that_does_not_exist_gets_no_workload_until_it_does(
    fake_api: FakeApiServer,
) -> None:
    """Kueue's ExtractPriority: the reconciler cannot build the Workload, says so on the Job
    (WorkloadPriorityClassNotFound) and tries again; the Job stays suspended, holding no quota."""
    await fake_api.apply_manifests(SETUP)
    async with replica(fake_api.kubeconfig_path()):
        job = gpu_job("urgent-1", gpus=1, priority_class="high")
        job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "urgent"
        await fake_api.create(job)
        said = 'WorkloadPriorityClass "urgent" not found'
        await fake_api.wait_for(
            lambda: events_of(fake_api, "vision", "urgent-1").get("WorkloadPriorityClassNotFound") == said
        )
        assert workload_of(fake_api, "urgent-1") is None
        assert not running(fake_api, "urgent-1")

        await fake_api.create(workload_priority_class("urgent", 500))
        await fake_api.wait_for(lambda: running(fake_api, "urgent-1"))
        workload = workload_of(fake_api, "urgent-1")
        assert workload is not None and workload["spec"]["priority"] == 500
        assert workload["spec"]["priorityClassRef"]["name"] == "urgent"


async def test_a_job_naming_a_pod_priority_class_that_does_not_exist_gets_no_workload_until_it_does(
    fake_api: FakeApiServer,
) -> None:
    """As Kueue's GetPriorityFromPriorityClass: a Job whose template names an absent PriorityClass is not
    queued at priority 0 (its pods could not be created anyway); the class's creation queues it."""
    await fake_api.apply_manifests(SETUP)
    async with replica(fake_api.kubeconfig_path()):
        await fake_api.create(gpu_job("typo-1", gpus=1, priority_class="hihg"))
        await fake_api.create(gpu_job("plain-1", gpus=1, priority_class="low"))
        await fake_api.wait_for(lambda: running(fake_api, "plain-1"))
        assert workload_of(fake_api, "typo-1") is None
        assert not running(fake_api, "typo-1")

        await fake_api.create(priority_class("hihg", 700))
        await fake_api.wait_for(lambda: running(fake_api, "typo-1"))
        workload = workload_of(fake_api, "typo-1")
        assert workload is not None and workload["spec"]["priority"] == 700


async def test_the_fake_refuses_a_second_global_default_priority_class(fake_api: FakeApiServer) -> None:
    """kube-apiserver's Priority admission plugin (v1.36.2): one globalDefault PriorityClass at a time, on
    create and on update, 403 with its wording."""
    await fake_api.create(priority_class("cluster-default", 300, globalDefault=True))
    second = priority_class("second-default", 200, globalDefault=True)
    with pytest.raises(ApiError) as refused:
        await fake_api.create(second)
    assert refused.value.code == 403
    assert str(refused.value) == (
        'priorityclasses.scheduling.k8s.io "second-default" is forbidden: PriorityClass cluster-default is '
        "already marked as default. Only one default can exist"
    )
    await fake_api.create(priority_class("plain", 1))
    with pytest.raises(ApiError):
        await fake_api.patch("priorityclasses", "plain", {"globalDefault": True})
    assert fake_api.get("priorityclasses", "second-default") is None


async def test_a_job_naming_no_class_gets_the_global_default_priority_class(fake_api: FakeApiServer) -> None:
    """Kueue's getDefaultPriority: the PriorityClass with globalDefault, as the Job's pods would get it from
    the Priority admission plugin; a class that is not the default is not used."""
    await fake_api.apply_manifests(
        SETUP + "---\n" + manifests(priority_class("cluster-default", 300, globalDefault=True))
    )
    async with replica(fake_api.kubeconfig_path()):
        await fake_api.create(queued_job("vision", "plain", queue="gpus", resources=gpu_limits(1)))
        await fake_api.wait_for(lambda: running(fake_api, "plain"))
        workload = workload_of(fake_api, "plain")
        assert workload is not None
        assert workload["spec"]["priority"] == 300
        assert workload["spec"]["priorityClassRef"] == {
            "group": "scheduling.k8s.io",
            "kind": "PriorityClass",
            "name": "cluster-default",
        }
