"""What a pod set asks of the topology: Kueue's ``spec.podSets[].topologyRequest`` as the scheduler reads it.

Kueue's job integrations fill ``topologyRequest`` from pod-template annotations
(``kueue.x-k8s.io/podset-required-topology`` and its siblings, jobframework's NewPodSetTopologyRequest);
:func:`topology_request_from_annotations` does the same for every queued kind here, and
:func:`parse_topology_request` reads the field back from a Workload, whoever wrote it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "GROUP_ANNOTATION",
    "POD_INDEX_LABELS",
    "PREFERRED_ANNOTATION",
    "REQUIRED_ANNOTATION",
    "SLICE_CONSTRAINTS_ANNOTATION",
    "SLICE_REQUIRED_ANNOTATION",
    "SLICE_SIZE_ANNOTATION",
    "UNCONSTRAINED_ANNOTATION",
    "TopologyRequest",
    "parse_topology_request",
    "topology_request_from_annotations",
]

REQUIRED_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED_ANNOTATION = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE_REQUIRED_ANNOTATION = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE_ANNOTATION = "kueue.x-k8s.io/podset-slice-size"
GROUP_ANNOTATION = "kueue.x-k8s.io/podset-group-name"
#: multi-layer slices: a JSON list of ``{"topology": <level>, "size": <pods>}``, outermost first (1 to 3)
SLICE_CONSTRAINTS_ANNOTATION = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
#: the Workload's field for them (``spec.podSets[].topologyRequest``), spelled as Kueue's v1beta2 API does
SLICE_CONSTRAINTS_FIELD = "podsetSliceRequiredTopologyConstraints"
MAX_SLICE_LAYERS = 3

#: the pod label that numbers a pod within its pod set, per queued kind (Kueue's integrations pass it to
#: NewPodSetTopologyRequest: job_controller.go, kubeflowjob, mpijob, jobset, leaderworkerset, statefulset):
#: written into a Workload's ``topologyRequest.podIndexLabel``, read by the pod side when a Workload lacks it
POD_INDEX_LABELS = {
    ("batch", "Job"): "batch.kubernetes.io/job-completion-index",
    ("kubeflow.org", "PyTorchJob"): "training.kubeflow.org/replica-index",
    ("kubeflow.org", "TFJob"): "training.kubeflow.org/replica-index",
    ("kubeflow.org", "XGBoostJob"): "training.kubeflow.org/replica-index",
    ("kubeflow.org", "PaddleJob"): "training.kubeflow.org/replica-index",
    ("kubeflow.org", "JAXJob"): "training.kubeflow.org/replica-index",
    ("kubeflow.org", "MPIJob"): "training.kubeflow.org/replica-index",
    ("jobset.x-k8s.io", "JobSet"): "batch.kubernetes.io/job-completion-index",
    # a TrainJob's pods are its JobSet's (Kueue's TrainJob reads its pod sets from that JobSet)
    ("trainer.kubeflow.org", "TrainJob"): "batch.kubernetes.io/job-completion-index",
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): "leaderworkerset.sigs.k8s.io/worker-index",
    ("apps", "StatefulSet"): "apps.kubernetes.io/pod-index",
}


@dataclass(frozen=True, slots=True)
class TopologyRequest:
    """One pod set's request: at most one of ``required``/``preferred``/``unconstrained``, and optionally
    slices of ``slice_size`` pods each required within one domain of ``slice_level``. With multi-layer
    slices ``slice_layers`` lists every layer, outermost first (the first is ``slice_level``/``slice_size``),
    each inner layer's slices within one domain of its finer level."""

    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    slice_level: str | None = None
    slice_size: int | None = None
    group: str | None = None
    slice_layers: tuple[tuple[str, int], ...] = ()

    @property
    def explicit(self) -> bool:
        """Whether the pod set asks for TAS itself (Kueue's IsExplicitlyRequestingTAS)."""
        return bool(self.required or self.preferred or self.unconstrained or self.slice_level)


