"""The configuration's typed model: what a valid ``config.yaml`` means once read, with its defaults.

Every part of the controller and the webhook reads these frozen records, never the YAML; only
``config_reader`` builds them from a document, so the defaults written here are the only ones (a missing
section and ``Configuration()`` agree by construction).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kueue_webhook.api.integrations.registry import Integrations
from kueue_webhook.api.selectors import LabelSelector, Requirement

__all__ = [
    "CONFIGMAP_NAME",
    "CONFIG_KEY",
    "DEFAULT_CONTROLLER_USERNAME",
    "DEFAULT_QUEUE_NAME",
    "DISPATCHER_ALL_AT_ONCE",
    "DISPATCHER_INCREMENTAL",
    "PREEMPTION_STRATEGY_LISTS",
    "Configuration",
    "ConfigurationErrors",
    "ControllerIdentity",
    "FairSharing",
    "InternalCertManagement",
    "LabelPolicy",
    "ManualApproval",
    "MultiKueue",
    "RequeuingStrategy",
    "WaitForPodsReady",
    "default_managed_selector",
]

#: the ConfigMap the controller reads its configuration from (``simulate`` honours one in its input too)
CONFIGMAP_NAME = "kueue-webhook-config"
#: the ConfigMap key that holds this document
CONFIG_KEY = "config.yaml"
DEFAULT_CONTROLLER_USERNAME = "system:serviceaccount:kueue-system:kueue-webhook"
#: Kueue's default LocalQueue name (``constants.DefaultLocalQueueName``).
DEFAULT_QUEUE_NAME = "default"
_NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
PREEMPTION_STRATEGY_LISTS = (
    ("LessThanOrEqualToFinalShare",),
    ("LessThanInitialShare",),
    ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
)


@dataclass(frozen=True, slots=True)
class LocalQueueMetrics:
    """Kueue's ``metrics.localQueueMetrics``: the ``kueue_local_queue_*`` series, on by default (Kueue's
    LocalQueueMetrics gate and defaulting since v0.17), for every LocalQueue or those ``selector`` matches."""

    enable: bool = True
    selector: LabelSelector | None = None

    def exposes(self, local_queue_labels: Mapping[str, str]) -> bool:
        return self.enable and (self.selector is None or self.selector.matches(local_queue_labels))


@dataclass(frozen=True, slots=True)
class FairSharing:
    """Kueue's fair sharing switch and preemption strategies (the scheduler core reads these)."""

    enable: bool = False
    preemption_strategies: tuple[str, ...] = PREEMPTION_STRATEGY_LISTS[2]


@dataclass(frozen=True, slots=True)
class AdmissionFairSharing:
    """Kueue's ``admissionFairSharing``: how LocalQueues' past usage orders the Workloads of the
    ClusterQueues that ask for it (``spec.admissionScope.admissionMode: UsageBasedAdmissionFairSharing``)."""

    #: after this long, past usage counts half (0: it does not count at all)
    usage_half_life_seconds: float = 0.0
    #: how often each LocalQueue's consumed resources are sampled and written to its status
    usage_sampling_interval_seconds: float = 300.0
    #: per resource, how much one unit of it weighs in a LocalQueue's usage (absent: 1)
    resource_weights: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class RequeuingStrategy:
    timestamp: str = "Eviction"
    backoff_base_seconds: int = 60
    backoff_max_seconds: int = 3600
    backoff_limit_count: int | None = None


@dataclass(frozen=True, slots=True)
class WorkloadRetention:
    """Kueue's ``objectRetentionPolicies.workloads``, in seconds (None: never): how long a finished
    Workload is kept before it is deleted, and how long the object of a Workload Kueue deactivated is kept
    before it is deleted (its Workload with it)."""

    after_finished: float | None = None
    after_deactivated_by_kueue: float | None = None


@dataclass(frozen=True, slots=True)
class WaitForPodsReady:
    """Kueue's waitForPodsReady (``kueue_webhook.api.pods_ready``). On by default, as in Kueue's v1beta2
    configuration, whose defaulting always fills this section in; ``enable: false`` turns it off (Kueue's
    DisableWaitForPodsReady feature gate; ``enable`` was the switch in Kueue's v1beta1 configuration)."""

    enable: bool = True
    timeout_seconds: float = 1800.0
    block_admission: bool = False
    recovery_timeout_seconds: float | None = None
    requeuing_strategy: RequeuingStrategy = field(default_factory=RequeuingStrategy)


#: Kueue's built-in MultiKueue dispatchers (``dispatcherName``); any other name is an external dispatcher
DISPATCHER_ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
DISPATCHER_INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"


@dataclass(frozen=True, slots=True)
class MultiKueue:
    """Kueue's ``multiKueue`` section with its defaults (``apis/config/v1beta2/defaults.go``): how often
    orphaned copies on the workers are collected (0: never), the label value marking this manager's
    copies, how long a Workload stays admitted to a worker that stopped answering, and which dispatcher
    chooses the workers."""

    gc_interval_seconds: float = 60.0
    origin: str = "multikueue"
    worker_lost_timeout_seconds: float = 900.0
    dispatcher_name: str = DISPATCHER_ALL_AT_ONCE
    #: the incremental dispatcher's ``incrementalDispatcherConfig.stepSize`` (Kueue's default 3)
    incremental_step_size: int = 3


