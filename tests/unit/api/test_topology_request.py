"""Kueue's pod-template annotations become a pod set's ``topologyRequest`` for every queued kind
(jobframework NewPodSetTopologyRequest): what the Workload asks of a TAS flavor's topology."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.integrations import JOB, engine
from kueue_webhook.api.integrations.builtin import PYTORCHJOB
from kueue_webhook.api.topology_request import parse_topology_request, topology_request_from_annotations

REQUIRED = "kueue.x-k8s.io/podset-required-topology"


def template(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
    out: dict[str, Any] = {"spec": {"containers": [container], "restartPolicy": "Never"}}
    if annotations:
        out["metadata"] = {"annotations": annotations}
    return out


def test_a_jobs_template_annotation_asks_for_its_rack_with_the_completion_index() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
        "spec": {"parallelism": 4, "completions": 4, "template": template({REQUIRED: "rack"})},
    }
    (pod_set,) = engine.workload_for(JOB, job)["spec"]["podSets"]
    assert pod_set["topologyRequest"] == {
        "required": "rack",
        "podIndexLabel": "batch.kubernetes.io/job-completion-index",
    }


def test_each_pytorchjob_replica_type_asks_for_itself() -> None:
    replicas = {
        "Master": {"replicas": 1, "template": template()},
        "Worker": {
            "replicas": 4,
            "template": template({"kueue.x-k8s.io/podset-preferred-topology": "block"}),
        },
    }
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
        "spec": {"pytorchReplicaSpecs": replicas},
    }
    master, worker = engine.workload_for(PYTORCHJOB, job)["spec"]["podSets"]
    assert "topologyRequest" not in master
    assert worker["topologyRequest"] == {
        "preferred": "block",
        "podIndexLabel": "training.kubeflow.org/replica-index",
    }


def test_slices_and_group_names_follow_kueues_rules() -> None:
    assert topology_request_from_annotations(
        {
            "kueue.x-k8s.io/podset-slice-required-topology": "host",
            "kueue.x-k8s.io/podset-slice-size": "2",
            "kueue.x-k8s.io/podset-group-name": "g",
        }
    ) == {"podSetSliceRequiredTopology": "host", "podSetSliceSize": 2}  # a group needs required/preferred
    assert topology_request_from_annotations({"kueue.x-k8s.io/podset-unconstrained-topology": "true"}) == {
        "unconstrained": True
    }
    assert topology_request_from_annotations({"kueue.x-k8s.io/podset-slice-size": "2"}) is None


def test_a_request_that_asks_for_nothing_reads_as_none() -> None:
    assert parse_topology_request({"podIndexLabel": "x"}) is None
    request = parse_topology_request({"required": "rack", "podSetSliceSize": 2})
    assert request is not None and request.required == "rack" and request.explicit


CONSTRAINTS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
LAYERS = '[{"topology": "rack", "size": 4}, {"topology": "kubernetes.io/hostname", "size": 2}]'


def test_multi_layer_slices_are_written_as_kueues_constraints_field_and_read_back_outermost_first() -> None:
    written = topology_request_from_annotations({REQUIRED: "block", CONSTRAINTS: LAYERS})
    assert written == {
        "required": "block",
        "podsetSliceRequiredTopologyConstraints": [
            {"topology": "rack", "size": 4},
            {"topology": "kubernetes.io/hostname", "size": 2},
        ],
    }
    request = parse_topology_request(written)
    assert request is not None
    assert (request.slice_level, request.slice_size) == ("rack", 4)
    assert request.slice_layers == (("rack", 4), ("kubernetes.io/hostname", 2))


def test_multi_layer_slices_alone_ask_for_slices_anywhere() -> None:
    written = topology_request_from_annotations({CONSTRAINTS: LAYERS})
    assert written is not None and "required" not in written
    request = parse_topology_request(written)
    assert request is not None and request.explicit and request.slice_level == "rack"


def test_malformed_constraints_ask_for_nothing_beyond_the_other_annotations() -> None:
    for bad in ("not json", "[]", '{"topology": "rack", "size": 4}', '[{"topology": "rack", "size": "4"}]'):
        assert topology_request_from_annotations({REQUIRED: "rack", CONSTRAINTS: bad}) == {"required": "rack"}
