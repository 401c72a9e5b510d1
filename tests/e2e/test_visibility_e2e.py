"""Kueue's visibility API through a real kube-apiserver's aggregator: `kubectl get --raw` reaches us.

An APIService needs a Service. This control plane has no kube-proxy, so a Service's ClusterIP leads nowhere;
an ``ExternalName`` Service does work: with aggregator routing off (the default) kube-apiserver dials the
Service's external name at the Service's port, here ``localhost`` and the port the replica listens on. Every
object is uniquely named (the APIService's name is fixed by the group, so it is created and removed here) and
deleted afterwards. Run it under ``flock /tmp/kube.lock`` on a shared cluster.

The reads are guarded as an aggregated API server's are: through the aggregator an admin (system:masters)
and a user an RBAC binding allows read the queues, while an impersonated user without one gets
kube-apiserver's 403; a direct call without the front proxy's certificate gets 401, as does ``/metrics``
without a token; a ServiceAccount token bound to a ``/metrics`` reader role scrapes it. A replica that does
not lead answers the same ranks as the leader.
"""

from __future__ import annotations

import asyncio
import json
import re
import ssl
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from kueue_webhook.http.certs import CertificateSet
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER
from tests.e2e.cluster import kubectl_async as kubectl
from tests.e2e.support import APISERVICE, visibility_api_service
from tests.support import builders
from tests.support.replica import certificates, start_replica

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, Any]
TIMEOUT = 60.0


def summed(text: str, family: str, labels: dict[str, str]) -> float:
    """The sum of the samples of ``family`` in a scrape whose labels include ``labels``."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(family + "{"):
            continue
        inside, value = line[len(family) + 1 :].rsplit("} ", 1)
        found = dict(re.findall(r'(\w+)="([^"]*)"', inside))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(value)
    return total


def manifests(ns: str, name: str, port: int) -> str:
    """Namespace ``ns`` with the visibility APIService, LocalQueue ``lq`` of a 1-cpu ClusterQueue ``name``,
    and three 1-cpu Workloads queued there."""
    cpu = builders.pod_set(image="busybox", restartPolicy="Never")
    workloads = [builders.workload(w, ns, pod_sets=[cpu]) for w in ("w0", "w1", "w2")]
    queue = builders.own_queue(ns, name, {"cpu": 1})
    return (
        builders.manifests(builders.namespace(ns))
        + "---\n"
        + visibility_api_service(ns, port)
        + "---\n"
        + builders.manifests(*queue, *workloads)
    )


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


def access(ns: str, name: str) -> str:
    """A user and a ServiceAccount allowed to read the ClusterQueue's pending workloads, and a ServiceAccount
    allowed to scrape /metrics (bound to roles as the shipped ones grant)."""
    return f"""
apiVersion: v1
kind: ServiceAccount
metadata: {{name: viewer, namespace: {ns}}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: scraper, namespace: {ns}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {name}-viewer}}
rules:
- apiGroups: [visibility.kueue.x-k8s.io]
  resources: [clusterqueues/pendingworkloads]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {name}-viewer}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {name}-viewer}}
