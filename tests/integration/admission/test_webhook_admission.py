"""The webhook behind an API server, as a user meets it through kubectl.

The shipped webhook configurations (manifests/controller) are loaded into the fake kube-apiserver, their
caBundle is filled by ``kueue-webhook certs --patch-webhook-configurations`` through the API, and the
Service endpoint points at our HTTPS server. From then on every ``kubectl`` write of a Job or a Kueue object
goes through the webhook exactly as on a cluster, and the tests read what kubectl prints.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_webhook.api.config import Configuration, parse_configuration
from tests.fakeapi import FakeApiServer
from tests.support.webhook import registered_webhook

CONTROLLER = "system:serviceaccount:kueue-system:kueue-webhook"
CONTROLLER_TOKEN = "controller-token"
ENFORCING = parse_configuration(
    "labelPolicy:\n  enforcedNamespaceSelector: {matchLabels: {queues: required}}\n"
)
assert isinstance(ENFORCING, Configuration)


@pytest.fixture
async def cluster(fake_api: FakeApiServer, tmp_path: Path) -> AsyncIterator[list[Configuration]]:
    """Our webhook registered in the fake API with the shipped configurations and a patched caBundle.

    Yields the live configuration (a one-element list tests may replace).
    """
    config = [ENFORCING]
    async with registered_webhook(fake_api, tmp_path, config=lambda: config[0]):
        fake_api.add_token(CONTROLLER_TOKEN, CONTROLLER, ["system:serviceaccounts"])
        await fake_api.apply_manifests(
            """
apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {queues: required}}
---
apiVersion: v1
kind: Namespace
metadata: {name: sandbox}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: gpu, namespace: team-a}
spec: {clusterQueue: research}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: cpu, namespace: team-a}
spec: {clusterQueue: research}
"""
        )
        yield config


Kubectl = Callable[..., Any]


async def run(kubectl: Kubectl, *args: str, input: str | None = None, token: str | None = None) -> Any:
    return await asyncio.to_thread(kubectl, *args, input=input, token=token)


JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: gpu}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox, resources: {limits: {nvidia.com/gpu: "1"}}}]
"""


async def test_kubectl_create_job_in_an_enforced_namespace_is_told_which_queues_exist(
    cluster: list[Configuration], kubectl: Kubectl
) -> None:
    result = await run(kubectl, "create", "job", "hello", "--image=busybox", "-n", "team-a")
    assert result.returncode == 1
    assert (
        'admission webhook "vjob.kueue.x-k8s.io" denied the request: '
        'metadata.labels[kueue.x-k8s.io/queue-name]: Required value: namespace "team-a" requires every Job '
        "to name its LocalQueue in the label kueue.x-k8s.io/queue-name; "
        'LocalQueues in namespace "team-a": "cpu", "gpu".'
    ) in result.stderr


async def test_other_namespaces_are_untouched(
    cluster: list[Configuration], kubectl: Kubectl, fake_api: FakeApiServer
) -> None:
    result = await run(kubectl, "create", "job", "hello", "--image=busybox", "-n", "sandbox")
    assert result.returncode == 0, result.stderr
    job = fake_api.get("jobs", "hello", "sandbox")
    assert job is not None and job["spec"].get("suspend") in (None, False)


async def test_labelled_job_is_created_suspended_and_only_the_controller_can_start_it(
    cluster: list[Configuration], kubectl: Kubectl, fake_api: FakeApiServer
) -> None:
    created = await run(kubectl, "create", "-f", "-", input=JOB)
    assert created.returncode == 0, created.stderr
    job = fake_api.get("jobs", "train", "team-a")
    assert job is not None and job["spec"]["suspend"] is True

    start = (
        "patch",
        "job",
        "train",
        "-n",
        "team-a",
        "--type=merge",
        "-p",
        json.dumps({"spec": {"suspend": False}}),
    )
    by_user = await run(kubectl, *start)
    assert by_user.returncode == 1
    assert "spec.suspend: Forbidden: only the queueing controller" in by_user.stderr
    assert 'user "admin" may not' in by_user.stderr

    by_controller = await run(kubectl, *start, token=CONTROLLER_TOKEN)
    assert by_controller.returncode == 0, by_controller.stderr
    job = fake_api.get("jobs", "train", "team-a")
    assert job is not None and job["spec"]["suspend"] is False


async def test_queue_label_cannot_be_removed_in_an_enforced_namespace(
    cluster: list[Configuration], kubectl: Kubectl
) -> None:
    assert (await run(kubectl, "create", "-f", "-", input=JOB)).returncode == 0
    result = await run(kubectl, "label", "job", "train", "-n", "team-a", "kueue.x-k8s.io/queue-name-")
    assert result.returncode == 1
    assert (
        'metadata.labels[kueue.x-k8s.io/queue-name]: Forbidden: namespace "team-a" requires the label'
        in result.stderr
    )


async def test_local_queue_cannot_be_moved_to_another_cluster_queue(
    cluster: list[Configuration], kubectl: Kubectl
) -> None:
    manifest = yaml.safe_dump(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "gpu", "namespace": "team-a"},
            "spec": {"clusterQueue": "elsewhere"},
        }
    )
    result = await run(kubectl, "apply", "-f", "-", input=manifest)
    assert result.returncode == 1
    assert "spec.clusterQueue" in result.stderr and "field is immutable" in result.stderr


async def test_cluster_queue_with_a_bad_namespace_selector_key_is_refused_as_kueue_refuses_it(
    cluster: list[Configuration], kubectl: Kubectl, fake_api: FakeApiServer
) -> None:
    manifest = yaml.safe_dump(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "selective"},
            "spec": {"namespaceSelector": {"matchLabels": {"bad key!": "x"}}, "resourceGroups": []},
        }
    )
    result = await run(kubectl, "apply", "-f", "-", input=manifest)
    assert result.returncode == 1
    assert (
        'admission webhook "vclusterqueue.kueue.x-k8s.io" denied the request: '
        'spec.namespaceSelector.matchLabels: Invalid value: "bad key!": name part must consist of '
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    ) in result.stderr
    assert fake_api.get("clusterqueues", "selective") is None
