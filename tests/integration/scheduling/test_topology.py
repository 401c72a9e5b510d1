"""Topology-aware admission through the real controller on the fake API server: Nodes are plain objects
with rack and host labels; a Job whose pod template asks for one rack
(``kueue.x-k8s.io/podset-required-topology: rack``) is admitted into the one rack with room, its
Workload's ``topologyAssignment`` naming hosts of that rack in Kueue's v1beta2 encoding; a second one
waits with Kueue's message while the racks are fragmented though quota suffices, and is admitted when a
pod bound to the rack finishes. The Nodes are listed once for both halves of topology-aware scheduling."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.topology_assignment import Domain, decode
from tests.fakeapi import FakeApiServer
from tests.support.builders import (
    cluster_queue,
    container,
    cpu_requests,
    job,
    local_queue,
    manifests,
    namespace,
    resource_flavor,
)
from tests.support.fake_cluster import condition, is_true
from tests.support.replica import replica

JSON = dict[str, Any]
HOST = "kubernetes.io/hostname"


def topology() -> JSON:
    levels = [{"nodeLabel": "cloud.example.com/rack"}, {"nodeLabel": HOST}]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": "default"},
        "spec": {"levels": levels},
    }


def node(name: str, rack: str, cpu: str) -> JSON:
    labels = {"pool": "tas", "cloud.example.com/rack": rack, HOST: name}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


SETUP = manifests(
    namespace("ml"),
    topology(),
    resource_flavor("tas", node_labels={"pool": "tas"})
    | {"spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "default"}},
    cluster_queue("cq", {"tas": {"cpu": 100}}),
    local_queue("lq", "ml", "cq"),
)


def rack_job(name: str, pods: int) -> JSON:
    pod_spec = {"containers": [container(resources=cpu_requests("1"))], "restartPolicy": "Never"}
    body = job(name, "ml", pod_spec=pod_spec, queue="lq", parallelism=pods, completions=pods)
    body["spec"]["template"]["metadata"] = {
        "annotations": {"kueue.x-k8s.io/podset-required-topology": "cloud.example.com/rack"}
    }
    return body


def workload_of(fake_api: FakeApiServer, job_name: str) -> JSON | None:
    for item in fake_api.list("workloads", "ml"):
        owners = item["metadata"].get("ownerReferences") or []
        if any(o.get("name") == job_name for o in owners):
            return item
    return None


async def test_required_rack_jobs_land_in_the_rack_with_room_and_wait_while_racks_are_fragmented(
    fake_api: FakeApiServer,
) -> None:
    await fake_api.apply_manifests(SETUP)
    racks = (("a1", "a", "2"), ("a2", "a", "1"), ("a3", "a", "1"), ("b1", "b", "2"), ("b2", "b", "2"))
    for name, rack, cpu in racks:
        await fake_api.create(node(name, rack, cpu))
    # a pod bound to b2 outside any queue takes its two cpus: rack a has 4 free, rack b 2
    busy = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "busy", "namespace": "ml"},
        "spec": {"nodeName": "b2", "containers": [container(resources=cpu_requests("2"))]},
    }
    await fake_api.create(busy)
    async with replica(fake_api.kubeconfig_path()):
        await fake_api.create(rack_job("first", 3))

        def admitted(job_name: str) -> bool:
            found = workload_of(fake_api, job_name)
            return found is not None and is_true(found, "Admitted")

        await fake_api.wait_for(lambda: admitted("first"), timeout=30)
        assert placed(fake_api, "first") == [Domain(("a1",), 2), Domain(("a2",), 1)]

        # 3 cpus are free (a3, b1) and quota is plenty, but no rack holds 3 pods
        await fake_api.create(rack_job("second", 3))

        def second_waits() -> bool:
            found = workload_of(fake_api, "second")
            reserved = condition(found, "QuotaReserved") if found is not None else None
            return reserved is not None and reserved["status"] == "False" and bool(reserved["message"])

        await fake_api.wait_for(second_waits, timeout=30)
        second = workload_of(fake_api, "second")
        assert second is not None
        reserved = condition(second, "QuotaReserved")
        assert reserved is not None and (reserved["reason"], reserved["message"]) == (
            "WaitingForQuota",
            "couldn't assign flavors to pod set main: "
            'topology "default" allows to fit only 2 out of 3 pod(s). '
            'Total nodes: 5; excluded: resource "cpu": 3',
        )

        await fake_api.delete("pods", "busy", namespace="ml")  # rack b has room for the second job now
        await fake_api.wait_for(lambda: admitted("second"), timeout=30)
        assert placed(fake_api, "second") == [Domain(("b1",), 2), Domain(("b2",), 1)]

    # one Node informer serves both the placement and the pods' side (ungater, failed nodes): the replica
    # listed the Nodes once, and every watch it opened on them followed that list
    node_reads = [r for r in fake_api.requests if r.startswith("GET /api/v1/nodes?")]
    lists = [r for r in node_reads if "watch=" not in r]
    assert len(lists) == 1, node_reads


def placed(fake_api: FakeApiServer, job_name: str) -> list[Domain]:
    found = workload_of(fake_api, job_name)
    assert found is not None
    assignment = found["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert assignment["levels"] == [HOST]
    return decode(assignment)
