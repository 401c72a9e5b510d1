"""Plain Pods and pod groups queued through the scheduling gate (framework ``pod``), on the fake API server
with kube-apiserver's gate rules and the shipped webhook configurations: the webhook gates a queued pod on
create, admission removes the gate with the flavor's nodeSelector set, a finished pod (the test plays the
kubelet through ``pods/status``) releases its quota to the next gated pod, a group is admitted only once all
its pods exist, and a preempted running pod is deleted, as Kueue stops pods."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient, CoreV1Api
from kubernetes_asyncio.client.exceptions import ApiException

from kueue_webhook.http.certs import ca_bundle
from tests.fakeapi import FakeApiServer
from tests.support.builders import container, gpu_limits
from tests.support.builders import pod as builders_pod
from tests.support.fake_cluster import condition, controller_config, events_of, serving_webhook
from tests.support.replica import certificates, replica, webhook_configurations
from tests.support.research import preempting_research

JSON = dict[str, Any]
HANG = 30.0
GATE = "kueue.x-k8s.io/admission"

SETUP = preempting_research("team", "gpus", gpus=2, node_labels={"node-pool": "gpu"})
FRAMEWORKS = "integrations:\n  frameworks: [batch/job, pod]"


def pod(
    name: str, gpus: int, *, labels: dict[str, str] | None = None, annotations: JSON | None = None
) -> JSON:
    busybox = container(resources=gpu_limits(gpus))
    return builders_pod(
        name,
        "team",
        queue="gpus",
        labels=labels,
        metadata={"annotations": annotations or {}},
        pod_spec={"restartPolicy": "Never", "containers": [busybox]},
    )


def member(name: str, group: str, total: int) -> JSON:
    return pod(
        name,
        1,
        labels={"kueue.x-k8s.io/pod-group-name": group},
        annotations={"kueue.x-k8s.io/pod-group-total-count": str(total)},
    )


def gated(obj: JSON | None) -> bool:
    return obj is not None and any(g["name"] == GATE for g in obj["spec"].get("schedulingGates") or [])


@contextlib.asynccontextmanager
async def pod_cluster(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path, frameworks: str = FRAMEWORKS
) -> AsyncIterator[FakeApiServer]:
    """A fake API server with SETUP, ``frameworks`` turned on and the webhook registered."""
    fake_api = await make_fake_api()
    await fake_api.apply_manifests(controller_config(frameworks) + "---\n" + SETUP)
    async with serving_webhook(fake_api, tmp_path):
        yield fake_api


@pytest.fixture
async def cluster(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> AsyncIterator[FakeApiServer]:
    async with pod_cluster(make_fake_api, tmp_path) as fake_api:
        yield fake_api


def started(fake_api: FakeApiServer, name: str) -> Callable[[], bool]:
    def check() -> bool:
        obj = fake_api.get("pods", name, "team")
        return obj is not None and not gated(obj)

    return check


def workload_of_pod(fake_api: FakeApiServer, name: str) -> JSON | None:
    return next(
        (
            w
            for w in fake_api.list("workloads", "team")
            if any(ref.get("name") == name for ref in w["metadata"].get("ownerReferences") or [])
        ),
        None,
    )


async def set_phase(fake_api: FakeApiServer, name: str, phase: str) -> None:
    await fake_api.patch("pods", name, {"status": {"phase": phase}}, namespace="team", subresource="status")


async def test_a_queued_pod_is_gated_admitted_with_its_flavor_and_its_end_lets_the_next_one_in(
    cluster: FakeApiServer,
) -> None:
    created = await cluster.create(pod("first", 2), admit=True)
    assert gated(created)  # by the mutating webhook
    assert created["metadata"]["labels"]["kueue.x-k8s.io/managed"] == "true"
    assert "kueue.x-k8s.io/managed" in created["metadata"]["finalizers"]
    await cluster.wait_for(started(cluster, "first"), timeout=HANG)
    first = cluster.get("pods", "first", "team")
    assert first is not None and first["spec"]["nodeSelector"] == {"node-pool": "gpu"}
    workload = workload_of_pod(cluster, "first")
    assert workload is not None and workload["metadata"]["name"].startswith("pod-first-")
    assert (condition(workload, "Admitted") or {}).get("status") == "True"
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("main", 1)]

    second = await cluster.create(pod("second", 2), admit=True)
    assert gated(second)
    await cluster.wait_for(lambda: workload_of_pod(cluster, "second") is not None, timeout=HANG)
    assert gated(cluster.get("pods", "second", "team"))  # no quota left while the first runs

    await set_phase(cluster, "first", "Running")
    await set_phase(cluster, "first", "Succeeded")  # as a kubelet reports it
    await cluster.wait_for(started(cluster, "second"), timeout=HANG)
    finished = cluster.get("workloads", workload["metadata"]["name"], "team")
    assert (condition(finished, "Finished") or {}).get("status") == "True"
    # the finished pod lets go of the managed finalizer once its Workload has finished
    await cluster.wait_for(
        lambda: (
            "kueue.x-k8s.io/managed"
            not in (cluster.get("pods", "first", "team") or {}).get("metadata", {}).get("finalizers", [])
        ),
        timeout=HANG,
    )


async def test_a_pod_group_is_admitted_together_once_all_its_pods_exist(cluster: FakeApiServer) -> None:
    one = await cluster.create(member("g-0", "trainers", 2), admit=True)
    assert gated(one)
    # a group of 2 with one pod has no Workload: nothing is admitted
    await cluster.create(pod("probe", 0), admit=True)
    await cluster.wait_for(started(cluster, "probe"), timeout=HANG)
    assert cluster.get("workloads", "trainers", "team") is None and gated(cluster.get("pods", "g-0", "team"))

    await cluster.create(member("g-1", "trainers", 2), admit=True)
    await cluster.wait_for(lambda: started(cluster, "g-0")() and started(cluster, "g-1")(), timeout=HANG)
    workload = cluster.get("workloads", "trainers", "team")
    assert workload is not None and (condition(workload, "Admitted") or {}).get("status") == "True"
    assert sum(p["count"] for p in workload["spec"]["podSets"]) == 2
    assert {r["name"] for r in workload["metadata"]["ownerReferences"]} == {"g-0", "g-1"}
    for name in ("g-0", "g-1"):
        assert (cluster.get("pods", name, "team") or {})["spec"]["nodeSelector"] == {"node-pool": "gpu"}


async def test_a_running_pod_preempted_by_a_higher_priority_one_is_deleted(cluster: FakeApiServer) -> None:
    await cluster.create(pod("low", 2), admit=True)
    await cluster.wait_for(started(cluster, "low"), timeout=HANG)
    await set_phase(cluster, "low", "Running")
    low_workload = workload_of_pod(cluster, "low")
    assert low_workload is not None

    await cluster.create(pod("high", 2, labels={"kueue.x-k8s.io/priority-class": "urgent"}), admit=True)

    def high_started_after_low_is_gone() -> bool:
        if not started(cluster, "high")():
            return False
        assert cluster.get("pods", "low", "team") is None, "quota handed on while the preempted pod exists"
        return True

    await cluster.wait_for(high_started_after_low_is_gone, timeout=HANG)
    # Events are written once the next Job has started (the release window): wait for it
    await cluster.wait_for(lambda: "Stopped" in events_of(cluster, "team", "low"), timeout=HANG)
    stopped = events_of(cluster, "team", "low")
    assert "Preempted" in stopped["Stopped"], stopped


async def test_only_the_controller_may_remove_the_gate(cluster: FakeApiServer) -> None:
    await cluster.create(pod("blocker", 2), admit=True)
    await cluster.wait_for(started(cluster, "blocker"), timeout=HANG)
    await cluster.create(pod("waiting", 2), admit=True)
    async with ApiClient(cluster.client_configuration(user="alice", groups=["team-a"])) as api:
        with pytest.raises(ApiException) as denied:
            await CoreV1Api(api).patch_namespaced_pod(
                "waiting", "team", [{"op": "remove", "path": "/spec/schedulingGates"}]
            )
    assert denied.value.status == 403
    assert 'webhook \\"vpod.kueue.x-k8s.io\\" denied' in denied.value.body, denied.value.body
    assert "may start a queued Pod" in denied.value.body
    assert gated(cluster.get("pods", "waiting", "team"))


async def test_a_flavor_toleration_is_added_beside_the_pod_own_tolerations(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> None:
    fake_api = await make_fake_api()
    toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    tainted = preempting_research(
        "team", "gpus", gpus=2, node_labels={"node-pool": "gpu"}, tolerations=[toleration]
    )
    await fake_api.apply_manifests(controller_config(FRAMEWORKS) + "---\n" + tainted)
    async with serving_webhook(fake_api, tmp_path):
        created = await fake_api.create(pod("tolerant", 1), admit=True)
        await fake_api.wait_for(started(fake_api, "tolerant"), timeout=HANG)
        admitted = fake_api.get("pods", "tolerant", "team")
        assert admitted is not None
        assert admitted["spec"]["tolerations"] == [
            *created["spec"]["tolerations"],
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        ]


async def test_a_failed_pod_finishes_its_workload_and_frees_the_quota(cluster: FakeApiServer) -> None:
    await cluster.create(pod("doomed", 2), admit=True)
    await cluster.wait_for(started(cluster, "doomed"), timeout=HANG)
    await cluster.create(pod("next", 2), admit=True)
    await set_phase(cluster, "doomed", "Failed")
    await cluster.wait_for(started(cluster, "next"), timeout=HANG)
    workload = workload_of_pod(cluster, "doomed")
    assert workload is not None
    finished = condition(workload, "Finished") or {}
    assert (finished.get("status"), finished.get("reason")) == ("True", "Failed")


async def test_a_group_finishes_when_all_its_pods_succeeded_and_frees_the_quota(
    cluster: FakeApiServer,
) -> None:
    for index in range(2):
        await cluster.create(member(f"g-{index}", "pair", 2), admit=True)
    await cluster.wait_for(lambda: started(cluster, "g-0")() and started(cluster, "g-1")(), timeout=HANG)
    await cluster.create(pod("next", 2), admit=True)
    await set_phase(cluster, "g-0", "Succeeded")
    workload = cluster.get("workloads", "pair", "team")
    assert (condition(workload, "Finished") or {}).get("status") != "True"
    await set_phase(cluster, "g-1", "Succeeded")
    await cluster.wait_for(started(cluster, "next"), timeout=HANG)
    workload = cluster.get("workloads", "pair", "team")
    assert (condition(workload, "Finished") or {}).get("status") == "True"
    await cluster.wait_for(
        lambda: all(
            "kueue.x-k8s.io/managed"
            not in (cluster.get("pods", n, "team") or {})["metadata"].get("finalizers", [])
            for n in ("g-0", "g-1")
        ),
        timeout=HANG,
    )


async def test_a_preempted_group_has_its_running_pods_deleted(cluster: FakeApiServer) -> None:
    for index in range(2):
        await cluster.create(member(f"g-{index}", "pair", 2), admit=True)
    await cluster.wait_for(lambda: started(cluster, "g-0")() and started(cluster, "g-1")(), timeout=HANG)
    for index in range(2):
        await set_phase(cluster, f"g-{index}", "Running")
    await cluster.create(pod("high", 2, labels={"kueue.x-k8s.io/priority-class": "urgent"}), admit=True)
    await cluster.wait_for(started(cluster, "high"), timeout=HANG)
    assert cluster.get("pods", "g-0", "team") is None and cluster.get("pods", "g-1", "team") is None


async def test_a_deleted_gated_pod_is_released(cluster: FakeApiServer) -> None:
    await cluster.create(pod("blocker", 2), admit=True)
    await cluster.wait_for(started(cluster, "blocker"), timeout=HANG)
    await cluster.create(pod("waiting", 2), admit=True)
    await cluster.wait_for(lambda: workload_of_pod(cluster, "waiting") is not None, timeout=HANG)
    await cluster.delete("pods", "waiting", namespace="team")
    await cluster.wait_for(lambda: cluster.get("pods", "waiting", "team") is None, timeout=HANG)
    await cluster.wait_for(lambda: workload_of_pod(cluster, "waiting") is None, timeout=HANG)


@pytest.mark.parametrize("group", [False, True])
async def test_deleting_running_pods_hands_their_quota_on(cluster: FakeApiServer, group: bool) -> None:
    names = ["g-0", "g-1"] if group else ["solo"]
    for name in names:
        await cluster.create(member(name, "pair", 2) if group else pod(name, 2), admit=True)
    await cluster.wait_for(lambda: all(started(cluster, n)() for n in names), timeout=HANG)
    for name in names:
        await set_phase(cluster, name, "Running")
    await cluster.create(pod("next", 2), admit=True)
    for name in names:
        await cluster.delete("pods", name, namespace="team")
    await cluster.wait_for(started(cluster, "next"), timeout=HANG)
    await cluster.wait_for(lambda: not any(cluster.get("pods", n, "team") for n in names), timeout=HANG)


async def test_a_serving_group_is_admitted_with_its_first_pod(cluster: FakeApiServer) -> None:
    """Kueue's fast-admission serving group: its Workload is made from the first pod, for all of them."""
    annotations = {
        "kueue.x-k8s.io/pod-group-total-count": "2",
        "kueue.x-k8s.io/pod-group-fast-admission": "true",
        "kueue.x-k8s.io/pod-group-serving": "true",
    }
    labels = {"kueue.x-k8s.io/pod-group-name": "web"}
    await cluster.create(pod("web-0", 1, labels=labels, annotations=annotations), admit=True)
    await cluster.wait_for(started(cluster, "web-0"), timeout=HANG)
    workload = cluster.get("workloads", "web", "team")
    assert workload is not None and [p["count"] for p in workload["spec"]["podSets"]] == [2]
    await cluster.create(pod("web-1", 1, labels=labels, annotations=annotations), admit=True)
    await cluster.wait_for(started(cluster, "web-1"), timeout=HANG)