@dataclass(frozen=True, slots=True)
class LabelPolicy:
    """Where a queue label is mandatory, and which LocalQueue a Job without one gets.

    ``enforced_namespace_selector`` is None when no namespace is enforced (the default).
    """

    enforced_namespace_selector: LabelSelector | None = None
    default_queues: Mapping[str, str] = field(default_factory=dict)

    def is_enforced(self, namespace_labels: Mapping[str, str]) -> bool:
        selector = self.enforced_namespace_selector
        return selector is not None and selector.matches(namespace_labels)

    def default_queue_for(self, namespace: str) -> str:
        return self.default_queues.get(namespace, DEFAULT_QUEUE_NAME)


@dataclass(frozen=True, slots=True)
class ManualApproval:
    """Who may approve or reject Workloads for the built-in manual-approval admission check.

    An entry is a user name or ``group:<name>``. Empty means nobody: an approval check that nobody may
    approve keeps Workloads waiting, which is the safe failure for a check meant to guard spending.
    """

    approvers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ControllerIdentity:
    """Who the controller authenticates as: the only users allowed to start a managed Job.

    ``username`` is configured; ``discovered`` is not part of the document: it is what the API server said
    the controller's own credentials are (a SelfSubjectReview at start), so a controller running with other
    credentials than the configured service account (an admin kubeconfig out of cluster) is trusted too.
    """

    username: str = DEFAULT_CONTROLLER_USERNAME
    discovered: str = ""

    @property
    def usernames(self) -> tuple[str, ...]:
        """The trusted user names, configured first."""
        if self.discovered and self.discovered != self.username:
            return (self.username, self.discovered)
        return (self.username,)

    def trusts(self, username: str) -> bool:
        return username in self.usernames


@dataclass(frozen=True, slots=True)
class InternalCertManagement:
    """Kueue's ``internalCertManagement``: the leader keeps the webhook's serving certificate in Secret
    ``webhook_secret_name`` current for Service ``webhook_service_name`` and the CA in every caBundle that
    must trust it (``kueue_webhook.control.replica.cert_rotation``).

    Off when the section is absent (this ConfigMap may be missing, and the same process runs out of cluster
    or beside cert-manager, where nobody must rewrite the Secret unasked); ``enable`` defaults to true once
    the section is written, as Kueue's defaulting fills it. The names are ours (Kueue's are
    ``kueue-webhook-service`` and ``kueue-webhook-server-cert``).
    """

    enable: bool = False
    webhook_service_name: str = "kueue-webhook"
    webhook_secret_name: str = "kueue-webhook-tls"


def default_managed_selector(namespace: str) -> LabelSelector:
    # Kueue's default managedJobsNamespaceSelector: every namespace but kube-system and its own.
    return LabelSelector(
        (Requirement(_NAMESPACE_NAME_LABEL, "NotIn", frozenset(("kube-system", namespace))),)
    )


@dataclass(frozen=True, slots=True)
class Configuration:
    """A complete, validated configuration; ``Configuration()`` is the documented default."""

    namespace: str = "kueue-system"
    manage_jobs_without_queue_name: bool = False
    managed_jobs_namespace_selector: LabelSelector = field(
        default_factory=lambda: default_managed_selector("kueue-system")
    )
    exclude_resource_prefixes: tuple[str, ...] = ()
    #: Kueue's ``resources.quotaCheckStrategy``: ``IgnoreUndeclared`` leaves a ClusterQueue's undeclared
    #: resources out of its quota check, ``BlockUndeclared`` (the default) refuses a Workload asking for one
    quota_check_strategy: str = "BlockUndeclared"
    #: Kueue's ``resources.deviceClassMappings``: DRA DeviceClass -> the quota resource its devices count as
    device_class_mappings: tuple[tuple[str, str], ...] = ()
    fair_sharing: FairSharing = field(default_factory=FairSharing)
    #: None: admission fair sharing is off (Kueue's default: no ``admissionFairSharing`` section)
    admission_fair_sharing: AdmissionFairSharing | None = None
    wait_for_pods_ready: WaitForPodsReady = field(default_factory=WaitForPodsReady)
    label_policy: LabelPolicy = field(default_factory=LabelPolicy)
    controller_identity: ControllerIdentity = field(default_factory=ControllerIdentity)
    manual_approval: ManualApproval = field(default_factory=ManualApproval)
    internal_cert_management: InternalCertManagement = field(default_factory=InternalCertManagement)
    integrations: Integrations = field(default_factory=Integrations)
    workload_retention: WorkloadRetention = field(default_factory=WorkloadRetention)
    multi_kueue: MultiKueue = field(default_factory=MultiKueue)
    local_queue_metrics: LocalQueueMetrics = field(default_factory=LocalQueueMetrics)
    #: None: the level given on the command line (``serve --log-level``, info by default) stands
    log_level: str | None = None
    #: fields of Kueue's configuration that were present but have no effect here
    warnings: tuple[str, ...] = ()

    def manages_namespace(self, namespace_labels: Mapping[str, str]) -> bool:
        return self.managed_jobs_namespace_selector.matches(namespace_labels)

    def pods_ready_kinds(self) -> frozenset[str]:
        """Kinds whose Workloads carry PodsReady: the enabled integrations that say when pods are ready."""
        return frozenset(i.kind for i in self.integrations if i.pods_ready is not None)


@dataclass(frozen=True, slots=True)
class ConfigurationErrors:
    """Why a document was rejected: one ``path: reason`` per problem, in document order."""

    errors: tuple[str, ...]

    def __str__(self) -> str:
        return "; ".join(self.errors)
