"""Starting a queued object whose pod set is placed by topology (kueue_webhook.api.integrations.engine with
kueue_webhook.api.topology_pods): its pods are made behind the ``kueue.x-k8s.io/topology`` gate, labelled with
their pod set and annotated with their Workload, as Kueue's PodSetInfo of a topology assignment merges them;
stopping takes the marks off again; a plain pod not placed by topology loses the gate its webhook gave it."""

from __future__ import annotations

from typing import Any

from kueue_webhook.admission.pods import mark_pod
from kueue_webhook.api.integrations import JOB, engine
from kueue_webhook.api.integrations.builtin import POD
from kueue_webhook.api.topology_assignment import Domain, encode
from kueue_webhook.api.topology_pods import TopologyStart, topology_starts
from tests.fakeapi.patches import json_patch

TOPOLOGY = {"name": "kueue.x-k8s.io/topology"}
ADMISSION = {"name": "kueue.x-k8s.io/admission"}


def job(**template_meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
        "spec": {
            "suspend": True,
            "parallelism": 4,
            "completions": 4,
            "completionMode": "Indexed",
            "template": {
                "metadata": {"labels": {"batch.kubernetes.io/job-name": "j"}, **template_meta},
                "spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"},
            },
        },
    }


def admitted(pod_set: dict[str, Any]) -> dict[str, Any]:
    topology = encode(["kubernetes.io/hostname"], [Domain(("h1",), 2), Domain(("h2",), 2)])
    return {
        "metadata": {"name": "job-j-abcde", "namespace": "ns"},
        "spec": {"podSets": [pod_set]},
        "status": {
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [{"name": "main", "count": 4, "topologyAssignment": topology}],
            }
        },
    }


def test_a_job_placed_by_topology_starts_with_gated_labelled_annotated_pods() -> None:
    starts = topology_starts(admitted({"name": "main", "count": 4}))
    assert starts == {"main": TopologyStart("job-j-abcde", "main", implicit=True)}
    started = json_patch(job(), engine.start_patch(JOB, job(), {}, topology=starts))
    template = started["spec"]["template"]
    assert started["spec"]["suspend"] is False
    assert template["spec"]["schedulingGates"] == [TOPOLOGY]
    assert template["metadata"]["labels"] == {
        "batch.kubernetes.io/job-name": "j",
        "kueue.x-k8s.io/podset": "main",
    }
    assert template["metadata"]["annotations"] == {
        "kueue.x-k8s.io/workload": "job-j-abcde",
        "kueue.x-k8s.io/podset-unconstrained-topology": "true",
    }


def test_a_pod_set_with_its_own_topology_request_is_not_marked_unconstrained() -> None:
    request = {"name": "main", "count": 4, "topologyRequest": {"required": "rack"}}
    (start,) = topology_starts(admitted(request)).values()
    assert not start.implicit
    assert start.annotations() == {"kueue.x-k8s.io/workload": "job-j-abcde"}


def test_a_job_not_placed_by_topology_starts_as_before() -> None:
    assert engine.start_patch(JOB, job(), {}, topology={}) == engine.start_patch(JOB, job(), {})
    assert topology_starts({"status": {"admission": {"podSetAssignments": [{"name": "main"}]}}}) == {}


def test_stopping_takes_the_topology_marks_off_the_template() -> None:
    starts = topology_starts(admitted({"name": "main", "count": 4}))
    started = json_patch(job(), engine.start_patch(JOB, job(), {}, topology=starts))
    original = job()["spec"]["template"]
    restored = json_patch(started, engine.restore_ops(JOB, started, [original]))
    assert restored["spec"]["template"] == original
    assert restored["spec"]["suspend"] is True


def queued_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "uid": "u",
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
        },
        "spec": {"schedulingGates": [dict(ADMISSION), dict(TOPOLOGY)], "containers": [{"name": "c"}]},
    }


def test_a_plain_pod_not_placed_by_topology_loses_both_gates_on_start() -> None:
    started = json_patch(queued_pod(), engine.start_patch(POD, queued_pod(), {"main": []}))
    assert started["spec"]["schedulingGates"] == []


def test_a_plain_pod_placed_by_topology_keeps_the_topology_gate_and_gets_its_marks() -> None:
    start = TopologyStart("pod-p-abcde", "main", implicit=False)
    started = json_patch(
        queued_pod(), engine.start_patch(POD, queued_pod(), {"main": []}, topology={"main": start})
    )
    assert started["spec"]["schedulingGates"] == [TOPOLOGY]
    assert started["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"
    assert started["metadata"]["annotations"] == {"kueue.x-k8s.io/workload": "pod-p-abcde"}


def test_the_webhook_gates_a_queued_pod_for_topology_too() -> None:
    # Kueue's pod webhook: whether the pod set is placed by topology is known only after admission, and a
    # gate can be added only on create
    bare: dict[str, Any] = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}
    marked = json_patch(bare, mark_pod(bare, engine.suspend_ops(POD, bare), POD))
    assert marked["spec"]["schedulingGates"] == [ADMISSION, TOPOLOGY]
    assert mark_pod(marked, [], POD)[:1] != [
        {"op": "add", "path": "/spec/schedulingGates/-", "value": TOPOLOGY}
    ]