def parse_topology_request(raw: Any) -> TopologyRequest | None:
    """``spec.podSets[].topologyRequest`` (None when absent or asking for nothing)."""
    if not isinstance(raw, Mapping):
        return None

    def text(key: str) -> str | None:
        value = raw.get(key)
        return value if isinstance(value, str) and value else None

    size = raw.get("podSetSliceSize")
    slice_level = text("podSetSliceRequiredTopology")
    slice_size = size if isinstance(size, int) and not isinstance(size, bool) else None
    layers = slice_layers(raw.get(SLICE_CONSTRAINTS_FIELD))
    if layers:  # the layers replace the single slice fields (Kueue's PodSetSliceRequiredTopologyConstraints)
        slice_level, slice_size = layers[0]
    request = TopologyRequest(
        required=text("required"),
        preferred=text("preferred"),
        unconstrained=raw.get("unconstrained") is True,
        slice_level=slice_level,
        slice_size=slice_size,
        group=text("podSetGroupName"),
        slice_layers=layers,
    )
    return request if request.explicit else None


def slice_layers(raw: Any) -> tuple[tuple[str, int], ...]:
    """The layers of ``podsetSliceRequiredTopologyConstraints`` (empty unless 1 to 3 well-formed ones)."""
    if not isinstance(raw, list) or not 0 < len(raw) <= MAX_SLICE_LAYERS:
        return ()
    layers: list[tuple[str, int]] = []
    for layer in raw:
        if not isinstance(layer, Mapping):
            return ()
        topology, size = layer.get("topology"), layer.get("size")
        if (
            not isinstance(topology, str)
            or not topology
            or not isinstance(size, int)
            or isinstance(size, bool)
        ):
            return ()
        layers.append((topology, size))
    return tuple(layers)


def _json_list(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def template_topology_request(
    template: Mapping[str, Any], pod_index_label: str | None
) -> dict[str, Any] | None:
    """The ``topologyRequest`` of a pod set from its pod template's annotations, with the kind's pod index
    label when it asks for a topology."""
    meta = template.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    if not isinstance(annotations, Mapping):
        return None
    request = topology_request_from_annotations(annotations)
    if request is not None and pod_index_label:
        request["podIndexLabel"] = pod_index_label
    return request


def topology_request_from_annotations(annotations: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``topologyRequest`` Kueue's integrations write for a pod template with these annotations (None:
    the template asks for nothing). Malformed values are left out: the Workload asks for what the
    well-formed annotations say."""
    request: dict[str, Any] = {}
    required = annotations.get(REQUIRED_ANNOTATION)
    preferred = annotations.get(PREFERRED_ANNOTATION)
    unconstrained = annotations.get(UNCONSTRAINED_ANNOTATION)
    if isinstance(required, str):
        request["required"] = required
    elif isinstance(preferred, str):
        request["preferred"] = preferred
    elif isinstance(unconstrained, str):
        if unconstrained.lower() not in ("true", "false", "1", "0", "t", "f"):
            return None
        request["unconstrained"] = unconstrained.lower() in ("true", "1", "t")
    slice_level = annotations.get(SLICE_REQUIRED_ANNOTATION)
    slice_size = annotations.get(SLICE_SIZE_ANNOTATION)
    constraints = annotations.get(SLICE_CONSTRAINTS_ANNOTATION)
    if isinstance(constraints, str):
        # Kueue's NewPodSetTopologyRequest: the layers as written, in place of the single slice fields
        layers = slice_layers(_json_list(constraints))
        if layers:
            request[SLICE_CONSTRAINTS_FIELD] = [{"topology": t, "size": n} for t, n in layers]
    elif isinstance(slice_level, str) and isinstance(slice_size, str):
        try:
            size = int(slice_size)
        except ValueError:
            size = 0
        if size >= 1:
            request["podSetSliceRequiredTopology"] = slice_level
            request["podSetSliceSize"] = size
    group = annotations.get(GROUP_ANNOTATION)
    if isinstance(group, str) and ("required" in request or "preferred" in request):
        request["podSetGroupName"] = group
    return request or None
