"""Typed, validated views of Kueue's objects, parsed from the plain dicts the API returns.

Everything downstream (scheduler core, webhook, controller, simulate) reads these frozen views instead of
poking into nested dicts, so a field name or default lives in exactly one place. Parsing never raises:
each ``parse_*`` returns the typed object or a list of ``FieldError`` naming every problem with its path,
because the same function backs the validating webhook (which must list all causes) and ``simulate``
(which must point at the document at fault). The rules are Kueue's create-time rules (CRD schema enums
and CEL rules plus the webhook's spec checks); update-only rules such as immutability belong to the
webhook, which sees both the old and the new object. Names and defaults follow ``kueue.x-k8s.io/v1beta2``.

One module per family of kinds, on the shared readers of :mod:`.common` and the CEL restatements of
:mod:`.cel`: :mod:`.flavors` (ResourceFlavor, taints, tolerations), :mod:`.quotas` (the resource groups
ClusterQueue and Cohort share), :mod:`.queues` (ClusterQueue, Cohort, LocalQueue), :mod:`.workloads`
(Workload, WorkloadPriorityClass, AdmissionCheck) and :mod:`.dispatch` (any kind by its ``kind``). This
package re-exports what the rest of the code imports from it.
"""

from kueue_webhook.api.objects.common import API_VERSION, GROUP, Meta, parse_timestamp
from kueue_webhook.api.objects.dispatch import parse_object
from kueue_webhook.api.objects.flavors import ResourceFlavor, parse_resource_flavor, validate_tolerations
from kueue_webhook.api.objects.queues import (
    ClusterQueue,
    Cohort,
    FlavorFungibility,
    LocalQueue,
    Preemption,
    parse_cluster_queue,
    parse_cohort,
    parse_local_queue,
)
from kueue_webhook.api.objects.quotas import ResourceGroup
from kueue_webhook.api.objects.topology import Topology, parse_topology
from kueue_webhook.api.objects.workloads import (
    MAX_POD_SETS,
    Admission,
    AdmissionCheck,
    AdmissionCheckState,
    PodSet,
    PodSetAssignment,
    Workload,
    WorkloadPriorityClass,
    admitted_cluster_queue,
    has_quota_reservation,
    parse_admission_check,
    parse_workload,
    parse_workload_priority_class,
)

__all__ = [
    "API_VERSION",
    "GROUP",
    "MAX_POD_SETS",
    "Admission",
    "AdmissionCheck",
    "AdmissionCheckState",
    "ClusterQueue",
    "Cohort",
    "FlavorFungibility",
    "LocalQueue",
    "Meta",
    "PodSet",
    "PodSetAssignment",
    "Preemption",
    "ResourceFlavor",
    "ResourceGroup",
    "Topology",
    "Workload",
    "WorkloadPriorityClass",
    "admitted_cluster_queue",
    "has_quota_reservation",
    "parse_admission_check",
    "parse_cluster_queue",
    "parse_cohort",
    "parse_local_queue",
    "parse_object",
    "parse_resource_flavor",
    "parse_timestamp",
    "parse_topology",
    "parse_workload",
    "parse_workload_priority_class",
    "validate_tolerations",
]
