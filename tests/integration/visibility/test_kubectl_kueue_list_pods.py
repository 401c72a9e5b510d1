"""``kubectl kueue list pods --for job/NAME`` against the fake API server: only the Job's pods (by Kueue's
label for Jobs, ``batch.kubernetes.io/job-name``), narrowed further by ``-l``, across namespaces with ``-A``;
an unknown Job is kubectl's NotFound and a kind with no pod label is ``unsupported kind`` (exit 1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakeapi import FakeApiServer
from tests.integration.visibility.test_kubectl_kueue import kueue, needs_script
from tests.support.research import QUOTA, gpu_job

__all__ = ["needs_script"]
JSON = dict[str, Any]


def pod(name: str, job: str, namespace: str = "team-a", **labels: str) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"batch.kubernetes.io/job-name": job, **labels},
        },
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


@pytest.mark.usefixtures("needs_script")
async def test_the_pods_of_a_job(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(QUOTA)
    await fake_api.create(gpu_job("train"))
    for created in (
        pod("train-a", "train", index="0"),
        pod("train-b", "train", index="1"),
        pod("other-a", "other"),
    ):
        await fake_api.create(created)
    await fake_api.apply_manifests("apiVersion: v1\nkind: Namespace\nmetadata: {name: team-b}\n")
    await fake_api.create(pod("train-c", "train", "team-b"))  # another namespace's Job of the same name
    config: Path = fake_api.kubeconfig_path(namespace="team-a")

    code, out, err = await kueue(config, "list", "pods", "--for", "job/train")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[0] == "NAME"
    assert [line.split()[0] for line in lines[1:]] == ["train-a", "train-b"]
    code, out, _ = await kueue(
        config, "list", "po", "--for", "jobs.batch/train", "-l", "index=1", "-o", "name"
    )
    assert (code, out) == (0, "pod/train-b\n")
    code, out, _ = await kueue(config, "list", "pods", "--for", "job/train", "-A")
    rows = [line.split()[:2] for line in out.splitlines()[1:]]
    assert out.splitlines()[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert rows == [["team-a", "train-a"], ["team-a", "train-b"], ["team-b", "train-c"]]

    code, out, err = await kueue(config, "list", "pods", "--for", "job/nope")
    assert (code, out, err) == (1, "", 'Error from server (NotFound): jobs.batch "nope" not found\n')
    code, _, err = await kueue(config, "list", "pods", "--for", "localqueue/team-a-gpu")
    assert (code, err) == (1, "error: unsupported kind: LocalQueue\n")
    code, _, err = await kueue(config, "list", "pods")
    assert (code, err) == (1, 'error: required flag(s) "for" not set\n')
    code, out, err = await kueue(config, "list", "pods", "--for", "job/train", "-l", "index=9")
    assert (code, out, err) == (0, "", "No resources found in team-a namespace.\n")
