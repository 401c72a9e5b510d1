"""``kubectl kueue`` (the console script) against the fake API server with a controller running.

The script runs as a separate process, as kubectl runs a plugin, with the kubeconfig in ``$KUBECONFIG``; the
visibility API reaches the replica through the fake's aggregator (an APIService naming the Service, the
Service's endpoint the replica's port), as on a cluster. Research's 4 GPUs hold two 2-GPU Jobs; the next two
wait, in order.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_webhook import __version__
from kueue_webhook.http.certs import CertificateSet, ca_bundle
from tests.fakeapi import FakeApiServer
from tests.support.builders import gpu_limits, pod_set, workload
from tests.support.fake_cluster import condition
from tests.support.replica import CONTROLLER_MANIFESTS, certificates, replica
from tests.support.research import HANG, QUOTA, gpu_job, running, workloads_of

JSON = dict[str, Any]
SCRIPT = Path(sys.executable).parent / "kubectl-kueue"
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"


async def kueue(kubeconfig: Path, *args: str, stdin: str = "") -> tuple[int, str, str]:
    """Run the console script without blocking the loop the replica answers on."""
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "NO_COLOR": "1"}
    env["PATH"] = f"{Path(KUBECTL).parent}{os.pathsep}{env.get('PATH', '')}"
    process = await asyncio.create_subprocess_exec(
        str(SCRIPT),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin.encode()), HANG)
    return process.returncode or 0, out.decode(), err.decode()


def pending(fake_api: FakeApiServer, name: str) -> bool:
    found = workloads_of(fake_api, name)
    reserved = condition(found[0], "QuotaReserved") if found else None
    return reserved is not None and reserved["status"] == "False"


async def serve_visibility(fake_api: FakeApiServer, port: int, tls: CertificateSet) -> None:
    """Our APIService (manifests/controller/visibility.yaml) with its Service's endpoint at the replica, and
    the caBundle it is verified with (as `certs --patch-webhook-configurations` or the leader sets it)."""
    apiservice = next(yaml.safe_load_all((CONTROLLER_MANIFESTS / "visibility.yaml").read_text()))
    apiservice["spec"]["caBundle"] = ca_bundle(tls)
    await fake_api.create(apiservice)
    fake_api.set_service_endpoint(namespace="kueue-system", name="kueue-webhook", address=f"127.0.0.1:{port}")


@pytest.fixture
def needs_script() -> None:
    if not SCRIPT.exists():
        pytest.skip(f"the console script is not installed at {SCRIPT} (pip install -e .)")


@pytest.mark.usefixtures("needs_script")
async def test_list_why_stop_and_resume_a_queue(fake_api: FakeApiServer, tmp_path: Path) -> None:
    await fake_api.apply_manifests(QUOTA)
    tls = certificates(tmp_path / "tls")
    config = fake_api.kubeconfig_path(namespace="team-a")  # the context's namespace, as kubectl uses it
    async with replica(fake_api.kubeconfig_path(), tls=tls) as serving:
        await asyncio.wait_for(serving.controller.leading.wait(), HANG)
        await serve_visibility(fake_api, serving.port, tls)
        for name in ("j0", "j1", "j2", "j3"):
            await fake_api.create(gpu_job(name))
        await fake_api.wait_for(lambda: running(fake_api, "j0") and running(fake_api, "j1"), timeout=HANG)
        await fake_api.wait_for(lambda: pending(fake_api, "j2") and pending(fake_api, "j3"), timeout=HANG)
        names = {job: workloads_of(fake_api, job)[0]["metadata"]["name"] for job in ("j0", "j1", "j2", "j3")}

        code, out, err = await kueue(config, "list", "workloads")
        assert code == 0, err
        lines = out.splitlines()
        assert [c.strip() for c in lines[0].split("  ") if c.strip()] == [
            "NAME",
            "JOB TYPE",
            "JOB NAME",
            "LOCALQUEUE",
            "CLUSTERQUEUE",
            "STATUS",
            "POSITION IN QUEUE",
            "EXEC TIME",
            "AGE",
        ]
        rows = {line.split()[0]: line.split() for line in lines[1:]}
        assert rows[names["j0"]][1:6] == ["job.batch", "j0", "team-a-gpu", "research", "ADMITTED"]
        # pending: its rank in the LocalQueue from the visibility API, no exec time yet
        assert rows[names["j2"]][1:7] == ["job.batch", "j2", "team-a-gpu", "research", "PENDING", "0"]
        assert rows[names["j3"]][5:7] == ["PENDING", "1"]

        code, out, _ = await kueue(config, "list", "kwl", "-A", "--status", "pending", "-o", "name")
        assert code == 0
        assert sorted(out.splitlines()) == [f"workload.kueue.x-k8s.io/{names[j]}" for j in ("j2", "j3")]
        code, out, _ = await kueue(config, "list", "wl", "--for", "job/j3")
        assert code == 0 and [line.split()[0] for line in out.splitlines()[1:]] == [names["j3"]]

        code, out, err = await kueue(config, "why", "job/j3")
        assert code == 0, err
        assert f"Job team-a/j3 -> Workload {names['j3']}" in out
        assert "PENDING" in out
        assert "insufficient unused quota for nvidia.com/gpu in flavor gpu-nodes, 2 more needed" in out
        assert "1 in ClusterQueue, 1 in LocalQueue" in out
        assert "gpu-nodes   nvidia.com/gpu   4" in out
        # the two running Jobs have no maximumExecutionTimeSeconds: when they end is not known, and it says so
        assert (
            "Estimated start: unknown: 2 admitted and 1 other pending Workload(s) of the cohort have no "
            "maximumExecutionTimeSeconds" in out
        )

        code, out, _ = await kueue(config, "why", "job/j2", "-o", "json")
        report = json.loads(out)
        assert report["reason"] == "WaitingForQuota"
        assert report["position"] == {"positionInClusterQueue": 0, "positionInLocalQueue": 0}
        assert report["clusterQueue"]["resources"][0]["usage"] == "4"
        assert report["estimatedStart"]["at"] is None

        code, out, _ = await kueue(config, "stop", "localqueue", "team-a-gpu", "--keep-already-running")
        assert (code, out) == (0, "localqueue.kueue.x-k8s.io/team-a-gpu\n")
        assert fake_api.get("localqueues", "team-a-gpu", "team-a")["spec"]["stopPolicy"] == "Hold"
        code, out, _ = await kueue(config, "resume", "lq", "team-a-gpu")
        assert code == 0
        assert fake_api.get("localqueues", "team-a-gpu", "team-a")["spec"]["stopPolicy"] == "None"

        code, out, _ = await kueue(config, "stop", "workload", names["j3"], "--dry-run", "server")
        assert (code, out) == (0, f"workload.kueue.x-k8s.io/{names['j3']} stopped (server dry run)\n")
        assert fake_api.get("workloads", names["j3"], "team-a")["spec"].get("active") is not False


@pytest.mark.usefixtures("needs_script")
async def test_errors_are_kubectls_and_exit_1(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(QUOTA)
    config = fake_api.kubeconfig_path()
    code, out, err = await kueue(config, "why", "job/nope", "-n", "team-a")
    assert (code, out, err) == (1, "", 'Error from server (NotFound): jobs.batch "nope" not found\n')
    code, _, err = await kueue(config, "why", "gizmo/x", "-n", "team-a")
    assert (code, err) == (1, 'error: the server doesn\'t have a resource type "gizmo"\n')
    code, _, err = await kueue(config, "stop", "cq", "nope")
    assert (code, err) == (1, 'Error from server (NotFound): clusterqueues.kueue.x-k8s.io "nope" not found\n')
    code, _, err = await kueue(config, "list", "wl", "--status", "running")
    assert (code, err) == (
        1,
        'error: invalid status value (running). Must be "all", "pending", "admitted" or "finished"\n',
    )
    code, _, err = await kueue(config, "list", "wl", "-n", "default")
    assert (code, err) == (0, "No resources found in default namespace.\n")


@pytest.mark.usefixtures("needs_script")
async def test_create_queues_and_pass_through_to_kubectl(fake_api: FakeApiServer) -> None:
    config = fake_api.kubeconfig_path()
    code, out, err = await kueue(config, "create", "rf", "gpu", "--node-labels", "gpu=true")
    assert (code, out) == (0, "resourceflavor.kueue.x-k8s.io/gpu created\n"), err
    code, out, err = await kueue(
        config, "create", "cq", "cq1", "--cohort", "all", "--nominal-quota", "gpu:cpu=4;memory=8Gi"
    )
    assert (code, out) == (0, "clusterqueue.kueue.x-k8s.io/cq1 created\n"), err
    spec = fake_api.get("clusterqueues", "cq1")["spec"]
    assert spec["resourceGroups"] == [
        {
            "coveredResources": ["cpu", "memory"],
            "flavors": [
                {
                    "name": "gpu",
                    "resources": [
                        {"name": "cpu", "nominalQuota": "4"},
                        {"name": "memory", "nominalQuota": "8Gi"},
                    ],
                }
            ],
        }
    ]
    code, _, err = await kueue(config, "create", "lq", "lq1", "-c", "missing", "-n", "default")
    assert (code, err) == (
        1,
        'Error from server (NotFound): clusterqueues.kueue.x-k8s.io "missing" not found\n',
    )
    code, out, _ = await kueue(config, "create", "lq", "lq1", "-c", "cq1", "-n", "default")
    assert (code, out) == (0, "localqueue.kueue.x-k8s.io/lq1 created\n")
    code, out, err = await kueue(config, "list", "lq", "-c", "cq1", "-n", "default")
    assert code == 0 and out.splitlines()[0].split() == [
        "NAME",
        "CLUSTERQUEUE",
        "PENDING",
        "WORKLOADS",
        "ADMITTED",
        "WORKLOADS",
        "AGE",
    ], err
    assert out.splitlines()[1].split()[:4] == ["lq1", "cq1", "0", "0"]
    if not Path(KUBECTL).exists():
        pytest.skip("kubectl is not installed: pass-through not checked")
    code, out, err = await kueue(config, "get", "cq", "cq1", "-o", "jsonpath={.spec.cohortName}")
    assert (code, out) == (0, "all"), err


def direct_workload(name: str, *, seconds: int) -> JSON:
    """A Workload made by hand (no Job), with the time limit Kueue evicts it at."""
    gpus = pod_set(image="busybox", resources=gpu_limits(2), restartPolicy="Never")
    return workload(
        name, "team-a", queue="team-a-gpu", spec={"maximumExecutionTimeSeconds": seconds}, pod_sets=[gpus]
    )


@pytest.mark.usefixtures("needs_script")
async def test_why_estimates_the_start_from_the_running_workloads_time_limits(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    await fake_api.apply_manifests(QUOTA)
    config = fake_api.kubeconfig_path(namespace="team-a")
    tls = certificates(tmp_path / "tls")
    async with replica(fake_api.kubeconfig_path(), tls=tls) as serving:
        await asyncio.wait_for(serving.controller.leading.wait(), HANG)
        await serve_visibility(fake_api, serving.port, tls)
        await fake_api.create(direct_workload("short", seconds=600))
        await fake_api.create(direct_workload("long", seconds=3600))

        def reserved(name: str) -> bool:
            found = condition(fake_api.get("workloads", name, "team-a"), "QuotaReserved")
            return found is not None and found["status"] == "True"

        await fake_api.wait_for(lambda: reserved("short") and reserved("long"), timeout=HANG)
        await fake_api.create(direct_workload("next", seconds=60))
        await fake_api.wait_for(
            lambda: (
                (condition(fake_api.get("workloads", "next", "team-a"), "QuotaReserved") or {}).get("status")
                == "False"
            ),
            timeout=HANG,
        )
        code, out, err = await kueue(config, "why", "workload/next", "-o", "json")
        assert code == 0, err
        start = json.loads(out)["estimatedStart"]
        # "short" frees its 2 GPUs 600 s after its admission, a moment before this ran
        assert start["unknown"] is None
        assert start["replayed"] == {"admitted": 2, "pending": 1, "withoutMaximumExecutionTime": 0}
        moment = datetime.fromisoformat(start["at"].replace("Z", "+00:00"))
        assert 500 < (moment - datetime.now(UTC)).total_seconds() <= 601


@pytest.mark.usefixtures("needs_script")
async def test_delete_workload_deletes_its_job_after_asking_and_version(fake_api: FakeApiServer) -> None:
    await fake_api.apply_manifests(QUOTA)
    config = fake_api.kubeconfig_path(namespace="team-a")
    job = await fake_api.create(gpu_job("j0"))
    owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "j0",
        "uid": job["metadata"]["uid"],
        "controller": True,
    }
    owned = direct_workload("job-j0-abcde", seconds=60)
    owned["metadata"]["ownerReferences"] = [owner]
    await fake_api.create(owned)
    await fake_api.create(direct_workload("alone", seconds=60))

    code, out, _ = await kueue(config, "delete", "workload", "job-j0-abcde", stdin="n\n")
    assert (code, out) == (
        0,
        "This operation will also delete:\n"
        "  - jobs.batch/j0 associated with the team-a/job-j0-abcde workload\n"
        "Do you want to proceed (y/n)? Deletion is canceled\n",
    )
    assert fake_api.get("jobs", "j0", "team-a") is not None
    code, out, _ = await kueue(config, "delete", "kwl", "job-j0-abcde", "alone", "--yes")
    assert (code, sorted(out.splitlines())) == (
        0,
        ["jobs.batch/j0 deleted", "workload.kueue.x-k8s.io/alone deleted"],
    )
    assert (
        fake_api.get("jobs", "j0", "team-a") is None and fake_api.get("workloads", "alone", "team-a") is None
    )
    code, out, err = await kueue(config, "delete", "wl", "ghost")
    assert (code, out, err) == (0, "", 'workloads.kueue.x-k8s.io "ghost" not found\n')

    assert await kueue(config, "version") == (0, f"Client Version: {__version__}\n", "")
