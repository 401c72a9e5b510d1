"""A LeaderWorkerSet whose leader and worker templates form a pod-set group
(``kueue.x-k8s.io/podset-group-name``) asking for one rack, on the fake API server with the shipped webhook
configurations: the group's Workload records the group on both pod sets, both are placed in the one rack
that holds the leader beside its workers (though the workers alone would fill the other rack exactly), and
the group's pods, once their admission gate is lifted, are sent to that rack's hosts by the topology gate.
No LWS controller runs: the test makes the group's pods as it would."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kueue_webhook.api.topology_assignment import decode
from tests.crds import integration_crds
from tests.fakeapi import DEFAULT_CRDS, FakeApiServer, load_crds
from tests.integration.integrations.test_leaderworkersets import make_group, workload_of
from tests.integration.scheduling.test_topology import HOST, node, topology
from tests.support.builders import (
    cluster_queue,
    container,
    cpu_requests,
    local_queue,
    manifests,
    namespace,
    resource_flavor,
)
from tests.support.fake_cluster import controller_config, serving_webhook

JSON = dict[str, Any]
HANG = 60.0  # seconds: only so that a hang fails instead of blocking the suite
FRAMEWORKS = "integrations:\n  frameworks: [batch/job, pod, leaderworkerset.x-k8s.io/leaderworkerset]"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"


def grouped_template() -> JSON:
    return {
        "metadata": {
            "labels": {"app": "serve"},
            "annotations": {
                "kueue.x-k8s.io/podset-required-topology": "cloud.example.com/rack",
                "kueue.x-k8s.io/podset-group-name": "leader-and-workers",
            },
        },
        "spec": {"restartPolicy": "Never", "containers": [container(resources=cpu_requests("1"))]},
    }


async def test_a_leaderworkerset_groups_leader_and_workers_run_in_one_rack(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> None:
    fake_api = await make_fake_api(crds=load_crds(DEFAULT_CRDS) + integration_crds("leaderworkersets"))
    tas_flavor = resource_flavor("tas", node_labels={"pool": "tas"}) | {
        "spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "default"}
    }
    await fake_api.apply_manifests(
        controller_config(FRAMEWORKS)
        + "---\n"
        + manifests(
            namespace("team"),
            topology(),
            tas_flavor,
            cluster_queue("cq", {"tas": {"cpu": 100}}),
            local_queue("gpus", "team", "cq"),
        )
    )
    # rack a holds 4 one-cpu pods, rack b 3: the 3 workers alone would fill rack b exactly
    for name, rack, cpu in (("a1", "a", "2"), ("a2", "a", "2"), ("b1", "b", "2"), ("b2", "b", "1")):
        await fake_api.create(node(name, rack, cpu))
    async with serving_webhook(fake_api, tmp_path):
        lws = await fake_api.create(
            {
                "apiVersion": "leaderworkerset.x-k8s.io/v1",
                "kind": "LeaderWorkerSet",
                "metadata": {
                    "name": "serve",
                    "namespace": "team",
                    "labels": {"kueue.x-k8s.io/queue-name": "gpus"},
                },
                "spec": {
                    "replicas": 1,
                    "leaderWorkerTemplate": {
                        "size": 4,
                        "leaderTemplate": grouped_template(),
                        "workerTemplate": grouped_template(),
                    },
                },
            },
            admit=True,
        )
        pods = await make_group(fake_api, lws, 0)

        def admitted() -> JSON | None:
            found = workload_of(fake_api, lws, 0)
            return found if found is not None and (found.get("status") or {}).get("admission") else None

        await fake_api.wait_for(lambda: admitted() is not None, timeout=HANG)
        workload = admitted()
        assert workload is not None
        assert [p["topologyRequest"].get("podSetGroupName") for p in workload["spec"]["podSets"]] == [
            "leader-and-workers",
            "leader-and-workers",
        ]
        hosts = {
            a["name"]: {d.values[-1] for d in decode(a["topologyAssignment"])}
            for a in workload["status"]["admission"]["podSetAssignments"]
        }
        assert hosts["leader"] | hosts["worker"] <= {"a1", "a2"}, hosts

        names = [p["metadata"]["name"] for p in pods]

        def placed() -> dict[str, str] | None:
            out = {}
            for name in names:
                current = fake_api.get("pods", name, "team")
                if current is None or current["spec"].get("schedulingGates"):
                    return None
                out[name] = (current["spec"].get("nodeSelector") or {}).get(HOST, "")
            return out

        await fake_api.wait_for(lambda: placed() is not None, timeout=HANG)
        on = placed()
        # the leader beside one worker on one host, two workers on the other: never more than a host holds
        assert on is not None and sorted(Counter(on.values()).items()) == [("a1", 2), ("a2", 2)], on
