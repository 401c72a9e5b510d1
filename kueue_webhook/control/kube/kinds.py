"""The Kubernetes resources the controller watches and writes, as typed references.

A resource is addressed by group, version and plural; keeping that in one frozen value (rather than spelling
URL paths at each call site) makes a typo in a path impossible and lets the store key everything by ``Kind``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from urllib.parse import quote

from kueue_webhook.api.integrations import Integration
from kueue_webhook.api.integrations.model import Dependency


@dataclass(frozen=True)
class Kind:
    """One REST resource: ``/api/v1/...`` for the core group, ``/apis/<group>/<version>/...`` otherwise."""

    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool

    # The store keys every object by its Kind, and listeners test the Kind of each change: the generated
    # hash (a tuple of every field, hashed anew each call) and comparison would run thousands of times a
    # second. Kinds are few and live as long as the process, so each hashes once and compares as itself
    # first.
    def __post_init__(self) -> None:
        object.__setattr__(
            self, "_hash", hash((self.kind, self.group, self.version, self.plural, self.namespaced))
        )

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined,no-any-return]

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Kind):
            return NotImplemented
        return (self.kind, self.group, self.version, self.plural, self.namespaced) == (
            other.kind,
            other.group,
            other.version,
            other.plural,
            other.namespaced,
        )

    @cached_property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, *, namespace: str | None = None, name: str | None = None, subresource: str = "") -> str:
        """The collection path (``name`` None) or an object path; ``namespace`` None spans namespaces."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
            if subresource:
                base += f"/{subresource}"
        return base


KUEUE = "kueue.x-k8s.io"
NAMESPACES = Kind("Namespace", "", "v1", "namespaces", namespaced=False)
CONFIGMAPS = Kind("ConfigMap", "", "v1", "configmaps", namespaced=True)
EVENTS = Kind("Event", "", "v1", "events", namespaced=True)
JOBS = Kind("Job", "batch", "v1", "jobs", namespaced=True)
LEASES = Kind("Lease", "coordination.k8s.io", "v1", "leases", namespaced=True)
WORKLOADS = Kind("Workload", KUEUE, "v1beta2", "workloads", namespaced=True)
LOCAL_QUEUES = Kind("LocalQueue", KUEUE, "v1beta2", "localqueues", namespaced=True)
CLUSTER_QUEUES = Kind("ClusterQueue", KUEUE, "v1beta2", "clusterqueues", namespaced=False)
RESOURCE_FLAVORS = Kind("ResourceFlavor", KUEUE, "v1beta2", "resourceflavors", namespaced=False)
COHORTS = Kind("Cohort", KUEUE, "v1beta2", "cohorts", namespaced=False)
WORKLOAD_PRIORITY_CLASSES = Kind(
    "WorkloadPriorityClass", KUEUE, "v1beta2", "workloadpriorityclasses", namespaced=False
)
#: scheduling.k8s.io PriorityClasses: a Job's priority when its pod template names one (priorityClassName)
PRIORITY_CLASSES = Kind("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", namespaced=False)
ADMISSION_CHECKS = Kind("AdmissionCheck", KUEUE, "v1beta2", "admissionchecks", namespaced=False)
TOPOLOGIES = Kind("Topology", KUEUE, "v1beta2", "topologies", namespaced=False)
#: watched for topology-aware scheduling only, into ``scheduling.topology_feed`` rather than the store
NODES = Kind("Node", "", "v1", "nodes", namespaced=False)
BOUND_PODS = Kind("Pod", "", "v1", "pods", namespaced=True)
#: DRA: what one pod's claim of a template asks for, watched while ``resources.deviceClassMappings`` maps a
#: DeviceClass to a quota resource (``kueue_webhook.api.dra``)
RESOURCE_CLAIM_TEMPLATES = Kind(
    "ResourceClaimTemplate", "resource.k8s.io", "v1", "resourceclaimtemplates", namespaced=True
)
#: the certificate Secret the leader renews (``internalCertManagement``); MultiKueue watches the Secrets of
#: the controller's namespace for worker kubeconfigs
SECRETS = Kind("Secret", "", "v1", "secrets", namespaced=True)
#: MultiKueue: the worker clusters and the lists of them an AdmissionCheck points at (watched, not gating
#: readiness: their CRDs may be missing where MultiKueue is not used)
MULTIKUEUE_CLUSTERS = Kind("MultiKueueCluster", KUEUE, "v1beta2", "multikueueclusters", namespaced=False)
MULTIKUEUE_CONFIGS = Kind("MultiKueueConfig", KUEUE, "v1beta2", "multikueueconfigs", namespaced=False)
#: not watched; ``certs --patch-webhook-configurations`` and the certificate renewal set their caBundle
API_SERVICES = Kind("APIService", "apiregistration.k8s.io", "v1", "apiservices", namespaced=False)
CUSTOM_RESOURCE_DEFINITIONS = Kind(
    "CustomResourceDefinition", "apiextensions.k8s.io", "v1", "customresourcedefinitions", namespaced=False
)
MUTATING_WEBHOOKS = Kind(
    "MutatingWebhookConfiguration",
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    namespaced=False,
)
VALIDATING_WEBHOOKS = Kind(
    "ValidatingWebhookConfiguration",
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    namespaced=False,
)

#: Everything the store mirrors; the ConfigMap informer is scoped to our namespace and name separately. In the
#: order the scheduler loop feeds its core on a rebuild: capacity and routing before the Workloads using them.
WATCHED: tuple[Kind, ...] = (
    NAMESPACES,
    TOPOLOGIES,
    RESOURCE_FLAVORS,
    COHORTS,
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    WORKLOAD_PRIORITY_CLASSES,
    PRIORITY_CLASSES,
    ADMISSION_CHECKS,
    WORKLOADS,
    JOBS,
)

#: ``WATCHED`` kinds that do not gate readiness: their CRD may be missing, e.g. after an upgrade from a
#: version without it (the informer looks for it again with its backoff); until it appears the feature
#: built on it (topology-aware scheduling) simply stays off
OPTIONAL_WATCHED: frozenset[Kind] = frozenset((TOPOLOGIES,))


def integration_kind(group: str, version: str, kind: str, plural: str) -> Kind:
    """The watched resource of a queued kind (``JOBS`` itself for batch/v1 Job, so identity checks hold)."""
    if (group, kind) == ("batch", "Job"):
        return JOBS
    return Kind(kind, group, version, plural, namespaced=True)


def dependency_kind(dependency: Dependency) -> Kind:
    """The REST resource of objects a queued kind reads its pod sets from (a TrainJob's runtimes)."""
    d = dependency
    return Kind(d.kind, d.group, d.version, d.plural, namespaced=d.namespaced)


def kind_of(integration: Integration) -> Kind:
    """The REST resource the store holds objects of ``integration`` under."""
    return integration_kind(integration.group, integration.version, integration.kind, integration.plural)
