"""A ClusterQueue naming an AdmissionCheck that does not exist, on a real control plane: as in Kueue it is
inactive (``AdmissionCheckNotFound``) and its Job's Workload waits with ``ClusterQueue <name> is inactive``;
once an admin creates the check (the built-in manual approval, which the controller marks Active) the queue
turns Active and the Workload reserves its quota, waiting for approval."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until, workload_of
from tests.e2e.install import Running
from tests.e2e.queues import team_queue
from tests.support import builders

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, Any]
HANG = 120.0


def test_a_missing_check_keeps_the_queue_inactive_until_it_is_created(
    controller: tuple[Cluster, Running],
) -> None:
    cluster, _ = controller
    with team_queue(cluster, "e2e-missing-check", quota="1") as namespace:
        strategy = {"spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": namespace}]}}}
        cluster.kubectl("patch", "clusterqueue", namespace, "--type=merge", "-p", json.dumps(strategy))
        try:
            job = builders.queued_job(namespace, "train", queue="q", resources=builders.cpu_requests("1"))
            cluster.apply(yaml.safe_dump(job))

            def active() -> JSON:
                return condition(cluster.get("clusterqueue", namespace), "Active")

            until(lambda: active().get("reason") == "AdmissionCheckNotFound", "AdmissionCheckNotFound", HANG)
            assert active()["status"] == "False"
            assert active()["message"] == (
                f"Can't admit new workloads: references missing AdmissionCheck(s): {namespace}."
            )

            def reserved() -> JSON:
                return condition(workload_of(cluster, namespace, "train"), "QuotaReserved")

            inactive = f"ClusterQueue {namespace} is inactive"
            until(lambda: reserved().get("message") == inactive, "the Workload to say why it waits", HANG)
            assert reserved()["status"] == "False"

            check = {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "AdmissionCheck",
                "metadata": {"name": namespace},
                "spec": {"controllerName": "kueue-webhook.io/manual-approval"},
            }
            cluster.apply(yaml.safe_dump(check))
            until(lambda: reserved().get("status") == "True", "the Workload to reserve quota", HANG)
            until(lambda: active().get("status") == "True", "the ClusterQueue to turn Active", HANG)
            assert condition(workload_of(cluster, namespace, "train"), "Admitted").get("status") != "True"
        finally:
            cluster.kubectl("delete", "admissioncheck", namespace, "--ignore-not-found", check=False)
