"""A LeaderWorkerSet queued as one Workload per group of pods (Kueue's leaderworkerset integration) on the
fake API server, with the shipped webhook configurations. No LWS controller runs here: the tests make a
group's pods as it would (the set's name, group index and worker index labels, the leader's name on its
workers, the template's metadata)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from kueue_webhook.api.integrations.leaderworkersets import workload_name_of_group
from tests.crds import integration_crds
from tests.fakeapi import DEFAULT_CRDS, FakeApiServer, load_crds
from tests.fakeapi.errors import ApiError
from tests.integration.integrations.test_pods import HANG, gated, pod, started
from tests.support.fake_cluster import condition, controller_config, events_of, is_true, serving_webhook
from tests.support.research import preempting_research

JSON = dict[str, Any]
FRAMEWORKS = "integrations:\n  frameworks: [batch/job, pod, leaderworkerset.x-k8s.io/leaderworkerset]"
SETUP = preempting_research("team", "gpus", gpus=4, node_labels={"node-pool": "gpu"})


@pytest.fixture
async def cluster(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> AsyncIterator[FakeApiServer]:
    fake_api = await make_fake_api(crds=load_crds(DEFAULT_CRDS) + integration_crds("leaderworkersets"))
    await fake_api.apply_manifests(controller_config(FRAMEWORKS) + "---\n" + SETUP)
    async with serving_webhook(fake_api, tmp_path):
        yield fake_api


def template(gpus: int = 1) -> JSON:
    return {"metadata": {"labels": {"app": "serve"}}, "spec": pod("x", gpus)["spec"]}


async def create_lws(
    cluster: FakeApiServer, name: str, replicas: int, size: int, *, leader: bool = True
) -> JSON:
    lwt: JSON = {"size": size, "workerTemplate": template()}
    if leader:
        lwt["leaderTemplate"] = template()
    return await cluster.create(
        {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": "gpus"}},
            "spec": {"replicas": replicas, "leaderWorkerTemplate": lwt},
        },
        admit=True,
    )


async def make_group(cluster: FakeApiServer, lws: JSON, group: int) -> list[JSON]:
    """The pods the LWS controller makes for one group: the leader from the leader template, the workers
    from the worker template, naming their leader."""
    name, lwt = lws["metadata"]["name"], lws["spec"]["leaderWorkerTemplate"]
    leader_name = f"{name}-{group}"
    made = []
    for worker in range(lwt["size"]):
        is_leader = worker == 0
        source = lwt.get("leaderTemplate", lwt["workerTemplate"]) if is_leader else lwt["workerTemplate"]
        labels = {
            **source["metadata"].get("labels", {}),
            "leaderworkerset.sigs.k8s.io/name": name,
            "leaderworkerset.sigs.k8s.io/group-index": str(group),
            "leaderworkerset.sigs.k8s.io/worker-index": str(worker),
        }
        annotations = dict(source["metadata"].get("annotations", {}))
        if not is_leader:
            annotations["leaderworkerset.sigs.k8s.io/leader-name"] = leader_name
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": leader_name if is_leader else f"{leader_name}-{worker}",
                "namespace": "team",
                "labels": labels,
                "annotations": annotations,
            },
            "spec": source["spec"],
        }
        made.append(await cluster.create(body, admit=True))
    return made


def workload_of(cluster: FakeApiServer, lws: JSON, group: int) -> JSON | None:
    name = workload_name_of_group(lws["metadata"]["name"], lws["metadata"]["uid"], group)
    return cluster.get("workloads", name, "team")


async def test_each_group_of_a_leaderworkerset_is_a_workload_and_its_pods_start_together_with_the_flavor(
    cluster: FakeApiServer,
) -> None:
    """As Kueue's leaderworkerset reconciler: a Workload per group index, owned by the LeaderWorkerSet, of
    pod sets leader (1) and worker (size - 1); the pods are put in their group and ungated once it is
    admitted."""
    lws = await create_lws(cluster, "serve", replicas=2, size=2)
    for role in ("leaderTemplate", "workerTemplate"):
        annotations = lws["spec"]["leaderWorkerTemplate"][role]["metadata"]["annotations"]
        assert (
            annotations["kueue.x-k8s.io/pod-suspending-parent"] == "leaderworkerset.x-k8s.io/leaderworkerset"
        )
        assert annotations["kueue.x-k8s.io/pod-group-serving"] == "true"
    await cluster.wait_for(lambda: all(workload_of(cluster, lws, g) for g in (0, 1)), timeout=HANG)
    for group in (0, 1):
        workload = workload_of(cluster, lws, group)
        assert workload is not None
        assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [
            ("leader", 1),
            ("worker", 1),
        ]
        assert workload["metadata"]["ownerReferences"][0]["uid"] == lws["metadata"]["uid"]
        assert workload["spec"]["queueName"] == "gpus"
    pods = await make_group(cluster, lws, 0)
    assert all(gated(p) for p in pods)
    await cluster.wait_for(lambda: all(started(cluster, p["metadata"]["name"])() for p in pods), timeout=HANG)
    workload = workload_of(cluster, lws, 0)
    assert workload is not None
    for made, role in zip(pods, ("leader", "worker"), strict=True):
        current = cluster.get("pods", made["metadata"]["name"], "team")
        assert current is not None
        assert current["spec"]["nodeSelector"] == {"node-pool": "gpu"}
        group = current["metadata"]["annotations"]
        assert group["kueue.x-k8s.io/pod-group-name"] == workload["metadata"]["name"]
        assert group["kueue.x-k8s.io/prebuilt-workload-name"] == workload["metadata"]["name"]
        assert group["kueue.x-k8s.io/pod-group-total-count"] == "2"
        assert group["kueue.x-k8s.io/role-hash"] == role
    # one Workload per group, none per pod
    assert len(cluster.list("workloads", "team")) == 2


async def test_a_group_beyond_the_quota_waits_whole_with_its_pods_gated(
    cluster: FakeApiServer,
) -> None:
    """A group is admitted whole: its pods wait gated until the group's Workload is admitted, which needs
    the quota of all its pods (4 GPUs hold one group of 3 and not two)."""
    lws = await create_lws(cluster, "big", replicas=2, size=3, leader=False)
    await cluster.wait_for(lambda: all(workload_of(cluster, lws, g) for g in (0, 1)), timeout=HANG)
    first = workload_of(cluster, lws, 0)
    assert first is not None
    assert [(p["name"], p["count"]) for p in first["spec"]["podSets"]] == [("main", 3)]
    group0 = await make_group(cluster, lws, 0)
    await cluster.wait_for(
        lambda: all(started(cluster, p["metadata"]["name"])() for p in group0), timeout=HANG
    )
    group1 = await make_group(cluster, lws, 1)
    await cluster.wait_for(
        lambda: (
            (cluster.get("pods", group1[-1]["metadata"]["name"], "team") or {})["metadata"]
            .get("annotations", {})
            .get("kueue.x-k8s.io/role-hash")
            == "main"
        ),
        timeout=HANG,
    )
    assert all(gated(cluster.get("pods", p["metadata"]["name"], "team")) for p in group1)
    assert not is_true(workload_of(cluster, lws, 1), "QuotaReserved")


async def test_scaling_a_leaderworkerset_down_deletes_the_workloads_of_the_groups_that_are_gone(
    cluster: FakeApiServer,
) -> None:
    lws = await create_lws(cluster, "serve", replicas=2, size=2)
    await cluster.wait_for(lambda: all(workload_of(cluster, lws, g) for g in (0, 1)), timeout=HANG)
    await cluster.patch("leaderworkersets", "serve", {"spec": {"replicas": 1}}, namespace="team", admit=True)
    await cluster.wait_for(lambda: workload_of(cluster, lws, 1) is None, timeout=HANG)
    assert workload_of(cluster, lws, 0) is not None


async def test_a_queued_leaderworkersets_group_size_and_pod_shape_are_frozen(cluster: FakeApiServer) -> None:
    """Kueue's leaderworkerset webhook: its templates' scheduling shape and (LWSImmutableGroupSize) its
    group size cannot change while it is queued; its replicas can."""
    await create_lws(cluster, "serve", replicas=1, size=2)
    with pytest.raises(ApiError) as refused:
        await cluster.patch(
            "leaderworkersets",
            "serve",
            {"spec": {"leaderWorkerTemplate": {"size": 3}}},
            namespace="team",
            admit=True,
        )
    assert "spec.leaderWorkerTemplate.size: Invalid value: 3: field is immutable" in str(refused.value)
    bigger = template()
    bigger["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "2"}
    with pytest.raises(ApiError) as reshaped:
        await cluster.patch(
            "leaderworkersets",
            "serve",
            {"spec": {"leaderWorkerTemplate": {"workerTemplate": bigger}}},
            namespace="team",
            admit=True,
        )
    assert (
        "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].resources.requests: Invalid value"
        in str(reshaped.value)
    )
    scaled = await cluster.patch(
        "leaderworkersets", "serve", {"spec": {"replicas": 3}}, namespace="team", admit=True
    )
    assert scaled["spec"]["replicas"] == 3


async def test_admission_gates_on_a_leaderworkerset_hold_its_groups_until_removed(
    cluster: FakeApiServer,
) -> None:
    """Kueue's AdmissionGatedBy for LeaderWorkerSets: each group's Workload carries the gates and waits
    ``AdmissionGated``; removing them from the LeaderWorkerSet takes them off the Workloads, with an
    ``UpdatedWorkload`` Event, and the group is admitted."""
    gates = "kueue.x-k8s.io/admission-gated-by"
    lwt: JSON = {"size": 2, "workerTemplate": template()}
    lws = await cluster.create(
        {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": {
                "name": "held",
                "namespace": "team",
                "labels": {"kueue.x-k8s.io/queue-name": "gpus"},
                "annotations": {gates: "example.com/scan"},
            },
            "spec": {"replicas": 1, "leaderWorkerTemplate": lwt},
        },
        admit=True,
    )

    def reason() -> str:
        workload = workload_of(cluster, lws, 0)
        return str((condition(workload, "QuotaReserved") or {}).get("reason", "")) if workload else ""

    await cluster.wait_for(lambda: reason() == "AdmissionGated", timeout=HANG)
    assert (workload_of(cluster, lws, 0) or {})["metadata"]["annotations"][gates] == "example.com/scan"
    pods = await make_group(cluster, lws, 0)
    # the group's pods, made and put in their group, do not speak for its gates: the LeaderWorkerSet does
    await cluster.wait_for(
        lambda: all(
            (cluster.get("pods", p["metadata"]["name"], "team") or {})["metadata"]
            .get("annotations", {})
            .get("kueue.x-k8s.io/pod-group-name")
            for p in pods
        ),
        timeout=HANG,
    )
    assert reason() == "AdmissionGated" and all(
        gated(cluster.get("pods", p["metadata"]["name"], "team")) for p in pods
    )
    await cluster.patch(
        "leaderworkersets", "held", {"metadata": {"annotations": {gates: None}}}, namespace="team", admit=True
    )
    await cluster.wait_for(lambda: all(started(cluster, p["metadata"]["name"])() for p in pods), timeout=HANG)
    assert gates not in (workload_of(cluster, lws, 0) or {})["metadata"]["annotations"]
    await cluster.wait_for(lambda: "UpdatedWorkload" in events_of(cluster, "team", "held"), timeout=HANG)
    assert events_of(cluster, "team", "held")["UpdatedWorkload"] == 'Updated workload AdmissionGatedBy to ""'
