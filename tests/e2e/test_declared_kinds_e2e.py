"""A CRD no integration knows, declared in the ConfigMap, queued on a real API server with kueue-webhook
installed out of cluster: the made-up ``example.com/v1`` TrainingRun (tests/crds/declared) is applied to the
API server, declared live, and then the controller adds it to its webhook configurations, the API server
sends its creates to the webhook, which suspends it; it is admitted with its pod counts and the flavor's
node labels, suspended again when an urgent Job preempts it, started again and its quota released when the
test (playing the operator) reports it succeeded. Undeclared, a new TrainingRun is left alone. The RBAC
docs/integrations.md tells admins to grant (a ClusterRole aggregated into ours) is checked with the real
aggregation."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml

from tests.crds.declared_kind import CRD_FILE, declaration, training_run
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until
from tests.e2e.conftest import ControllerSetup, with_controller
from tests.e2e.install import REPO_ROOT, Running
from tests.e2e.queues import configure, team_queue
from tests.support import builders

JSON = dict[str, object]
RBAC = REPO_ROOT / "manifests" / "controller" / "rbac.yaml"
PLURAL = "trainingruns.example.com"
CONTROLLER_SA = "system:serviceaccount:kueue-system:kueue-webhook"


def install_declared_crd(cluster: Cluster) -> list[str]:
    cluster.kubectl("apply", "-f", str(CRD_FILE))
    cluster.kubectl("wait", "--for=condition=Established", f"crd/{PLURAL}", "--timeout=60s")
    return [PLURAL]


pytestmark = [
    pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER),
    with_controller(ControllerSetup("declared", crds=install_declared_crd)),
]


def configure_declared(cluster: Cluster, running: Running, *, declared: bool) -> None:
    """The shipped configuration, with the TrainingRun declared or not; returns once it is applied."""
    extra = {"integrations": {"declaredKinds": [declaration()]}}
    configure(cluster, running, yaml.safe_dump(extra) if declared else "")


def entries(cluster: Cluster) -> set[str]:
    names = set()
    for kind, name in (
        ("mutatingwebhookconfiguration", "kueue-webhook-mutating"),
        ("validatingwebhookconfiguration", "kueue-webhook-validating"),
    ):
        names |= {hook["name"] for hook in cluster.get(kind, name)["webhooks"]}
    return names & {"mdeclared.kueue.x-k8s.io", "vdeclared.kueue.x-k8s.io"}


@pytest.fixture
def queue(controller: tuple[Cluster, Running]) -> Iterator[tuple[Cluster, Running, str]]:
    """A namespace with LocalQueue ``q`` of a preempting ClusterQueue of 8 GPUs; undeclared after."""
    cluster, running = controller
    with team_queue(cluster, "e2e-declared", resource="nvidia.com/gpu", quota="8", preempting=True) as name:
        try:
            yield cluster, running, name
        finally:
            configure_declared(cluster, running, declared=False)


def create(cluster: Cluster, manifest: dict[str, object]) -> dict[str, object]:
    """Create as a user does, returning the object as stored (after the webhooks)."""
    result = cluster.kubectl("create", "-f", "-", "-o", "json", input=json.dumps(manifest))
    created: dict[str, object] = json.loads(result.stdout)
    return created


def suspended(cluster: Cluster, namespace: str, name: str) -> object:
    return cluster.get(PLURAL, name, "-n", namespace)["spec"].get("suspend")


def test_a_declared_crd_is_suspended_admitted_preempted_and_released(
    queue: tuple[Cluster, Running, str],
) -> None:
    cluster, running, namespace = queue
    configure_declared(cluster, running, declared=True)
    until(lambda: len(entries(cluster)) == 2, "the declared kind's webhook entries")

    created = create(cluster, training_run("train", namespace, queue="q", workers=4))
    assert created["spec"]["suspend"] is True  # the webhook's doing: the manifest has no suspend
    until(lambda: suspended(cluster, namespace, "train") is False, "the TrainingRun started")
    run = cluster.get(PLURAL, "train", "-n", namespace)
    assert run["spec"]["workers"][0]["template"]["spec"]["nodeSelector"] == {"node-pool": namespace}
    [workload] = cluster.items("workloads", "-n", namespace)
    assert workload["metadata"]["name"].startswith("trainingrun-train-")
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("launcher", 1), ("gpu", 4)]

    # an urgent Job needs the whole quota: the TrainingRun is suspended again, its template restored
    cluster.apply(f"""
apiVersion: batch/v1
kind: Job
metadata:
  name: urgent
  namespace: {namespace}
  labels: {{kueue.x-k8s.io/queue-name: q, kueue.x-k8s.io/priority-class: {namespace}}}
