"""ClusterQueue, Cohort and LocalQueue: where quota lives and how Workloads reach it.

A ClusterQueue owns a quota table (:mod:`.quotas`, shared with Cohort) and the policies the scheduler reads
from it: queueing strategy, preemption, flavor fungibility, fair sharing, stop policy and admission checks.
A Cohort pools quota for its member queues; a LocalQueue is the namespaced name users put on their Jobs.
The three are read together by the scheduler and checked against each other (a Cohort's parent, a
LocalQueue's ClusterQueue), so they live together, apart from the Workloads that queue in them.

The v1beta1 ``spec.cohort`` is read as an alias of ``spec.cohortName`` so manifests written for older Kueue
releases keep working.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kueue_webhook.api.errors import ErrorType, FieldError, WordedError
from kueue_webhook.api.objects.cel import cel_failure
from kueue_webhook.api.objects.common import (
    Meta,
    NamedByMeta,
    NamespacedByMeta,
    Parsed,
    enum_value,
    finish,
    list_field,
    name_reference,
    optional_object,
    parse_meta,
    parse_spec,
    parse_timestamp,
)
from kueue_webhook.api.objects.quotas import (
    ResourceGroup,
    flavor_names,
    parse_fair_sharing_weight,
    parse_resource_groups,
)
from kueue_webhook.api.quantity import Quantity, QuantityError, parse_quantity
from kueue_webhook.api.selectors import LabelSelector, label_selector

__all__ = [
    "ClusterQueue",
    "Cohort",
    "FlavorFungibility",
    "LocalQueue",
    "Preemption",
    "parse_cluster_queue",
    "parse_cohort",
    "parse_local_queue",
]

QUEUEING_STRATEGIES = ("StrictFIFO", "BestEffortFIFO")
STOP_POLICIES = ("None", "Hold", "HoldAndDrain")
FUNGIBILITY_POLICIES = ("MayStopSearch", "TryNextFlavor")
FUNGIBILITY_PREFERENCES = ("BorrowingOverPreemption", "PreemptionOverBorrowing")
WITHIN_CQ_POLICIES = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
RECLAIM_POLICIES = ("Never", "LowerPriority", "Any")
BORROW_WITHIN_COHORT_POLICIES = ("Never", "LowerPriority")
USAGE_BASED_ADMISSION = "UsageBasedAdmissionFairSharing"
ADMISSION_MODES = (USAGE_BASED_ADMISSION, "NoAdmissionFairSharing")


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    """v1beta2 flavorFungibility; both default to ``MayStopSearch`` / ``TryNextFlavor`` as the CRD does."""

    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"
    #: ``BorrowingOverPreemption`` (Kueue's behaviour when unset) or ``PreemptionOverBorrowing``
    preference: str = "BorrowingOverPreemption"


@dataclass(frozen=True, slots=True)
class Preemption:
    """``spec.preemption``; ``kueue_webhook.core.preemption`` acts on it (all ``Never`` by default)."""

    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: str = "Never"
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class ClusterQueue(NamedByMeta):
    meta: Meta
    resource_groups: tuple[ResourceGroup, ...] = ()
    cohort_name: str = ""
    #: ``None`` (field absent) admits no namespace; an empty selector admits every namespace
    namespace_selector: LabelSelector | None = None
    queueing_strategy: str = "BestEffortFIFO"
    flavor_fungibility: FlavorFungibility = field(default_factory=FlavorFungibility)
    preemption: Preemption = field(default_factory=Preemption)
    stop_policy: str = "None"
    admission_checks: tuple[str, ...] = ()
    #: the checks of ``admissionChecksStrategy`` whose ``onFlavors`` leaves out some of the queue's flavors
    per_flavor_checks: tuple[str, ...] = ()
    fair_sharing_weight: Quantity | None = None
    #: ``spec.admissionScope.admissionMode``: UsageBasedAdmissionFairSharing orders its Workloads by their
    #: LocalQueues' past usage (with the configuration's ``admissionFairSharing``); "" when absent
    admission_mode: str = ""

    @property
    def usage_based_admission(self) -> bool:
        return self.admission_mode == USAGE_BASED_ADMISSION

    def flavor_names(self) -> tuple[str, ...]:
        """Every flavor referenced, in spec order, without repeats."""
        return flavor_names(self.resource_groups)


def _preemption(raw: Any, errors: list[FieldError]) -> Preemption:
    path = "spec.preemption"
    raw = optional_object(raw, path, errors)
    if raw is None:
        return Preemption()
    within = enum_value(
        raw.get("withinClusterQueue"), f"{path}.withinClusterQueue", WITHIN_CQ_POLICIES, "Never", errors
    )
    reclaim = enum_value(
        raw.get("reclaimWithinCohort"), f"{path}.reclaimWithinCohort", RECLAIM_POLICIES, "Never", errors
    )
    borrow_raw = raw.get("borrowWithinCohort") or {}
    borrow = "Never"
    threshold: int | None = None
    if isinstance(borrow_raw, Mapping):
        borrow = enum_value(
            borrow_raw.get("policy"),
            f"{path}.borrowWithinCohort.policy",
            BORROW_WITHIN_COHORT_POLICIES,
            "Never",
            errors,
        )
        value = borrow_raw.get("maxPriorityThreshold")
        threshold = value if isinstance(value, int) else None
    if reclaim == "Never" and borrow != "Never":
        errors.append(
            FieldError.invalid(
                path, "object", "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"
            )
        )
    return Preemption(within, reclaim, borrow, threshold)


def _fungibility(raw: Any, errors: list[FieldError]) -> FlavorFungibility:
    if not isinstance(raw, Mapping):
        return FlavorFungibility()
    path = "spec.flavorFungibility"
    borrow = enum_value(
        raw.get("whenCanBorrow"), f"{path}.whenCanBorrow", FUNGIBILITY_POLICIES, "MayStopSearch", errors
    )
    preempt = enum_value(
        raw.get("whenCanPreempt"), f"{path}.whenCanPreempt", FUNGIBILITY_POLICIES, "TryNextFlavor", errors
    )
    preference = enum_value(
        raw.get("preference"),
        f"{path}.preference",
        FUNGIBILITY_PREFERENCES,
        "BorrowingOverPreemption",
        errors,
    )
    chosen = raw.get("preference")
    if chosen is not None and (borrow, preempt) != ("TryNextFlavor", "TryNextFlavor"):
        # Kueue's CRD rule on flavorFungibility (kube-apiserver answers with it first) and its ClusterQueue
        # webhook's own check: a preference only matters when both policies go on to the next flavor
        errors.append(
            cel_failure(
                path,
                "object",
                "preference can only be set when both whenCanBorrow and whenCanPreempt are TryNextFlavor",
            )
        )
        errors.append(
            FieldError.invalid(
                f"{path}.preference",
                chosen,
                f'preference "{chosen}" requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor',
            )
        )
    return FlavorFungibility(borrow, preempt, preference)


def _admission_checks_strategy(
    raw: Any, groups: tuple[ResourceGroup, ...], errors: list[FieldError], per_flavor: list[str]
) -> list[str]:
    """``spec.admissionChecksStrategy``: the CRD makes ``admissionChecks`` a list keyed by name and each
    ``onFlavors`` a set; Kueue's webhook wants every ``onFlavors`` entry to be one of the queue's flavors
    (a check bound to a flavor the queue never assigns would silently never run)."""
    path = "spec.admissionChecksStrategy"
    raw = optional_object(raw, path, errors)
    if raw is None:
        return []
    if "admissionChecks" not in raw:
        errors.append(FieldError.required(f"{path}.admissionChecks"))
    flavors = flavor_names(groups)
    names: list[str] = []
    for index, entry in enumerate(list_field(raw.get("admissionChecks"), f"{path}.admissionChecks", errors)):
        epath = f"{path}.admissionChecks[{index}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str) or not entry["name"]:
            errors.append(FieldError.required(f"{epath}.name"))
            continue
        name = entry["name"]
        if len(name) > 316:
            errors.append(FieldError.too_long(f"{epath}.name", 316))
        if name in names:
            errors.append(
                WordedError(epath, ErrorType.DUPLICATE, body=f'Duplicate value: {{"name":"{name}"}}')
            )
            continue
        names.append(name)
        seen: set[str] = set()
        for fi, flavor in enumerate(list_field(entry.get("onFlavors"), f"{epath}.onFlavors", errors)):
            fpath = f"{epath}.onFlavors[{fi}]"
            if flavor in seen:
                errors.append(FieldError.duplicate(fpath, flavor))
            elif flavor not in flavors:
                errors.append(FieldError.not_supported(fpath, flavor, flavors))
            seen.add(str(flavor))
        if seen and seen != set(flavors):  # Kueue: a check on every flavor is not a per-flavor check
            per_flavor.append(name)
    return names


def _list_length(value: Any) -> int:
    """How many items a list field holds; a field that is not a list is reported where it is parsed."""
    return len(value) if isinstance(value, list) else 0


def _resource_group_size_errors(raw: Any, path: str) -> list[FieldError]:
    """Kueue's ClusterQueue webhook bounds the whole quota table, not only each list: at most 256 covered
    resources over all groups and 512 flavor-resource quotas in one group (each is a scheduler cell)."""
    raw_groups = raw if isinstance(raw, list) else []
    groups = [g for g in raw_groups if isinstance(g, Mapping)]
    errors: list[FieldError] = []
    covered = sum(_list_length(g.get("coveredResources")) for g in groups)
    if covered > 256:
        errors.append(
            FieldError.invalid(
                path,
                covered,
                f"total number of covered resources across all resourceGroups must be ≤ 256, got {covered}",
            )
        )
    for index, group in enumerate(raw_groups):
        if not isinstance(group, Mapping) or not isinstance(group.get("flavors"), list):
            continue
        cells = sum(_list_length(f.get("resources")) for f in group["flavors"] if isinstance(f, Mapping))
        if cells > 512:
            errors.append(
                FieldError.invalid(
                    f"{path}[{index}]",
                    cells,
                    f"number of flavor-resource combinations in a resourceGroup must be ≤ 512, got {cells}",
                )
            )
    return errors


def _sets_borrowing_limit(raw_groups: Any) -> bool:
    """Whether any quota of these resource groups sets a ``borrowingLimit``."""
    return any(
        isinstance(quota, Mapping) and quota.get("borrowingLimit") is not None
        for group in (raw_groups if isinstance(raw_groups, list) else [])
        if isinstance(group, Mapping) and isinstance(group.get("flavors"), list)
        for flavor in group["flavors"]
        if isinstance(flavor, Mapping) and isinstance(flavor.get("resources"), list)
        for quota in flavor["resources"]
    )


def parse_cluster_queue(obj: Mapping[str, Any]) -> Parsed[ClusterQueue]:
    errors: list[FieldError] = []
    meta = parse_meta(obj, errors, namespaced=False)
    spec = parse_spec(obj, errors)
    cohort_raw = spec.get("cohortName") or spec.get("cohort")  # v1beta1 spelled it ``cohort``
    cohort_path = "spec.cohortName" if spec.get("cohortName") else "spec.cohort"
    cohort = name_reference(cohort_raw, cohort_path, errors)
    if (
        "cohortName" not in spec
        and "cohort" not in spec
        and _sets_borrowing_limit(spec.get("resourceGroups"))
    ):
        # Kueue's CRD rule on spec, answered before its webhook's per-quota "must be nil" below
        errors.append(cel_failure("spec", "object", "borrowingLimit must be nil when cohort is empty"))
    groups = parse_resource_groups(
        spec.get("resourceGroups"), "spec.resourceGroups", errors, has_parent=bool(cohort), is_cohort=False
    )
    errors.extend(_resource_group_size_errors(spec.get("resourceGroups"), "spec.resourceGroups"))
    selector: LabelSelector | None = None
    if spec.get("namespaceSelector") is not None:
        # Kueue's ClusterQueue webhook: ValidateLabelSelector on spec.namespaceSelector
        parsed_selector = label_selector(spec["namespaceSelector"], "spec.namespaceSelector")
        if isinstance(parsed_selector, list):
            errors.extend(parsed_selector)
        else:
            selector = parsed_selector
    strategy = enum_value(
        spec.get("queueingStrategy"), "spec.queueingStrategy", QUEUEING_STRATEGIES, "BestEffortFIFO", errors
    )
    stop = enum_value(spec.get("stopPolicy"), "spec.stopPolicy", STOP_POLICIES, "None", errors)
    checks: list[str] = [
        str(c) for c in list_field(spec.get("admissionChecks"), "spec.admissionChecks", errors)
    ]
    per_flavor: list[str] = []
    checks += _admission_checks_strategy(spec.get("admissionChecksStrategy"), groups, errors, per_flavor)
    queue = ClusterQueue(
        meta=meta,
        resource_groups=groups,
        cohort_name=cohort,
        namespace_selector=selector,
        queueing_strategy=strategy,
        flavor_fungibility=_fungibility(spec.get("flavorFungibility"), errors),
        preemption=_preemption(spec.get("preemption"), errors),
        stop_policy=stop,
        admission_checks=tuple(checks),
        per_flavor_checks=tuple(per_flavor),
        fair_sharing_weight=parse_fair_sharing_weight(spec.get("fairSharing"), "spec.fairSharing", errors),
        admission_mode=_admission_mode(spec.get("admissionScope"), errors),
    )
    return finish(queue, errors)


def _admission_mode(raw: Any, errors: list[FieldError]) -> str:
    scope = optional_object(raw, "spec.admissionScope", errors)
    if scope is None:
        return ""
    path = "spec.admissionScope.admissionMode"
    if scope.get("admissionMode") is None:
        errors.append(FieldError.required(path))
        return ""
    return enum_value(scope.get("admissionMode"), path, ADMISSION_MODES, "", errors)


# -- Cohort -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cohort(NamedByMeta):
    """An explicit cohort: its own quota (shared with its members) and an optional parent cohort."""

    meta: Meta
    parent_name: str = ""
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_sharing_weight: Quantity | None = None


def parse_cohort(obj: Mapping[str, Any]) -> Parsed[Cohort]:
    errors: list[FieldError] = []
    meta = parse_meta(obj, errors, namespaced=False)
    spec = parse_spec(obj, errors)
    parent = name_reference(spec.get("parentName") or spec.get("parent"), "spec.parentName", errors)
    if parent and parent == meta.name:
        errors.append(FieldError.invalid("spec.parentName", parent, "cohort cannot be its own parent"))
    groups = parse_resource_groups(
        spec.get("resourceGroups"), "spec.resourceGroups", errors, has_parent=bool(parent), is_cohort=True
    )
    weight = parse_fair_sharing_weight(spec.get("fairSharing"), "spec.fairSharing", errors)
    return finish(Cohort(meta, parent, groups, weight), errors)


# -- LocalQueue -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LocalQueue(NamespacedByMeta):
    meta: Meta
    cluster_queue: str
    stop_policy: str = "None"
    #: ``spec.fairSharing.weight``: its usage counts for usage / weight in admission fair sharing (None: 1)
    fair_sharing_weight: Quantity | None = None
    #: ``status.fairSharing.admissionFairSharingStatus``: the consumed resources last written (resource,
    #: nano-units) and when, so that a restarted controller goes on from them
    consumed_resources: tuple[tuple[str, int], ...] = ()
    consumed_at: float = 0.0


def parse_local_queue(obj: Mapping[str, Any]) -> Parsed[LocalQueue]:
    errors: list[FieldError] = []
    meta = parse_meta(obj, errors, namespaced=True)
    spec = parse_spec(obj, errors, required=True)
    cluster_queue = name_reference(spec.get("clusterQueue"), "spec.clusterQueue", errors, required=True)
    stop = enum_value(spec.get("stopPolicy"), "spec.stopPolicy", STOP_POLICIES, "None", errors)
    weight = _local_queue_weight(spec.get("fairSharing"))
    consumed, consumed_at = _consumed_resources(obj.get("status"))
    return finish(LocalQueue(meta, cluster_queue, stop, weight, consumed, consumed_at), errors)


def _local_queue_weight(raw: Any) -> Quantity | None:
    """``spec.fairSharing.weight`` as Kueue takes it: any quantity its CRD's pattern admits, negative or
    tiny ones included (Kueue has no LocalQueue webhook; a weight of 0 or less puts the LocalQueue last in
    admission fair sharing)."""
    weight = raw.get("weight") if isinstance(raw, Mapping) else None
    if weight is None:
        return None
    try:
        return parse_quantity(weight)
    except QuantityError:
        return None  # kube-apiserver's pattern keeps such a value out


def _consumed_resources(status: Any) -> tuple[tuple[tuple[str, int], ...], float]:
    """What the status says the LocalQueue consumed (a status is ours to write: what does not parse is
    left out, never an error of the spec)."""
    fair = status.get("fairSharing") if isinstance(status, Mapping) else None
    afs = fair.get("admissionFairSharingStatus") if isinstance(fair, Mapping) else None
    if not isinstance(afs, Mapping):
        return (), 0.0
    consumed: list[tuple[str, int]] = []
    raw = afs.get("consumedResources")
    for resource, amount in raw.items() if isinstance(raw, Mapping) else ():
        try:
            consumed.append((str(resource), parse_quantity(amount).nanos))
        except QuantityError:
            continue
    return tuple(sorted(consumed)), parse_timestamp(afs.get("lastUpdate"))
