"""Two ordinary edits that used to run or hold quota outside the queue, on a real control plane, by a user
with the ``edit`` ClusterRole in the namespace (impersonated with ``kubectl --as``).

Raised parallelism: a Job (completions 4, parallelism 1, one CPU a pod) is admitted for one pod; the user
raises its parallelism to 3, which the webhook lets through (Kueue refuses it only under partial admission);
the Job controller creates the two extra pods at once, and the controller then stops the Job, deletes its
Workload and queues a new one for three pods, which does not fit the ClusterQueue's 2 CPUs and waits. No
kubelet runs, so pods stay Pending; what counts is that they are created and deleted: in the end no pod of
the Job is left, ``status.active`` is 0 and the ClusterQueue reserves nothing.

Queue label removed: a ClusterQueue whose manual-approval admission check keeps Workloads reserved but not
admitted holds one CPU for a suspended Job; the user removes the Job's queue label (allowed while it is
suspended, as in Kueue); its Workload is deleted and the CPU goes to the next Job in line.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import yaml

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until
from tests.e2e.install import Running
from tests.e2e.queues import team_queue
from tests.support import builders

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER)
JSON = dict[str, Any]
USER = "alice"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
HANG = 120.0


def editor(cluster: Cluster, namespace: str) -> None:
    """``alice`` gets the ``edit`` ClusterRole in ``namespace``."""
    cluster.kubectl(
        "-n", namespace, "create", "rolebinding", "alice-edit", "--clusterrole=edit", f"--user={USER}"
    )


def as_user(cluster: Cluster, namespace: str, *args: str, input: str | None = None) -> str:
    return cluster.kubectl("--as", USER, "-n", namespace, *args, input=input).stdout


def cpu_job(name: str, namespace: str, *, parallelism: int = 1, completions: int = 1) -> str:
    one_cpu = builders.cpu_requests("1")
    return json.dumps(
        builders.queued_job(
            namespace,
            name,
            queue="q",
            resources=one_cpu,
            suspend=None,
            parallelism=parallelism,
            completions=completions,
        )
    )


def workloads_of(cluster: Cluster, namespace: str, job: str) -> list[JSON]:
    return [
        w
        for w in cluster.items("workloads", "-n", namespace)
        if any(ref.get("name") == job for ref in w["metadata"].get("ownerReferences") or [])
    ]


def live_pods(cluster: Cluster, namespace: str, job: str) -> list[JSON]:
    """The Job's pods not being deleted (the Job controller's ``active`` ones)."""
    return [
        p
        for p in cluster.items("pods", "-n", namespace, "-l", f"job-name={job}")
        if not p["metadata"].get("deletionTimestamp")
    ]


def reserved_cpu(cluster: Cluster, cluster_queue: str) -> str:
    status = cluster.get("clusterqueue", cluster_queue).get("status") or {}
    usage = status.get("flavorsReservation") or []
    return str(usage[0]["resources"][0]["total"]) if usage else "0"


def events(cluster: Cluster, namespace: str, name: str) -> list[tuple[str, str]]:
    found = cluster.items("events", "-n", namespace, "--field-selector", f"involvedObject.name={name}")
    return [(e["reason"], e["message"]) for e in found]


def test_raised_parallelism_of_a_running_job_ends_with_no_more_pods_than_admitted(
    controller: tuple[Cluster, Running],
) -> None:
    cluster, _ = controller
    with team_queue(cluster, "e2e-bypass", quota="2") as namespace:
        editor(cluster, namespace)
        as_user(cluster, namespace, "create", "-f", "-", input=cpu_job("grow", namespace, completions=4))

        def job() -> JSON:
            return cluster.get("job", "grow", "-n", namespace)

        until(lambda: len(live_pods(cluster, namespace, "grow")) == 1, "the admitted pod", HANG)
        [first] = workloads_of(cluster, namespace, "grow")
        assert first["status"]["admission"]["podSetAssignments"][0]["count"] == 1

        as_user(
            cluster, namespace, "patch", "job", "grow", "--type=merge", "-p", '{"spec":{"parallelism":3}}'
        )
        raised = time.monotonic()

        def replaced() -> bool:
            found = workloads_of(cluster, namespace, "grow")
            return (
                len(found) == 1
                and found[0]["metadata"]["uid"] != first["metadata"]["uid"]
                and job()["spec"].get("suspend") is True
            )

        until(replaced, "the Job stopped and its Workload replaced", HANG)
        stopped_after = time.monotonic() - raised
        [second] = workloads_of(cluster, namespace, "grow")
        assert second["spec"]["podSets"][0]["count"] == 3
        until(lambda: not live_pods(cluster, namespace, "grow"), "the stopped Job's pods to go", HANG)
        until(lambda: not (job().get("status") or {}).get("active"), "status.active to be 0", HANG)
        # three CPUs do not fit in two: the new Workload waits, nothing is reserved, no pod runs
        waiting: JSON = {}

        def waits() -> bool:
            nonlocal waiting
            waiting = condition(workloads_of(cluster, namespace, "grow")[0], "QuotaReserved")
            return waiting.get("status") == "False" and "insufficient quota for cpu" in waiting.get(
                "message", ""
            )

        try:
            until(waits, "the new Workload to wait for quota", HANG)
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {waiting}") from None
        until(lambda: reserved_cpu(cluster, namespace) == "0", "the ClusterQueue to reserve nothing", HANG)
        assert not live_pods(cluster, namespace, "grow")
        assert "nodeSelector" not in job()["spec"]["template"]["spec"]  # restored from the Workload

        name = f"{namespace}/{first['metadata']['name']}"
        wanted = {
            ("Stopped", "No matching Workload; restoring pod templates according to existent Workload"),
            ("DeletedWorkload", f"Deleted not matching Workload: {name}"),
            ("CreatedWorkload", f"Created Workload: {namespace}/{second['metadata']['name']}"),
        }
        # Events are written in the background
        until(lambda: wanted <= set(events(cluster, namespace, "grow")), "Kueue's Events on the Job", HANG)
        seen = events(cluster, namespace, "grow")
        took = f"{stopped_after:.1f}s"
        created = sum(1 for reason, _ in seen if reason == "SuccessfulCreate")
        print(f"\nraised to 3: {created} pods created in all, stopped and re-queued {took} after the edit")


def test_a_label_removed_from_a_suspended_job_gives_its_reserved_quota_back(
    controller: tuple[Cluster, Running],
) -> None:
    cluster, _ = controller
    with team_queue(cluster, "e2e-unqueued", quota="1") as namespace:
        check = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "AdmissionCheck",
            "metadata": {"name": namespace},
            "spec": {"controllerName": "kueue-webhook.io/manual-approval"},
        }
        cluster.apply(yaml.safe_dump(check))
        try:
            strategy = {"spec": {"admissionChecksStrategy": {"admissionChecks": [{"name": namespace}]}}}
            cluster.kubectl("patch", "clusterqueue", namespace, "--type=merge", "-p", json.dumps(strategy))
            editor(cluster, namespace)
            as_user(cluster, namespace, "create", "-f", "-", input=cpu_job("first", namespace))

            def workload(job: str) -> JSON:
                found = workloads_of(cluster, namespace, job)
                return found[0] if found else {}

            until(
                lambda: condition(workload("first"), "QuotaReserved").get("status") == "True",
                "the first Job's quota reservation",
                HANG,
            )
            held = workload("first")
            assert condition(held, "Admitted").get("status") != "True"  # its check waits for an approver
            as_user(cluster, namespace, "create", "-f", "-", input=cpu_job("second", namespace))
            until(lambda: bool(workload("second")), "the second Job's Workload", HANG)
            until(lambda: reserved_cpu(cluster, namespace) == "1", "the first Job's CPU to be reserved", HANG)

            as_user(cluster, namespace, "label", "job", "first", f"{QUEUE_LABEL}-")
            until(lambda: not workload("first"), "the unqueued Job's Workload to go", HANG)
            assert not cluster.items(
                "workloads", "-n", namespace, "--field-selector", f"metadata.name={held['metadata']['name']}"
            )
            name = f"{namespace}/{held['metadata']['name']}"
            deleted = ("DeletedWorkload", f"Deleted Workload: {name}, the Job no longer names a LocalQueue")
            until(lambda: deleted in events(cluster, namespace, "first"), "the DeletedWorkload Event", HANG)
            until(
                lambda: condition(workload("second"), "QuotaReserved").get("status") == "True",
                "the freed CPU to go to the next Job",
                HANG,
            )
            assert cluster.get("job", "first", "-n", namespace)["spec"]["suspend"] is True

            as_user(cluster, namespace, "label", "job", "second", f"{QUEUE_LABEL}-")
            until(lambda: not workload("second"), "the second Workload to go", HANG)
            until(lambda: reserved_cpu(cluster, namespace) == "0", "the ClusterQueue's usage back to 0", HANG)
        finally:
            cluster.kubectl("patch", "clusterqueue", namespace, "--type=merge", "-p",
                            '{"spec":{"admissionChecksStrategy":null}}', check=False)  # fmt: skip
            cluster.kubectl("delete", "admissioncheck", namespace, "--ignore-not-found", check=False)
