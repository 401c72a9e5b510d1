"""The roles for people on a real API server: a team member bound to nothing but the built-in ``edit`` role
in their namespace uses the queues there, and nowhere else.

kube-controller-manager's ClusterRole aggregation folds the shipped viewer roles (manifests/roles) into
``edit``; the test acts as that user through impersonation (``kubectl --as``), so kube-apiserver's own RBAC
decides every answer.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, until
from tests.e2e.install import Running
from tests.e2e.queues import team_queue
from tests.support import builders

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)


@pytest.fixture
def member(controller: tuple[Cluster, Running]) -> Iterator[tuple[Cluster, str, str]]:
    """A team namespace with a queue, and a user bound to ``edit`` there only."""
    cluster, _ = controller
    user = f"member-{uuid.uuid4().hex[:6]}"
    with team_queue(cluster, "e2e-roles", quota="500m") as namespace:
        cluster.kubectl(
            "create", "rolebinding", "team-edit", "-n", namespace, "--clusterrole=edit", f"--user={user}"
        )
        yield cluster, namespace, user


def as_user(cluster: Cluster, user: str, *args: str, check: bool = True) -> str:
    result = cluster.kubectl(f"--as={user}", *args, check=check)
    return result.stdout if result.returncode == 0 else result.stderr


def job(namespace: str, name: str) -> str:
    return json.dumps(
        builders.queued_job(namespace, name, queue="q", resources=builders.cpu_requests("500m"), suspend=None)
    )


def test_a_namespace_editor_submits_and_follows_queued_jobs_in_their_namespace_only(
    member: tuple[Cluster, str, str],
) -> None:
    cluster, namespace, user = member
    # the aggregation controller folds the shipped viewer roles into edit (asynchronously)
    until(
        lambda: (
            as_user(
                cluster,
                user,
                "auth",
                "can-i",
                "list",
                "workloads.kueue.x-k8s.io",
                "-n",
                namespace,
                check=False,
            ).strip()
            == "yes"
        ),
        "edit to include the Workload viewer role",
    )
    for name in ("first", "second"):
        cluster.kubectl(f"--as={user}", "create", "-f", "-", input=job(namespace, name))
    queues = json.loads(as_user(cluster, user, "get", "localqueues", "-n", namespace, "-o", "json"))
    assert [q["metadata"]["name"] for q in queues["items"]] == ["q"]

    def admitted_and_pending() -> bool:
        workloads = json.loads(as_user(cluster, user, "get", "workloads", "-n", namespace, "-o", "json"))[
            "items"
        ]
        states = sorted(
            next(
                (
                    c["status"]
                    for c in (w.get("status") or {}).get("conditions") or []
                    if c["type"] == "Admitted"
                ),
                "",
            )
            for w in workloads
        )
        return states == ["False", "True"] or states == ["", "True"]

    until(admitted_and_pending, "one Workload admitted and one waiting, as the team member sees them")
    table = as_user(cluster, user, "get", "workloads", "-n", namespace)
    assert "first" in table or "second" in table

    other = f"e2e-roles-other-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", other)
    try:
        refused = as_user(cluster, user, "get", "workloads", "-n", other, check=False)
        assert "Forbidden" in refused and user in refused
        refused = cluster.kubectl(
            f"--as={user}", "create", "-f", "-", input=job(other, "outside"), check=False
        )
        assert refused.returncode != 0 and "forbidden" in refused.stderr.lower()
        refused_cq = as_user(cluster, user, "get", "clusterqueues", check=False)
        assert "Forbidden" in refused_cq
    finally:
        cluster.kubectl("delete", "namespace", other, "--wait=false", check=False)
