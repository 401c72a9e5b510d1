"""Multi-layer slices through the real controller and webhook on the fake API server: a Job annotated with
``kueue.x-k8s.io/podset-slice-required-topology-constraints`` (slices of 4 pods in a rack, 2 on a host)
gets a Workload whose pod set carries ``podsetSliceRequiredTopologyConstraints`` as Kueue writes it, and
is admitted into the rack whose hosts hold whole 2-pod slices, not the one with room for 4 pods on
mismatched hosts; a Job whose layers Kueue would refuse is refused by the webhook with Kueue's words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kueue_webhook.api.topology_assignment import decode
from tests.fakeapi import FakeApiServer
from tests.fakeapi.errors import ApiError
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
from tests.support.fake_cluster import serving_webhook

from .test_topology import HOST, node, topology

JSON = dict[str, Any]
HANG = 60.0  # seconds: only so that a hang fails instead of blocking the suite
RACK = "cloud.example.com/rack"
LAYERS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"


def sliced_job(name: str, layers: str) -> JSON:
    pod_spec = {"containers": [container(resources=cpu_requests("1"))], "restartPolicy": "Never"}
    body = job(name, "ml", pod_spec=pod_spec, queue="lq", parallelism=4, completions=4)
    body["spec"]["template"]["metadata"] = {
        "annotations": {"kueue.x-k8s.io/podset-required-topology": RACK, LAYERS: layers}
    }
    return body


async def test_a_job_with_two_slice_layers_lands_on_hosts_holding_whole_inner_slices(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    tas_flavor = resource_flavor("tas", node_labels={"pool": "tas"}) | {
        "spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "default"}
    }
    await fake_api.apply_manifests(
        manifests(
            namespace("ml"),
            topology(),
            tas_flavor,
            cluster_queue("cq", {"tas": {"cpu": 100}}),
            local_queue("lq", "ml", "cq"),
        )
    )
    # rack a has 4 free cpus but only a1 holds 2 pods; rack b's two hosts hold 2 each
    for name, rack, cpu in (("a1", "a", "3"), ("a2", "a", "1"), ("b1", "b", "2"), ("b2", "b", "2")):
        await fake_api.create(node(name, rack, cpu))
    layers = f'[{{"topology": "{RACK}", "size": 4}}, {{"topology": "{HOST}", "size": 2}}]'
    async with serving_webhook(fake_api, tmp_path):
        with pytest.raises(ApiError) as refused:
            await fake_api.create(sliced_job("three", layers.replace("2}]", "3}]")), admit=True)
        assert (
            f"spec.template.metadata.annotations[{LAYERS}][1].size: Invalid value: 3: "
            "must evenly divide the parent layer size 4"
        ) in refused.value.message

        await fake_api.create(sliced_job("layered", layers), admit=True)

        def admitted() -> JSON | None:
            found = fake_api.list("workloads", "ml")
            return found[0] if found and (found[0].get("status") or {}).get("admission") else None

        await fake_api.wait_for(lambda: admitted() is not None, timeout=HANG)
        workload = admitted()
        assert workload is not None
        (pod_set,) = workload["spec"]["podSets"]
        assert pod_set["topologyRequest"]["podsetSliceRequiredTopologyConstraints"] == [
            {"topology": RACK, "size": 4},
            {"topology": HOST, "size": 2},
        ]
        (assignment,) = workload["status"]["admission"]["podSetAssignments"]
        assert [(d.values, d.count) for d in decode(assignment["topologyAssignment"])] == [
            (("b1",), 2),
            (("b2",), 2),
        ]
