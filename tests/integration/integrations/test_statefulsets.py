"""A StatefulSet queued as one Workload (Kueue's statefulset integration) on the fake API server, with the
shipped webhook configurations. No StatefulSet controller runs here: the tests make its pods as it would
(controller ownerReference, ``controller-revision-hash`` and pod-index labels, the template's metadata) and
delete them when it scales down, and set ``status.replicas`` as it reports them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from kueue_webhook.api.integrations.statefulsets import statefulset_workload_name
from tests.fakeapi import FakeApiServer
from tests.fakeapi.errors import ApiError
from tests.integration.integrations.test_pods import HANG, SETUP, gated, pod, pod_cluster, set_phase, started
from tests.support.fake_cluster import condition, controller_config, is_true, serving_webhook

JSON = dict[str, Any]
FRAMEWORKS = "integrations:\n  frameworks: [batch/job, pod, statefulset]"


@pytest.fixture
async def cluster(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> AsyncIterator[FakeApiServer]:
    async with pod_cluster(make_fake_api, tmp_path, FRAMEWORKS) as fake_api:
        yield fake_api


async def create_statefulset(
    cluster: FakeApiServer, name: str, replicas: int, gpus: int = 1, queue: str = "gpus"
) -> JSON:
    return await cluster.create(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": name, "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": queue}},
            "spec": {
                "replicas": replicas,
                "serviceName": name,
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}}, "spec": pod("x", gpus)["spec"]},
            },
        },
        admit=True,
    )


async def make_pods(cluster: FakeApiServer, sts: JSON, indices: range) -> list[JSON]:
    """The pods the StatefulSet controller makes from the template."""
    name, template = sts["metadata"]["name"], sts["spec"]["template"]
    made = []
    for index in indices:
        labels = {
            **template["metadata"].get("labels", {}),
            "controller-revision-hash": f"{name}-7c9d5b",
            "apps.kubernetes.io/pod-index": str(index),
            "statefulset.kubernetes.io/pod-name": f"{name}-{index}",
        }
        owner = {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "name": name,
            "uid": sts["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-{index}",
                "namespace": "team",
                "labels": labels,
                "annotations": dict(template["metadata"].get("annotations", {})),
                "ownerReferences": [owner],
            },
            "spec": template["spec"],
        }
        made.append(await cluster.create(body, admit=True))
    return made


async def scale(cluster: FakeApiServer, name: str, replicas: int) -> JSON:
    return await cluster.patch(
        "statefulsets", name, {"spec": {"replicas": replicas}}, namespace="team", admit=True
    )


def workload_of(cluster: FakeApiServer, sts: JSON) -> JSON | None:
    name = statefulset_workload_name(sts["metadata"]["name"], sts["metadata"]["uid"])
    return cluster.get("workloads", name, "team")


def reserved(cluster: FakeApiServer, sts: JSON) -> Callable[[], bool]:
    return lambda: is_true(workload_of(cluster, sts), "QuotaReserved")


async def test_a_statefulset_is_one_workload_of_its_replicas_and_its_pods_start_with_the_flavor(
    cluster: FakeApiServer,
) -> None:
    """As Kueue's statefulset reconciler: the Workload is built from the StatefulSet and owned by it."""
    sts = await create_statefulset(cluster, "web", 2)
    annotations = sts["spec"]["template"]["metadata"]["annotations"]
    assert annotations["kueue.x-k8s.io/pod-suspending-parent"] == "statefulset"
    await cluster.wait_for(lambda: workload_of(cluster, sts) is not None, timeout=HANG)
    workload = workload_of(cluster, sts)
    assert workload is not None
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("main", 2)]
    assert workload["metadata"]["ownerReferences"][0]["uid"] == sts["metadata"]["uid"]
    assert workload["spec"]["queueName"] == "gpus"
    pods = await make_pods(cluster, sts, range(2))
    assert all(gated(p) for p in pods)
    await cluster.wait_for(lambda: all(started(cluster, p["metadata"]["name"])() for p in pods), timeout=HANG)
    for made in pods:
        current = cluster.get("pods", made["metadata"]["name"], "team")
        assert current is not None
        assert current["spec"]["nodeSelector"] == {"node-pool": "gpu"}
        group = current["metadata"]["annotations"]
        assert group["kueue.x-k8s.io/pod-group-name"] == workload["metadata"]["name"]
        assert group["kueue.x-k8s.io/pod-group-total-count"] == "2"
        assert group["kueue.x-k8s.io/prebuilt-workload-name"] == workload["metadata"]["name"]
    # one Workload for the StatefulSet, none per pod
    assert [w["metadata"]["name"] for w in cluster.list("workloads", "team")] == [
        workload["metadata"]["name"]
    ]


