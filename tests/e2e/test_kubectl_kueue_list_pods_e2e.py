"""``kubectl kueue list pods --for job/NAME`` through kubectl's plugin mechanism on a real API server: the
Job controller's Pods of that Job only (another Job's are left out), in the API server's own pod table (the
columns ``kubectl get pods`` prints), and ``-o wide`` with the wide columns."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER
from tests.e2e.test_kubectl_kueue_e2e import SCRIPTS, kubectl, kubectl_kueue

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
HANG = 120.0


def plain_job(ns: str, name: str, parallelism: int) -> str:
    return f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}, namespace: {ns}}}
spec:
  parallelism: {parallelism}
  completions: {parallelism}
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: c, image: busybox}}]
"""


async def test_the_pods_of_a_job_in_the_servers_table() -> None:
    if not (SCRIPTS / "kubectl-kueue").exists():
        pytest.skip(f"the console script is not installed in {SCRIPTS} (pip install -e .)")
    ns = f"e2e-pods-{uuid.uuid4().hex[:6]}"
    await kubectl("create", "namespace", ns)
    try:
        await kubectl("create", "-f", "-", stdin=plain_job(ns, "train", 2))
        await kubectl("create", "-f", "-", stdin=plain_job(ns, "other", 1))
        deadline = asyncio.get_running_loop().time() + HANG
        while len(json.loads(await kubectl("get", "pods", "-n", ns, "-o", "json"))["items"]) < 3:
            assert asyncio.get_running_loop().time() < deadline, "the Job controller made no pods"
            await asyncio.sleep(0.5)
        code, out, err = await kubectl_kueue("list", "pods", "--for", "job/train", "-n", ns)
        assert code == 0, err
        lines = out.splitlines()
        assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert len(lines) == 3 and all(line.startswith("train-") for line in lines[1:])
        assert all(line.split()[1:3] == ["0/1", "Pending"] for line in lines[1:])
        code, out, err = await kubectl_kueue("list", "pods", "--for", "job/train", "-n", ns, "-o", "wide")
        assert code == 0, err
        assert out.splitlines()[0].split()[:6] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP"]
    finally:
        await kubectl("delete", "namespace", ns, "--wait=false")
