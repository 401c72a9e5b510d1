"""Pods of a topology-aware Job on the fake API server, through the real controller and webhook.

A ClusterQueue's manual-approval check holds the indexed Job's Workload reserved; the test writes the
``topologyAssignment`` a topology-aware scheduler would (two hosts, two pods each) and approves. The Job
starts with its template behind the ``kueue.x-k8s.io/topology`` gate, labelled with its pod set and
annotated with its Workload. The fake has no Job controller, so the test creates the pods from the template
as it would; the ungater then gives each the node selector of its completion index's host (Kueue's rank
order) and removes the gate. A new replica taking over half-way places the rest without moving or
re-placing what the first one placed: its decisions come from the pods themselves. A host turning
NotReady is recorded in the Workload's ``status.unhealthyNodes`` and the pods sent there are failed.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from kueue_webhook.api.topology_assignment import Domain, encode
from kueue_webhook.control.kube.client import KubeClient
from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.http.certs import ca_bundle
from tests.fakeapi import FakeApiServer
from tests.support import fake_cluster as harness
from tests.support.builders import cpu_requests, queued_job
from tests.support.fake_cluster import as_controller, controller_config, is_true
from tests.support.replica import certificates, replica, webhook_configurations

JSON = dict[str, Any]
HANG = 60.0
HOST = "kubernetes.io/hostname"
GATE = {"name": "kueue.x-k8s.io/topology"}
INDEX = "batch.kubernetes.io/job-completion-index"
APPROVAL = "approval.kueue-webhook.io/placement"

SETUP = (
    controller_config('manualApproval:\n  approvers: ["group:system:masters"]')
    + """---
apiVersion: v1
kind: Namespace
metadata: {name: ml}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: placement}
spec: {controllerName: kueue-webhook.io/manual-approval}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: hosts}
spec: {nodeLabels: {node-pool: hosts}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: hosts}
spec:
  namespaceSelector: {}
  admissionChecksStrategy:
    admissionChecks: [{name: placement}]
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: hosts
      resources: [{name: cpu, nominalQuota: 4}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: ml}
