"""Devices claimed through DRA, through the real controller against the fake API server: with
``resources.deviceClassMappings`` the devices a Job's claim template asks for count against the quota of
the resource its DeviceClass is mapped to, per pod (Kueue's KueueDRAIntegration); a Job whose template
does not exist yet waits with Kueue's words and is admitted once it does; without a mapping a claiming Job
is held ``Misconfigured``.

Waits are on the fake API server's change notifications; ``HANG`` only bounds a hang.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tests.fakeapi import FakeApiServer
from tests.support.builders import (
    cluster_queue,
    local_queue,
    manifests,
    namespace,
    queued_job,
    resource_claim_template,
    resource_flavor,
)
from tests.support.fake_cluster import condition, controller_config, running, workloads_of
from tests.support.replica import replica
from tests.support.research import HANG

JSON = dict[str, Any]
MakeFakeApi = Callable[..., Awaitable[FakeApiServer]]
GPUS = "example.com/gpus"
MAPPED = controller_config(
    "resources:\n  deviceClassMappings:\n  - {name: example.com/gpus, deviceClassNames: [gpu.example.com]}"
)
QUEUES = manifests(
    namespace("team-a"),
    resource_flavor("accelerators"),
    cluster_queue("dra", {"accelerators": {"cpu": 8, GPUS: 4}}),
    local_queue("q", "team-a", "dra"),
)


def claim_template(name: str, gpus: int) -> JSON:
    return resource_claim_template(name, "team-a", devices=gpus, device_class="gpu.example.com")


def claiming_job(name: str, template: str, *, parallelism: int = 1) -> JSON:
    return queued_job(
        "team-a",
        name,
        queue="q",
        resources={"requests": {"cpu": "1"}},
        pod={"resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": template}]},
        parallelism=parallelism,
        completions=parallelism,
    )


def reserved(api: FakeApiServer, job: str) -> JSON:
    found = workloads_of(api, "team-a", job)
    return (condition(found[0], "QuotaReserved") or {}) if found else {}


async def test_claimed_devices_count_against_the_mapped_resource(make_fake_api: MakeFakeApi) -> None:
    api = await make_fake_api()
    await api.apply_manifests(MAPPED + "---\n" + QUEUES)
    await api.create(claim_template("two-gpus", 2))
    async with replica(api.kubeconfig_path()):
        await api.create(claiming_job("first", "two-gpus"))
        await api.wait_for(lambda: running(api, "team-a", "first"), timeout=HANG)
        [workload] = workloads_of(api, "team-a", "first")
        usage = workload["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]
        assert usage == {"cpu": "1", GPUS: "2"}
        await api.create(claiming_job("pair", "two-gpus", parallelism=2))  # 4 GPUs, 2 left
        await api.wait_for(lambda: bool(reserved(api, "pair").get("message")), timeout=HANG)
        assert reserved(api, "pair")["message"] == (
            "couldn't assign flavors to pod set main: insufficient unused quota for example.com/gpus in "
            "flavor accelerators, 2 more needed"
        )
        await api.create(claiming_job("later", "four-gpus"))
        await api.wait_for(lambda: bool(reserved(api, "later").get("message")), timeout=HANG)
        assert reserved(api, "later")["reason"] == "Misconfigured"
        assert reserved(api, "later")["message"] == (
            "spec.podSets[0].template.spec.resourceClaims[0]: Internal error: failed to get claim spec for "
            "ResourceClaimTemplate four-gpus in podset main: "
            'resourceclaimtemplates.resource.k8s.io "four-gpus" not found'
        )
        await api.create(claim_template("four-gpus", 4))  # read again: 4 GPUs, more than are left
        await api.wait_for(lambda: reserved(api, "later").get("reason") == "WaitingForQuota", timeout=HANG)
        assert reserved(api, "later")["message"] == (
            "couldn't assign flavors to pod set main: insufficient unused quota for example.com/gpus in "
            "flavor accelerators, 2 more needed"
        )


async def test_without_a_mapping_a_claiming_job_is_held(make_fake_api: MakeFakeApi) -> None:
    api = await make_fake_api()
    await api.apply_manifests(QUEUES)
    await api.create(claim_template("two-gpus", 2))
    async with replica(api.kubeconfig_path()):
        await api.create(claiming_job("held", "two-gpus"))
        await api.wait_for(lambda: bool(reserved(api, "held").get("message")), timeout=HANG)
        assert reserved(api, "held")["reason"] == "Misconfigured"
        assert api.get("jobs", "held", "team-a")["spec"]["suspend"] is True
