"""Reclaim for topology through the real controller on the fake API server: team ``vision`` lent quota to
``nlp`` in their cohort; ``vision``'s Job asks for 3 pods on one rack, its quota holds them, but no rack
has 3 free cpus. The controller evicts the borrower's Job whose rack it frees (``InCohortReclamation``,
Kueue's message naming both paths), and once that Job has stopped ``vision``'s Job is admitted into the
rack it left."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.topology_assignment import decode
from tests.fakeapi import FakeApiServer
from tests.support.builders import container, cpu_requests, job, manifests, resource_flavor, team_queue
from tests.support.fake_cluster import condition, is_true, running, workload_of
from tests.support.replica import replica

from .test_topology import node, topology

JSON = dict[str, Any]
RACK = "cloud.example.com/rack"
HANG = 60.0  # seconds: only so that a hang fails instead of blocking the suite


def setup() -> str:
    tas_flavor = resource_flavor("tas", node_labels={"pool": "tas"}) | {
        "spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "default"}
    }
    return manifests(
        topology(),
        tas_flavor,
        *team_queue(
            "vision", {"tas": {"cpu": 4}}, cohortName="research", preemption={"reclaimWithinCohort": "Any"}
        ),
        *team_queue("nlp", {"tas": {"cpu": 4}}, cohortName="research"),
    )


def rack_job(namespace: str, name: str, pods: int, *, rack: str = "") -> JSON:
    pod_spec: JSON = {"containers": [container(resources=cpu_requests("1"))], "restartPolicy": "Never"}
    if rack:
        pod_spec["nodeSelector"] = {RACK: rack}
    body = job(name, namespace, pod_spec=pod_spec, queue="gpus", parallelism=pods, completions=pods)
    body["spec"]["template"]["metadata"] = {"annotations": {"kueue.x-k8s.io/podset-required-topology": RACK}}
    return body


def hosts(fake_api: FakeApiServer, namespace: str, name: str) -> set[str]:
    found = workload_of(fake_api, namespace, name)
    assert found is not None
    assignment = found["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    return {domain.values[-1] for domain in decode(assignment)}


async def test_a_rack_job_reclaims_the_borrowers_rack_from_its_cohort(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(setup())
    for name, rack in (("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b")):
        await fake_api.create(node(name, rack, "2"))
    async with replica(fake_api.kubeconfig_path()):
        # nlp runs 3 pods on rack a and 2 on rack b: 5 cpus of its 4, one of them lent by vision
        await fake_api.create(rack_job("nlp", "own", 3, rack="a"))
        await fake_api.wait_for(lambda: running(fake_api, "nlp", "own"), timeout=HANG)
        await fake_api.create(rack_job("nlp", "borrowed", 2, rack="b"))
        await fake_api.wait_for(lambda: running(fake_api, "nlp", "borrowed"), timeout=HANG)
        assert hosts(fake_api, "nlp", "borrowed") <= {"b1", "b2"}

        await fake_api.create(rack_job("vision", "allreduce", 3))
        await fake_api.wait_for(lambda: running(fake_api, "vision", "allreduce"), timeout=HANG)

        borrower = workload_of(fake_api, "nlp", "borrowed")
        preempted = condition(borrower, "Preempted")
        assert preempted is not None and preempted["reason"] == "InCohortReclamation"
        assert preempted["message"].endswith(
            "due to reclamation within the cohort; preemptor path: /research/vision; "
            "preemptee path: /research/nlp"
        )
        assert is_true(borrower, "Requeued") and not running(fake_api, "nlp", "borrowed")
        assert running(fake_api, "nlp", "own")
        assert hosts(fake_api, "vision", "allreduce") == {"b1", "b2"}
