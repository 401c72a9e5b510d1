"""DRA devices counted against quota on a real API server, with kueue-webhook installed out of cluster and
``resources.deviceClassMappings`` mapping DeviceClass gpu.example.com to the quota resource
example.com/gpus: a Job whose pods claim two GPUs each through a ResourceClaimTemplate is admitted for
them (the admission's resourceUsage shows them), and one asking for more than is left waits with Kueue's
message."""

from __future__ import annotations

from contextlib import AbstractContextManager

import pytest

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until, workload_of
from tests.e2e.conftest import ControllerSetup, with_controller
from tests.e2e.install import Running
from tests.e2e.queues import claiming_job, team_queue
from tests.support import builders

MAPPED = (
    "resources:\n  deviceClassMappings:\n  - {name: example.com/gpus, deviceClassNames: [gpu.example.com]}\n"
)
pytestmark = [
    pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER),
    with_controller(ControllerSetup("dra-device-classes", config=MAPPED)),
]


def gpu_queue(cluster: Cluster) -> AbstractContextManager[str]:
    """A namespace with LocalQueue ``q`` of a ClusterQueue of 4 cpu and 4 example.com/gpus, and a
    ResourceClaimTemplate ``two-gpus``; yields the namespace."""
    return team_queue(
        cluster,
        "e2e-dra",
        quotas={"cpu": "4", "example.com/gpus": "4"},
        more=lambda ns: [
            builders.resource_claim_template("two-gpus", ns, devices=2, device_class="gpu.example.com")
        ],
    )


def test_claimed_gpus_count_against_the_mapped_quota(controller: tuple[Cluster, Running]) -> None:
    cluster, running = controller
    with gpu_queue(cluster) as ns:
        claiming_job(cluster, ns, "first", "two-gpus")
        until(lambda: cluster.get("job", "first", "-n", ns)["spec"]["suspend"] is False, "the Job to start")
        usage = workload_of(cluster, ns, "first")["status"]["admission"]["podSetAssignments"][0][
            "resourceUsage"
        ]
        assert usage == {"cpu": "100m", "example.com/gpus": "2"}, running.tail()
        claiming_job(cluster, ns, "pair", "two-gpus", parallelism=2)  # 2 pods of 2 GPUs: 4, with 2 left

        def reserved() -> dict[str, object]:
            return condition(workload_of(cluster, ns, "pair"), "QuotaReserved") or {}

        until(lambda: bool(reserved().get("message")), "the second Job to say why it waits", timeout=60)
        assert reserved()["message"] == (
            "couldn't assign flavors to pod set main: insufficient unused quota for example.com/gpus in "
            f"flavor {ns}, 2 more needed"
        )
        assert cluster.get("job", "pair", "-n", ns)["spec"]["suspend"] is True