async def test_scaling_to_zero_holds_the_workload_and_frees_its_quota_and_scaling_up_admits_it_again(
    cluster: FakeApiServer,
) -> None:
    sts = await create_statefulset(cluster, "web", 2)
    pods = await make_pods(cluster, sts, range(2))
    await cluster.wait_for(lambda: all(started(cluster, p["metadata"]["name"])() for p in pods), timeout=HANG)
    await scale(cluster, "web", 0)

    def on_hold() -> bool:
        quota = condition(workload_of(cluster, sts), "QuotaReserved") or {}
        return quota.get("reason") == "OnHold" and quota.get("status") == "False"

    await cluster.wait_for(on_hold, timeout=HANG)
    held = workload_of(cluster, sts)
    assert held is not None and "admission" not in held["status"]
    quota = next(c for c in held["status"]["conditions"] if c["type"] == "QuotaReserved")
    assert quota["message"] == "StatefulSet scaled to zero; workload on hold"
    for made in pods:  # the StatefulSet controller's scale-down
        await cluster.delete("pods", made["metadata"]["name"], namespace="team")
    await cluster.wait_for(lambda: not cluster.list("pods", "team"), timeout=HANG)
    # the released quota goes to the next comer; the held Workload does not queue for it
    await cluster.create(pod("other", 2), admit=True)
    await cluster.wait_for(started(cluster, "other"), timeout=HANG)
    await cluster.delete("pods", "other", namespace="team")
    await cluster.wait_for(lambda: cluster.get("pods", "other", "team") is None, timeout=HANG)
    assert on_hold()
    await scale(cluster, "web", 2)
    await cluster.wait_for(reserved(cluster, sts), timeout=HANG)
    again = await make_pods(cluster, sts, range(2))
    await cluster.wait_for(
        lambda: all(started(cluster, p["metadata"]["name"])() for p in again), timeout=HANG
    )


async def test_a_queued_statefulset_keeps_its_size_and_pod_shape(cluster: FakeApiServer) -> None:
    """Kueue's statefulset webhook: replicas only to or from zero, the template's shape frozen."""
    await create_statefulset(cluster, "web", 2)
    with pytest.raises(ApiError) as resized:
        await scale(cluster, "web", 3)
    assert "spec.replicas: Invalid value: 3: field is immutable" in str(resized.value)
    with pytest.raises(ApiError) as reshaped:
        await cluster.patch(
            "statefulsets",
            "web",
            [
                {
                    "op": "replace",
                    "path": "/spec/template/spec/containers/0/resources",
                    "value": {"requests": {"nvidia.com/gpu": "2"}, "limits": {"nvidia.com/gpu": "2"}},
                }
            ],
            namespace="team",
            patch_type="application/json-patch+json",
            admit=True,
        )
    assert "spec.template.spec.containers[0].resources.requests: Invalid value" in str(reshaped.value)
    await scale(cluster, "web", 0)
    await cluster.patch(
        "statefulsets", "web", {"status": {"replicas": 2}}, namespace="team", subresource="status"
    )
    with pytest.raises(ApiError) as early:
        await scale(cluster, "web", 2)
    assert "spec.replicas: Forbidden: scaling down is still in progress" in str(early.value)


async def test_a_statefulset_whose_name_makes_a_long_workload_name_is_queued(cluster: FakeApiServer) -> None:
    """Kueue keeps the group and prebuilt Workload names in annotations, where 63 characters are no limit."""
    name = "a-statefulset-whose-name-is-long-enough-to-pass-63"
    sts = await create_statefulset(cluster, name, 1)
    workload_name = statefulset_workload_name(name, sts["metadata"]["uid"])
    assert len(workload_name) > 63
    (made,) = await make_pods(cluster, sts, range(1))
    await cluster.wait_for(started(cluster, made["metadata"]["name"]), timeout=HANG)
    assert workload_of(cluster, sts) is not None


async def test_a_statefulset_moved_to_another_queue_before_it_runs_takes_its_workload_and_pods_along(
    cluster: FakeApiServer,
) -> None:
    """Kueue: the queue label may change while no replica is ready; the Workload and the pods follow."""
    sts = await create_statefulset(cluster, "web", 1, queue="nowhere")
    await cluster.wait_for(
        lambda: (workload_of(cluster, sts) or {}).get("spec", {}).get("queueName") == "nowhere", timeout=HANG
    )
    (made,) = await make_pods(cluster, sts, range(1))
    await cluster.wait_for(
        lambda: (
            (cluster.get("pods", "web-0", "team") or {})["metadata"]["labels"].get(
                "kueue.x-k8s.io/queue-name"
            )
            == "nowhere"
        ),
        timeout=HANG,
    )
    assert gated(cluster.get("pods", "web-0", "team"))
    moved = {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "gpus"}}}
    await cluster.patch("statefulsets", "web", moved, namespace="team", admit=True)
    await cluster.wait_for(started(cluster, made["metadata"]["name"]), timeout=HANG)
    current = cluster.get("pods", "web-0", "team")
    assert current is not None and current["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpus"
    await cluster.patch(
        "statefulsets",
        "web",
        {"status": {"readyReplicas": 1, "replicas": 1}},
        namespace="team",
        subresource="status",
    )
    with pytest.raises(ApiError) as running:
        await cluster.patch(
            "statefulsets",
            "web",
            {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "nowhere"}}},
            namespace="team",
            admit=True,
        )
    assert 'metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "nowhere": field is immutable' in str(
        running.value
    )


