"""Partial admission for a declared kind, through the real controller and webhook against the fake API
server: the made-up TrainingRun (tests/crds/declared) declares its elastic trainer pod set with
``minCountPath: minReplicas``. When quota is short it runs with the pods that fit, its
``spec.trainer.replicas`` set to the admitted count (as Kueue's Job gets its parallelism); nobody but the
controller may change that count while it runs; preempted, it is suspended with its replicas restored from
the Workload in one patch, and it starts again with what fits once quota frees up. A minReplicas that
leaves nothing to shrink is denied on create."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import Kind
from tests.crds.declared_kind import PLURAL, config_yaml, crd, training_run
from tests.fakeapi import DEFAULT_CRDS, FakeApiServer, load_crds
from tests.fakeapi.errors import ApiError as Denied
from tests.integration.integrations.test_integrations import SETUP
from tests.support.builders import gpu_limits, queued_job
from tests.support.fake_cluster import condition, controller_config, running, serving_webhook

JSON = dict[str, Any]
HANG = 30.0
CONTROLLER = "system:serviceaccount:kueue-system:kueue-webhook"
TRAINING_RUNS = Kind("TrainingRun", "example.com", "v1", "trainingruns", namespaced=True)
CONFIG = f'controllerIdentity: {{username: "{CONTROLLER}"}}\n' + config_yaml()


def trainer(fake_api: FakeApiServer) -> JSON:
    obj = fake_api.get(PLURAL, "elastic", "team")
    assert obj is not None
    found: JSON = obj["spec"]["trainer"]
    return {**found, "suspend": obj["spec"].get("suspend")}


def gpus_in_use(fake_api: FakeApiServer) -> str:
    usage = ((fake_api.get("clusterqueues", "research") or {}).get("status") or {}).get("flavorsUsage")
    return str(usage[0]["resources"][0]["total"]) if usage else ""


async def test_a_declared_kind_runs_with_the_pods_that_fit_and_gets_its_count_back_when_preempted(
    make_fake_api: Callable[..., Awaitable[FakeApiServer]], tmp_path: Path
) -> None:
    fake_api = await make_fake_api(crds=[*load_crds(DEFAULT_CRDS), crd()])
    await fake_api.apply_manifests(controller_config(CONFIG) + "---\n" + SETUP)
    kubeconfig = fake_api.kubeconfig_path(user=CONTROLLER, groups=["system:serviceaccounts"])
    async with serving_webhook(fake_api, tmp_path, kubeconfig=kubeconfig):
        await fake_api.create(queued_job("team", "holder", queue="gpus", resources=gpu_limits(5)), admit=True)
        await fake_api.wait_for(lambda: running(fake_api, "team", "holder"), timeout=HANG)

        # a minReplicas that leaves nothing to shrink is refused up front, naming the field
        with pytest.raises(Denied) as bad:
            await fake_api.create(training_run("bad", "team", queue="gpus", trainer=(6, 6)), admit=True)
        assert bad.value.code == 403
        assert (
            "spec.trainer.minReplicas: Invalid value: 6: must be an integer from 1 to 5, fewer than the pod "
            "set's 6 pods"
        ) in bad.value.message, bad.value.message

        # 3 of the 8 GPUs are free: the trainer asks for 6 and is content with 2, so it runs 3
        await fake_api.create(training_run("elastic", "team", queue="gpus", trainer=(6, 2)), admit=True)
        await fake_api.wait_for(lambda: trainer(fake_api)["suspend"] is False, timeout=HANG)
        assert trainer(fake_api)["replicas"] == 3
        assert trainer(fake_api)["template"]["spec"]["nodeSelector"] == {"node-pool": "gpu"}
        [workload] = [
            w for w in fake_api.list("workloads", "team") if w["metadata"]["name"].startswith("train")
        ]
        assert [(p["name"], p["count"], p.get("minCount")) for p in workload["spec"]["podSets"]] == [
            ("launcher", 1, None),
            ("trainer", 6, 2),
        ]
        counts = {a["name"]: a["count"] for a in workload["status"]["admission"]["podSetAssignments"]}
        assert counts == {"launcher": 1, "trainer": 3}
        await fake_api.wait_for(lambda: gpus_in_use(fake_api) == "8", timeout=HANG)

        # the admitted count is the controller's while it runs
        client = await KubeClient.connect(kubeconfig=str(fake_api.kubeconfig_path(user="alice")))
        try:
            with pytest.raises(ApiError) as refused:
                await client.patch(
                    TRAINING_RUNS,
                    name="elastic",
                    namespace="team",
                    patch={"spec": {"trainer": {"replicas": 6}}},
                )
        finally:
            await client.close()
        assert "spec.trainer.replicas: Forbidden: cannot change while the TrainingRun runs" in str(
            refused.value
        )

        # an urgent Job needs 3 GPUs: the TrainingRun is preempted, suspended with its 6 replicas back
        urgent = queued_job(
            "team",
            "urgent",
            queue="gpus",
            resources=gpu_limits(3),
            labels={"kueue.x-k8s.io/priority-class": "urgent"},
        )
        await fake_api.create(urgent, admit=True)
        await fake_api.wait_for(lambda: running(fake_api, "team", "urgent"), timeout=HANG)
        stopped = trainer(fake_api)
        assert (stopped["suspend"], stopped["replicas"]) == (True, 6)
        assert "nodeSelector" not in stopped["template"]["spec"]
        evicted = fake_api.get("workloads", workload["metadata"]["name"], "team")
        assert condition(evicted, "Preempted") is not None
        assert running(fake_api, "team", "holder")

        # the urgent Job finishes: 3 GPUs free again, and the TrainingRun runs 3 of its trainers again
        await fake_api.complete_job("team", "urgent")
        await fake_api.wait_for(lambda: trainer(fake_api)["suspend"] is False, timeout=HANG)
        assert trainer(fake_api)["replicas"] == 3