subjects:
- {{kind: User, apiGroup: rbac.authorization.k8s.io, name: {name}-viewer}}
- {{kind: ServiceAccount, name: viewer, namespace: {ns}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {name}-metrics}}
rules:
- nonResourceURLs: [/metrics]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {name}-metrics}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {name}-metrics}}
subjects:
- {{kind: ServiceAccount, name: scraper, namespace: {ns}}}
"""


async def direct(tls: CertificateSet, port: int, path: str, token: str | None = None) -> tuple[int, str]:
    """GET straight to a replica, as any pod reaching the Service could: no client certificate."""
    context = ssl.create_default_context(cafile=str(tls.ca_cert))
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"https://127.0.0.1:{port}{path}", ssl=context, headers=headers) as response,
    ):
        return response.status, await response.text()


def ranks(body: str) -> list[tuple[str, int, int]]:
    return [
        (i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"])
        for i in json.loads(body)["items"]
    ]


async def test_kubectl_get_raw_pending_workloads_through_the_aggregator(tmp_path: Path) -> None:
    code, _, _ = await kubectl("get", "apiservice", APISERVICE, check=False)
    if code == 0:
        pytest.skip(f"APIService {APISERVICE} already exists (Kueue or another kueue-webhook serves it)")
    code, _, _ = await kubectl("get", "crd", "clusterqueues.kueue.x-k8s.io", check=False)
    if code != 0:
        # client-side, as the install tests apply them (their -k manifests/controller/local patches it)
        await kubectl("apply", "-k", str(REPO_ROOT / "manifests" / "crds"))
        await kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    suffix = uuid.uuid4().hex[:6]
    ns = name = f"e2e-vis-{suffix}"
    tls = certificates(tmp_path / "tls")
    serving = await start_replica(Path(KUBECONFIG), tls=tls, namespace=ns, identity=f"e2e-vis-{suffix}")
    standby = None
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

        # -- who may call what --------------------------------------------------------------------------
        path = f"/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/{name}/pendingworkloads"
        status, body = await direct(tls, serving.port, path)
        assert status == 401 and json.loads(body)["reason"] == "Unauthorized"
        assert await direct(tls, serving.port, "/metrics") == (401, "Unauthorized\n")
        code, _, err = await kubectl("get", "--raw", path, f"--as={name}-nobody", check=False)
        assert code != 0
        assert (
            f'Error from server (Forbidden): clusterqueues.visibility.kueue.x-k8s.io "{name}" is forbidden: '
            f'User "{name}-nobody" cannot get resource "clusterqueues/pendingworkloads" in API group '
            '"visibility.kueue.x-k8s.io" at the cluster scope'
        ) in err
        await kubectl("apply", "-f", "-", stdin=access(ns, name))
        _, out, _ = await kubectl("get", "--raw", path, f"--as={name}-viewer")
        assert ranks(out) == [("w1", 0, 0), ("w2", 1, 1)]
        _, viewer, _ = await kubectl("create", "token", "viewer", "-n", ns)
        _, scraper, _ = await kubectl("create", "token", "scraper", "-n", ns)
        status, body = await direct(tls, serving.port, path, viewer.strip())
        assert status == 200 and ranks(body) == [("w1", 0, 0), ("w2", 1, 1)]
        status, text = await direct(tls, serving.port, "/metrics", scraper.strip())
        assert status == 200 and "kueue_" in text
        # Kueue's per-LocalQueue series (LocalQueueMetrics, on by default): w0 holds the cpu, w1 and w2 wait
        mine = {"name": "lq", "namespace": ns, "replica_role": "leader"}
        assert summed(text, "kueue_local_queue_reserving_active_workloads", mine) == 1
        assert summed(text, "kueue_local_queue_pending_workloads", mine) == 2
        assert summed(text, "kueue_local_queue_resource_usage", {**mine, "resource": "cpu"}) == 1
        assert await direct(tls, serving.port, "/metrics", viewer.strip()) == (
            403,
            f"Authorization denied for user system:serviceaccount:{ns}:viewer\n",
        )

        # -- a replica that does not lead answers the same ---------------------------------------------
        standby = await start_replica(Path(KUBECONFIG), tls=tls, namespace=ns, identity=f"e2e-vis-{suffix}-b")
        assert not standby.controller.is_leader()
        status, body = await direct(tls, standby.port, path, viewer.strip())
        assert status == 200 and ranks(body) == [("w1", 0, 0), ("w2", 1, 1)]
        local = f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{ns}/localqueues/lq/pendingworkloads"
        status, body = await direct(tls, standby.port, local, viewer.strip())
        assert status == 403  # the viewer role names ClusterQueues only
    finally:
        if standby is not None:
            await standby.stop()
        for kind in ("clusterrolebinding", "clusterrole"):
            for role in (f"{name}-viewer", f"{name}-metrics"):
                await kubectl("delete", kind, role, "--ignore-not-found", check=False)
        await kubectl("delete", "apiservice", APISERVICE, "--ignore-not-found", check=False)
        await kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)
        await kubectl("delete", "clusterqueue", name, "--ignore-not-found", check=False)
        await kubectl("delete", "resourceflavor", name, "--ignore-not-found", check=False)
        await serving.stop()
