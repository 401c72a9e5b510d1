"""The install manifests: they render, route to paths the server serves, and grant no more than needed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_webhook.admission.routes import ROUTES
from kueue_webhook.api.integrations import BUILTIN
from kueue_webhook.control.kube.kinds import CONFIGMAPS, LEASES, WATCHED

ROOT = Path(__file__).resolve().parents[3] / "manifests"
CONTROLLER = ROOT / "controller"


def documents() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted(CONTROLLER.glob("*.yaml")):
        if path.name != "kustomization.yaml":
            out.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return out


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [doc for doc in documents() if doc["kind"] == kind]


def test_every_webhook_points_at_a_path_the_server_serves_with_safe_settings() -> None:
    hooks = [
        h
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        for d in of_kind(kind)
        for h in d["webhooks"]
    ]
    assert {h["clientConfig"]["service"]["path"] for h in hooks} == {
        "/mutate-batch-v1-job",
        "/validate-batch-v1-job",
        "/mutate--v1-pod",
        "/validate--v1-pod",
        "/validate-kueue-x-k8s-io-v1beta2-clusterqueue",
        "/validate-kueue-x-k8s-io-v1beta2-localqueue",
        "/validate-kueue-x-k8s-io-v1beta2-resourceflavor",
        "/validate-kueue-x-k8s-io-v1beta2-cohort",
        "/validate-kueue-x-k8s-io-v1beta2-topology",
        "/validate-kueue-x-k8s-io-v1beta2-workload",
        "/validate-kueue-x-k8s-io-v1beta2-multikueuecluster",
        "/validate-kueue-x-k8s-io-v1beta2-multikueueconfig",
        "/mutate",
        "/validate",
    }
    for hook in hooks:
        assert hook["clientConfig"]["service"]["path"] in ROUTES
        assert hook["admissionReviewVersions"] == ["v1"] and hook["sideEffects"] == "None"
        assert 1 <= hook["timeoutSeconds"] <= 10
        excluded = hook["namespaceSelector"]["matchExpressions"][0]
        assert excluded["operator"] == "NotIn" and set(excluded["values"]) == {"kube-system", "kueue-system"}


def test_every_built_in_integration_is_admitted_by_both_webhooks_and_granted_in_rbac() -> None:
    """A JobSet, PyTorchJob, ... reaches the catch-all paths (which dispatch on kind), a Pod its own (Kueue's
    /mutate--v1-pod), and the controller may watch and patch it, whether or not integrations.frameworks turns
    it on; a Deployment or StatefulSet is only defaulted (queued through its pods), never watched."""
    role = of_kind("ClusterRole")[0]
    granted = {(g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        hooks = [
            h
            for d in of_kind(kind)
            for h in d["webhooks"]
            if h["name"].endswith(("integrations.kueue.x-k8s.io", "pod.kueue.x-k8s.io"))
        ]
        assert len(hooks) == 2
        covered = {
            (g, v, r)
            for hook in hooks
            for rule in hook["rules"]
            for g in rule["apiGroups"]
            for v in rule["apiVersions"]
            for r in rule["resources"]
        }
        for integration in BUILTIN.values():
            if integration.group != "batch":
                assert (integration.group, integration.version, integration.plural) in covered
                if not integration.through_pods:
                    assert (integration.group, integration.plural) in granted


def test_rbac_has_no_wildcards_and_covers_every_watched_kind() -> None:
    rules = [r for kind in ("ClusterRole", "Role") for doc in of_kind(kind) for r in doc["rules"]]
    for rule in rules:
        for field in ("apiGroups", "resources", "nonResourceURLs", "verbs"):
            assert "*" not in rule.get(field, ()), rule
    for kind in (*WATCHED, CONFIGMAPS):
        granted = {
            v
            for r in rules
            if kind.group in r.get("apiGroups", ()) and kind.plural in r.get("resources", ())
            for v in r["verbs"]
        }
        assert {"list", "watch"} <= granted, kind.plural
    for written in ("clusterqueues/status", "localqueues/status", "cohorts/status", "admissionchecks/status"):
        assert "patch" in {v for r in rules if written in r.get("resources", ()) for v in r["verbs"]}, written
    lease_verbs = {v for r in rules if LEASES.plural in r.get("resources", ()) for v in r["verbs"]}
    assert {"get", "create", "update"} <= lease_verbs


def test_deployment_runs_two_hardened_replicas_with_probes() -> None:
    [deployment] = of_kind("Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    [container] = spec["template"]["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["resources"]["requests"]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True and security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert spec["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    secret = {v["secret"]["secretName"] for v in spec["template"]["spec"]["volumes"] if "secret" in v}
    assert secret == {"kueue-webhook-tls"}
    [service] = of_kind("Service")
    assert service["spec"]["ports"][0]["port"] == 443


def test_kustomize_renders_crds_and_controller_together() -> None:
    kubectl = shutil.which("kubectl") or "/usr/bin/kubectl"
    if not Path(kubectl).exists():
        pytest.skip("kubectl is not installed")
    rendered = subprocess.run(
        [kubectl, "kustomize", str(ROOT)], capture_output=True, text=True, check=True, timeout=60
    )
    kinds = [doc["kind"] for doc in yaml.safe_load_all(rendered.stdout) if doc]
    assert kinds.count("CustomResourceDefinition") == 10
    assert {
        "Deployment",
        "Service",
        "ConfigMap",
        "PodDisruptionBudget",
        "MutatingWebhookConfiguration",
    } <= set(kinds)


def test_out_of_cluster_webhooks_match_the_in_cluster_ones_but_call_localhost() -> None:
    for name in ("mutatingwebhookconfiguration.yaml", "validatingwebhookconfiguration.yaml"):
        in_cluster = yaml.safe_load((CONTROLLER / name).read_text())
        local = yaml.safe_load((CONTROLLER / "local" / name).read_text())
        assert in_cluster["metadata"]["name"] == local["metadata"]["name"]
        for ours, theirs in zip(in_cluster["webhooks"], local["webhooks"], strict=True):
            path = ours["clientConfig"]["service"]["path"]
            assert theirs["clientConfig"] == {"url": f"https://127.0.0.1:9443{path}"}
            assert {k: v for k, v in ours.items() if k != "clientConfig"} == {
                k: v for k, v in theirs.items() if k != "clientConfig"
            }


def test_the_visibility_api_is_registered_on_the_webhook_service_with_kueues_viewer_roles() -> None:
    [api_service] = of_kind("APIService")
    [service] = of_kind("Service")
    spec = api_service["spec"]
    assert api_service["metadata"]["name"] == f"{spec['version']}.{spec['group']}"
    assert (spec["group"], spec["version"]) == ("visibility.kueue.x-k8s.io", "v1beta2")
    target = spec["service"]
    assert (target["name"], target["namespace"]) == (
        service["metadata"]["name"],
        service["metadata"]["namespace"],
    )
    assert target["port"] == service["spec"]["ports"][0]["port"]
    readers = {
        resource: set(rule["verbs"])
        for role in of_kind("ClusterRole")
        for rule in role["rules"]
        if rule.get("apiGroups") == ["visibility.kueue.x-k8s.io"]
        for resource in rule["resources"]
    }
    assert readers == {
        "clusterqueues/pendingworkloads": {"get", "list", "watch"},
        "localqueues/pendingworkloads": {"get", "list", "watch"},
    }


def test_the_controller_may_delegate_authentication_and_read_the_requestheader_settings() -> None:
    """What an extension API server needs (Kubernetes' documented bindings): TokenReview and
    SubjectAccessReview through system:auth-delegator, and the requestheader ConfigMap through the
    extension-apiserver-authentication-reader Role in kube-system."""
    controller = {"kind": "ServiceAccount", "name": "kueue-webhook", "namespace": "kueue-system"}
    bound = {
        (doc["kind"], doc["metadata"].get("namespace", ""), doc["roleRef"]["kind"], doc["roleRef"]["name"])
        for doc in of_kind("ClusterRoleBinding") + of_kind("RoleBinding")
        if controller in doc["subjects"]
    }
    assert ("ClusterRoleBinding", "", "ClusterRole", "system:auth-delegator") in bound
    assert ("RoleBinding", "kube-system", "Role", "extension-apiserver-authentication-reader") in bound
    [reader] = [d for d in of_kind("ClusterRole") if d["metadata"]["name"] == "kueue-webhook-metrics-reader"]
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def test_out_of_cluster_visibility_reaches_localhost_through_an_external_name_service() -> None:
    local = [doc for doc in yaml.safe_load_all((CONTROLLER / "local" / "visibility.yaml").read_text()) if doc]
    [service] = [d for d in local if d["kind"] == "Service"]
    [api_service] = [d for d in local if d["kind"] == "APIService"]
    assert (service["spec"]["type"], service["spec"]["externalName"]) == ("ExternalName", "localhost")
    assert api_service["spec"]["service"]["port"] == service["spec"]["ports"][0]["port"] == 9443
    in_cluster = {
        d["metadata"]["name"]: d for d in of_kind("ClusterRole") if "pending" in d["metadata"]["name"]
    }
    assert {d["metadata"]["name"]: d for d in local if d["kind"] == "ClusterRole"} == in_cluster


def test_certificate_renewal_is_granted_on_our_objects_by_name_only() -> None:
    """internalCertManagement: get and update of the one Secret (no create, no other Secret); get and patch
    of the caBundle holders the leader writes, each by name."""
    from kueue_webhook.api.config import InternalCertManagement
    from kueue_webhook.control.replica.declared_webhooks import DEFAULT_NAMES
    from kueue_webhook.http.certs import KUEUE_CRDS, VISIBILITY_APISERVICES

    def granted(resource: str) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for kind in ("ClusterRole", "Role"):
            for doc in of_kind(kind):
                for rule in doc["rules"]:
                    if resource in rule.get("resources", ()):
                        for name in rule.get("resourceNames", ["*any*"]):
                            out.setdefault(name, set()).update(rule["verbs"])
        return out

    # its own certificate Secret by name; reading (never writing) the namespace's Secrets is for MultiKueue's
    # worker kubeconfigs, as Kueue's controller reads them
    assert granted("secrets") == {
        InternalCertManagement().webhook_secret_name: {"get", "update"},
        "*any*": {"get", "list", "watch"},
    }
    assert granted("customresourcedefinitions") == {name: {"get", "patch"} for name in KUEUE_CRDS}
    assert granted("apiservices") == {name: {"get", "patch"} for name in VISIBILITY_APISERVICES}
    assert granted("mutatingwebhookconfigurations") == {DEFAULT_NAMES["mutating"]: {"get", "patch"}}
    assert granted("validatingwebhookconfigurations") == {DEFAULT_NAMES["validating"]: {"get", "patch"}}
