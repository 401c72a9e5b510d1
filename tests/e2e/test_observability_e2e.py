"""The observability component on a real kube-apiserver: it applies (strict field validation) next to the
Prometheus operator's CRDs, and the account it binds to ``kueue-webhook-metrics-reader`` scrapes a running
replica's authenticated /metrics, which carries every series the dashboard and the alert rules read, while a
ServiceAccount without the binding gets 403.

The operator's CRDs are used when the cluster has them; otherwise the structural stand-ins of
tests/crds/monitoring (removed afterwards). Objects are deleted afterwards; the component's objects keep
their fixed names, so run it under ``flock /tmp/kube.lock`` on a shared cluster.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import ssl
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from cryptography import x509

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, until
from tests.support.replica import certificates, start_replica
from tests.unit.deploy.promql import reads, without_grafana_variables
from tests.unit.deploy.rendering import MANIFESTS, kustomize
from tests.unit.deploy.test_observability import dashboard_expressions, rule_expressions

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
STAND_INS = Path(__file__).resolve().parents[1] / "crds" / "monitoring"
COMPONENT_KINDS = {
    "ServiceMonitor",
    "PrometheusRule",
    "ConfigMap",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
}
PROMETHEUS = ("monitoring", "prometheus-k8s")  # the account the component binds (kube-prometheus' name)


def component_objects() -> list[dict[str, Any]]:
    """What the overlay adds to the install, plus the metrics-reader ClusterRole it binds."""
    base = {(o["kind"], o["metadata"]["name"]) for o in kustomize(MANIFESTS)}
    return [
        o
        for o in kustomize(MANIFESTS / "observability")
        if (o["kind"], o["metadata"]["name"]) not in base
        or (o["kind"], o["metadata"]["name"]) == ("ClusterRole", "kueue-webhook-metrics-reader")
    ]


def install_monitoring_crds(cluster: Cluster) -> list[str]:
    """The stand-ins for the CRDs the cluster lacks; returns the ones created here."""
    created = []
    for path in sorted(STAND_INS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        if cluster.kubectl("get", "crd", crd["metadata"]["name"], check=False).returncode == 0:
            continue
        cluster.kubectl("apply", "-f", str(path))
        created.append(crd["metadata"]["name"])
    for name in created:
        cluster.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")
    return created


async def scrape(port: int, ca: Path, token: str) -> tuple[int, str]:
    context = ssl.create_default_context(cafile=str(ca))
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"https://127.0.0.1:{port}/metrics", ssl=context, headers={"Authorization": f"Bearer {token}"}
        ) as response,
    ):
        return response.status, await response.text()


def families(exposition: str) -> set[str]:
    """Series names the exposition declares (# TYPE lines, with the names their samples take)."""
    out: set[str] = set()
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", exposition, re.M):
        out.add(name)
        if kind == "histogram":
            out.update(name + suffix for suffix in ("_bucket", "_sum", "_count"))
        if kind == "counter" and not name.endswith("_total"):
            out.add(name + "_total")
    return out


def sample(exposition: str, name: str) -> float:
    [value] = re.findall(rf"^{name} (\S+)$", exposition, re.M)
    return float(value)


async def test_the_component_applies_and_its_prometheus_account_scrapes_a_replica(tmp_path: Path) -> None:
    cluster = Cluster(Path(KUBECONFIG))
    suffix = uuid.uuid4().hex[:6]
    namespace = f"e2e-obs-{suffix}"
    objects = component_objects()
    assert {o["kind"] for o in objects} == COMPONENT_KINDS | {"ClusterRole"}
    if cluster.kubectl("get", "crd", "clusterqueues.kueue.x-k8s.io", check=False).returncode != 0:
        cluster.kubectl("apply", "-k", str(MANIFESTS / "crds"))  # the replica lists the Kueue kinds
    created_crds = install_monitoring_crds(cluster)
    replica = None
    try:
        for ns in ("kueue-system", PROMETHEUS[0], namespace):
            cluster.apply(f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n")
        cluster.kubectl("-n", PROMETHEUS[0], "create", "serviceaccount", PROMETHEUS[1], check=False)
        cluster.kubectl("-n", namespace, "create", "serviceaccount", "unbound")
        # --validate=strict: the API server refuses a field its schema does not know
        cluster.kubectl("apply", "--validate=strict", "-f", "-", input=yaml.safe_dump_all(objects))
        monitor = cluster.get("servicemonitor", "kueue-webhook", "-n", "kueue-system")
        assert monitor["spec"]["endpoints"][0]["scheme"] == "https"
        rule = cluster.get("prometheusrule", "kueue-webhook", "-n", "kueue-system")
        assert len(rule["spec"]["groups"][0]["rules"]) == len(rule_expressions())
        dashboard = cluster.get("configmap", "kueue-webhook-dashboard", "-n", "kueue-system")
        assert json.loads(dashboard["data"]["kueue-webhook-dashboard.json"])["uid"] == "kueue-webhook"
        prometheus = f"system:serviceaccount:{PROMETHEUS[0]}:{PROMETHEUS[1]}"
        until(
            lambda: (
                cluster.kubectl(
                    "auth", "can-i", "get", "/metrics", f"--as={prometheus}", check=False
                ).stdout.strip()
                == "yes"
            ),
            "the metrics-reader binding to take effect",
        )

        tls = certificates(tmp_path / "tls")
        replica = await start_replica(
            Path(KUBECONFIG), tls=tls, namespace=namespace, identity=f"e2e-obs-{suffix}"
        )
        await asyncio.wait_for(replica.controller.leading.wait(), 60)
        token = cluster.kubectl("-n", PROMETHEUS[0], "create", "token", PROMETHEUS[1]).stdout.strip()
        before = dt.datetime.now(dt.UTC)
        status, text = await scrape(replica.port, tls.ca_cert, token)
        assert status == 200, text
        assert sample(text, "kueue_webhook_leader") == 1.0
        expires = x509.load_pem_x509_certificate(tls.cert.read_bytes()).not_valid_after_utc
        left = sample(text, "kueue_webhook_serving_certificate_expiry_seconds")
        assert 0 < left <= (expires - before).total_seconds()
        declared = families(text)
        for expr in dashboard_expressions() + rule_expressions():
            for name in reads(without_grafana_variables(expr)).labels:
                assert name in declared, f"{name} is not in a live scrape"

        unbound = cluster.kubectl("-n", namespace, "create", "token", "unbound").stdout.strip()
        assert await scrape(replica.port, tls.ca_cert, unbound) == (
            403,
            f"Authorization denied for user system:serviceaccount:{namespace}:unbound\n",
        )
    finally:
        if replica is not None:
            await replica.stop()
        for obj in objects:
            if obj["kind"] == "ClusterRole":
                continue  # part of the install, shared with others
            args = [obj["kind"].lower(), obj["metadata"]["name"], "--ignore-not-found", "--wait=false"]
            if "namespace" in obj["metadata"]:
                args += ["-n", obj["metadata"]["namespace"]]
            cluster.kubectl("delete", *args, check=False)
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", "--ignore-not-found", check=False)
        cluster.kubectl(
            "-n", PROMETHEUS[0], "delete", "serviceaccount", PROMETHEUS[1], "--ignore-not-found", check=False
        )
        for name in created_crds:
            cluster.kubectl("delete", "crd", name, "--ignore-not-found", "--wait=false", check=False)