async def test_a_pod_priority_class_orders_and_preempts(cluster: FakeApiServer) -> None:
    """As Kueue, without a WorkloadPriorityClass label a pod's priorityClassName gives its priority."""
    await cluster.create(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 500,
        }
    )
    await cluster.create(pod("low", 2), admit=True)
    await cluster.wait_for(started(cluster, "low"), timeout=HANG)
    await set_phase(cluster, "low", "Running")
    high = pod("high", 2)
    high["spec"]["priorityClassName"] = "high"
    await cluster.create(high, admit=True)
    await cluster.wait_for(started(cluster, "high"), timeout=HANG)
    workload = workload_of_pod(cluster, "high")
    assert workload is not None and workload["spec"].get("priority") == 500
    assert cluster.get("pods", "low", "team") is None


async def test_a_pod_of_a_queued_job_is_left_to_its_job(cluster: FakeApiServer) -> None:
    """As Kueue's pod webhook: a pod whose controller is a real queued Job is not queued on its own."""
    job = await cluster.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "train",
                "namespace": "team",
                "labels": {"kueue.x-k8s.io/queue-name": "gpus"},
            },
            "spec": {"template": pod("x", 1) | {"metadata": {}}},
        }
    )
    child = pod("train-abcde", 1)
    child["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "train",
            "uid": job["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    created = await cluster.create(child, admit=True)
    assert not gated(created)
    assert "kueue.x-k8s.io/managed" not in (created["metadata"].get("finalizers") or [])


async def test_a_restarted_controller_picks_up_gated_pods_and_finished_ones(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> None:
    fake_api = await make_fake_api()
    await fake_api.apply_manifests(controller_config(FRAMEWORKS) + "---\n" + SETUP)
    tls = certificates(tmp_path / "tls")
    async with replica(fake_api.kubeconfig_path(), tls=tls) as serving:
        for config in webhook_configurations(ca=ca_bundle(tls), url_base=f"https://127.0.0.1:{serving.port}"):
            await fake_api.create(config)
        await fake_api.create(pod("first", 2), admit=True)
        await fake_api.create(member("g-0", "pair", 2), admit=True)
        await fake_api.wait_for(started(fake_api, "first"), timeout=HANG)
    # while no controller runs: the first pod ends, the group's second pod arrives (failurePolicy Ignore
    # is not what the shipped configuration says, so it is created as the webhook would have made it)
    await set_phase(fake_api, "first", "Succeeded")
    second = member("g-1", "pair", 2)
    second["spec"]["schedulingGates"] = [{"name": GATE}]
    second["metadata"]["labels"]["kueue.x-k8s.io/managed"] = "true"
    second["metadata"]["finalizers"] = ["kueue.x-k8s.io/managed"]
    g0 = fake_api.get("pods", "g-0", "team")
    assert g0 is not None
    second["metadata"]["annotations"] |= {
        k: v for k, v in g0["metadata"]["annotations"].items() if k.endswith("role-hash")
    }
    await fake_api.create(second)
    async with replica(fake_api.kubeconfig_path(), tls=tls) as serving:
        for config in webhook_configurations(ca=ca_bundle(tls), url_base=f"https://127.0.0.1:{serving.port}"):
            await fake_api.delete(config["kind"], config["metadata"]["name"])
            await fake_api.create(config)
        await fake_api.wait_for(
            lambda: started(fake_api, "g-0")() and started(fake_api, "g-1")(), timeout=HANG
        )
        workload = workload_of_pod(fake_api, "first")
        assert workload is not None and (condition(workload, "Finished") or {}).get("status") == "True"


async def test_a_ready_pod_makes_its_workload_pods_ready(cluster: FakeApiServer) -> None:
    """waitForPodsReady is on by default: a pod's Workload is PodsReady once the pod reports Ready."""
    await cluster.create(pod("server", 1), admit=True)
    await cluster.wait_for(started(cluster, "server"), timeout=HANG)
    workload = workload_of_pod(cluster, "server")
    assert (condition(workload, "PodsReady") or {}).get("reason") == "WaitForStart"
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    await cluster.patch(
        "pods", "server", {"status": {"phase": "Running", "conditions": [ready]}}, namespace="team",
        subresource="status",
    )  # fmt: skip

    def pods_ready() -> bool:
        current = workload_of_pod(cluster, "server")
        return (condition(current, "PodsReady") or {}).get("status") == "True"

    await cluster.wait_for(pods_ready, timeout=HANG)


async def test_deleting_the_workload_of_a_running_pod_deletes_the_pod(cluster: FakeApiServer) -> None:
    await cluster.create(pod("victim", 2), admit=True)
    await cluster.wait_for(started(cluster, "victim"), timeout=HANG)
    await set_phase(cluster, "victim", "Running")
    await cluster.create(pod("next", 2), admit=True)
    workload = workload_of_pod(cluster, "victim")
    assert workload is not None
    await cluster.delete("workloads", workload["metadata"]["name"], namespace="team")
    await cluster.wait_for(started(cluster, "next"), timeout=HANG)
    assert cluster.get("pods", "victim", "team") is None


async def test_a_group_is_pods_ready_once_all_its_pods_are_ready(cluster: FakeApiServer) -> None:
    """As Kueue's pod group PodsReady (waitForPodsReady on by default): every one of the total pods Ready."""
    for index in range(2):
        await cluster.create(member(f"g-{index}", "pair", 2), admit=True)
    await cluster.wait_for(lambda: started(cluster, "g-0")() and started(cluster, "g-1")(), timeout=HANG)

    def pods_ready(status: str, reason: str) -> Callable[[], bool]:
        def check() -> bool:
            current = condition(cluster.get("workloads", "pair", "team"), "PodsReady") or {}
            return (current.get("status"), current.get("reason")) == (status, reason)

        return check

    await cluster.wait_for(pods_ready("False", "WaitForStart"), timeout=HANG)
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    await cluster.patch(
        "pods", "g-0", {"status": {"phase": "Running", "conditions": [ready]}}, namespace="team",
        subresource="status",
    )  # fmt: skip
    assert pods_ready("False", "WaitForStart")()  # one of two is not enough
    await cluster.patch(
        "pods", "g-1", {"status": {"phase": "Running", "conditions": [ready]}}, namespace="team",
        subresource="status",
    )  # fmt: skip
    await cluster.wait_for(pods_ready("True", "Started"), timeout=HANG)


async def test_a_pending_pods_workload_waits_for_start(cluster: FakeApiServer) -> None:
    """As Kueue with waitForPodsReady: a pending Workload of a kind that reports readiness is PodsReady
    False WaitForStart, beside its pending reason."""
    await cluster.create(pod("blocker", 2), admit=True)
    await cluster.wait_for(started(cluster, "blocker"), timeout=HANG)
    await cluster.create(pod("waiting", 2), admit=True)

    def waiting_for_start() -> bool:
        workload = workload_of_pod(cluster, "waiting")
        quota = condition(workload, "QuotaReserved") or {}
        ready = condition(workload, "PodsReady") or {}
        return quota.get("reason") == "WaitingForQuota" and ready.get("reason") == "WaitForStart"

    await cluster.wait_for(waiting_for_start, timeout=HANG)


async def test_a_queued_deployment_template_queues_its_pods(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> None:
    """As Kueue's deployment webhook: the template carries the queue, so each pod it makes is queued."""
    fake_api = await make_fake_api()
    frameworks = "integrations:\n  frameworks: [batch/job, pod, deployment]"
    await fake_api.apply_manifests(controller_config(frameworks) + "---\n" + SETUP)
    async with serving_webhook(fake_api, tmp_path):
        template = {"metadata": {"labels": {"app": "web"}}, "spec": pod("x", 1)["spec"]}
        deployment = await fake_api.create(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {
                    "name": "web",
                    "namespace": "team",
                    "labels": {"kueue.x-k8s.io/queue-name": "gpus"},
                },
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": template},
            },
            admit=True,
        )
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert labels["kueue.x-k8s.io/queue-name"] == "gpus" and labels["app"] == "web"
        # the pod the ReplicaSet controller would make from it (none runs here) is queued and admitted
        made = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "web-abc12",
                "namespace": "team",
                **deployment["spec"]["template"]["metadata"],
            },
            "spec": deployment["spec"]["template"]["spec"],
        }
        assert gated(await fake_api.create(made, admit=True))
        await fake_api.wait_for(started(fake_api, "web-abc12"), timeout=HANG)


GATES = "kueue.x-k8s.io/admission-gated-by"


async def test_admission_gates_hold_a_pod_and_a_pod_group_until_removed(cluster: FakeApiServer) -> None:
    """Kueue's AdmissionGatedBy for pods: a single pod's Workload and a group's (from its first pod) carry
    the gates and wait ``AdmissionGated``; removing them from the pod lets the Workload in."""
    single = pod("gated", 1, annotations={GATES: "example.com/scan"})
    members = [member(f"g-{i}", "trainers", 2) for i in range(2)]
    for one in members:
        one["metadata"]["annotations"][GATES] = "example.com/scan"
    for obj in (single, *members):
        await cluster.create(obj, admit=True)
    async with replica(cluster.kubeconfig_path()):

        def reason(workload: JSON | None) -> str:
            return str((condition(workload, "QuotaReserved") or {}).get("reason", "")) if workload else ""

        await cluster.wait_for(
            lambda: reason(workload_of_pod(cluster, "gated")) == "AdmissionGated", timeout=HANG
        )
        await cluster.wait_for(
            lambda: reason(cluster.get("workloads", "trainers", "team")) == "AdmissionGated", timeout=HANG
        )
        group = cluster.get("workloads", "trainers", "team")
        assert group is not None and group["metadata"]["annotations"][GATES] == "example.com/scan"
        assert gated(cluster.get("pods", "gated", "team")) and gated(cluster.get("pods", "g-0", "team"))
        for name in ("gated", "g-0", "g-1"):
            await cluster.patch("pods", name, {"metadata": {"annotations": {GATES: None}}}, namespace="team")
        await cluster.wait_for(started(cluster, "gated"), timeout=HANG)
        await set_phase(cluster, "gated", "Succeeded")  # 2 GPUs: the group of two fits once it is done
        await cluster.wait_for(started(cluster, "g-0"), timeout=HANG)
        assert GATES not in cluster.get("workloads", "trainers", "team")["metadata"]["annotations"]
