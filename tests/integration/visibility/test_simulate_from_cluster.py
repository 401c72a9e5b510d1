"""``kueue-webhook simulate --from-cluster`` against the fake API server, after a controller admitted what
fits: research's 4 GPUs run two Jobs (limits 10 minutes and 1 hour), a third waits; an edit raising the quota
to 6 GPUs starts it at once instead of when the first ends. The command only reads (GET), and its errors are
kubectl's (exit 1) or the edit's (exit 2)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from tests.fakeapi import FakeApiServer
from tests.integration.visibility.test_kubectl_kueue import pending
from tests.integration.visibility.test_kubectl_kueue_time_limit import limited_job
from tests.support.replica import certificates, replica
from tests.support.research import HANG, QUOTA, running

SCRIPT = Path(sys.executable).parent / "kueue-webhook"
EDITS = """
kind: ClusterQueue
metadata: {name: research}
spec:
  resourceGroups:
  - flavors:
    - name: gpu-nodes
      resources: [{name: nvidia.com/gpu, nominalQuota: 6}]
"""


async def simulate(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        str(SCRIPT),
        "simulate",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "KUBECONFIG": ""},
    )
    out, err = await asyncio.wait_for(process.communicate(), HANG)
    return process.returncode or 0, out.decode(), err.decode()


@pytest.fixture
def needs_script() -> None:
    if not SCRIPT.exists():
        pytest.skip(f"the console script is not installed at {SCRIPT} (pip install -e .)")


@pytest.mark.usefixtures("needs_script")
async def test_a_raised_quota_starts_the_waiting_job_sooner(fake_api: FakeApiServer, tmp_path: Path) -> None:
    await fake_api.apply_manifests(QUOTA)
    async with replica(fake_api.kubeconfig_path(), tls=certificates(tmp_path / "tls")) as serving:
        await asyncio.wait_for(serving.controller.leading.wait(), HANG)
        await fake_api.create(limited_job("short", 600))
        await fake_api.create(limited_job("long", 3600))
        await fake_api.wait_for(
            lambda: running(fake_api, "short") and running(fake_api, "long"), timeout=HANG
        )
        job = limited_job("next", 60)
        del job["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"]  # runs the assumed time
        await fake_api.create(job)
        await fake_api.wait_for(lambda: pending(fake_api, "next"), timeout=HANG)
    edits = tmp_path / "edits.yaml"
    edits.write_text(EDITS)
    config = str(fake_api.kubeconfig_path())
    before = len(fake_api.requests)
    code, out, err = await simulate("--from-cluster", "--kubeconfig", config, str(edits), "-o", "json")
    assert code == 0, err
    methods = {line.split()[0] for line in fake_api.requests[before:]}
    assert methods == {"GET"}  # read only
    report = json.loads(out)
    assert (report["admittedWorkloads"], report["pendingWorkloads"]) == (2, 1)
    assert report["edits"] == ["ClusterQueue research: changed spec.resourceGroups"]
    (row,) = report["workloads"]
    assert row["name"].startswith("job-next-") and row["clusterQueue"] == "research"
    assert (row["runtimeFrom"], row["runtimeSeconds"]) == ("assumed", 3600)
    # as it is: it starts when "short" reaches its 10 minutes; with 6 GPUs, at once
    assert 500 < row["start"]["inSeconds"] <= 600
    assert row["startWithEdits"]["inSeconds"] == 0
    assert row["change"] == "sooner" and row["changeSeconds"] == -row["start"]["inSeconds"]

    code, out, err = await simulate(
        "--from-cluster", "--kubeconfig", config, str(edits), "--assume-runtime", "2h"
    )
    assert code == 0, err
    assert "are taken to run 2h" in out and "1 sooner, 0 later, 0 unchanged." in out


@pytest.mark.usefixtures("needs_script")
async def test_bad_edits_exit_2_and_an_unreachable_cluster_exit_1(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    await fake_api.apply_manifests(QUOTA)
    config = str(fake_api.kubeconfig_path())
    edits = tmp_path / "edits.yaml"
    edits.write_text("kind: Workload\nmetadata: {name: x}\n")
    code, out, err = await simulate("--from-cluster", "--kubeconfig", config, str(edits))
    assert (code, out) == (2, "")
    assert f"{edits}: document 1: kind 'Workload' cannot be edited here" in err
    code, _, err = await simulate("--from-cluster", "--kubeconfig", config, "--assume-runtime", "soon")
    assert code == 2 and err.startswith("kueue-webhook simulate: --assume-runtime:")
    code, _, err = await simulate("--from-cluster", "--kubeconfig", str(tmp_path / "missing"))
    assert code == 1 and err.startswith("kueue-webhook simulate: reading the cluster: error:")
    code, _, err = await simulate()
    assert code == 2 and "give the FILEs to replay (or --from-cluster)" in err
