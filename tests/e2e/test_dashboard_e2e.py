"""The live dashboard through a real kube-apiserver's aggregator, as a user opens it: ``kubectl proxy`` and a
browser, or ``kubectl get --raw`` for its JSON.

The replica serves the visibility API's APIService (an ``ExternalName`` Service naming ``localhost``, see
``test_visibility_e2e``); one ClusterQueue of one cpu holds ``w0`` while ``w1`` and ``w2`` wait. A user
bound to the shipped ``kueue-webhook-dashboard-viewer`` role reads it (and, when Chromium is installed, sees
it rendered through ``kubectl proxy --as`` that user, under the page's Content-Security-Policy, which
kube-apiserver and kubectl pass through); a user without the role gets kube-apiserver's 403, and a direct
call to the replica without the front proxy's certificate gets 401, and one with a ServiceAccount token is
decided by the replica's own SubjectAccessReview. Run it under ``flock`` on a shared
cluster.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import aiohttp
import pytest

from kueue_webhook.http.dashboard import DASHBOARD_PATH
from kueue_webhook.http.dashboard_page import CONTENT_SECURITY_POLICY
from tests.browser import CHROMIUM, kubectl_proxy, open_browser
from tests.e2e.cluster import KUBECONFIG, KUBECTL, NO_CLUSTER
from tests.e2e.support import APISERVICE
from tests.e2e.test_visibility_e2e import REPO_ROOT, direct, eventually, kubectl, manifests
from tests.support.replica import certificates, start_replica

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
ROLE = "kueue-webhook-dashboard-viewer"


def binding(name: str, ns: str) -> str:
    """The shipped role bound to user ``<name>-viewer`` and ServiceAccount ``viewer``; ``nobody`` is not."""
    return f"""
apiVersion: v1
kind: ServiceAccount
metadata: {{name: viewer, namespace: {ns}}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: nobody, namespace: {ns}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {name}-dashboard}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {ROLE}}}
subjects:
- {{kind: User, apiGroup: rbac.authorization.k8s.io, name: {name}-viewer}}
- {{kind: ServiceAccount, name: viewer, namespace: {ns}}}
"""


async def test_the_dashboard_through_the_aggregator_for_an_allowed_user_and_not_for_others(
    tmp_path: Path,
) -> None:
    code, _, _ = await kubectl("get", "apiservice", APISERVICE, check=False)
    if code == 0:
        pytest.skip(f"APIService {APISERVICE} already exists (Kueue or another kueue-webhook serves it)")
    code, _, _ = await kubectl("get", "crd", "clusterqueues.kueue.x-k8s.io", check=False)
    if code != 0:
        await kubectl("apply", "-k", str(REPO_ROOT / "manifests" / "crds"))
        await kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    role_existed = (await kubectl("get", "clusterrole", ROLE, check=False))[0] == 0
    suffix = uuid.uuid4().hex[:6]
    ns = name = f"e2e-dash-{suffix}"
    tls = certificates(tmp_path / "tls")
    serving = await start_replica(Path(KUBECONFIG), tls=tls, namespace=ns, identity=name)
    try:
        await kubectl("apply", "-f", "-", stdin=manifests(ns, name, serving.port))

        async def counts() -> tuple[int, int] | None:
            code, out, _ = await kubectl("get", "--raw", DASHBOARD_PATH, check=False)
            if code != 0:  # the APIService is not Available yet
                return None
            document = json.loads(out)
            queues = {queue["name"]: queue for queue in document["clusterQueues"]}
            if name not in queues:
                return None
            found = (queues[name]["admitted"], queues[name]["pending"])
            return found if found == (1, 2) else None

        # w0 holds the one cpu; w1 and w2 wait
        assert await eventually(counts, "the dashboard to show 1 admitted and 2 pending") == (1, 2)

        code, _, err = await kubectl("get", "--raw", DASHBOARD_PATH, f"--as={name}-nobody", check=False)
        assert code != 0
        assert (
            'Error from server (Forbidden): dashboards.visibility.kueue.x-k8s.io "queues" is forbidden: '
            f'User "{name}-nobody" cannot get resource "dashboards" in API group '
            '"visibility.kueue.x-k8s.io" at the cluster scope'
        ) in err
        status, body = await direct(tls, serving.port, DASHBOARD_PATH)
        assert status == 401 and json.loads(body)["reason"] == "Unauthorized"

        await kubectl("apply", "-f", str(REPO_ROOT / "manifests" / "roles" / "dashboard.yaml"))
        await kubectl("apply", "-f", "-", stdin=binding(name, ns))
        _, out, _ = await kubectl("get", "--raw", DASHBOARD_PATH, f"--as={name}-viewer")
        document = json.loads(out)
        [group] = [g for g in document["pending"] if g["clusterQueue"] == name]
        assert [w["name"] for w in group["workloads"]] == ["w1", "w2"]
        assert document["replica"] == {"name": name, "role": "leader"}
        # the replica's own SubjectAccessReview, for a caller with a token instead of the front proxy
        _, viewer, _ = await kubectl("create", "token", "viewer", "-n", ns)
        _, nobody, _ = await kubectl("create", "token", "nobody", "-n", ns)
        status, body = await direct(tls, serving.port, DASHBOARD_PATH, viewer.strip())
        assert status == 200 and json.loads(body)["kind"] == "QueueDashboard"
        status, body = await direct(tls, serving.port, DASHBOARD_PATH, nobody.strip())
        assert status == 403
        assert json.loads(body)["message"].startswith(
            f'dashboards.visibility.kueue.x-k8s.io "queues" is forbidden: User '
            f'"system:serviceaccount:{ns}:nobody" cannot get resource "dashboards"'
        )

        async with kubectl_proxy(KUBECTL, Path(KUBECONFIG), f"--as={name}-viewer") as base:
            async with (
                aiohttp.ClientSession() as session,
                session.get(base + DASHBOARD_PATH, headers={"Accept": "text/html"}) as response,
            ):
                assert response.status == 200
                assert response.headers["Content-Type"] == "text/html; charset=utf-8"
                assert response.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
            if CHROMIUM is not None:
                async with open_browser(tmp_path / "profile") as tab:
                    await tab.goto(base + DASHBOARD_PATH)
                    card = f"document.querySelector('[data-cluster-queue=\"{name}\"] .counts').textContent"
                    await tab.wait_until(
                        f"document.querySelector('[data-cluster-queue=\"{name}\"]') !== null"
                    )
                    assert await tab.evaluate(card) == "admitted 1 \u00b7 reserving 1 \u00b7 pending 2"
                    assert tab.console_errors == []
        async with (
            kubectl_proxy(KUBECTL, Path(KUBECONFIG), f"--as={name}-nobody") as base,
            aiohttp.ClientSession() as session,
            session.get(base + DASHBOARD_PATH, headers={"Accept": "text/html"}) as response,
        ):
            assert response.status == 403
            assert "Queues" not in await response.text()
    finally:
        await kubectl("delete", "clusterrolebinding", f"{name}-dashboard", "--ignore-not-found", check=False)
        if not role_existed:
            await kubectl("delete", "clusterrole", ROLE, "--ignore-not-found", check=False)
        await kubectl("delete", "apiservice", APISERVICE, "--ignore-not-found", check=False)
        await kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)
        await kubectl("delete", "clusterqueue", name, "--ignore-not-found", check=False)
        await kubectl("delete", "resourceflavor", name, "--ignore-not-found", check=False)
        await serving.stop()
