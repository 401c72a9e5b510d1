"""The shipped dashboard viewer role grants exactly what kube-apiserver and the controller check for the
dashboard's path, and is aggregated where the ClusterQueue pending-workloads viewer role is."""

from __future__ import annotations

from pathlib import Path

import yaml

from kueue_webhook.http.dashboard import DASHBOARD, DASHBOARD_PATH

ROLES = Path(__file__).resolve().parents[3] / "manifests" / "roles"


def test_the_viewer_role_grants_get_on_the_dashboards_path_and_nothing_else() -> None:
    [role] = [doc for doc in yaml.safe_load_all((ROLES / "dashboard.yaml").read_text()) if doc]
    assert role["rules"] == [
        {
            "apiGroups": [DASHBOARD.group],
            "resources": [DASHBOARD.resource],
            "resourceNames": [DASHBOARD.name],
            "verbs": [DASHBOARD.verb],
        }
    ]
    # kube-apiserver reads /apis/<group>/<version>/<resource>/<name> as a get of that name
    assert (
        f"/apis/{DASHBOARD.group}/{DASHBOARD.version}/{DASHBOARD.resource}/{DASHBOARD.name}" == DASHBOARD_PATH
    )
    labels = role["metadata"]["labels"]
    assert labels["rbac.kueue.x-k8s.io/batch-admin"] == "true"
    assert {key.rsplit("-", 1)[-1] for key in labels if key.startswith("rbac.authorization.k8s.io/")} == {
        "view",
        "edit",
        "admin",
    }


def test_both_installs_ship_it() -> None:
    kustomization = yaml.safe_load((ROLES / "kustomization.yaml").read_text())
    assert "dashboard.yaml" in kustomization["resources"]
