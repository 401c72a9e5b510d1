"""A pod-set group through the real controller and webhook on the fake API server: a JobSet whose driver (one
pod) and workers (three pods) both carry ``kueue.x-k8s.io/podset-group-name`` and ask for one rack gets a
Workload whose pod sets record ``podSetGroupName``, and both are admitted into the one rack that holds the
driver beside the workers, though the workers alone would fit the other rack exactly."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kueue_webhook.api.topology_assignment import decode
from tests.crds import integration_crds
from tests.fakeapi import DEFAULT_CRDS, FakeApiServer, load_crds
from tests.support.builders import cluster_queue as build_cluster_queue
from tests.support.builders import container, cpu_requests, local_queue, manifests, namespace, resource_flavor
from tests.support.fake_cluster import controller_config, serving_webhook

from .test_topology import node, topology

JSON = dict[str, Any]
HANG = 60.0  # seconds: only so that a hang fails instead of blocking the suite
GROUP = "kueue.x-k8s.io/podset-group-name"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"


def template() -> JSON:
    return {
        "metadata": {"annotations": {REQUIRED: "cloud.example.com/rack", GROUP: "driver-and-workers"}},
        "spec": {"containers": [container(resources=cpu_requests("1"))], "restartPolicy": "Never"},
    }


def jobset(name: str) -> JSON:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "ml", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {
            "replicatedJobs": [
                {"name": "driver", "template": {"spec": {"template": template()}}},
                {
                    "name": "workers",
                    "template": {"spec": {"parallelism": 3, "completions": 3, "template": template()}},
                },
            ]
        },
    }


async def test_a_jobsets_driver_and_workers_grouped_are_admitted_into_one_rack(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> None:
    fake_api = await make_fake_api(crds=load_crds(DEFAULT_CRDS) + integration_crds("jobsets"))
    tas_flavor = resource_flavor("tas", node_labels={"pool": "tas"}) | {
        "spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "default"}
    }
    await fake_api.apply_manifests(
        controller_config("integrations:\n  frameworks: [batch/job, jobset.x-k8s.io/jobset]")
        + "---\n"
        + manifests(
            namespace("ml"),
            topology(),
            tas_flavor,
            build_cluster_queue("cq", {"tas": {"cpu": 100}}),
            local_queue("lq", "ml", "cq"),
        )
    )
    # rack a holds 4 one-cpu pods, rack b 3: the workers alone would fill rack b exactly
    for name, rack, cpu in (("a1", "a", "2"), ("a2", "a", "2"), ("b1", "b", "2"), ("b2", "b", "1")):
        await fake_api.create(node(name, rack, cpu))
    async with serving_webhook(fake_api, tmp_path):
        await fake_api.create(jobset("train"), admit=True)

        def workload() -> JSON | None:
            found = fake_api.list("workloads", "ml")
            return found[0] if found and (found[0].get("status") or {}).get("admission") else None

        await fake_api.wait_for(lambda: workload() is not None, timeout=HANG)
        admitted = workload()
        assert admitted is not None
        groups = {
            ps["name"]: ps["topologyRequest"].get("podSetGroupName") for ps in admitted["spec"]["podSets"]
        }
        assert groups == {"driver": "driver-and-workers", "workers": "driver-and-workers"}
        hosts = {
            assignment["name"]: {d.values[-1] for d in decode(assignment["topologyAssignment"])}
            for assignment in admitted["status"]["admission"]["podSetAssignments"]
        }
        assert hosts["driver"] | hosts["workers"] <= {"a1", "a2"}, hosts
        assert len(hosts["driver"]) == 1
