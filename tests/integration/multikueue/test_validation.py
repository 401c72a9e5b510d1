"""MultiKueue objects an admin writes through the API server: what Kueue's CRD rules refuse is refused with
their messages (the webhook restates them, so the test API server, which runs no CEL, answers alike), and
v1beta1 manifests are stored as v1beta2."""

from __future__ import annotations

from pathlib import Path

import pytest

from kueue_webhook.control.kube.client import ApiError, KubeClient
from kueue_webhook.control.kube.kinds import MULTIKUEUE_CLUSTERS, MULTIKUEUE_CONFIGS, Kind
from kueue_webhook.http.certs import KUEUE_CRDS
from tests.fakeapi import FakeApiServer
from tests.support.fake_cluster import serving_webhook
from tests.support.webhook import registered_webhook


@pytest.mark.parametrize(
    ("kind", "body", "message"),
    [
        (
            MULTIKUEUE_CLUSTERS,
            {"spec": {"clusterSource": {}}},
            'spec.clusterSource: Invalid value: "object": exactly one of the fields in '
            "[kubeConfig clusterProfileRef] must be set",
        ),
        (
            MULTIKUEUE_CONFIGS,
            {"spec": {"clusters": ["w1", "w1"]}},
            'spec.clusters: Invalid value: "array": must be unique',
        ),
    ],
    ids=["cluster-without-source", "config-with-a-cluster-twice"],
)
async def test_invalid_multikueue_objects_are_refused_with_kueues_words(
    fake_api: FakeApiServer, tmp_path: Path, kind: Kind, body: dict[str, object], message: str
) -> None:
    async with serving_webhook(fake_api, tmp_path):
        client = await KubeClient.connect(kubeconfig=str(fake_api.kubeconfig_path()))
        try:
            with pytest.raises(ApiError) as refused:
                await client.create(
                    kind,
                    {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"name": "x"}, **body},
                )
        finally:
            await client.close()
    assert message in refused.value.message
    assert fake_api.get(kind.plural, "x") is None


async def test_a_v1beta1_cluster_is_stored_with_its_cluster_source(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    """Kueue's Convert_v1beta1_MultiKueueClusterSpec: ``spec.kubeConfig`` moves under ``clusterSource``."""
    async with registered_webhook(fake_api, tmp_path, crds=KUEUE_CRDS):
        await fake_api.apply_manifests(
            """
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueCluster
metadata: {name: old}
spec:
  kubeConfig: {location: old-kubeconfig, locationType: Secret}
"""
        )
    stored = fake_api.get("multikueueclusters", "old")
    assert stored is not None
    assert stored["spec"] == {
        "clusterSource": {"kubeConfig": {"location": "old-kubeconfig", "locationType": "Secret"}}
    }