spec:
  parallelism: 4
  completions: 4
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: c, image: busybox, resources: {{limits: {{nvidia.com/gpu: "2"}}}}}}]
""")
    until(lambda: suspended(cluster, namespace, "train") is True, "the TrainingRun preempted")
    run = cluster.get(PLURAL, "train", "-n", namespace)
    assert "nodeSelector" not in run["spec"]["workers"][0]["template"]["spec"]
    evicted = cluster.get("workload", workload["metadata"]["name"], "-n", namespace)
    assert condition(evicted, "Preempted")["status"] == "True"

    # the urgent Job's pods succeed: the TrainingRun runs again, then succeeds and frees the quota
    def urgent_done() -> bool:
        cluster.finish_pods(namespace, jobs={"urgent"})
        return condition(cluster.get("job", "urgent", "-n", namespace), "Complete").get("status") == "True"

    until(urgent_done, "the urgent Job completed")
    until(lambda: suspended(cluster, namespace, "train") is False, "the TrainingRun started again")
    done = {"type": "Succeeded", "status": "True", "reason": "Trained", "message": "done"}
    cluster.kubectl(
        "-n",
        namespace,
        "patch",
        PLURAL,
        "train",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"conditions": [done]}}),
    )
    until(
        lambda: (
            condition(cluster.get("workload", workload["metadata"]["name"], "-n", namespace), "Finished").get(
                "status"
            )
            == "True"
        ),
        "the Workload finished",
    )
    until(
        lambda: cluster.get("clusterqueue", namespace).get("status", {}).get("admittedWorkloads") == 0,
        "the quota released",
    )

    # undeclared: the webhook entries go and a new TrainingRun is left alone
    configure_declared(cluster, running, declared=False)
    until(lambda: not entries(cluster), "the declared kind's webhook entries removed")
    free = create(cluster, training_run("free", namespace, queue="q"))
    assert "suspend" not in free["spec"]
    names = [w["metadata"]["ownerReferences"][0]["name"] for w in cluster.items("workloads", "-n", namespace)]
    assert "free" not in names


def test_the_documented_grant_reaches_the_controller_through_aggregation(
    controller: tuple[Cluster, Running],
) -> None:
    cluster, _ = controller
    aggregated = [
        d for d in yaml.safe_load_all(RBAC.read_text()) if "declared-kinds" in d["metadata"]["name"]
    ]
    grant = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: e2e-kueue-webhook-trainingruns
  labels: {kueue-webhook/aggregate-to-controller: "true"}
rules:
- apiGroups: [example.com]
  resources: [trainingruns]
  verbs: [get, list, watch, patch, update]
"""
    cluster.apply("---\n".join(yaml.safe_dump(d) for d in aggregated))
    cluster.apply(grant)
    try:

        def allowed(verb: str) -> bool:
            result = cluster.kubectl("auth", "can-i", verb, PLURAL, "--as", CONTROLLER_SA, check=False)
            return result.stdout.strip() == "yes"

        until(lambda: all(allowed(v) for v in ("list", "watch", "patch")), "the aggregated grant")
        assert not allowed("delete")
    finally:
        cluster.kubectl(
            "delete", "clusterrole", "e2e-kueue-webhook-trainingruns", "--ignore-not-found", check=False
        )


def gpu_job(namespace: str, name: str, gpus: int, *, urgent: bool = False) -> str:
    """A one-pod Job of ``gpus`` GPUs in LocalQueue q (``urgent``: with the namespace's high priority)."""
    priority = {builders.PRIORITY_LABEL: namespace} if urgent else None
    return json.dumps(
        builders.queued_job(
            namespace, name, queue="q", resources=builders.gpu_limits(gpus), labels=priority, suspend=None
        )
    )


def test_a_declared_min_count_runs_what_fits_and_gets_its_count_back_when_preempted(
    queue: tuple[Cluster, Running, str],
) -> None:
    """The TrainingRun's elastic trainer (``minCountPath: minReplicas``): 6 one-GPU pods, content with 2,
    with 3 of 8 GPUs free, runs 3 (its replicas written by the controller); preempted, its replicas are
    back to 6 while it waits, and it runs 3 again once the GPUs are free."""
    cluster, running, namespace = queue
    configure_declared(cluster, running, declared=True)
    until(lambda: len(entries(cluster)) == 2, "the declared kind's webhook entries")

    refused = cluster.kubectl(
        "create",
        "-f",
        "-",
        input=json.dumps(training_run("whole", namespace, queue="q", trainer=(6, 6))),
        check=False,
    )
    assert refused.returncode != 0
    assert "spec.trainer.minReplicas: Invalid value: 6: must be an integer from 1 to 5" in refused.stderr

    cluster.apply(gpu_job(namespace, "holder", 5))
    until(
        lambda: cluster.get("job", "holder", "-n", namespace)["spec"].get("suspend") is False, "holder runs"
    )

    def trainer() -> dict[str, object]:
        run = cluster.get(PLURAL, "elastic", "-n", namespace)
        found: dict[str, object] = run["spec"]["trainer"]
        return {**found, "suspend": run["spec"].get("suspend")}

    create(cluster, training_run("elastic", namespace, queue="q", trainer=(6, 2)))
    until(lambda: trainer()["suspend"] is False, "the TrainingRun started with what fits")
    assert trainer()["replicas"] == 3
    [workload] = [
        w for w in cluster.items("workloads", "-n", namespace) if w["metadata"]["name"].startswith("train")
    ]
    assert [(p["name"], p["count"], p.get("minCount")) for p in workload["spec"]["podSets"]] == [
        ("launcher", 1, None),
        ("trainer", 6, 2),
    ]
    admitted = cluster.get("workload", workload["metadata"]["name"], "-n", namespace)
    counts = {a["name"]: a["count"] for a in admitted["status"]["admission"]["podSetAssignments"]}
    assert counts == {"launcher": 1, "trainer": 3}

    cluster.apply(gpu_job(namespace, "urgent", 3, urgent=True))
    until(lambda: trainer()["suspend"] is True, "the TrainingRun preempted")
    assert trainer()["replicas"] == 6
    evicted = cluster.get("workload", workload["metadata"]["name"], "-n", namespace)
    assert condition(evicted, "Preempted")["status"] == "True"

    def urgent_done() -> bool:
        cluster.finish_pods(namespace, jobs={"urgent"})
        return condition(cluster.get("job", "urgent", "-n", namespace), "Complete").get("status") == "True"

    until(urgent_done, "the urgent Job completed")
    until(lambda: trainer()["suspend"] is False, "the TrainingRun started again")
    assert trainer()["replicas"] == 3
