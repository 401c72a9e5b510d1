"""Pods queued through Kueue's scheduling gate, and pod groups (Kueue's pkg/controller/jobs/pod)."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.integrations import engine
from kueue_webhook.api.integrations.builtin import POD
from kueue_webhook.api.integrations.pod_groups import group_finished, group_pods_ready, group_workload
from kueue_webhook.api.objects import ResourceFlavor, parse_resource_flavor
from tests.support import builders

JSON = dict[str, Any]
GATE = {"name": "kueue.x-k8s.io/admission"}


def pod(name: str = "p", *, gated: bool = True, cpu: str = "1", group: str = "", phase: str = "") -> JSON:
    metadata: JSON = {"uid": f"uid-{name}"}
    labels = {}
    if group:
        labels["kueue.x-k8s.io/pod-group-name"] = group
        metadata["annotations"] = {"kueue.x-k8s.io/pod-group-total-count": "2"}
    spec: JSON = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if gated:
        spec["schedulingGates"] = [dict(GATE)]
    return builders.pod(
        name,
        "ns",
        queue="q",
        labels=labels,
        metadata=metadata,
        pod_spec=spec,
        status={"phase": phase or "Pending"},
    )


def test_a_gated_pod_is_suspended_and_its_workload_is_kueues_single_pod_workload() -> None:
    gated = pod()
    assert engine.is_suspended(POD, gated)
    assert not engine.is_suspended(POD, pod(gated=False))
    workload = engine.workload_for(POD, gated)
    assert workload["metadata"]["name"] == engine.workload_name("p", "uid-p", kind="Pod", group="")
    assert workload["metadata"]["name"].startswith("pod-p-")
    (pod_set,) = workload["spec"]["podSets"]
    assert (pod_set["name"], pod_set["count"]) == ("main", 1)
    assert set(pod_set["template"]) == {"spec"}


def test_suspending_adds_the_gate_and_starting_removes_it_with_the_flavor_injected() -> None:
    bare = pod(gated=False)
    assert engine.suspend_ops(POD, bare) == [{"op": "add", "path": "/spec/schedulingGates", "value": [GATE]}]
    flavor = parse_resource_flavor(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "f"},
            "spec": {"nodeLabels": {"pool": "a"}},
        }
    )
    assert isinstance(flavor, ResourceFlavor)
    ops = engine.start_patch(POD, pod(), {"main": [flavor]})
    assert ops == [
        {"op": "test", "path": "/spec/schedulingGates/0", "value": GATE},
        {"op": "remove", "path": "/spec/schedulingGates/0"},
        {"op": "add", "path": "/spec/nodeSelector", "value": {"pool": "a"}},
    ]
    assert engine.stops_by_deletion(POD)


def test_a_pod_finishes_when_succeeded_or_failed_and_is_active_while_running() -> None:
    assert engine.finished(POD, pod(phase="Succeeded"))[:2] == (True, True)
    assert engine.finished(POD, pod(phase="Failed"))[:2] == (True, False)
    assert not engine.finished(POD, pod(phase="Running"))[0]
    assert engine.has_active_pods(POD, pod(phase="Running"))
    assert not engine.has_active_pods(POD, pod(phase="Pending"))


def test_a_group_gets_its_workload_once_all_its_pods_exist_with_pod_sets_by_role() -> None:
    assert group_workload("g", [pod("a", group="g")]) is None
    workload = group_workload("g", [pod("a", group="g"), pod("b", group="g", cpu="2")])
    assert isinstance(workload, dict)
    assert workload["metadata"]["name"] == "g"
    assert [o["name"] for o in workload["metadata"]["ownerReferences"]] == ["a", "b"]
    assert sorted(p["count"] for p in workload["spec"]["podSets"]) == [1, 1]
    same = group_workload("g", [pod("a", group="g"), pod("b", group="g")])
    assert isinstance(same, dict)
    assert [p["count"] for p in same["spec"]["podSets"]] == [2]


def test_a_group_finishes_when_all_its_pods_succeeded() -> None:
    one = [pod("a", group="g", phase="Succeeded"), pod("b", group="g", phase="Running")]
    assert not group_finished(one)[0]
    both = [pod("a", group="g", phase="Succeeded"), pod("b", group="g", phase="Succeeded")]
    assert group_finished(both) == (True, True, "Pods succeeded: 2/2.")


def test_a_group_is_pods_ready_when_its_total_count_of_pods_are_all_ready() -> None:
    def ready(name: str) -> JSON:
        ready_pod = pod(name, gated=False, group="g", phase="Running")
        ready_pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
        return ready_pod

    assert not group_pods_ready([ready("a")])  # one of the two
    assert not group_pods_ready([ready("a"), pod("b", gated=False, group="g", phase="Running")])
    assert group_pods_ready([ready("a"), ready("b")])


def test_a_groups_workload_gets_the_pods_labels_of_label_keys_to_copy_unless_they_disagree() -> None:
    """Kueue's pod group ``getByKey``: each key's value from the pods that have it; pods that disagree make
    no Workload ("pods have different label values")."""
    a, b = pod("a", group="g"), pod("b", group="g")
    a["metadata"]["labels"].update({"team": "vision", "tier": "gold"})
    b["metadata"]["labels"].update({"team": "vision"})
    workload = group_workload("g", [a, b], label_keys=("team", "tier", "absent"))
    assert isinstance(workload, dict)
    assert {k: workload["metadata"]["labels"][k] for k in ("team", "tier")} == {
        "team": "vision",
        "tier": "gold",
    }
    assert "absent" not in workload["metadata"]["labels"]
    b["metadata"]["labels"]["team"] = "speech"
    assert group_workload("g", [a, b], label_keys=("team",)) == (
        "constructing workload: pods have different label values"
    )
    unchanged = group_workload("g", [a, b])  # without the key, nothing is compared
    assert isinstance(unchanged, dict) and "team" not in (unchanged["metadata"].get("labels") or {})
