"""Kueue's visibility API through a real kube-apiserver's aggregator: `kubectl get --raw` reaches us.

An APIService needs a Service. This control plane has no kube-proxy, so a Service's ClusterIP leads nowhere;
an ``ExternalName`` Service does work: with aggregator routing off (the default) kube-apiserver dials the
Service's external name at the Service's port, here ``localhost`` and the port the replica listens on. Every
object is uniquely named (the APIService's name is fixed by the group, so it is created and removed here) and
deleted afterwards. Run it under ``flock /tmp/kube.lock`` on a shared cluster.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cluster import KUBECONFIG, KUBECTL, NO_CLUSTER
from tests.e2e.support import certificates, start_replica

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, Any]
APISERVICE = "v1beta2.visibility.kueue.x-k8s.io"
TIMEOUT = 60.0


async def kubectl(*args: str, stdin: str | None = None, check: bool = True) -> tuple[int, str, str]:
    """kubectl without blocking the event loop: the replica answering the aggregator runs on it."""
    process = await asyncio.create_subprocess_exec(
        KUBECTL,
        f"--kubeconfig={KUBECONFIG}",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin.encode() if stdin else None), TIMEOUT)
    code = process.returncode or 0
    if check and code != 0:
        raise AssertionError(f"kubectl {' '.join(args)} exited {code}: {err.decode()}")
    return code, out.decode(), err.decode()


def manifests(ns: str, name: str, port: int) -> str:
    workloads = "".join(
        f"""
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {{name: {wl}, namespace: {ns}}}
spec:
  queueName: lq
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "1"}}}}}}]
"""
        for wl in ("w0", "w1", "w2")
    )
    return f"""
apiVersion: v1
kind: Namespace
metadata: {{name: {ns}}}
---
apiVersion: v1
kind: Service
metadata: {{name: kueue-webhook, namespace: {ns}}}
spec:
  type: ExternalName
  externalName: localhost
  ports: [{{name: https, port: {port}, protocol: TCP}}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {{name: {APISERVICE}}}
spec:
  group: visibility.kueue.x-k8s.io
  version: v1beta2
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service: {{name: kueue-webhook, namespace: {ns}, port: {port}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: {name}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {name}}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: {name}
      resources: [{{name: cpu, nominalQuota: 1}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: lq, namespace: {ns}}}
spec: {{clusterQueue: {name}}}
{workloads}"""


async def eventually(read: Any, what: str) -> Any:
    """Poll ``read`` (an async callable returning a value or None) until it returns a value."""
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while True:
        value = await read()
        if value is not None:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.5)  # polling a real cluster through kubectl: there is no event to await


async def test_kubectl_get_raw_pending_workloads_through_the_aggregator(tmp_path: Path) -> None:
    code, _, _ = await kubectl("get", "apiservice", APISERVICE, check=False)
    if code == 0:
        pytest.skip(f"APIService {APISERVICE} already exists (Kueue or another kueue-webhook serves it)")
    suffix = uuid.uuid4().hex[:6]
    ns = name = f"e2e-vis-{suffix}"
    tls = certificates(tmp_path / "tls")
    serving = await start_replica(Path(KUBECONFIG), tls=tls, namespace=ns, identity=f"e2e-vis-{suffix}")
    try:
        await asyncio.wait_for(serving.controller.leading.wait(), TIMEOUT)
        await kubectl("apply", "-f", "-", stdin=manifests(ns, name, serving.port))

        async def available() -> bool | None:
            _, out, _ = await kubectl("get", "apiservice", APISERVICE, "-o", "json")
            conditions = json.loads(out).get("status", {}).get("conditions", [])
            return (
                True if any(c["type"] == "Available" and c["status"] == "True" for c in conditions) else None
            )

        await eventually(available, f"APIService {APISERVICE} to be Available")

        async def pending() -> list[tuple[str, int, int]] | None:
            _, out, _ = await kubectl(
                "get",
                "--raw",
                f"/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{name}/pendingworkloads",
            )
            summary = json.loads(out)
            assert summary["kind"] == "PendingWorkloadsSummary"
            found = [
                (i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"])
                for i in summary["items"]
            ]
            return found if len(found) == 2 else None

        # w0 holds the one CPU; w1 and w2 wait, in creation order
        assert await eventually(pending, "two pending workloads") == [("w1", 0, 0), ("w2", 1, 1)]
        _, out, _ = await kubectl(
            "get",
            "--raw",
            f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{ns}/localqueues/lq/pendingworkloads?offset=1",
        )
        [item] = json.loads(out)["items"]
        assert (item["metadata"]["name"], item["positionInLocalQueue"], item["localQueueName"]) == (
            "w2",
            1,
            "lq",
        )
        code, _, err = await kubectl(
            "get",
            "--raw",
            "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/nope/pendingworkloads",
            check=False,
        )
        assert code != 0 and 'clusterqueue.visibility.kueue.x-k8s.io "nope" not found' in err
    finally:
        await kubectl("delete", "apiservice", APISERVICE, "--ignore-not-found", check=False)
        await kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)
        await kubectl("delete", "clusterqueue", name, "--ignore-not-found", check=False)
        await kubectl("delete", "resourceflavor", name, "--ignore-not-found", check=False)
        await serving.stop()
