"""Kueue-docs-style kueue.x-k8s.io/v1beta1 manifests on a real kube-apiserver, converted by our /convert.

``kueue-webhook serve`` runs out of cluster as docs/install.md says (``manifests/controller/local`` points the
CRDs' conversion webhook at https://127.0.0.1:9443/convert, ``certs --patch-webhook-configurations`` fills
its caBundle). The CRDs stay installed in their two-version form afterwards, as the other e2e tests install
them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster
from tests.e2e.install import Running, out_of_cluster

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return Cluster(Path(KUBECONFIG))


@pytest.fixture
def serving(cluster: Cluster, tmp_path: Path) -> Iterator[Running]:
    with out_of_cluster(cluster, tmp_path) as running:
        yield running


@pytest.fixture
def name(cluster: Cluster) -> Iterator[str]:
    chosen = f"e2e-v1beta1-{uuid.uuid4().hex[:6]}"
    yield chosen
    cluster.kubectl("delete", "namespace", chosen, "--wait=false", check=False)
    cluster.kubectl("delete", "clusterqueue", chosen, check=False)
    cluster.kubectl("delete", "resourceflavor", chosen, check=False)


def test_v1beta1_manifests_apply_unchanged_and_read_back_as_v1beta2(
    cluster: Cluster, serving: Running, name: str
) -> None:
    manifest = f"""
apiVersion: v1
kind: Namespace
metadata:
  name: {name}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: "{name}"
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: "{name}"
spec:
  namespaceSelector: {{}} # match all.
  cohort: "{name}-cohort"
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: "{name}"
      resources:
      - name: "cpu"
        nominalQuota: 9
      - name: "memory"
        nominalQuota: 36Gi
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata:
  namespace: "{name}"
  name: "user-queue"
spec:
  clusterQueue: "{name}"
"""
    applied = cluster.kubectl("apply", "-f", "-", input=manifest, check=False)
    assert applied.returncode == 0, f"{applied.stderr}\n{serving.tail()}"
    assert "kueue.x-k8s.io/v1beta1 ClusterQueue is deprecated" in applied.stderr
    queue = yaml.safe_load(cluster.kubectl("get", "clusterqueue", name, "-o", "yaml").stdout)
    assert queue["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert queue["spec"]["cohortName"] == f"{name}-cohort"
    assert "cohort" not in queue["spec"]
    old = cluster.get("clusterqueues.v1beta1.kueue.x-k8s.io", name)
    assert (old["apiVersion"], old["spec"]["cohort"]) == ("kueue.x-k8s.io/v1beta1", f"{name}-cohort")
    local = cluster.get("-n", name, "localqueues.v1beta2.kueue.x-k8s.io", "user-queue")
    assert local["spec"]["clusterQueue"] == name
