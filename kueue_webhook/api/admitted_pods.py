"""What Kueue puts on the pods of an admitted Workload's object as it starts it (jobframework's
``getPodSetsInfoFromStatus``): the pod set label on each pod set, the LocalQueue and ClusterQueue labels
(``AssignQueueLabelsForPods``, on by default; the ClusterQueue's only when its name is a valid label value),
a MultiKueue worker's pod label, and the Workload annotation (``TopologyAwareScheduling``, on by default).
Users aggregate their pods' real usage per queue with these labels. They come off again when the object is
stopped: what its Workload recorded of the template is put back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kueue_webhook.api.multikueue import worker_pod_labels
from kueue_webhook.api.objects import admitted_cluster_queue
from kueue_webhook.api.topology_pods import PODSET_LABEL, WORKLOAD_ANNOTATION
from kueue_webhook.api.validation import dns1123_label_problems

__all__ = ["CLUSTER_QUEUE_LABEL", "LOCAL_QUEUE_LABEL", "PodMarks", "admitted_pod_marks"]

LOCAL_QUEUE_LABEL = "kueue.x-k8s.io/local-queue-name"
CLUSTER_QUEUE_LABEL = "kueue.x-k8s.io/cluster-queue-name"


@dataclass(frozen=True, slots=True)
class PodMarks:
    """The labels and annotations every pod set of the started object gets; ``pod_set_names`` maps an
    element of the object to its pod set's name in the Workload when they differ (a pod of a group)."""

    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    pod_set_names: Mapping[str, str] = field(default_factory=dict)

    def labels_of(self, element: str) -> dict[str, str]:
        """The labels of the pod set ``element``: the common ones and its pod set label."""
        return {**self.labels, PODSET_LABEL: self.pod_set_names.get(element, element)}


def admitted_pod_marks(
    workload: Mapping[str, Any], pod_set_names: Mapping[str, str] | None = None
) -> PodMarks:
    """The marks of the pods started for ``workload`` (admitted: ``status.admission`` set)."""
    labels = {LOCAL_QUEUE_LABEL: str((workload.get("spec") or {}).get("queueName") or "")}
    cluster_queue = admitted_cluster_queue(workload)
    if cluster_queue and not dns1123_label_problems(cluster_queue):
        labels[CLUSTER_QUEUE_LABEL] = cluster_queue
    labels.update(worker_pod_labels(workload))
    name = str((workload.get("metadata") or {}).get("name") or "")
    return PodMarks(labels, {WORKLOAD_ANNOTATION: name} if name else {}, pod_set_names or {})
