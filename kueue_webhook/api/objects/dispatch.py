"""Parse any Kueue object by its ``kind``: the one entry point for callers that hold a manifest or an
AdmissionReview object of a kind they do not know in advance (the validating webhook, ``simulate``).

It sits apart from the kinds' modules because it is the only code that knows all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.objects.common import GROUP
from kueue_webhook.api.objects.flavors import ResourceFlavor, parse_resource_flavor
from kueue_webhook.api.objects.multikueue import (
    MultiKueueCluster,
    MultiKueueConfig,
    parse_multikueue_cluster,
    parse_multikueue_config,
)
from kueue_webhook.api.objects.queues import (
    ClusterQueue,
    Cohort,
    LocalQueue,
    parse_cluster_queue,
    parse_cohort,
    parse_local_queue,
)
from kueue_webhook.api.objects.topology import Topology, parse_topology
from kueue_webhook.api.objects.workloads import (
    AdmissionCheck,
    Workload,
    WorkloadPriorityClass,
    parse_admission_check,
    parse_workload,
    parse_workload_priority_class,
)

__all__ = ["KueueObject", "parse_object"]

KueueObject: TypeAlias = (
    ResourceFlavor
    | ClusterQueue
    | Cohort
    | LocalQueue
    | WorkloadPriorityClass
    | Workload
    | AdmissionCheck
    | Topology
    | MultiKueueCluster
    | MultiKueueConfig
)

_PARSERS: dict[str, Callable[[Mapping[str, Any]], KueueObject | list[FieldError]]] = {
    "ResourceFlavor": parse_resource_flavor,
    "ClusterQueue": parse_cluster_queue,
    "Cohort": parse_cohort,
    "LocalQueue": parse_local_queue,
    "WorkloadPriorityClass": parse_workload_priority_class,
    "Workload": parse_workload,
    "AdmissionCheck": parse_admission_check,
    "Topology": parse_topology,
    "MultiKueueCluster": parse_multikueue_cluster,
    "MultiKueueConfig": parse_multikueue_config,
}


def parse_object(obj: Mapping[str, Any]) -> KueueObject | list[FieldError]:
    """Parse any Kueue object by its ``kind``; an unknown kind or group is an error naming it."""
    kind = obj.get("kind")
    api_version = str(obj.get("apiVersion") or "")
    if not api_version.startswith(f"{GROUP}/"):
        return [FieldError.invalid("apiVersion", api_version, f"expected {GROUP}/v1beta2 (or v1beta1)")]
    parser = _PARSERS.get(str(kind))
    if parser is None:
        return [FieldError.not_supported("kind", kind, tuple(_PARSERS))]
    return parser(obj)
