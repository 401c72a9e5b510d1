"""apimachinery's wording, read from a real kube-apiserver: ``KUEUE_E2E_KUBECONFIG``.

Kueue's webhooks validate names, labels and label selectors with the apimachinery functions kube-apiserver
uses for its built-in objects, so a server-side dry run of a Deployment with a bad ``spec.selector``, of a
ConfigMap with bad labels and annotations, of badly named objects and of a ClusterQueue with a bad
``spec.cohortName`` (Kueue's CRD schema) yields the exact causes ``kueue_webhook.api.validation`` must
produce.
Dry runs persist nothing, so nothing needs cleaning up.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.validation import (
    dns1123_label_problems,
    dns1123_subdomain_problems,
    schema_name_errors,
    validate_annotation_keys,
    validate_label_selector,
    validate_labels,
)
from kueue_webhook.control.kube.client import ApiError, KubeClient
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, Any]

BAD_LABELS = {
    "bad key!": "bad value!",
    "a/b/c": "ok",
    "/empty-prefix": "ok",
    "Bad_Prefix/name": "ok",
    "p" * 254 + "/x": "ok",
    "n" * 64: "v" * 64,
    "pre/": "-bad-",
    "é" * 32: "ü" * 32,
}
SELECTOR: JSON = {
    "matchLabels": BAD_LABELS,
    "matchExpressions": [
        {"key": "x", "operator": "Bogus", "values": ["a"]},
        {"key": "y", "operator": "In"},
        {"key": "z", "operator": "Exists", "values": ["a"]},
        {"key": "w", "operator": "NotIn", "values": ["bad value!", "ok"]},
        {"key": "bad key!", "operator": "DoesNotExist"},
        {"key": "", "operator": "Maybe"},
    ],
}


@pytest.fixture
async def api() -> AsyncIterator[KubeClient]:
    client = await KubeClient.connect(kubeconfig=KUBECONFIG)
    try:
        yield client
    finally:
        await client.close()


async def refused(api: KubeClient, path: str, body: JSON) -> Counter[str]:
    """The causes of the server's 422 for a dry-run create, as ``field: message`` lines."""
    with pytest.raises(ApiError) as error:
        await api.request("POST", path, query={"dryRun": "All"}, body=body)
    assert error.value.status == 422, error.value.message
    causes = (error.value.body.get("details") or {}).get("causes") or []
    return Counter(f"{c.get('field', '')}: {c.get('message', '')}" for c in causes)


def expected(errors: list[FieldError]) -> Counter[str]:
    return Counter(str(error) for error in errors)


def under(causes: Counter[str], prefix: str) -> Counter[str]:
    return Counter({line: n for line, n in causes.items() if line.startswith(prefix)})


async def test_label_selector_causes_match_kube_apiserver(api: KubeClient) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "validation-wording-probe"},
        "spec": {
            "selector": SELECTOR,
            "template": {
                "metadata": {"labels": {"app": "probe"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }
    causes = await refused(api, "/apis/apps/v1/namespaces/default/deployments", deployment)
    assert under(causes, "spec.selector.") == expected(validate_label_selector(SELECTOR, "spec.selector"))


async def test_label_and_annotation_causes_match_kube_apiserver(api: KubeClient) -> None:
    annotations = {key: "x" for key in BAD_LABELS}
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "validation-wording-probe", "labels": BAD_LABELS, "annotations": annotations},
    }
    causes = await refused(api, "/api/v1/namespaces/default/configmaps", config_map)
    assert under(causes, "metadata.labels:") == expected(validate_labels(BAD_LABELS, "metadata.labels"))
    assert under(causes, "metadata.annotations:") == expected(
        validate_annotation_keys(annotations, "metadata.annotations")
    )


@pytest.mark.parametrize("name", ["Bad_Name", "x" * 254])
async def test_name_causes_match_kube_apiserver(api: KubeClient, name: str) -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    causes = await refused(api, "/api/v1/namespaces/default/configmaps", config_map)
    assert under(causes, "metadata.name:") == expected(
        [FieldError.invalid("metadata.name", name, p) for p in dns1123_subdomain_problems(name)]
    )
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    causes = await refused(api, "/api/v1/namespaces", namespace)
    assert under(causes, "metadata.name:") == expected(
        [FieldError.invalid("metadata.name", name, p) for p in dns1123_label_problems(name)]
    )


@pytest.mark.parametrize("cohort", ["Bad_Cohort", "c" * 254])
async def test_reference_causes_match_the_kueue_crd_schema(api: KubeClient, cohort: str) -> None:
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "validation-wording-probe"},
        "spec": {"cohortName": cohort, "resourceGroups": []},
    }
    causes = await refused(api, "/apis/kueue.x-k8s.io/v1beta2/clusterqueues", queue)
    assert under(causes, "spec.cohortName:") == expected(schema_name_errors(cohort, "spec.cohortName"))
