"""The chart installed by real Helm on a real kube-apiserver: ``helm lint`` is clean, and for default values
and for a release that changes every value at once the manifest Helm renders and applies (Go's templates)
is what the chart tests render (tests/unit/deploy/gotemplate.py), and the objects are in the cluster.

The Kueue CRDs are left out (``crds.install: false``) so that uninstalling does not delete them under the
other tests; the cluster-scoped objects have fixed names and are adopted and removed: run it alone
(``flock /tmp/kube.lock``). Cert-manager's and the Prometheus operator's CRDs are the stand-ins of
tests/crds when the cluster has none.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster
from tests.e2e.helm import Helm, available
from tests.unit.deploy.gotemplate import render_chart
from tests.unit.deploy.rendering import CHART, MANIFESTS, keyed

pytestmark = [
    pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER),
    pytest.mark.skipif(bool(available()), reason=available()),
]
STAND_INS = Path(__file__).resolve().parents[1] / "crds"


def stand_ins(cluster: Cluster) -> list[str]:
    """Apply the stand-in CRDs the cluster lacks; the names of those applied."""
    created = []
    for path in [*sorted((STAND_INS / "monitoring").glob("*.yaml")), STAND_INS / "certmanager" / "crds.yaml"]:
        for crd in yaml.safe_load_all(path.read_text()):
            name = crd["metadata"]["name"]
            if cluster.kubectl("get", "crd", name, check=False).returncode != 0:
                cluster.apply(yaml.safe_dump(crd))
                created.append(name)
    for name in created:
        cluster.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s")
    return created


def test_helm_lint_is_clean() -> None:
    assert Helm(Path(KUBECONFIG)).lint(CHART) == []


@pytest.mark.parametrize(
    "values",
    [
        pytest.param({}, id="defaults"),
        pytest.param(
            {
                "namespace": {"name": "e2e-helm-batch"},
                "image": {"repository": "registry.example/kueue-webhook", "tag": "test"},
                "replicas": 1,
                "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                "integrations": {"frameworks": ["batch/job", "pod"]},
                "manageJobsWithoutQueueName": True,
                "certManagement": "cert-manager",
                "metrics": {
                    "enabled": True,
                    "prometheusServiceAccount": {"name": "prom", "namespace": "obs"},
                },
            },
            id="every-value",
        ),
    ],
)
def test_helm_installs_what_the_chart_tests_render(values: dict[str, Any]) -> None:
    cluster = Cluster(Path(KUBECONFIG))
    if cluster.kubectl("get", "crd", "clusterqueues.kueue.x-k8s.io", check=False).returncode != 0:
        cluster.kubectl("apply", "-k", str(MANIFESTS / "crds"))
    created = stand_ins(cluster)
    values = {**values, "crds": {"install": False}}
    helm = Helm(Path(KUBECONFIG))
    release = f"e2e-{uuid.uuid4().hex[:6]}"
    namespace = values.get("namespace", {}).get("name", "kueue-system")
    try:
        installed = helm.install(release, CHART, values)
        assert keyed(installed) == keyed(render_chart(CHART, values, release=release))
        deployment = cluster.get("deployment", "kueue-webhook", "-n", namespace)
        expected = keyed(installed)[("Deployment", namespace, "kueue-webhook")]
        assert (
            deployment["spec"]["template"]["spec"]["containers"][0]["image"]
            == (expected["spec"]["template"]["spec"]["containers"][0]["image"])
        )
        hooks = cluster.get("validatingwebhookconfiguration", "kueue-webhook-validating")
        assert {h["clientConfig"]["service"]["namespace"] for h in hooks["webhooks"]} == {namespace}
    finally:
        helm.uninstall(release)
        if namespace != "kueue-system":
            cluster.kubectl(
                "delete", "namespace", namespace, "--ignore-not-found", "--wait=false", check=False
            )
        for name in created:
            cluster.kubectl("delete", "crd", name, "--ignore-not-found", "--wait=false", check=False)
    assert (
        cluster.kubectl(
            "get", "validatingwebhookconfiguration", "kueue-webhook-validating", check=False
        ).returncode
        != 0
    )
