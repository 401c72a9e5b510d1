"""Every built-in queued kind with a sample in tests/crds/samples.py (JobSet, the Kubeflow jobs, the Ray
kinds, SparkApplication, AppWrapper) queued like a Job, on the fake API server with its CRD installed
(tests/crds: the upstream schema when present) and the shipped webhook configurations: created suspended by
the webhook, admitted with Kueue's pod counts and the flavor's node labels and tolerations injected into each
pod set (an AppWrapper's handed to its controller), suspended again and restored when preempted, started
again, and its quota released when the operator (played by the test) reports it finished, or, for a
RayCluster or RayService, which never finish, when it is deleted (as Kueue releases it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.crds import integration_crds
from tests.crds.samples import SAMPLES, Sample, dig, part
from tests.fakeapi import DEFAULT_CRDS, FakeApiServer, load_crds
from tests.fakeapi.errors import ApiError
from tests.support.builders import PRIORITY_LABEL, gpu_limits, queued_job
from tests.support.fake_cluster import condition, controller_config, running, serving_webhook
from tests.support.research import URGENT, preempting_research

JSON = dict[str, Any]
HANG = 30.0

GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
SETUP = preempting_research(
    "team", "gpus", gpus=8, node_labels={"node-pool": "gpu"}, tolerations=[GPU_TOLERATION]
)
FRAMEWORKS = (
    "integrations:\n  frameworks: [batch/job, " + ", ".join(s.framework for s in SAMPLES.values()) + "]"
)


def flavored(obj: JSON, sample: Sample) -> bool:
    """Every pod template carries the flavor's node label and toleration."""
    return all(
        dig(obj, path).get("nodeSelector") == {"node-pool": "gpu"}
        and dig(obj, path).get("tolerations") == [GPU_TOLERATION]
        for path in sample.templates
    )


def restored(obj: JSON, sample: Sample) -> bool:
    """No pod template keeps anything of the flavor."""
    return not any({"nodeSelector", "tolerations"} & set(part(obj, path)) for path in sample.templates)


@pytest.mark.parametrize("kind", list(SAMPLES))
async def test_a_queued_kind_is_suspended_admitted_with_its_pod_sets_released_and_preempted(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path, kind: str
) -> None:
    sample = SAMPLES[kind]
    plural = sample.plural
    fake_api = await make_fake_api(crds=load_crds(DEFAULT_CRDS) + integration_crds())
    await fake_api.apply_manifests(controller_config(FRAMEWORKS) + "---\n" + SETUP)
    async with serving_webhook(fake_api, tmp_path):
        created = await fake_api.create(sample.manifest("train", "team", "gpus"), admit=True)
        assert dig(created, sample.suspend) is True  # queued by the mutating webhook

        def started() -> bool:
            obj = fake_api.get(plural, "train", "team")
            return obj is not None and dig(obj, sample.suspend) is False

        await fake_api.wait_for(started, timeout=HANG)
        assert flavored(fake_api.get(plural, "train", "team") or {}, sample)
        [workload] = [
            w
            for w in fake_api.list("workloads", "team")
            if w["metadata"]["ownerReferences"][0]["kind"] == kind
        ]
        assert workload["metadata"]["name"].startswith(f"{kind.lower()}-train-")
        assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == sample.pod_sets_of("train")
        assert all(  # recorded before injection
            not {"nodeSelector", "tolerations"} & set(p["template"]["spec"])
            for p in workload["spec"]["podSets"]
        )
        assert [(a["name"], a["count"]) for a in workload["status"]["admission"]["podSetAssignments"]] == (
            sample.pod_sets_of("train")
        )

        # an urgent Job takes the whole quota: the object is suspended again with its templates restored
        urgent = queued_job(
            "team", "urgent", queue="gpus", resources=gpu_limits(8), labels={PRIORITY_LABEL: URGENT}
        )
        await fake_api.create(urgent, admit=True)
        await fake_api.wait_for(lambda: running(fake_api, "team", "urgent"), timeout=HANG)
        obj = fake_api.get(plural, "train", "team") or {}
        assert dig(obj, sample.suspend) is True
        assert restored(obj, sample)
        evicted = fake_api.get("workloads", workload["metadata"]["name"], "team")
        assert (
            condition(evicted, "Preempted") is not None
            and condition(evicted, "QuotaReserved")["status"] == "False"
        )

        # the urgent Job finishes: the object runs again, then finishes (or, a RayCluster, is deleted)
        await fake_api.complete_job("team", "urgent")
        await fake_api.wait_for(started, timeout=HANG)
        assert flavored(fake_api.get(plural, "train", "team") or {}, sample)
        if sample.done is not None:
            await fake_api.patch(
                plural, "train", {"status": sample.done}, namespace="team", subresource="status"
            )

            def finished() -> bool:
                current = fake_api.get("workloads", workload["metadata"]["name"], "team")
                return current is not None and (condition(current, "Finished") or {}).get("status") == "True"

            await fake_api.wait_for(finished, timeout=HANG)
        else:
            await fake_api.delete(plural, "train", namespace="team")
            await fake_api.wait_for(
                lambda: fake_api.get("workloads", workload["metadata"]["name"], "team") is None, timeout=HANG
            )
        await fake_api.wait_for(
            lambda: (
                (fake_api.get("clusterqueues", "research") or {}).get("status", {}).get("admittedWorkloads")
                == 0
            ),
            timeout=HANG,
        )


