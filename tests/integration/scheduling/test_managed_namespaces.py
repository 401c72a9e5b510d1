"""``managedJobsNamespaceSelector`` holds for queued Jobs too (Kueue's
ManagedJobsNamespaceSelectorAlwaysRespected, GA and locked on since v0.19: its job reconciler returns
before anything else for an object of a namespace the selector does not pick), through the real
controller against the fake API server: a Job with a queue label in such a namespace gets no Workload
and is never started; the same Job in a selected namespace runs.

Waits are on the fake API server's change notifications; ``HANG`` only bounds a hang.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from tests.fakeapi import FakeApiServer
from tests.support.builders import local_queue, manifests, namespace
from tests.support.fake_cluster import controller_config, running, workloads_of
from tests.support.replica import replica
from tests.support.research import HANG, QUOTA, gpu_job

MakeFakeApi = Callable[..., Awaitable[FakeApiServer]]

#: team-a (``QUOTA``'s namespace) lacks ``managed: "yes"``; team-m has it and may use ClusterQueue research
SELECTED = controller_config("managedJobsNamespaceSelector: {matchLabels: {managed: 'yes'}}")
TEAM_M = manifests(
    namespace("team-m", labels={"kueue.x-k8s.io/queue": "research", "managed": "yes"}),
    local_queue("team-a-gpu", "team-m", "research"),
)


async def test_a_queued_job_outside_the_managed_namespaces_gets_no_workload(
    make_fake_api: MakeFakeApi,
) -> None:
    api = await make_fake_api()
    await api.apply_manifests(SELECTED + "---\n" + QUOTA + "---\n" + TEAM_M)
    async with replica(api.kubeconfig_path()):
        await api.create(gpu_job("outside"))  # team-a
        inside = gpu_job("inside")
        inside["metadata"]["namespace"] = "team-m"
        await api.create(inside)
        # the later Job in a selected namespace is admitted and started: the first was reconciled by then
        await api.wait_for(lambda: running(api, "team-m", "inside"), timeout=HANG)
        assert workloads_of(api, "team-a", "outside") == []
        assert api.get("jobs", "outside", "team-a")["spec"]["suspend"] is True
