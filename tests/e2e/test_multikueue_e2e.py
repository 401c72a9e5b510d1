"""MultiKueue with two real control planes: a manager (``KUEUE_E2E_KUBECONFIG``) and a worker, the first of
``KUEUE_E2E_WORKER_KUBECONFIGS`` (``tests/e2e/workers.py``), which this test stops with ``down.sh`` and starts
again with ``up.sh``, as an outage would.

An admin puts the worker's kubeconfig in a Secret of the controller's namespace and creates a
MultiKueueCluster, a MultiKueueConfig and a MultiKueue AdmissionCheck, as docs/multikueue.md says; the
cluster turns ``Active`` (``kubectl get mkc`` prints CONNECTED True) and so does the check; the worker going
down turns both inactive with Kueue's reasons, and its coming back makes them active again, no restart.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cluster import KUBECONFIG, KUBECTL, NO_CLUSTER
from tests.e2e.workers import (
    CAN_STOP_WORKERS,
    NO_SCRIPTS,
    NO_WORKERS,
    REPO_ROOT,
    WORKER_KUBECONFIGS,
    control_plane,
)
from tests.support.replica import start_replica

JSON = dict[str, Any]
TIMEOUT = 180.0

pytestmark = [
    pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER),
    pytest.mark.skipif(not WORKER_KUBECONFIGS, reason=NO_WORKERS),
    pytest.mark.skipif(not CAN_STOP_WORKERS, reason=NO_SCRIPTS),
]


async def run(*args: str, kubeconfig: str = KUBECONFIG, check: bool = True) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        KUBECTL,
        f"--kubeconfig={kubeconfig}",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 90)
    if check and process.returncode:
        raise AssertionError(f"kubectl {' '.join(args)} exited {process.returncode}: {err.decode()}")
    return process.returncode or 0, out.decode(), err.decode()


async def worker_script(name: str) -> None:
    """``down.sh`` or ``up.sh`` of the worker control plane."""
    await control_plane(name, WORKER_KUBECONFIGS[0])


async def eventually(read: Callable[[], Awaitable[Any]], what: str) -> Any:
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    last: Any = None
    while True:
        last = await read()
        if last is not None:
            return last
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {TIMEOUT:.0f}s waiting for {what}")
        await asyncio.sleep(1.0)  # a real cluster seen through kubectl: there is no event to await


def active(obj: JSON) -> tuple[str, str, str]:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Active":
            return condition["status"], condition["reason"], condition["message"]
    return ("", "", "")


async def state(resource: str, name: str) -> tuple[str, str, str]:
    _, out, _ = await run("get", resource, name, "-o", "json")
    return active(json.loads(out))


def waiting_for(resource: str, name: str, status: str, reason: str) -> Callable[[], Awaitable[Any]]:
    async def read() -> tuple[str, str, str] | None:
        found = await state(resource, name)
        return found if found[:2] == (status, reason) else None

    return read


async def install_crds(kubeconfig: str) -> None:
    await run("apply", "-k", str(REPO_ROOT / "manifests" / "crds"), kubeconfig=kubeconfig)
    await run("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s", kubeconfig=kubeconfig)


async def test_a_worker_cluster_is_active_lost_when_down_and_active_again_when_back(tmp_path: Path) -> None:
    worker_kubeconfig = str(WORKER_KUBECONFIGS[0])
    await install_crds(KUBECONFIG)
    await install_crds(
        worker_kubeconfig
    )  # a worker runs Kueue's API: the controller checks it can list Workloads
    suffix = uuid.uuid4().hex[:6]
    namespace, name = f"e2e-mk-{suffix}", f"worker-{suffix}"
    await run("create", "namespace", namespace)
    await run(
        "create", "secret", "generic", f"{name}-kubeconfig", "-n", namespace,
        f"--from-file=kubeconfig={worker_kubeconfig}",
    )  # fmt: skip
    manifest = tmp_path / "multikueue.yaml"
    manifest.write_text(f"""
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata: {{name: {name}}}
spec:
  clusterSource:
    kubeConfig: {{location: {name}-kubeconfig, locationType: Secret}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata: {{name: {name}}}
spec: {{clusters: [{name}]}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {{name: {name}}}
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters: {{apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: {name}}}
""")
    await run("apply", "-f", str(manifest))
    replica = await start_replica(
        Path(KUBECONFIG),
        identity=name,
        namespace=namespace,
        leader_election=False,
        settings={"multikueue_retry_base": 1.0, "multikueue_retry_cap": 8.0},
    )
    worker_down = False
    try:
        connected = await eventually(waiting_for("mkc", name, "True", "Active"), "the worker to connect")
        assert connected == ("True", "Active", "Connected")
        _, table, _ = await run("get", "mkc", name)
        assert table.split("\n")[0].split() == ["NAME", "CONNECTED", "AGE"]
        assert table.split("\n")[1].split()[:2] == [name, "True"]
        check = await eventually(
            waiting_for("admissioncheck", name, "True", "Active"), "the check to be active"
        )
        assert check == ("True", "Active", "The admission check is active")
        client = replica.controller.worker_clusters.client(name)
        assert client is not None
        assert (await client.request("GET", "/version"))["gitVersion"].startswith("v1.36")

        worker_down = True
        await worker_script("down.sh")
        lost = await eventually(
            waiting_for("mkc", name, "False", "ClientConnectionFailed"), "the lost worker to be inactive"
        )
        assert "connection attempts: " in lost[2], lost
        unusable = await eventually(
            waiting_for("admissioncheck", name, "False", "NoUsableClusters"), "the check to follow"
        )
        assert unusable[2] == f"Inactive clusters: [{name}]"
        assert replica.controller.worker_clusters.client(name) is None
        assert replica.controller.worker_clusters.inactive_since(name) is not None

        await worker_script("up.sh")
        worker_down = False
        back = await eventually(waiting_for("mkc", name, "True", "Active"), "the worker to connect again")
        assert back == ("True", "Active", "Connected")
        await eventually(
            waiting_for("admissioncheck", name, "True", "Active"), "the check to be active again"
        )
        assert replica.controller.worker_clusters.client(name) is not None
    finally:
        if worker_down:
            await worker_script("up.sh")
        await replica.stop()
        for resource in ("admissioncheck", "multikueueconfig", "multikueuecluster"):
            await run("delete", resource, name, "--ignore-not-found", check=False)
        await run("delete", "namespace", namespace, "--wait=false", check=False)