async def test_an_integration_that_is_off_leaves_its_kind_alone(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> None:
    fake_api = await make_fake_api(crds=load_crds(DEFAULT_CRDS) + integration_crds("jobsets"))
    await fake_api.apply_manifests(controller_config("logLevel: info") + "---\n" + SETUP)
    async with serving_webhook(fake_api, tmp_path):
        created = await fake_api.create(SAMPLES["JobSet"].manifest("free", "team", "gpus"), admit=True)
        assert created["spec"].get("suspend") is not True
        # a Job queued afterwards is admitted: the JobSet got no Workload
        await fake_api.create(queued_job("team", "after", queue="gpus", resources=gpu_limits(1)), admit=True)
        await fake_api.wait_for(lambda: running(fake_api, "team", "after"), timeout=HANG)
        assert [w["metadata"]["ownerReferences"][0]["kind"] for w in fake_api.list("workloads", "team")] == [
            "Job"
        ]


async def test_kueues_refusals_of_a_queued_spark_application_and_ray_cluster(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> None:
    """Kueue's SparkApplication webhook (cluster mode only, no dynamic allocation) and
    raycluster.ValidateCreate (no autoscaler); nothing is created."""
    fake_api = await make_fake_api(crds=load_crds(DEFAULT_CRDS) + integration_crds())
    await fake_api.apply_manifests(controller_config(FRAMEWORKS) + "---\n" + SETUP)
    async with serving_webhook(fake_api, tmp_path):
        spark = SAMPLES["SparkApplication"].manifest("client-mode", "team", "gpus")
        spark["spec"]["mode"] = "client"
        spark["spec"]["dynamicAllocation"] = {"enabled": True}
        with pytest.raises(ApiError) as refused:
            await fake_api.create(spark, admit=True)
        assert 'spec.mode: Invalid value: "client": only cluster mode is supported' in str(refused.value)
        assert "spec.dynamicAllocation.enabled: Invalid value: true" in str(refused.value)
        ray = SAMPLES["RayCluster"].manifest("autoscaling", "team", "gpus")
        ray["spec"]["enableInTreeAutoscaling"] = True
        with pytest.raises(ApiError) as autoscaling:
            await fake_api.create(ray, admit=True)
        assert "spec.enableInTreeAutoscaling: Invalid value: true" in str(autoscaling.value)
        assert fake_api.list("sparkapplications", "team") == [] and fake_api.list("rayclusters", "team") == []
