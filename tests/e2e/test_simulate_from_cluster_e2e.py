"""``kueue-webhook simulate --from-cluster`` on a real API server seeded by a running controller: a
ClusterQueue of one CPU runs a 1-CPU Job labelled to run at most 10 minutes; two more wait, the first with no
limit (it runs the assumed hour), the second with a 5-minute one. The what-if of a second CPU says the first
waiting Job starts now instead of in about 10 minutes, and the second sooner too; the Jobs' labels reached
their Workloads' ``maximumExecutionTimeSeconds``."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.kinds import JOBS, WORKLOADS
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER
from tests.e2e.install import REPO_ROOT
from tests.e2e.support import leading_team_queue
from tests.support.replica import Replica

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, Any]
SCRIPT = Path(sys.executable).parent / "kueue-webhook"
HANG = 120.0  # seconds: a bound on a hang, never a pace
LIMIT = "kueue.x-k8s.io/max-exec-time-seconds"


def cpu_job(name: str, namespace: str, seconds: int | None) -> JSON:
    labels = {"kueue.x-k8s.io/queue-name": "e2e"}
    if seconds is not None:
        labels[LIMIT] = str(seconds)
    container = {"name": "work", "image": "busybox:1.36", "resources": {"requests": {"cpu": "1"}}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "suspend": True,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
        },
    }


async def run(*argv: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), HANG)
    return process.returncode or 0, out.decode(), err.decode()


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[KubeClient, Replica, str]]:
    if not SCRIPT.exists():
        pytest.skip(f"the console script is not installed at {SCRIPT} (pip install -e .)")
    code, _, err = await run(
        "kubectl", "--kubeconfig", KUBECONFIG, "apply", "-k", str(REPO_ROOT / "manifests" / "crds")
    )
    assert code == 0, err
    async with leading_team_queue(Path(KUBECONFIG), "e2e-whatif") as found:
        yield found


async def workloads_by_job(client: KubeClient, ns: str) -> dict[str, JSON]:
    items, _ = await client.list_all(WORKLOADS, namespace=ns)
    return {w["metadata"]["ownerReferences"][0]["name"]: w for w in items}


def reserved(workload: JSON | None) -> str | None:
    for condition in ((workload or {}).get("status") or {}).get("conditions") or []:
        if condition["type"] == "QuotaReserved":
            return str(condition["status"])
    return None


async def eventually(client: KubeClient, ns: str, want: dict[str, str]) -> dict[str, JSON]:
    deadline = asyncio.get_running_loop().time() + HANG
    while True:
        found = await workloads_by_job(client, ns)
        if all(reserved(found.get(job)) == status for job, status in want.items()):
            return found
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {want}: {found}")
        await asyncio.sleep(0.5)


async def test_a_second_cpu_starts_the_waiting_jobs_sooner(
    cluster: tuple[KubeClient, Replica, str], tmp_path: Path
) -> None:
    client, _, ns = cluster
    await client.create(JOBS, cpu_job("running", ns, 600), namespace=ns)
    await eventually(client, ns, {"running": "True"})
    await client.create(JOBS, cpu_job("first", ns, None), namespace=ns)
    await client.create(JOBS, cpu_job("second", ns, 300), namespace=ns)
    found = await eventually(client, ns, {"running": "True", "first": "False", "second": "False"})
    assert [found[j]["spec"].get("maximumExecutionTimeSeconds") for j in ("running", "first", "second")] == [
        600,
        None,
        300,
    ]
    edits = tmp_path / "edits.yaml"
    edits.write_text(
        f"""kind: ClusterQueue
metadata: {{name: {ns}}}
spec:
  resourceGroups:
  - flavors:
    - name: {ns}
      resources: [{{name: cpu, nominalQuota: 2}}]
"""
    )
    code, out, err = await run(
        str(SCRIPT), "simulate", "--from-cluster", "--kubeconfig", KUBECONFIG, str(edits), "-o", "json"
    )
    assert code == 0, err
    report = json.loads(out)
    rows = {w["name"]: w for w in report["workloads"] if w["namespace"] == ns}
    first, second = rows[found["first"]["metadata"]["name"]], rows[found["second"]["metadata"]["name"]]
    # as it is: "first" takes the CPU when "running" reaches its 10 minutes, "second" after first's hour
    assert 500 < first["start"]["inSeconds"] <= 600
    assert first["runtimeFrom"] == "assumed" and first["runtimeSeconds"] == 3600
    assert second["start"]["inSeconds"] == pytest.approx(first["start"]["inSeconds"] + 3600, abs=2)
    # with a second CPU: "first" starts now, "second" when "running" ends
    assert first["startWithEdits"]["inSeconds"] == 0 and first["change"] == "sooner"
    assert second["startWithEdits"]["inSeconds"] == pytest.approx(first["start"]["inSeconds"], abs=2)
    assert second["change"] == "sooner"
    assert f"ClusterQueue {ns}: changed spec.resourceGroups" in report["edits"]

    code, out, err = await run(
        str(SCRIPT), "simulate", "--from-cluster", "--kubeconfig", KUBECONFIG, str(edits)
    )
    assert code == 0, err
    line = next(row for row in out.splitlines() if found["first"]["metadata"]["name"] in row)
    assert "1h (assumed)" in line and "sooner by" in line
