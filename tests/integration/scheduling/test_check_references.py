"""A ClusterQueue naming an AdmissionCheck that does not exist is inactive, as in Kueue: its ``Active``
condition says ``AdmissionCheckNotFound``, no Workload reserves quota in it and its Workloads say the queue
is inactive. Creating the check (the built-in manual approval, which the controller marks Active) opens
the queue and the waiting Workload reserves quota."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakeapi import FakeApiServer
from tests.integration.scheduling.test_checks import SETUP, check_state, gpu_job, workload_of
from tests.support.fake_cluster import as_controller, condition, is_true, serving_webhook
from tests.support.replica import Replica

JSON = dict[str, Any]
CHECK = """apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: finance}
spec: {controllerName: kueue-webhook.io/manual-approval}
"""
#: the same cluster, without the ``finance`` AdmissionCheck the ClusterQueue names
WITHOUT_CHECK = SETUP.replace(CHECK.rstrip("\n") + "\n---\n", "")


@pytest.fixture
async def serving(fake_api: FakeApiServer, tmp_path: Path) -> AsyncIterator[Replica]:
    assert WITHOUT_CHECK != SETUP
    await fake_api.apply_manifests(WITHOUT_CHECK)
    async with serving_webhook(fake_api, tmp_path, kubeconfig=as_controller(fake_api)) as started:
        yield started


def active(cluster_queue: JSON | None) -> tuple[str, str, str] | None:
    found = condition(cluster_queue, "Active")
    return None if found is None else (found["status"], found["reason"], found["message"])


def quota_reserved_message(workload: JSON | None) -> str:
    return str((condition(workload, "QuotaReserved") or {}).get("message", ""))


async def test_missing_check_keeps_the_queue_inactive_until_the_check_is_created(
    fake_api: FakeApiServer, serving: Replica
) -> None:
    await fake_api.create(gpu_job("finetune"))
    await fake_api.wait_for(
        lambda: quota_reserved_message(workload_of(fake_api, "finetune")) == "ClusterQueue a100 is inactive"
    )
    await fake_api.wait_for(lambda: active(fake_api.get("clusterqueues", "a100")) is not None)
    assert active(fake_api.get("clusterqueues", "a100")) == (
        "False",
        "AdmissionCheckNotFound",
        "Can't admit new workloads: references missing AdmissionCheck(s): finance.",
    )
    waiting = workload_of(fake_api, "finetune")
    assert not is_true(waiting, "QuotaReserved") and check_state(waiting) is None

    await fake_api.apply_manifests(CHECK)
    await fake_api.wait_for(lambda: is_true(fake_api.get("admissionchecks", "finance"), "Active"))
    await fake_api.wait_for(lambda: is_true(workload_of(fake_api, "finetune"), "QuotaReserved"))
    await fake_api.wait_for(lambda: is_true(fake_api.get("clusterqueues", "a100"), "Active"))
    assert active(fake_api.get("clusterqueues", "a100")) == ("True", "Ready", "Can admit new workloads")
    await fake_api.wait_for(lambda: check_state(workload_of(fake_api, "finetune")) is not None)
    state = check_state(workload_of(fake_api, "finetune"))
    assert state is not None and (state["name"], state["state"]) == ("finance", "Pending")
