"""A LeaderWorkerSet's Workloads and pod groups as Kueue's leaderworkerset reconciler makes them, and the
order of its controller's steps (``plan_leaderworkerset``)."""

from __future__ import annotations

from typing import Any

from kueue_webhook.admission.kind_rules import KIND_RULES
from kueue_webhook.api.integrations import BUILTIN
from kueue_webhook.api.integrations.engine import PriorityClasses
from kueue_webhook.api.integrations.leaderworkersets import (
    group_metadata,
    workload_name_of_group,
    workload_of_group,
)
from kueue_webhook.control.jobs.job_plan import CreateWorkload, DeleteWorkload
from kueue_webhook.control.jobs.leaderworkersets import plan_leaderworkerset
from kueue_webhook.control.jobs.statefulsets import AdoptWorkload, LabelPods

JSON = dict[str, Any]
LWS = BUILTIN["leaderworkerset.x-k8s.io/leaderworkerset"]
GATE = {"name": "kueue.x-k8s.io/admission"}


def template(gpus: int = 1, **labels: str) -> JSON:
    return {
        "metadata": {"labels": {"app": "serve", **labels}},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]},
    }


#: the WorkloadPriorityClass the LeaderWorkerSets below name
HIGH = PriorityClasses(workload={"high": 50})


def lws(replicas: int = 2, size: int = 3, *, leader: bool = True, queue: str = "q") -> JSON:
    lwt: JSON = {
        "size": size,
        "workerTemplate": template(1, **{"leaderworkerset.sigs.k8s.io/template-revision-hash": "x"}),
    }
    if leader:
        lwt["leaderTemplate"] = template(2)
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {
            "name": "serve",
            "namespace": "ns",
            "uid": "u-1",
            "labels": {"kueue.x-k8s.io/queue-name": queue, "kueue.x-k8s.io/priority-class": "high"},
        },
        "spec": {"replicas": replicas, "leaderWorkerTemplate": lwt},
    }


def pod(group: int, worker: int, **annotations: str) -> JSON:
    meta: JSON = {
        "name": f"serve-{group}-{worker}",
        "namespace": "ns",
        "labels": {
            "leaderworkerset.sigs.k8s.io/name": "serve",
            "leaderworkerset.sigs.k8s.io/group-index": str(group),
            "kueue.x-k8s.io/managed": "true",
        },
        "annotations": {"kueue.x-k8s.io/pod-suspending-parent": LWS.name, **annotations},
    }
    return {"metadata": meta, "spec": {"schedulingGates": [GATE], "containers": []}}


def test_a_groups_workload_is_a_leader_and_its_workers_owned_by_the_leaderworkerset() -> None:
    """Kueue's constructWorkload: named after <name>-<index>, pod sets leader (1) and worker (size - 1), the
    LWS controller's own template labels dropped, the group index recorded, the priority class label's."""
    workload = workload_of_group(lws(), 1, HIGH)
    assert workload["metadata"]["name"] == workload_name_of_group("serve", "u-1", 1)
    assert workload["metadata"]["name"].startswith("leaderworkerset-serve-1-")
    assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("leader", 1), ("worker", 2)]
    assert workload["spec"]["podSets"][1]["template"]["metadata"]["labels"] == {"app": "serve"}
    assert workload["metadata"]["annotations"]["kueue.x-k8s.io/component-workload-index"] == "1"
    assert workload["metadata"]["ownerReferences"][0]["kind"] == "LeaderWorkerSet"
    assert (workload["spec"]["priority"], workload["spec"]["priorityClassRef"]["name"]) == (50, "high")
    without_leader = workload_of_group(lws(leader=False), 0)
    assert [(p["name"], p["count"]) for p in without_leader["spec"]["podSets"]] == [("main", 3)]


def test_a_groups_leader_and_workers_ask_for_the_topology_their_templates_name_as_one_group() -> None:
    """Kueue's newPodSet: each template's topology annotations become its pod set's ``topologyRequest``,
    the workers ranked by the worker index, so a leader and workers grouped are placed together."""
    annotations = {"kueue.x-k8s.io/podset-required-topology": "rack", "kueue.x-k8s.io/podset-group-name": "g"}
    grouped = lws()
    for which in ("leaderTemplate", "workerTemplate"):
        grouped["spec"]["leaderWorkerTemplate"][which]["metadata"]["annotations"] = dict(annotations)
    requests = [p.get("topologyRequest") for p in workload_of_group(grouped, 0)["spec"]["podSets"]]
    assert requests == [
        {"required": "rack", "podSetGroupName": "g"},
        {
            "required": "rack",
            "podSetGroupName": "g",
            "podIndexLabel": "leaderworkerset.sigs.k8s.io/worker-index",
        },
    ]
    assert all("topologyRequest" not in p for p in workload_of_group(lws(), 0)["spec"]["podSets"])


