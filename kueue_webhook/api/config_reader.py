"""Reading ``config.yaml`` section by section into the typed model (``config_model``).

Each section is checked as Kueue checks it (``apis/config/v1beta2`` defaulting and validation) and every
problem is collected as ``path: reason`` rather than raised, so that ``config.parse_configuration`` can
refuse a bad edit whole and name all that is wrong at once. Kueue's fields that have no effect here become
warnings, unknown names errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_webhook.api.config_model import (
    DEFAULT_CONTROLLER_USERNAME,
    DISPATCHER_INCREMENTAL,
    PREEMPTION_STRATEGY_LISTS,
    AdmissionFairSharing,
    Configuration,
    ControllerIdentity,
    FairSharing,
    InternalCertManagement,
    LabelPolicy,
    LocalQueueMetrics,
    ManualApproval,
    MultiKueue,
    RequeuingStrategy,
    WaitForPodsReady,
    WorkloadRetention,
    default_managed_selector,
)
from kueue_webhook.api.errors import FieldError, type_name
from kueue_webhook.api.field_reader import FieldReader
from kueue_webhook.api.integrations.builtin import BUILTIN, DEFAULT_FRAMEWORKS, KUEUE_FRAMEWORKS
from kueue_webhook.api.integrations.declare import FIELD as DECLARED_FIELD
from kueue_webhook.api.integrations.declare import parse_declared_kinds
from kueue_webhook.api.integrations.registry import Integrations
from kueue_webhook.api.selectors import LabelSelector, label_selector
from kueue_webhook.api.validation import (
    dns1035_label_problems,
    dns1123_label_problems,
    dns1123_subdomain_problems,
    label_key_problems,
    label_value_problems,
)

__all__ = ["ConfigurationReader"]

_LOG_LEVELS = ("debug", "info", "warning", "error")

#: Top-level fields of Kueue's Configuration that are accepted for compatibility but have no effect here.
_KUEUE_ONLY_FIELDS = frozenset(
    {
        "apiVersion",
        "kind",
        "health",
        "webhook",
        "leaderElection",
        "controller",
        "clientConnection",
        "queueVisibility",
        "featureGates",
        "visibilityServer",
        "pprofBindAddress",
        "waitForPodsReadyTimeout",
    }
)


class ConfigurationReader(FieldReader):
    """Reads ``config.yaml`` into a ``Configuration``, collecting every error and warning."""

    ROOT = "config.yaml"

    def __init__(self) -> None:
        super().__init__()
        self.warnings: list[str] = []

    def selector(self, value: object, path: str) -> LabelSelector | None:
        """Kueue checks its configuration's selectors with ``ValidateLabelSelector``, as its webhooks do."""
        parsed = label_selector(value, path)
        if isinstance(parsed, list):
            self.invalid(parsed)
            return None
        return parsed

    def configuration(self, data: object) -> Configuration | None:
        own = {
            "namespace",
            "manageJobsWithoutQueueName",
            "managedJobsNamespaceSelector",
            "resources",
            "fairSharing",
            "admissionFairSharing",
            "waitForPodsReady",
            "labelPolicy",
            "controllerIdentity",
            "manualApproval",
            "internalCertManagement",
            "integrations",
            "multiKueue",
            "metrics",
            "objectRetentionPolicies",
            "logLevel",
        }
        root = self.mapping(data, "", frozenset(own) | _KUEUE_ONLY_FIELDS)
        if root is None:
            return None
        namespace = self.string(root.get("namespace"), "namespace", "kueue-system")
        self.invalid(
            [FieldError.invalid("namespace", namespace, m) for m in dns1123_label_problems(namespace)]
        )
        managed = default_managed_selector(namespace)
        if root.get("managedJobsNamespaceSelector") is not None:
            managed = (
                self.selector(root["managedJobsNamespaceSelector"], "managedJobsNamespaceSelector") or managed
            )
        log_level: str | None = None
        if root.get("logLevel") is not None:
            log_level = self.string(root.get("logLevel"), "logLevel", "info").lower()
            if log_level not in _LOG_LEVELS:
                self.fail(
                    "logLevel", f"must be one of {', '.join(_LOG_LEVELS)}, got {root.get('logLevel')!r}"
                )
                log_level = None
        excluded, quota_check = self.resources(root.get("resources"))
        return Configuration(
            namespace=namespace,
            manage_jobs_without_queue_name=self.boolean(
                root.get("manageJobsWithoutQueueName"), "manageJobsWithoutQueueName", False
            ),
            managed_jobs_namespace_selector=managed,
            exclude_resource_prefixes=excluded,
            quota_check_strategy=quota_check,
            device_class_mappings=self.device_class_mappings(root.get("resources")),
            fair_sharing=self.fair_sharing(root),
            admission_fair_sharing=self.admission_fair_sharing(root.get("admissionFairSharing")),
            wait_for_pods_ready=self.wait_for_pods_ready(root),
            label_policy=self.label_policy(root.get("labelPolicy")),
            controller_identity=self.controller_identity(root.get("controllerIdentity")),
            manual_approval=self.manual_approval(root.get("manualApproval")),
            internal_cert_management=self.internal_cert_management(root),
            integrations=self.integrations(root.get("integrations")),
            workload_retention=self.workload_retention(root.get("objectRetentionPolicies")),
            multi_kueue=self.multi_kueue(root.get("multiKueue")),
            local_queue_metrics=self.local_queue_metrics(root.get("metrics")),
            log_level=log_level,
            warnings=tuple(
                f"{key}: accepted for compatibility with Kueue, has no effect here"
                for key in root
                if key in _KUEUE_ONLY_FIELDS and key not in ("apiVersion", "kind")
            )
            + tuple(self.warnings),
        )

    def resources(self, value: object) -> tuple[tuple[str, ...], str]:
        """``excludeResourcePrefixes`` and ``quotaCheckStrategy`` (Kueue's rules for them: the second is
        BlockUndeclared or IgnoreUndeclared, and IgnoreUndeclared takes no prefixes)."""
        known = frozenset(
            {"excludeResourcePrefixes", "quotaCheckStrategy", "transformations", "deviceClassMappings"}
        )
        section = self.mapping(value, "resources", known)
        if not section:
            return (), "BlockUndeclared"
        if section.get("transformations"):
            self.warnings.append(
                "resources.transformations: accepted for compatibility with Kueue, has no effect here"
            )
        prefixes: tuple[str, ...] = ()
        raw = section.get("excludeResourcePrefixes")
        if raw is not None:
            if not isinstance(raw, list) or not all(isinstance(p, str) and p for p in raw):
                self.fail("resources.excludeResourcePrefixes", "must be a list of non-empty strings")
            else:
                prefixes = tuple(raw)
        strategy = section.get("quotaCheckStrategy")
        if strategy is None:
            return prefixes, "BlockUndeclared"
        if strategy not in ("IgnoreUndeclared", "BlockUndeclared"):
            self.fail(
                "resources.quotaCheckStrategy",
                f'Unsupported value: "{strategy}": supported values: "IgnoreUndeclared", "BlockUndeclared"',
            )
            return prefixes, "BlockUndeclared"
        if strategy == "IgnoreUndeclared" and prefixes:
            self.fail(
                "resources.quotaCheckStrategy",
                "excludeResourcePrefixes is not allowed when quotaCheckStrategy is IgnoreUndeclared",
            )
        return prefixes, str(strategy)

    def device_class_mappings(self, value: object) -> tuple[tuple[str, str], ...]:
        """Kueue's ``resources.deviceClassMappings`` (``validateDeviceClassMappings``: at most 16, each a
        label-key-like quota resource name, unique, with 1 to 8 DeviceClasses, a DeviceClass in one mapping
        only) as (DeviceClass, resource) pairs."""
        path = "resources.deviceClassMappings"
        section = value.get("deviceClassMappings") if isinstance(value, Mapping) else None
        if section is None:
            return ()
        if not isinstance(section, list):
            self.fail(path, f"must be a list, got {type_name(section)}")
            return ()
        if len(section) > 16:
            self.invalid([FieldError.too_many(path, len(section), 16)])
        pairs: dict[str, str] = {}
        names: set[str] = set()
        for index, mapping in enumerate(section):
            where = f"{path}[{index}]"
            entry = self.mapping(mapping, where, frozenset({"name", "deviceClassNames", "sources"}))
            if entry is None:
                continue
            if entry.get("sources"):
                self.warnings.append(
                    f"{where}.sources: accepted for compatibility with Kueue, has no effect here"
                )
            name = entry.get("name")
            if not isinstance(name, str) or not name:
                self.invalid([FieldError.required(f"{where}.name")])
                continue
            self.invalid([FieldError.invalid(f"{where}.name", name, m) for m in label_key_problems(name)])
            if name in names:
                self.invalid([FieldError.duplicate(f"{where}.name", name)])
            names.add(name)
            classes = entry.get("deviceClassNames")
            if not isinstance(classes, list) or not classes:
                self.invalid(
                    [
                        FieldError.required(
                            f"{where}.deviceClassNames", "at least one device class name is required"
                        )
                    ]
                )
                continue
            if len(classes) > 8:
                self.invalid([FieldError.too_many(f"{where}.deviceClassNames", len(classes), 8)])
            for position, device_class in enumerate(classes):
                at = f"{where}.deviceClassNames[{position}]"
                if not isinstance(device_class, str) or not device_class:
                    self.invalid([FieldError.required(at)])
                    continue
                problems = label_key_problems(device_class)
                self.invalid([FieldError.invalid(at, device_class, m) for m in problems])
                if device_class in pairs and pairs[device_class] == name:
                    self.invalid([FieldError.duplicate(at, device_class)])
                elif device_class in pairs:
                    taken = f"device class already mapped to resource {pairs[device_class]}"
                    self.invalid([FieldError.invalid(at, device_class, taken)])
                elif not problems:
                    pairs[device_class] = name
        return tuple(sorted(pairs.items()))

    def fair_sharing(self, root: Mapping[str, Any]) -> FairSharing:
        if "fairSharing" not in root:
            return FairSharing()
        path = "fairSharing"
        section = self.mapping(root["fairSharing"], path, frozenset({"enable", "preemptionStrategies"}))
        if section is None:
            return FairSharing()
        enable = self.boolean(section.get("enable"), f"{path}.enable", True)
        strategies = section.get("preemptionStrategies")
        if strategies is None:
            return FairSharing(enable=enable)
        chosen = tuple(strategies) if isinstance(strategies, list) else None
        if chosen not in PREEMPTION_STRATEGY_LISTS:
            allowed = " or ".join(str(list(option)) for option in PREEMPTION_STRATEGY_LISTS)
            self.fail(f"{path}.preemptionStrategies", f"must be one of {allowed}, got {strategies!r}")
            return FairSharing(enable=enable)
        return FairSharing(enable=enable, preemption_strategies=chosen)

    def admission_fair_sharing(self, value: object) -> AdmissionFairSharing | None:
        """Kueue's ``admissionFairSharing`` with its defaulting (a missing or zero sampling interval is five
        minutes) and its validation (``validateAdmissionFairSharing``: no negative half-life, interval or
        weight)."""
        if value is None:
            return None
        path = "admissionFairSharing"
        known = frozenset({"usageHalfLifeTime", "usageSamplingInterval", "resourceWeights"})
        section = self.mapping(value, path, known)
        if section is None:
            return None
        half_life = self.duration(section.get("usageHalfLifeTime"), f"{path}.usageHalfLifeTime", 0.0)
        interval = self.duration(section.get("usageSamplingInterval"), f"{path}.usageSamplingInterval", 0.0)
        weights: list[tuple[str, float]] = []
        raw_weights = section.get("resourceWeights")
        if raw_weights is not None and not isinstance(raw_weights, Mapping):
            self.fail(f"{path}.resourceWeights", f"must be a mapping, got {type_name(raw_weights)}")
        elif raw_weights:
            for resource, weight in raw_weights.items():
                where = f"{path}.resourceWeights[{resource}]"
                if isinstance(weight, bool) or not isinstance(weight, (int, float)):
                    self.fail(where, f"must be a number, got {weight!r}")
                elif weight < 0:
                    self.fail(where, f"must be greater than or equal to 0, got {weight}")
                else:
                    weights.append((str(resource), float(weight)))
        return AdmissionFairSharing(
            usage_half_life_seconds=half_life,
            usage_sampling_interval_seconds=interval or 300.0,
            resource_weights=tuple(sorted(weights)),
        )

    def multi_kueue(self, value: object) -> MultiKueue:
        """Kueue's ``multiKueue`` with its defaults and its validation (``validateMultiKueue``): durations not
        negative, ``origin`` a label value, ``incrementalDispatcherConfig`` only with the incremental
        dispatcher and a ``stepSize`` of at least 1. ``externalFrameworks`` and ``clusterProfile`` are
        accepted and warned about: kueue-webhook has neither."""
        path = "multiKueue"
        known = frozenset(
            {
                "gcInterval",
                "origin",
                "workerLostTimeout",
                "dispatcherName",
                "incrementalDispatcherConfig",
                "externalFrameworks",
                "clusterProfile",
            }
        )
        section = self.mapping(value, path, known) if value is not None else None
        if not section:
            return MultiKueue()
        default = MultiKueue()
        origin = self.string(section.get("origin"), f"{path}.origin", default.origin)
        problems = label_value_problems(origin)
        if problems:
            self.fail(f"{path}.origin", f"{origin!r}: " + ", ".join(problems))
            origin = default.origin
        dispatcher = self.string(
            section.get("dispatcherName"), f"{path}.dispatcherName", default.dispatcher_name
        )
        step = default.incremental_step_size
        if section.get("incrementalDispatcherConfig") is not None:
            config_path = f"{path}.incrementalDispatcherConfig"
            config = self.mapping(
                section["incrementalDispatcherConfig"], config_path, frozenset({"stepSize"})
            )
            if dispatcher != DISPATCHER_INCREMENTAL:
                self.fail(config_path, f"only valid when dispatcherName is {DISPATCHER_INCREMENTAL}")
            elif config:
                step = self.integer(config.get("stepSize"), f"{config_path}.stepSize", step, 1) or step
        for unsupported in ("externalFrameworks", "clusterProfile"):
            if section.get(unsupported):
                self.warnings.append(
                    f"{path}.{unsupported}: accepted for compatibility with Kueue, has no effect here"
                )
        return MultiKueue(
            gc_interval_seconds=self.duration(
                section.get("gcInterval"), f"{path}.gcInterval", default.gc_interval_seconds
            ),
            origin=origin,
            worker_lost_timeout_seconds=self.duration(
                section.get("workerLostTimeout"),
                f"{path}.workerLostTimeout",
                default.worker_lost_timeout_seconds,
            ),
            dispatcher_name=dispatcher,
            incremental_step_size=step,
        )

    def wait_for_pods_ready(self, root: Mapping[str, Any]) -> WaitForPodsReady:
        if "waitForPodsReady" not in root:
            return WaitForPodsReady()
        path = "waitForPodsReady"
        known = frozenset({"enable", "timeout", "blockAdmission", "recoveryTimeout", "requeuingStrategy"})
        section = self.mapping(root["waitForPodsReady"], path, known)
        if section is None:
            return WaitForPodsReady()
        # Kueue's defaulting: a missing or zero timeout is 30 minutes
        timeout = self.duration(section.get("timeout"), f"{path}.timeout", 1800.0) or 1800.0
        recovery = section.get("recoveryTimeout")
        return WaitForPodsReady(
            enable=self.boolean(section.get("enable"), f"{path}.enable", True),
            timeout_seconds=timeout,
            block_admission=self.boolean(section.get("blockAdmission"), f"{path}.blockAdmission", False),
            recovery_timeout_seconds=self.duration(recovery, f"{path}.recoveryTimeout", timeout),
            requeuing_strategy=self.requeuing_strategy(
                section.get("requeuingStrategy"), f"{path}.requeuingStrategy"
            ),
        )

    def requeuing_strategy(self, value: object, path: str) -> RequeuingStrategy:
        known = frozenset({"timestamp", "backoffBaseSeconds", "backoffMaxSeconds", "backoffLimitCount"})
        section = self.mapping(value, path, known)
        if not section:
            return RequeuingStrategy()
        timestamp = self.string(section.get("timestamp"), f"{path}.timestamp", "Eviction")
        if timestamp not in ("Eviction", "Creation"):
            self.fail(f"{path}.timestamp", f'must be "Eviction" or "Creation", got {timestamp!r}')
            timestamp = "Eviction"
        base = self.integer(section.get("backoffBaseSeconds"), f"{path}.backoffBaseSeconds", 60, 0)
        maximum = self.integer(section.get("backoffMaxSeconds"), f"{path}.backoffMaxSeconds", 3600, 0)
        return RequeuingStrategy(
            timestamp=timestamp,
            backoff_base_seconds=base if base is not None else 60,
            backoff_max_seconds=maximum if maximum is not None else 3600,
            backoff_limit_count=self.integer(
                section.get("backoffLimitCount"), f"{path}.backoffLimitCount", None, 0
            ),
        )

    def local_queue_metrics(self, value: object) -> LocalQueueMetrics:
        """Kueue's ``metrics``: ``localQueueMetrics`` (``enable``, ``localQueueSelector``) is read; the
        other fields are accepted with a warning (the metrics are served on the HTTPS port, with Kueue's
        labels only)."""
        path = "metrics"
        known = frozenset({"bindAddress", "enableClusterQueueResources", "customLabels", "localQueueMetrics"})
        section = self.mapping(value, path, known)
        if not section:
            return LocalQueueMetrics()
        for key in sorted(known - {"localQueueMetrics"}):
            if key in section:
                self.warnings.append(f"{path}.{key}: accepted for compatibility with Kueue, no effect here")
        where = f"{path}.localQueueMetrics"
        if section.get("localQueueMetrics") is None:
            return LocalQueueMetrics()
        local = self.mapping(section["localQueueMetrics"], where, frozenset({"enable", "localQueueSelector"}))
        if local is None:
            return LocalQueueMetrics()
        selector = None
        if local.get("localQueueSelector") is not None:
            selector = self.selector(local["localQueueSelector"], f"{where}.localQueueSelector")
        # Kueue defaults a missing section to enable: true; a section written without ``enable`` leaves it
        # at its zero value, off, as in Kueue
        enable = self.boolean(local.get("enable"), f"{where}.enable", False)
        return LocalQueueMetrics(enable=enable, selector=selector)

    def label_policy(self, value: object) -> LabelPolicy:
        path = "labelPolicy"
        section = self.mapping(value, path, frozenset({"enforcedNamespaceSelector", "defaultQueues"}))
        if not section:
            return LabelPolicy()
        enforced = None
        if section.get("enforcedNamespaceSelector") is not None:
            enforced = self.selector(
                section["enforcedNamespaceSelector"], f"{path}.enforcedNamespaceSelector"
            )
        defaults: dict[str, str] = {}
        raw_defaults = section.get("defaultQueues")
        if raw_defaults is not None and not isinstance(raw_defaults, Mapping):
            self.fail(f"{path}.defaultQueues", "must be a mapping of namespace to LocalQueue name")
        elif raw_defaults:
            for namespace, queue in raw_defaults.items():
                where = f"{path}.defaultQueues[{namespace}]"
                if not isinstance(namespace, str) or not isinstance(queue, str):
                    self.fail(where, "must map a namespace name to a LocalQueue name")
                elif not self.invalid(
                    [FieldError.invalid(where, namespace, p) for p in dns1123_label_problems(namespace)]
                    + [FieldError.invalid(where, queue, p) for p in dns1123_subdomain_problems(queue)]
                ):
                    defaults[namespace] = queue
        return LabelPolicy(enforced_namespace_selector=enforced, default_queues=defaults)

    def controller_identity(self, value: object) -> ControllerIdentity:
        section = self.mapping(value, "controllerIdentity", frozenset({"username"}))
        if not section:
            return ControllerIdentity()
        username = self.string(
            section.get("username"), "controllerIdentity.username", DEFAULT_CONTROLLER_USERNAME
        )
        return ControllerIdentity(username=username)

    def internal_cert_management(self, root: Mapping[str, Any]) -> InternalCertManagement:
        """Kueue's ``internalCertManagement``, checked as Kueue checks it when enabled (the Service name a
        DNS-1035 label, the Secret name a DNS-1123 subdomain); ``enable`` defaults to true in the section."""
        default = InternalCertManagement()
        if "internalCertManagement" not in root:
            return default
        path = "internalCertManagement"
        known = frozenset({"enable", "webhookServiceName", "webhookSecretName"})
        section = self.mapping(root[path], path, known)
        if section is None:
            return default
        enable = self.boolean(section.get("enable"), f"{path}.enable", True)
        service = self.string(
            section.get("webhookServiceName"), f"{path}.webhookServiceName", default.webhook_service_name
        )
        secret = self.string(
            section.get("webhookSecretName"), f"{path}.webhookSecretName", default.webhook_secret_name
        )
        if enable:
            self.invalid(
                [
                    FieldError.invalid(f"{path}.webhookServiceName", service, problem)
                    for problem in dns1035_label_problems(service)
                ]
                + [
                    FieldError.invalid(f"{path}.webhookSecretName", secret, problem)
                    for problem in dns1123_subdomain_problems(secret)
                ]
            )
        return InternalCertManagement(enable=enable, webhook_service_name=service, webhook_secret_name=secret)

    def integrations(self, value: object) -> Integrations:
        """Kueue's ``integrations``: which frameworks are on (Kueue's names; its default ``[batch/job]``) and
        its ``externalFrameworks`` (``Kind.version.group``); and, beyond Kueue, ``declaredKinds``: CRDs queued
        from their declaration (``kueue_webhook.api.integrations.declare``), on by being declared."""
        path = "integrations"
        section = self.mapping(
            value, path, frozenset({"frameworks", "externalFrameworks", "labelKeysToCopy", DECLARED_FIELD})
        )
        if not section:
            return Integrations()
        declared, problems = parse_declared_kinds(section.get(DECLARED_FIELD), f"{path}.{DECLARED_FIELD}")
        self.errors.extend(problems)
        names = self.strings(section.get("frameworks"), f"{path}.frameworks")
        enabled = []
        for index, name in enumerate(names or DEFAULT_FRAMEWORKS):
            if any(d.name == name for d in declared):
                continue  # a declared kind is on by being declared; naming it here too is harmless
            if name in BUILTIN:
                if BUILTIN[name] not in enabled:
                    enabled.append(BUILTIN[name])
            elif name in KUEUE_FRAMEWORKS:
                self.warnings.append(
                    f"{path}.frameworks[{index}]: {name!r} is a Kueue framework not supported here"
                )
            else:
                known = ", ".join(sorted(BUILTIN))
                self.fail(f"{path}.frameworks[{index}]", f"unknown framework {name!r}; known: {known}")
        external = self.strings(section.get("externalFrameworks"), f"{path}.externalFrameworks")
        for index, entry in enumerate(external):
            if len(entry.split(".")) < 3:
                self.fail(
                    f"{path}.externalFrameworks[{index}]",
                    "must be Kind.version.group (such as AppWrapper.v1beta2.workload.codeflare.dev), "
                    f"got {entry!r}",
                )
        copied = self.strings(section.get("labelKeysToCopy"), f"{path}.labelKeysToCopy")
        for index, key in enumerate(copied):
            for problem in label_key_problems(key):
                self.fail(f"{path}.labelKeysToCopy[{index}]", f"{key!r}: {problem}")
        return Integrations(
            enabled=(*enabled, *declared), external=tuple(external), label_keys_to_copy=tuple(copied)
        )

    def workload_retention(self, value: object) -> WorkloadRetention:
        """Kueue's ``objectRetentionPolicies``: ``workloads.afterFinished`` and
        ``workloads.afterDeactivatedByKueue``, Go durations ("0s" acts at once; absent: never)."""
        path = "objectRetentionPolicies"
        section = self.mapping(value, path, frozenset({"workloads"}))
        keys = frozenset({"afterFinished", "afterDeactivatedByKueue"})
        workloads = self.mapping((section or {}).get("workloads"), f"{path}.workloads", keys)
        if not workloads:
            return WorkloadRetention()
        after: dict[str, float | None] = {}
        for key in ("afterFinished", "afterDeactivatedByKueue"):
            raw = workloads.get(key)
            after[key] = None if raw is None else self.duration(raw, f"{path}.workloads.{key}", 0.0)
        return WorkloadRetention(after["afterFinished"], after["afterDeactivatedByKueue"])

    def manual_approval(self, value: object) -> ManualApproval:
        section = self.mapping(value, "manualApproval", frozenset({"approvers"}))
        if not section or section.get("approvers") is None:
            return ManualApproval()
        path = "manualApproval.approvers"
        approvers = section["approvers"]
        if not isinstance(approvers, list):
            self.fail(path, f"must be a list of user names or group:<name>, got {approvers!r}")
            return ManualApproval()
        kept: list[str] = []
        for index, entry in enumerate(approvers):
            if not isinstance(entry, str) or not entry.strip() or entry.strip() == "group:":
                self.fail(f"{path}[{index}]", f"must be a user name or group:<name>, got {entry!r}")
                continue
            kept.append(entry.strip())
        return ManualApproval(approvers=tuple(kept))
