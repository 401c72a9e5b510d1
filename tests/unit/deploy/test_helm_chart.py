"""The Helm chart (charts/kueue-webhook) renders the objects of manifests/ for its default values and follows
its values (image, replicas, namespace, resources, integrations, metrics, cert management). Rendered with the
template subset of ``gotemplate``; with ``helm`` on PATH, ``helm lint`` and ``helm template`` too."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_webhook.api.config import Configuration, parse_configuration
from tests.unit.deploy.gotemplate import TemplateError, render_chart
from tests.unit.deploy.rendering import CHART, MANIFESTS, Obj, keyed, kustomize

FILES = CHART / "files"


def config_of(objects: list[Obj], namespace: str = "kueue-system") -> Configuration:
    [config_map] = [
        o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "kueue-webhook-config"
    ]
    assert config_map["metadata"]["namespace"] == namespace
    parsed = parse_configuration(config_map["data"]["config.yaml"])
    assert isinstance(parsed, Configuration), parsed
    return parsed


def deployment_of(objects: list[Obj]) -> Obj:
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    return deployment


def test_chart_files_are_copies_of_the_manifests() -> None:
    copies = sorted(p for p in FILES.rglob("*") if p.is_file())
    assert copies, "the chart has no copied files"
    for copy in copies:
        original = MANIFESTS / copy.relative_to(FILES)
        assert original.is_file(), f"{copy} has no original in manifests/"
        assert copy.read_bytes() == original.read_bytes(), f"{copy} differs from {original}: make chart-files"
    crds = {p.name for p in (MANIFESTS / "crds").glob("*.yaml")} - {"kustomization.yaml"}
    assert {p.name for p in (FILES / "crds").glob("*.yaml")} == crds, "a CRD is missing: make chart-files"


def test_default_values_render_the_objects_of_the_manifests() -> None:
    assert keyed(render_chart(CHART)) == keyed(kustomize(MANIFESTS))


def test_metrics_enabled_renders_the_observability_overlay() -> None:
    assert keyed(render_chart(CHART, {"metrics": {"enabled": True}})) == keyed(
        kustomize(MANIFESTS / "observability")
    )


def test_metrics_parts_can_be_left_out_and_the_prometheus_account_named() -> None:
    values = {
        "metrics": {
            "enabled": True,
            "dashboard": False,
            "prometheusRule": False,
            "prometheusServiceAccount": {"name": "prometheus", "namespace": "obs"},
        }
    }
    objects = keyed(render_chart(CHART, values))
    added = {k[0] for k in objects} - {k[0] for k in keyed(render_chart(CHART))}
    assert added == {"ServiceMonitor"}  # the bindings are new objects of existing kinds
    binding = objects[("ClusterRoleBinding", "", "kueue-webhook-metrics-reader-prometheus")]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "obs"}]
    assert ("ConfigMap", "kueue-system", "kueue-webhook-dashboard") not in objects


def test_image_replicas_and_resources_follow_the_values() -> None:
    resources = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}
    values = {
        "image": {"repository": "registry.example/kw", "tag": "9.9"},
        "replicas": 3,
        "resources": resources,
    }
    deployment = deployment_of(render_chart(CHART, values))
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example/kw:9.9"
    assert deployment["spec"]["replicas"] == 3
    assert container["resources"] == resources


def test_the_image_tag_defaults_to_the_app_version() -> None:
    [container] = deployment_of(render_chart(CHART))["spec"]["template"]["spec"]["containers"]
    app_version = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    assert container["image"] == f"kueue-webhook:{app_version}"


def test_the_app_version_is_the_packages_version() -> None:
    app_version = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    assert app_version == importlib.metadata.version("kueue-webhook")


def test_another_namespace_moves_every_reference_to_it() -> None:
    objects = render_chart(CHART, {"namespace": {"name": "batch-system"}})
    assert "kueue-system" not in json.dumps(objects)
    by_key = keyed(objects)
    assert ("Namespace", "", "batch-system") in by_key
    assert (
        "--namespace=batch-system"
        in deployment_of(objects)["spec"]["template"]["spec"]["containers"][0]["args"]
    )
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        for hook in next(o for o in objects if o["kind"] == kind)["webhooks"]:
            assert hook["clientConfig"]["service"]["namespace"] == "batch-system"
            [expression] = hook["namespaceSelector"]["matchExpressions"]
            assert expression["values"] == ["kube-system", "batch-system"]  # the controller's own pods pass
    for crd in (o for o in objects if o["kind"] == "CustomResourceDefinition"):
        assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["namespace"] == "batch-system"
    config = config_of(objects, "batch-system")
    assert config.managed_jobs_namespace_selector is not None


def test_an_existing_namespace_is_not_rendered() -> None:
    objects = keyed(render_chart(CHART, {"namespace": {"create": False}}))
    assert not [k for k in objects if k[0] == "Namespace"]


def test_crds_can_be_left_to_another_install() -> None:
    kinds = {k[0] for k in keyed(render_chart(CHART, {"crds": {"install": False}}))}
    assert "CustomResourceDefinition" not in kinds and "Deployment" in kinds


def test_integrations_reach_the_controllers_configuration() -> None:
    frameworks = ["batch/job", "pod", "jobset.x-k8s.io/jobset"]
    config = config_of(render_chart(CHART, {"integrations": {"frameworks": frameworks}}))
    assert set(config.integrations.names()) == set(frameworks)
    assert config_of(render_chart(CHART)).integrations.names() == Configuration().integrations.names()


def test_cert_manager_issues_the_secret_and_injects_every_ca_bundle() -> None:
    objects = render_chart(CHART, {"certManagement": "cert-manager"})
    by_key = keyed(objects)
    certificate = by_key[("Certificate", "kueue-system", "kueue-webhook")]
    volumes = deployment_of(objects)["spec"]["template"]["spec"]["volumes"]
    assert certificate["spec"]["secretName"] in {v["secret"]["secretName"] for v in volumes if "secret" in v}
    assert "kueue-webhook.kueue-system.svc" in certificate["spec"]["dnsNames"]
    assert certificate["spec"]["issuerRef"]["name"] in {k[2] for k in by_key if k[0] == "Issuer"}
    injected = [
        o
        for o in objects
        if o["kind"]
        in {
            "CustomResourceDefinition",
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
            "APIService",
        }
    ]
    assert len(injected) == 13
    annotated = [
        o for o in objects if (o["metadata"].get("annotations") or {}).get("cert-manager.io/inject-ca-from")
    ]
    assert len(annotated) == 13  # nothing else carries the injector's annotation
    for obj in injected:
        assert obj["metadata"]["annotations"] == {
            "cert-manager.io/inject-ca-from": "kueue-system/kueue-webhook"
        }
    # cert-manager owns the Secret, so the leader does not renew it
    config_map = by_key[("ConfigMap", "kueue-system", "kueue-webhook-config")]
    assert config_of(objects).internal_cert_management.enable is False, config_map
    # otherwise the same objects
    plain = keyed(render_chart(CHART))
    for key, obj in by_key.items():
        if key in plain and key != ("ConfigMap", "kueue-system", "kueue-webhook-config"):
            obj["metadata"].pop("annotations", None)
            assert obj == plain[key], key


def test_an_unknown_cert_management_is_refused() -> None:
    with pytest.raises(TemplateError, match="self-managed or cert-manager"):
        render_chart(CHART, {"certManagement": "manual"})


def test_a_misspelt_value_in_a_template_is_an_error_not_an_empty_string(tmp_path: Path) -> None:
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    service = chart / "templates" / "service.yaml"
    service.write_text(service.read_text().replace(".Values.namespace.name", ".Values.namespace.nmae"))
    with pytest.raises(TemplateError, match="nmae"):
        render_chart(chart)


def helm() -> str:
    found = shutil.which("helm")
    if found is None:
        pytest.skip("helm is not installed (tests above render the chart without it)")
    return found


def test_helm_lint_passes() -> None:
    result = subprocess.run([helm(), "lint", str(CHART)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"metrics": {"enabled": True}},
        {"certManagement": "cert-manager", "namespace": {"name": "batch-system"}},
    ],
)
def test_helm_template_renders_what_the_subset_renders(values: dict[str, Any], tmp_path: Path) -> None:
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    result = subprocess.run(
        [helm(), "template", "kueue-webhook", str(CHART), "-f", str(values_file)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    helm_objects = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    assert keyed(helm_objects) == keyed(render_chart(CHART, values))
