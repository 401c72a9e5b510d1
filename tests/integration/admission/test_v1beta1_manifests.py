"""Kueue's documentation examples, written in the deprecated kueue.x-k8s.io/v1beta1, applied unchanged.

The fake kube-apiserver stores v1beta2 and calls the CRDs' conversion webhook (our ``/convert``) for every
v1beta1 read and write, as kube-apiserver does; the caBundle comes from ``certs --patch-webhook-
configurations``. A user applies a v1beta1 file with ``spec.cohort`` and reads back a v1beta2 ClusterQueue
with ``spec.cohortName``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_webhook.http.certs import KUEUE_CRDS
from kueue_webhook.http.server import WebhookServer
from tests.fakeapi import FakeApiServer
from tests.support.webhook import registered_webhook

# The shape of Kueue's docs ("Administer cluster quotas", single ClusterQueue setup), in v1beta1.
KUEUE_DOCS_V1BETA1 = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: "default-flavor"
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: "cluster-queue"
spec:
  namespaceSelector: {} # match all.
  cohort: "team-a"
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: "default-flavor"
      resources:
      - name: "cpu"
        nominalQuota: 9
      - name: "memory"
        nominalQuota: 36Gi
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata:
  namespace: "default"
  name: "user-queue"
spec:
  clusterQueue: "cluster-queue"
"""


@pytest.fixture
async def converting(fake_api: FakeApiServer, tmp_path: Path) -> AsyncIterator[WebhookServer]:
    async with registered_webhook(fake_api, tmp_path, crds=KUEUE_CRDS) as server:
        yield server


async def run(kubectl: Callable[..., Any], *args: str, input: str | None = None) -> Any:
    return await asyncio.to_thread(kubectl, *args, input=input)


async def test_kueue_docs_v1beta1_manifests_apply_and_read_back_as_v1beta2(
    fake_api: FakeApiServer, kubectl: Callable[..., Any], converting: WebhookServer
) -> None:
    applied = await run(kubectl, "apply", "-f", "-", input=KUEUE_DOCS_V1BETA1)
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.split("\n")[:3] == [
        "resourceflavor.kueue.x-k8s.io/default-flavor created",
        "clusterqueue.kueue.x-k8s.io/cluster-queue created",
        "localqueue.kueue.x-k8s.io/user-queue created",
    ]
    got = await run(kubectl, "get", "clusterqueue", "cluster-queue", "-o", "yaml")
    assert got.returncode == 0, got.stderr
    queue = yaml.safe_load(got.stdout)
    assert queue["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert queue["spec"]["cohortName"] == "team-a"
    assert "cohort" not in queue["spec"]
    assert queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["nominalQuota"] == "36Gi"
    local = fake_api.get("localqueues", "user-queue", "default")
    assert local is not None and local["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert fake_api.conversion.calls, "the CRDs' conversion webhook was never called"


async def test_deprecated_v1beta1_fungibility_value_is_stored_under_its_v1beta2_name(
    fake_api: FakeApiServer, kubectl: Callable[..., Any], converting: WebhookServer
) -> None:
    manifest = KUEUE_DOCS_V1BETA1.replace(
        '  cohort: "team-a"\n', '  cohort: "team-a"\n  flavorFungibility: {whenCanPreempt: Preempt}\n'
    )
    applied = await run(kubectl, "apply", "-f", "-", input=manifest)
    assert applied.returncode == 0, applied.stderr
    stored = fake_api.get("clusterqueues", "cluster-queue")
    assert stored is not None
    assert stored["spec"]["flavorFungibility"]["whenCanPreempt"] == "MayStopSearch"


async def test_v1beta1_clients_read_v1beta1_and_reapplying_changes_nothing(
    fake_api: FakeApiServer, kubectl: Callable[..., Any], converting: WebhookServer
) -> None:
    assert (await run(kubectl, "apply", "-f", "-", input=KUEUE_DOCS_V1BETA1)).returncode == 0
    got = await run(kubectl, "get", "clusterqueues.v1beta1.kueue.x-k8s.io", "cluster-queue", "-o", "yaml")
    assert got.returncode == 0, got.stderr
    queue = yaml.safe_load(got.stdout)
    assert queue["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert queue["spec"]["cohort"] == "team-a"
    before = fake_api.get("clusterqueues", "cluster-queue")
    again = await run(kubectl, "apply", "-f", "-", input=KUEUE_DOCS_V1BETA1)
    assert again.returncode == 0, again.stderr
    assert "clusterqueue.kueue.x-k8s.io/cluster-queue unchanged" in again.stdout
    after = fake_api.get("clusterqueues", "cluster-queue")
    assert before is not None and after is not None
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_v1beta1_write_fails_clearly_when_the_conversion_webhook_is_unreachable(
    fake_api: FakeApiServer, kubectl: Callable[..., Any], converting: WebhookServer
) -> None:
    await converting.stop()
    applied = await run(kubectl, "apply", "-f", "-", input=KUEUE_DOCS_V1BETA1)
    assert applied.returncode != 0
    assert "conversion webhook for kueue.x-k8s.io/v1beta1, Kind=ResourceFlavor failed" in applied.stderr
    assert fake_api.get("resourceflavors", "default-flavor") is None
