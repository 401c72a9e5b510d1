"""A cluster without the Topology CRD (an upgrade from a version without topology-aware scheduling): the
controller still turns ready and admits Workloads, as it does without the MultiKueue CRDs; a pod set asking
for a topology waits, and is placed once the CRD and a Topology appear, without a restart."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from kueue_webhook.api.topology_assignment import Domain
from tests.fakeapi import DEFAULT_CRDS, FakeApiServer, load_crds
from tests.integration.scheduling.test_topology import node, placed, rack_job, topology, workload_of
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
from tests.support.fake_cluster import is_true
from tests.support.replica import replica

SETUP = manifests(
    namespace("ml"),
    resource_flavor("plain"),
    cluster_queue("plain", {"plain": {"cpu": 10}}),
    local_queue("plain", "ml", "plain"),
    resource_flavor("tas", node_labels={"pool": "tas"})
    | {"spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "default"}},
    cluster_queue("cq", {"tas": {"cpu": 100}}),
    local_queue("lq", "ml", "cq"),
)


async def test_the_controller_is_ready_without_the_topology_crd_and_places_by_topology_once_it_appears(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]],
) -> None:
    crds = load_crds(DEFAULT_CRDS)
    topology_crd = next(c for c in crds if c["spec"]["names"]["plural"] == "topologies")
    fake_api = await make_fake_api(crds=[c for c in crds if c is not topology_crd])
    await fake_api.apply_manifests(SETUP)
    await fake_api.create(node("a1", "a", "4"))

    def admitted(job_name: str) -> bool:
        found = workload_of(fake_api, job_name)
        return found is not None and is_true(found, "Admitted")

    # start_replica waits for the caches to sync: it fails here if the Topology kind gated readiness
    async with replica(fake_api.kubeconfig_path()):
        pod_spec = {"containers": [container(resources=cpu_requests("1"))], "restartPolicy": "Never"}
        await fake_api.create(job("plain", "ml", pod_spec=pod_spec, queue="plain"))
        await fake_api.create(rack_job("racked", 2))
        await fake_api.wait_for(lambda: admitted("plain"), timeout=30)
        assert not admitted("racked")

        await fake_api.create(topology_crd)
        await fake_api.create(topology())
        await fake_api.wait_for(lambda: admitted("racked"), timeout=60)
        assert placed(fake_api, "racked") == [Domain(("a1",), 2)]
