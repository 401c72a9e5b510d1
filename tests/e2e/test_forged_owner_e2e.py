"""Forged ownership on a real API server: a user with ``edit`` in a namespace cannot free a Job from quota by
writing a controller ownerReference into it.

With one kueue-webhook replica running in-process (the default configuration: batch/job queued; its
webhook on an ephemeral port, registered with the shipped webhook configurations), user ``alice``
(ClusterRole ``edit`` in the namespace, impersonated by kubectl) creates labelled Jobs that claim a
controller: a JobSet that does not exist, and another Job of the namespace (admitted, named with its real
UID). Both are created suspended and get a Workload of their own, which waits for quota like any other; alice
can neither start them nor make a queued Job somebody's child afterwards.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_webhook.http.certs import ca_bundle
from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until
from tests.e2e.queues import team_queue
from tests.support import builders
from tests.support.replica import REPO_ROOT, certificates, start_replica, webhook_configurations

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, Any]
HANG = 90.0
ALICE = "alice"


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The Kueue CRDs, and one replica (leading at once) whose webhook the API server calls."""
    cluster = Cluster(Path(KUBECONFIG))
    cluster.kubectl("apply", "-k", str(REPO_ROOT / "manifests" / "crds"))
    tls = certificates(tmp_path_factory.mktemp("owners") / "tls")
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="replica", daemon=True)
    thread.start()

    def run(coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(120)

    replica = run(start_replica(Path(KUBECONFIG), tls=tls, leader_election=False))
    configurations = webhook_configurations(ca=ca_bundle(tls), url_base=f"https://127.0.0.1:{replica.port}")
    try:
        cluster.apply(yaml.safe_dump_all(configurations))
        yield cluster
    finally:
        for doc in configurations:
            cluster.kubectl("delete", doc["kind"], doc["metadata"]["name"], "--ignore-not-found", check=False)
        run(replica.stop())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)


@pytest.fixture
def namespace(controller: Cluster) -> Iterator[str]:
    """A namespace whose LocalQueue ``q`` holds one CPU, where alice has ``edit``."""
    cluster = controller
    with team_queue(cluster, "e2e-owners", quota="1") as name:
        cluster.kubectl(
            "-n", name, "create", "rolebinding", "alice-edit", "--clusterrole=edit", f"--user={ALICE}"
        )
        yield name


def job(namespace: str, name: str, *, cpu: str, owner: JSON | None = None) -> JSON:
    body = builders.queued_job(
        namespace, name, queue="q", resources=builders.cpu_requests(cpu), suspend=False
    )
    if owner is not None:
        body["metadata"]["ownerReferences"] = [owner]
    return body


def create(cluster: Cluster, obj: JSON, *, user: str | None = None) -> JSON:
    who = ["--as", user] if user else []
    created = cluster.kubectl("create", *who, "-o", "json", "-f", "-", input=json.dumps(obj))
    return dict(json.loads(created.stdout))


def workload_of(cluster: Cluster, namespace: str, uid: str) -> JSON:
    owned = [
        w
        for w in cluster.items("workloads", "-n", namespace)
        if any(ref.get("uid") == uid for ref in w["metadata"].get("ownerReferences") or [])
    ]
    return owned[0] if owned else {}


def suspended(cluster: Cluster, namespace: str, name: str) -> bool:
    return cluster.get("job", name, "-n", namespace)["spec"].get("suspend") is True


def test_a_job_naming_a_jobset_that_does_not_exist_is_queued(controller: Cluster, namespace: str) -> None:
    cluster = controller
    if cluster.kubectl("get", "crd", "jobsets.jobset.x-k8s.io", check=False).returncode == 0:
        pytest.skip("a JobSet CRD is installed: the garbage collector deletes a Job whose JobSet is absent")
    ghost = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "name": "ghost",
        "uid": "6b5f0a8e-0000-4000-8000-000000000001",
        "controller": True,
        "blockOwnerDeletion": False,
    }
    created = create(cluster, job(namespace, "forged", cpu="500m", owner=ghost), user=ALICE)
    assert created["spec"]["suspend"] is True, "the webhook left the Job running"
    uid = created["metadata"]["uid"]
    until(lambda: bool(workload_of(cluster, namespace, uid)), "its own Workload", HANG)
    until(
        lambda: condition(workload_of(cluster, namespace, uid), "Admitted").get("status") == "True",
        "its Workload to be admitted from the queue's quota",
        HANG,
    )
    until(lambda: not suspended(cluster, namespace, "forged"), "the controller to start it", HANG)
    usage = cluster.get("clusterqueue", namespace)["status"]["flavorsUsage"][0]["resources"][0]["total"]
    assert usage == "500m"


def start_as_alice(cluster: Cluster, namespace: str, name: str) -> subprocess.CompletedProcess[str]:
    """alice unsuspends the Job herself (kubectl patch), as one who wants to skip the queue would."""
    unsuspend = '{"spec":{"suspend":false}}'
    return cluster.kubectl(
        "-n", namespace, "--as", ALICE, "patch", "job", name, "--type=merge", "-p", unsuspend, check=False
    )


def first_running(cluster: Cluster, namespace: str) -> JSON:
    """Job ``first`` (1 cpu: the namespace's whole quota), once admitted and started."""
    first = create(cluster, job(namespace, "first", cpu="1"))
    until(
        lambda: not suspended(cluster, namespace, "first"), "the first Job to be admitted and started", HANG
    )
    return first


def test_a_job_naming_an_admitted_job_with_its_real_uid_waits_for_quota_of_its_own(
    controller: Cluster, namespace: str
) -> None:
    cluster = controller
    first = first_running(cluster, namespace)
    real = builders.owner_reference(first, block_owner_deletion=False)
    rider = create(cluster, job(namespace, "rider", cpu="1", owner=real), user=ALICE)
    assert rider["spec"]["suspend"] is True, "the webhook left the Job running"
    uid = rider["metadata"]["uid"]

    def pending() -> bool:
        quota = condition(workload_of(cluster, namespace, uid), "QuotaReserved")
        return quota.get("status") == "False" and "insufficient" in str(quota.get("message"))

    until(pending, "its own Workload to wait for quota", HANG)
    assert not cluster.items("pods", "-n", namespace, "-l", "job-name=rider")

    # alice may not start it herself (anti-bypass)
    start = start_as_alice(cluster, namespace, "rider")
    assert start.returncode != 0 and "only the queueing controller" in start.stderr, start.stderr


def test_an_owner_reference_added_to_a_queued_job_leaves_it_queued(
    controller: Cluster, namespace: str
) -> None:
    cluster = controller
    first = first_running(cluster, namespace)
    mine = create(cluster, job(namespace, "mine", cpu="1"), user=ALICE)
    uid = mine["metadata"]["uid"]
    until(lambda: bool(workload_of(cluster, namespace, uid)), "its Workload", HANG)
    real = builders.owner_reference(first, block_owner_deletion=False)
    adopt = json.dumps({"metadata": {"ownerReferences": [real]}})
    cluster.kubectl("-n", namespace, "--as", ALICE, "patch", "job", "mine", "--type=merge", "-p", adopt)
    start = start_as_alice(cluster, namespace, "mine")
    assert start.returncode != 0 and "only the queueing controller" in start.stderr, start.stderr
    assert suspended(cluster, namespace, "mine")
    until(
        lambda: condition(workload_of(cluster, namespace, uid), "QuotaReserved").get("status") == "False",
        "its Workload to keep waiting for quota",
        HANG,
    )
    assert suspended(cluster, namespace, "mine")