def test_a_pod_joins_its_groups_workload_in_its_role() -> None:
    """Kueue's setDefault: the group and prebuilt Workload of its group index, the group size, and the role
    leader (no leader named), worker, or main without a leader template."""
    name = workload_name_of_group("serve", "u-1", 0)
    leader = group_metadata(lws(), pod(0, 0))
    assert leader is not None
    assert leader["metadata"]["annotations"] == {
        "kueue.x-k8s.io/pod-group-name": name,
        "kueue.x-k8s.io/prebuilt-workload-name": name,
        "kueue.x-k8s.io/pod-group-total-count": "3",
        "kueue.x-k8s.io/role-hash": "leader",
    }
    worker = group_metadata(lws(), pod(0, 1, **{"leaderworkerset.sigs.k8s.io/leader-name": "serve-0"}))
    assert worker is not None and worker["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"] == "worker"
    main = group_metadata(lws(leader=False), pod(0, 1))
    assert main is not None and main["metadata"]["annotations"]["kueue.x-k8s.io/role-hash"] == "main"
    unindexed = pod(0, 0)
    del unindexed["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/group-index"]
    assert group_metadata(lws(), unindexed) is None


def test_the_plan_makes_the_workloads_first_then_follows_the_queue_drops_gone_groups_then_groups_pods() -> (
    None
):
    obj = lws(replicas=2)
    first = plan_leaderworkerset(obj, [], [], managed=True, classes=HIGH)
    assert isinstance(first, CreateWorkload)
    assert first.body["metadata"]["name"] == workload_name_of_group("serve", "u-1", 0)
    both = [workload_of_group(obj, i) for i in range(3)]
    moved = plan_leaderworkerset(lws(replicas=2, queue="other"), [], both[:2], managed=True, classes=HIGH)
    assert isinstance(moved, AdoptWorkload) and moved.patch == {"spec": {"queueName": "other"}}
    gone = plan_leaderworkerset(obj, [], both, managed=True, classes=HIGH)
    assert isinstance(gone, DeleteWorkload) and gone.workload is both[2]
    labelled = plan_leaderworkerset(obj, [pod(1, 0)], both[:2], managed=True, classes=HIGH)
    assert isinstance(labelled, LabelPods) and len(labelled.patches) == 1
    assert plan_leaderworkerset(obj, [], [], managed=False, classes=HIGH) is None


def test_a_queued_leaderworkerset_asks_for_at_most_a_million_groups() -> None:
    errors = KIND_RULES.value_errors(LWS, lws(replicas=1_000_001), None)
    assert [str(e) for e in errors] == [
        "spec.replicas: Invalid value: 1000001: invalid LeaderWorkerSet replicas: must be <= 1000000, "
        "got 1000001"
    ]


def test_during_a_rolling_update_with_a_surge_the_surge_groups_keep_their_workloads() -> None:
    """Kueue's filterWorkloads: while the LWS controller reports more groups than spec.replicas (a surge),
    and not all are updated, those groups have Workloads too."""
    obj = lws(replicas=2)
    obj["spec"]["rolloutStrategy"] = {"rollingUpdateConfiguration": {"maxSurge": 1}}
    obj["status"] = {"replicas": 3, "updatedReplicas": 1}
    both = [workload_of_group(obj, i) for i in range(2)]
    surge = plan_leaderworkerset(obj, [], both, managed=True, classes=HIGH)
    assert isinstance(surge, CreateWorkload)
    assert surge.body["metadata"]["name"] == workload_name_of_group("serve", "u-1", 2)
    obj["status"]["updatedReplicas"] = 2  # the update is done: the surge group goes
    assert isinstance(
        plan_leaderworkerset(obj, [], [*both, surge.body], managed=True, classes=HIGH), DeleteWorkload
    )
