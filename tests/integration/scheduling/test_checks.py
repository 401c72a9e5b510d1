"""Admission checks end to end: the built-in manual approval through the real controller and webhook.

A ClusterQueue with the ``finance`` check reserves quota for a Job's Workload but does not admit it;
the Workload lists the check as Pending, the Job stays suspended. An approver's annotation makes the
check Ready, the Workload Admitted and the Job start; anyone else is refused by the webhook; a rejection
deactivates the Workload and gives its quota back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import WORKLOADS
from tests.fakeapi import FakeApiServer
from tests.support import fake_cluster as harness
from tests.support.builders import gpu_limits, queued_job
from tests.support.fake_cluster import (
    CONTROLLER_USER,
    as_controller,
    condition,
    controller_config,
    is_true,
    serving_webhook,
)
from tests.support.replica import Replica

JSON = dict[str, Any]
CONTROLLER = CONTROLLER_USER
KEY = "approval.kueue-webhook.io/finance"

SETUP = (
    controller_config(f"""
manualApproval:
  approvers: [alice, "group:finance-leads"]
controllerIdentity: {{username: "{CONTROLLER}"}}
""")
    + """---
apiVersion: v1
kind: Namespace
metadata: {name: ml}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: finance}
spec: {controllerName: kueue-webhook.io/manual-approval}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
spec: {nodeLabels: {gpu.example.com/model: a100}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: a100}
spec:
  namespaceSelector: {}
  admissionChecksStrategy:
    admissionChecks: [{name: finance}]
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: a100, namespace: ml}
spec: {clusterQueue: a100}
"""
)


def gpu_job(name: str, gpus: int = 8) -> JSON:
    return queued_job("ml", name, queue="a100", resources=gpu_limits(gpus))


def workload_of(fake_api: FakeApiServer, job: str) -> JSON | None:
    return harness.workload_of(fake_api, "ml", job)


def check_state(workload: JSON | None) -> JSON | None:
    states = ((workload or {}).get("status") or {}).get("admissionChecks") or []
    return dict(states[0]) if states else None


def running(fake_api: FakeApiServer, name: str) -> bool:
    return harness.running(fake_api, "ml", name)


@pytest.fixture
async def serving(fake_api: FakeApiServer, tmp_path: Path) -> AsyncIterator[Replica]:
    """A replica serving the webhook too, registered in the fake API with our webhook configurations."""
    await fake_api.apply_manifests(SETUP)
    async with serving_webhook(fake_api, tmp_path, kubeconfig=as_controller(fake_api)) as started:
        yield started


async def annotate(
    fake_api: FakeApiServer, workload: JSON, value: str, *, user: str, groups: list[str]
) -> JSON:
    client = await KubeClient.connect(kubeconfig=str(fake_api.kubeconfig_path(user=user, groups=groups)))
    try:
        return await client.patch(
            WORKLOADS,
            name=workload["metadata"]["name"],
            namespace="ml",
            patch={"metadata": {"annotations": {KEY: value}}},
        )
    finally:
        await client.close()


async def test_workload_waits_for_approval_and_an_approver_admits_it(
    fake_api: FakeApiServer, serving: Replica
) -> None:
    await fake_api.create(gpu_job("finetune"))
    await fake_api.wait_for(lambda: check_state(workload_of(fake_api, "finetune")) is not None)
    waiting = workload_of(fake_api, "finetune")
    assert is_true(waiting, "QuotaReserved")
    admitted = condition(waiting, "Admitted")
    assert admitted is not None and (admitted["status"], admitted["reason"], admitted["message"]) == (
        "False",
        "UnsatisfiedChecks",
        "The workload has not all checks ready",
    )
    await fake_api.wait_for(lambda: (check_state(workload_of(fake_api, "finetune")) or {}).get("message", ""))
    state = check_state(workload_of(fake_api, "finetune"))
    assert state is not None and (state["name"], state["state"]) == ("finance", "Pending")
    assert state["message"] == f"Waiting for approval: an approver sets annotation {KEY}=approved"
    assert not running(fake_api, "finetune")
    await fake_api.wait_for(lambda: is_true(fake_api.get("admissionchecks", "finance"), "Active"))
    active = condition(fake_api.get("admissionchecks", "finance"), "Active")
    assert active is not None and active["message"] == "The admission check is active"

    workload = workload_of(fake_api, "finetune")
    assert workload is not None
    with pytest.raises(ApiError) as denied:
        await annotate(fake_api, workload, "approved", user="mallory", groups=["system:authenticated"])
    assert denied.value.status == 403
    assert f"metadata.annotations[{KEY}]: Forbidden: user mallory may not approve" in denied.value.message
    assert KEY not in (workload_of(fake_api, "finetune") or {}).get("metadata", {}).get("annotations", {})

    await annotate(fake_api, workload, "approved", user="bob", groups=["finance-leads"])
    await fake_api.wait_for(lambda: running(fake_api, "finetune"))
    started = workload_of(fake_api, "finetune")
    assert is_true(started, "Admitted")
    state = check_state(started)
    assert state is not None and (state["state"], state["message"]) == ("Ready", "Approved")
    registry = serving.controller.metrics.registry
    labels = {"cluster_queue": "a100", "priority_class": "", "replica_role": "leader"}
    assert registry.get_sample_value("kueue_admitted_workloads_total", labels) == 1


async def test_a_rejected_workload_is_deactivated_and_gives_its_quota_back(
    fake_api: FakeApiServer, serving: Replica
) -> None:
    await fake_api.create(gpu_job("expensive"))
    await fake_api.wait_for(
        lambda: (check_state(workload_of(fake_api, "expensive")) or {}).get("message", "")
    )
    workload = workload_of(fake_api, "expensive")
    assert workload is not None
    await annotate(fake_api, workload, "rejected", user="alice", groups=[])

    def released() -> bool:
        current = workload_of(fake_api, "expensive")
        return current is not None and condition(current, "Requeued") is not None

    await fake_api.wait_for(released)
    current = workload_of(fake_api, "expensive")
    assert current is not None and current["spec"]["active"] is False
    evicted = condition(current, "Evicted")
    assert evicted is not None and (evicted["reason"], evicted["message"]) == (
        "DeactivatedDueToAdmissionCheck",
        "The workload is deactivated due to "
        'AdmissionCheck in Rejected state: "finance" (Rejected by an approver)',
    )
    requeued = condition(current, "Requeued")
    assert requeued is not None
    assert (requeued["status"], requeued["reason"]) == ("False", "DeactivatedDueToAdmissionCheck")
    registry = serving.controller.metrics.registry
    labels = {
        "cluster_queue": "a100",
        "reason": "Deactivated",
        "underlying_cause": "AdmissionCheck",
        "priority_class": "",
        "replica_role": "leader",
    }
    assert registry.get_sample_value("kueue_evicted_workloads_total", labels) == 1
    assert not is_true(current, "QuotaReserved") and "admission" not in current["status"]
    assert not running(fake_api, "expensive")

    # the quota it held is free: the next Job is admitted as far as its own check
    await fake_api.create(gpu_job("next"))
    await fake_api.wait_for(lambda: is_true(workload_of(fake_api, "next"), "QuotaReserved"))
