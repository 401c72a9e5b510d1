"""The roles for people (manifests/roles): every kind a team or an admin touches has Kueue's viewer and editor
ClusterRoles, aggregated where Kueue aggregates them, and both installs ship them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_webhook.api.integrations import BUILTIN

MANIFESTS = Path(__file__).resolve().parents[3] / "manifests"
READ = {"get", "list", "watch"}
WRITE = READ | {"create", "delete", "patch", "update"}
VIEW, EDIT, ADMIN = (f"rbac.authorization.k8s.io/aggregate-to-{r}" for r in ("view", "edit", "admin"))
BATCH_USER, BATCH_ADMIN = "rbac.kueue.x-k8s.io/batch-user", "rbac.kueue.x-k8s.io/batch-admin"
#: kinds with built-in Kubernetes roles of their own (pods, deployments, statefulsets)
CORE_GROUPS = {"", "apps"}


def roles() -> dict[str, dict[str, Any]]:
    documents = yaml.safe_load_all((MANIFESTS / "roles" / "user-roles.yaml").read_text())
    return {doc["metadata"]["name"]: doc for doc in documents if doc}


def grants(role: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    return {
        (group, resource): set(rule["verbs"])
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }


def labelled(role: dict[str, Any], *labels: str) -> bool:
    return all(role["metadata"]["labels"].get(label) == "true" for label in labels)


def kueue_kinds() -> list[tuple[str, str]]:
    """(kind, plural) of every CRD the install serves."""
    out = []
    for path in sorted((MANIFESTS / "crds").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        if doc.get("kind") == "CustomResourceDefinition":
            out.append((doc["spec"]["names"]["kind"], doc["spec"]["names"]["plural"]))
    return out


@pytest.mark.parametrize(("kind", "plural"), kueue_kinds())
def test_every_kueue_kind_has_a_viewer_and_an_admin_only_editor(kind: str, plural: str) -> None:
    by_name = roles()
    viewer, editor = (
        by_name[f"kueue-{kind.lower()}-viewer-role"],
        by_name[f"kueue-{kind.lower()}-editor-role"],
    )
    assert grants(viewer)[("kueue.x-k8s.io", plural)] == READ
    assert grants(editor)[("kueue.x-k8s.io", plural)] == WRITE
    assert labelled(viewer, BATCH_ADMIN, ADMIN) and labelled(editor, BATCH_ADMIN)
    # quota and queues are the admins' to change: no editor is aggregated into a built-in role or batch-user
    assert not any(labelled(editor, label) for label in (VIEW, EDIT, ADMIN, BATCH_USER))


@pytest.mark.parametrize("plural", ["workloads", "localqueues"])
def test_a_namespace_editor_or_viewer_sees_their_workloads_and_local_queues(plural: str) -> None:
    viewer = roles()[f"kueue-{plural[:-1]}-viewer-role"]
    assert labelled(viewer, VIEW, EDIT, ADMIN, BATCH_USER)


@pytest.mark.parametrize(
    "integration", [i for i in BUILTIN.values() if i.group not in CORE_GROUPS], ids=lambda i: i.name
)
def test_every_queued_job_kind_can_be_read_by_view_and_submitted_by_batch_users(integration: Any) -> None:
    plural = integration.plural
    by_name = roles()
    viewer = by_name[f"kueue-{integration.kind.lower()}-viewer-role"]
    editor = by_name[f"kueue-{integration.kind.lower()}-editor-role"]
    assert grants(viewer)[(integration.group, plural)] == READ
    assert grants(editor)[(integration.group, plural)] == WRITE
    assert labelled(viewer, VIEW, EDIT, ADMIN, BATCH_ADMIN)
    assert labelled(editor, BATCH_USER, BATCH_ADMIN)


def test_batch_user_and_batch_admin_aggregate_the_labelled_roles() -> None:
    by_name = roles()
    for name, label in (("kueue-batch-user-role", BATCH_USER), ("kueue-batch-admin-role", BATCH_ADMIN)):
        [selector] = by_name[name]["aggregationRule"]["clusterRoleSelectors"]
        assert selector == {"matchLabels": {label: "true"}}
    users = {(g, r) for role in by_name.values() if labelled(role, BATCH_USER) for (g, r) in grants(role)}
    assert ("kueue.x-k8s.io", "clusterqueues") not in users
    assert {("batch", "jobs"), ("kueue.x-k8s.io", "workloads")} <= users


@pytest.mark.parametrize("install", ["", "controller/local"])
def test_both_installs_ship_the_roles(install: str) -> None:
    kubectl = shutil.which("kubectl") or "/usr/bin/kubectl"
    if not Path(kubectl).exists():
        pytest.skip("kubectl is not installed")
    rendered = subprocess.run(
        [kubectl, "kustomize", str(MANIFESTS / install)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    names = {doc["metadata"]["name"] for doc in yaml.safe_load_all(rendered.stdout) if doc}
    assert set(roles()) <= names