async def test_a_deployment_moved_to_another_queue_moves_its_template(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> None:
    """As Kueue's deployment webhook, which defaults the template on update too."""
    fake_api = await make_fake_api()
    await fake_api.apply_manifests(
        controller_config(FRAMEWORKS.replace("statefulset]", "statefulset, deployment]")) + "---\n" + SETUP
    )
    async with serving_webhook(fake_api, tmp_path):
        body = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "web",
                "namespace": "team",
                "labels": {"kueue.x-k8s.io/queue-name": "nowhere"},
            },
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod("x", 1)["spec"]},
            },
        }
        await fake_api.create(body, admit=True)
        moved = {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "gpus"}}}
        updated = await fake_api.patch("deployments", "web", moved, namespace="team", admit=True)
        labels = updated["spec"]["template"]["metadata"]["labels"]
        assert labels["kueue.x-k8s.io/queue-name"] == "gpus" and labels["app"] == "web"


async def test_a_preempted_statefulset_has_its_pods_deleted_and_the_pods_made_again_wait_for_readmission(
    cluster: FakeApiServer,
) -> None:
    """Kueue's pod group stop: started pods are deleted; the StatefulSet makes them again, gated."""
    sts = await create_statefulset(cluster, "web", 2)
    pods = await make_pods(cluster, sts, range(2))
    await cluster.wait_for(lambda: all(started(cluster, p["metadata"]["name"])() for p in pods), timeout=HANG)
    for made in pods:
        await set_phase(cluster, made["metadata"]["name"], "Running")
    await cluster.create(pod("urgent", 2, labels={"kueue.x-k8s.io/priority-class": "urgent"}), admit=True)
    await cluster.wait_for(started(cluster, "urgent"), timeout=HANG)
    assert not any(cluster.get("pods", p["metadata"]["name"], "team") for p in pods)
    assert not is_true(workload_of(cluster, sts), "QuotaReserved")
    again = await make_pods(cluster, sts, range(2))  # the StatefulSet controller replaces them
    assert all(gated(p) for p in again)
    await set_phase(cluster, "urgent", "Succeeded")
    await cluster.wait_for(
        lambda: all(started(cluster, p["metadata"]["name"])() for p in again), timeout=HANG
    )
    assert is_true(workload_of(cluster, sts), "Admitted")


async def test_a_statefulset_scaled_up_from_zero_queues_for_its_new_size(cluster: FakeApiServer) -> None:
    """Held at 0 replicas, then scaled to more than it first had: its Workload asks for the new count before
    it is admitted again, so no pod runs beyond what the quota holds."""
    sts = await create_statefulset(cluster, "web", 1)
    pods = await make_pods(cluster, sts, range(1))
    await cluster.wait_for(started(cluster, pods[0]["metadata"]["name"]), timeout=HANG)
    await scale(cluster, "web", 0)
    await cluster.wait_for(lambda: not is_true(workload_of(cluster, sts), "QuotaReserved"), timeout=HANG)
    await cluster.delete("pods", pods[0]["metadata"]["name"], namespace="team")
    await cluster.wait_for(lambda: not cluster.list("pods", "team"), timeout=HANG)
    await scale(cluster, "web", 2)
    await cluster.wait_for(reserved(cluster, sts), timeout=HANG)
    workload = workload_of(cluster, sts)
    assert workload is not None and workload["spec"]["podSets"][0]["count"] == 2
    assert workload["status"]["admission"]["podSetAssignments"][0]["count"] == 2


async def test_a_statefulset_given_a_queue_after_create_makes_gated_pods(cluster: FakeApiServer) -> None:
    """Kueue's StatefulSet webhook marks the template on update too: a StatefulSet created without a queue
    label and labelled before any replica is ready has its next pods queued, not running outside quota."""
    sts = await create_statefulset(cluster, "late", 1)
    await cluster.delete("statefulsets", "late", namespace="team")
    await cluster.wait_for(lambda: cluster.get("statefulsets", "late", "team") is None, timeout=HANG)
    body = {k: v for k, v in sts.items() if k in ("apiVersion", "kind", "spec")}
    body["metadata"] = {"name": "late", "namespace": "team"}
    body["spec"]["template"]["metadata"] = {"labels": {"app": "late"}}
    unlabelled = await cluster.create(body, admit=True)
    assert "kueue.x-k8s.io/pod-suspending-parent" not in (
        unlabelled["spec"]["template"]["metadata"].get("annotations") or {}
    )
    labelled = await cluster.patch(
        "statefulsets",
        "late",
        {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "gpus"}}},
        namespace="team",
        admit=True,
    )
    annotations = labelled["spec"]["template"]["metadata"].get("annotations") or {}
    assert annotations.get("kueue.x-k8s.io/pod-suspending-parent") == "statefulset"
    made = await make_pods(cluster, labelled, range(1))
    assert gated(made[0])
    await cluster.wait_for(started(cluster, made[0]["metadata"]["name"]), timeout=HANG)