spec: {clusterQueue: hosts}
"""
)


def node(name: str) -> JSON:
    """A Ready Node (a plain object: the fake runs no kubelet)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOST: name, "node-pool": "hosts"}},
        "status": {
            "allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod_from_template(job: JSON, index: int) -> JSON:
    """The pod the Job controller would make for completion ``index``."""
    template = copy.deepcopy(job["spec"]["template"])
    meta = template["metadata"]
    meta["name"] = f"ranks-{index}"
    meta["namespace"] = "ml"
    meta.setdefault("labels", {})[INDEX] = str(index)
    meta["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "ranks",
            "uid": job["metadata"]["uid"],
            "controller": True,
        }
    ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"]}


def hosts(fake_api: FakeApiServer) -> dict[str, str]:
    """Completion index -> the host of each ungated pod."""
    out = {}
    for pod in fake_api.list("pods", "ml"):
        if GATE not in (pod["spec"].get("schedulingGates") or []):
            out[pod["metadata"]["labels"][INDEX]] = pod["spec"].get("nodeSelector", {}).get(HOST, "")
    return out


async def test_an_indexed_jobs_pods_are_ungated_by_rank_and_a_new_leader_carries_on(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    await fake_api.apply_manifests(SETUP)
    for name in ("host-a", "host-b"):
        await fake_api.create(node(name))
    tls = certificates(tmp_path / "tls")
    indexed = {"parallelism": 4, "completions": 4, "completionMode": "Indexed"}
    job = queued_job("ml", "ranks", queue="q", resources=cpu_requests("1"), **indexed)
    async with replica(as_controller(fake_api), tls=tls) as first:
        for config in webhook_configurations(ca=ca_bundle(tls), url_base=f"https://127.0.0.1:{first.port}"):
            await fake_api.create(config)
        await fake_api.create(job)
        await fake_api.wait_for(
            lambda: is_true(harness.workload_of(fake_api, "ml", "ranks"), "QuotaReserved"), timeout=HANG
        )
        workload = harness.workload_of(fake_api, "ml", "ranks")
        assert workload is not None
        name = workload["metadata"]["name"]

        # the topology-aware scheduler's part, then the approval
        topology = encode([HOST], [Domain(("host-a",), 2), Domain(("host-b",), 2)])
        where = "/status/admission/podSetAssignments/0/topologyAssignment"
        assignment = [{"op": "add", "path": where, "value": topology}]
        admin = await KubeClient.connect(kubeconfig=str(fake_api.kubeconfig_path()))
        try:
            await admin.patch(
                WORKLOADS,
                name=name,
                namespace="ml",
                patch=assignment,
                patch_type="json",
                subresource="status",
            )
            approve = {"metadata": {"annotations": {APPROVAL: "approved"}}}
            await admin.patch(WORKLOADS, name=name, namespace="ml", patch=approve)
        finally:
            await admin.close()
        await fake_api.wait_for(lambda: harness.running(fake_api, "ml", "ranks"), timeout=HANG)

        started = fake_api.get("jobs", "ranks", "ml")
        assert started is not None
        template = started["spec"]["template"]
        assert template["spec"]["schedulingGates"] == [GATE]
        assert template["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"
        assert template["metadata"]["annotations"] == {
            "kueue.x-k8s.io/workload": name,
            "kueue.x-k8s.io/podset-unconstrained-topology": "true",
        }

        # the Job controller's part: pods 3 and 0 first
        for index in (3, 0):
            await fake_api.create(pod_from_template(started, index))
        await fake_api.wait_for(lambda: hosts(fake_api) == {"0": "host-a", "3": "host-b"}, timeout=HANG)
        placed = {
            p["metadata"]["name"]: p["metadata"]["resourceVersion"] for p in fake_api.list("pods", "ml")
        }

    # the first replica is gone; a new one leads and the other two pods appear
    async with replica(as_controller(fake_api), tls=tls) as second:
        for config in webhook_configurations(ca=ca_bundle(tls), url_base=f"https://127.0.0.1:{second.port}"):
            await fake_api.delete(config["kind"].lower() + "s", config["metadata"]["name"])
            await fake_api.create(config)
        for index in (1, 2):
            await fake_api.create(pod_from_template(started, index))
        expected = {"0": "host-a", "1": "host-a", "2": "host-b", "3": "host-b"}
        await fake_api.wait_for(lambda: hosts(fake_api) == expected, timeout=HANG)
        for pod in fake_api.list("pods", "ml"):
            assert pod["spec"]["nodeSelector"] == {
                "node-pool": "hosts",
                HOST: expected[pod["metadata"]["labels"][INDEX]],
            }
            assert pod["spec"]["schedulingGates"] == []
        # what the first replica placed was not written again
        assert placed == {
            p["metadata"]["name"]: p["metadata"]["resourceVersion"]
            for p in fake_api.list("pods", "ml")
            if p["metadata"]["name"] in placed
        }

        # host b turns NotReady with none of the Workload's pods running there: it is recorded, and the
        # two pods sent to it (never bound: the fake has no scheduler) are failed so the Job replaces them
        not_ready = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
        await fake_api.patch("nodes", "host-b", not_ready, subresource="status")

        def unhealthy() -> list[JSON]:
            found = harness.workload_of(fake_api, "ml", "ranks") or {}
            return list(found.get("status", {}).get("unhealthyNodes") or [])

        await fake_api.wait_for(lambda: unhealthy() == [{"name": "host-b"}], timeout=HANG)

        def failed_by_kueue() -> set[str]:
            return {
                p["metadata"]["labels"][INDEX]
                for p in fake_api.list("pods", "ml")
                if p.get("status", {}).get("phase") == "Failed"
                and any(
                    c.get("reason") == "UnschedulableOnAssignedNode"
                    for c in p["status"].get("conditions", [])
                )
            }

        await fake_api.wait_for(lambda: failed_by_kueue() == {"2", "3"}, timeout=HANG)
