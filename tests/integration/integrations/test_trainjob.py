"""A Kubeflow Trainer TrainJob queued on the fake API server with the Trainer CRDs (tests/crds) and the
shipped webhook configurations: created suspended, its Workload's pod sets read from the
ClusterTrainingRuntime it names with its own numNodes, admitted with the flavor written into Kueue's
runtime patch, suspended and the patch emptied when preempted, started again, and its quota released when
the Trainer (played by the test) reports it Complete. A TrainJob naming a runtime that does not exist yet
waits without a Workload, saying so in an Event, and is queued once the runtime is created."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tests.crds import integration_crds
from tests.crds.trainer import TRAINER_CRDS, cluster_runtime, complete, kueue_patch, trainjob
from tests.fakeapi import DEFAULT_CRDS, FakeApiServer, load_crds
from tests.support.builders import PRIORITY_LABEL, gpu_limits, queued_job
from tests.support.fake_cluster import condition, controller_config, events_of, running, serving_webhook
from tests.support.research import URGENT, preempting_research

JSON = dict[str, Any]
HANG = 30.0
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
SETUP = preempting_research(
    "team", "gpus", gpus=8, node_labels={"node-pool": "gpu"}, tolerations=[GPU_TOLERATION]
)
FRAMEWORKS = "integrations:\n  frameworks: [batch/job, trainer.kubeflow.org/trainjob]"


def trainjob_workloads(fake_api: FakeApiServer) -> list[JSON]:
    return [
        w
        for w in fake_api.list("workloads", "team")
        if w["metadata"]["ownerReferences"][0]["kind"] == "TrainJob"
    ]


async def test_a_trainjob_is_queued_for_its_runtimes_pods_started_with_the_flavor_preempted_and_finished(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> None:
    fake_api = await make_fake_api(crds=load_crds(DEFAULT_CRDS) + integration_crds(*TRAINER_CRDS))
    await fake_api.apply_manifests(controller_config(FRAMEWORKS) + "---\n" + SETUP)
    async with serving_webhook(fake_api, tmp_path):
        await fake_api.create(cluster_runtime("torch"))
        created = await fake_api.create(trainjob("train", "team", "gpus", "torch", nodes=3), admit=True)
        assert created["spec"]["suspend"] is True  # queued by the mutating webhook

        def started() -> bool:
            obj = fake_api.get("trainjobs", "train", "team")
            return obj is not None and obj["spec"]["suspend"] is False

        await fake_api.wait_for(started, timeout=HANG)
        assert kueue_patch(fake_api.get("trainjobs", "train", "team")) == {
            "nodeSelector": {"node-pool": "gpu"},
            "tolerations": [GPU_TOLERATION],
        }
        [workload] = trainjob_workloads(fake_api)
        assert workload["metadata"]["name"].startswith("trainjob-train-")
        assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("node", 3)]
        assert "nodeSelector" not in workload["spec"]["podSets"][0]["template"]["spec"]

        def gpus_in_use() -> str:
            status = (fake_api.get("clusterqueues", "research") or {}).get("status") or {}
            usage = (status.get("flavorsUsage") or [{}])[0].get("resources") or []
            return str({r["name"]: r["total"] for r in usage}.get("nvidia.com/gpu"))

        await fake_api.wait_for(lambda: gpus_in_use() == "3", timeout=HANG)

        # an urgent Job takes the whole quota: the TrainJob is suspended again, Kueue's patch emptied
        urgent = queued_job(
            "team", "urgent", queue="gpus", resources=gpu_limits(8), labels={PRIORITY_LABEL: URGENT}
        )
        await fake_api.create(urgent, admit=True)
        await fake_api.wait_for(lambda: running(fake_api, "team", "urgent"), timeout=HANG)
        obj = fake_api.get("trainjobs", "train", "team") or {}
        assert obj["spec"]["suspend"] is True
        assert kueue_patch(obj) == {}
        evicted = fake_api.get("workloads", workload["metadata"]["name"], "team")
        assert condition(evicted, "Preempted") is not None

        # the urgent Job finishes: the TrainJob runs again, then the Trainer reports it Complete
        await fake_api.complete_job("team", "urgent")
        await fake_api.wait_for(started, timeout=HANG)
        assert kueue_patch(fake_api.get("trainjobs", "train", "team"))["nodeSelector"] == {"node-pool": "gpu"}
        done = complete(3)
        await fake_api.patch("trainjobs", "train", {"status": done}, namespace="team", subresource="status")

        def finished() -> bool:
            current = fake_api.get("workloads", workload["metadata"]["name"], "team")
            return (condition(current, "Finished") or {}).get("status") == "True"

        await fake_api.wait_for(finished, timeout=HANG)
        finished_condition = condition(
            fake_api.get("workloads", workload["metadata"]["name"], "team"), "Finished"
        )
        assert finished_condition is not None
        assert (finished_condition["reason"], finished_condition["message"]) == (
            "Succeeded",
            "jobset completed",
        )
        await fake_api.wait_for(
            lambda: (
                (fake_api.get("clusterqueues", "research") or {}).get("status", {}).get("admittedWorkloads")
                == 0
            ),
            timeout=HANG,
        )


async def test_a_trainjob_naming_a_missing_runtime_waits_saying_so_and_is_queued_once_it_exists(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> None:
    fake_api = await make_fake_api(crds=load_crds(DEFAULT_CRDS) + integration_crds(*TRAINER_CRDS))
    await fake_api.apply_manifests(controller_config(FRAMEWORKS) + "---\n" + SETUP)
    async with serving_webhook(fake_api, tmp_path):
        created = await fake_api.create(trainjob("early", "team", "gpus", "later", nodes=2), admit=True)
        assert created["spec"]["suspend"] is True
        message = (
            "ClusterTrainingRuntime 'later' not found (spec.runtimeRef): "
            "the TrainJob gets its Workload once it exists"
        )

        await fake_api.wait_for(
            lambda: events_of(fake_api, "team", "early").get("ErrWorkloadCompose") == message, timeout=HANG
        )
        assert trainjob_workloads(fake_api) == []
        assert (fake_api.get("trainjobs", "early", "team") or {})["spec"]["suspend"] is True

        await fake_api.create(cluster_runtime("later"))

        def started() -> bool:
            obj = fake_api.get("trainjobs", "early", "team")
            return obj is not None and obj["spec"]["suspend"] is False

        await fake_api.wait_for(started, timeout=HANG)
        [workload] = trainjob_workloads(fake_api)
        assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("node", 2)]
