"""Typed, validated views of Kueue's objects, parsed from the plain dicts the API returns.

Everything downstream (scheduler core, webhook, controller, simulate) reads these frozen views instead of
poking into nested dicts, so a field name or default lives in exactly one place. Parsing never raises:
each ``parse_*`` returns the typed object or a list of ``FieldError`` naming every problem with its path,
because the same function backs the validating webhook (which must list all causes) and ``simulate``
(which must point at the document at fault). The rules are Kueue's create-time rules (CRD schema enums
and CEL rules plus the webhook's spec checks); update-only rules such as immutability belong to the
webhook, which sees both the old and the new object.

Kueue's CRDs carry CEL rules (``x-kubernetes-validations``) that kube-apiserver evaluates before any
webhook runs; our CRDs carry the same rules, and the rules are restated here in Python with the API server's
wording (``<path>: Invalid value: "object": <message>``, ``no such key: <field> evaluating rule: ...`` when
a rule selects a missing field), because the test API server does not evaluate CEL and ``simulate`` reads
manifests without any API server. Where kube-apiserver skips CEL rules on an object that already failed its
schema (an enum, a required field, a size limit), the ResourceFlavor and priority-class checks do too;
elsewhere every problem is listed at once.

Names and defaults follow ``kueue.x-k8s.io/v1beta2``; the v1beta1 ``spec.cohort`` is read as an alias of
``spec.cohortName`` so manifests written for older Kueue releases keep working.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeAlias, TypeVar

from webhook.api.errors import ErrorType, FieldError, WordedError
from webhook.api.pods import Requests, pod_requests
from webhook.api.quantity import Quantity, QuantityError, parse_quantity
from webhook.api.selectors import LabelSelector, label_selector
from webhook.api.validation import (
    label_value_problems,
    schema_name_errors,
    string_map,
    validate_label_name,
    validate_labels,
)

__all__ = [
    "GROUP",
    "Admission",
    "AdmissionCheck",
    "AdmissionCheckState",
    "ClusterQueue",
    "Cohort",
    "Condition",
    "FlavorFungibility",
    "FlavorQuotas",
    "LocalQueue",
    "Meta",
    "Parsed",
    "PodSet",
    "PodSetAssignment",
    "Preemption",
    "ResourceFlavor",
    "ResourceGroup",
    "ResourceQuota",
    "Taint",
    "Workload",
    "WorkloadPriorityClass",
    "parse_admission_check",
    "parse_cluster_queue",
    "parse_cohort",
    "parse_local_queue",
    "parse_object",
    "parse_resource_flavor",
    "parse_timestamp",
    "parse_workload",
    "parse_workload_priority_class",
    "validate_tolerations",
]

GROUP = "kueue.x-k8s.io"
API_VERSION = f"{GROUP}/v1beta2"

T = TypeVar("T")
#: a parse result: the typed view, or every error found
Parsed: TypeAlias = T | list[FieldError]


QUEUEING_STRATEGIES = ("StrictFIFO", "BestEffortFIFO")
STOP_POLICIES = ("None", "Hold", "HoldAndDrain")
FUNGIBILITY_POLICIES = ("MayStopSearch", "TryNextFlavor")
FUNGIBILITY_PREFERENCES = ("BorrowingOverPreemption", "PreemptionOverBorrowing")
WITHIN_CQ_POLICIES = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
RECLAIM_POLICIES = ("Never", "LowerPriority", "Any")
BORROW_WITHIN_COHORT_POLICIES = ("Never", "LowerPriority")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def parse_timestamp(raw: Any) -> float:
    """RFC 3339 ``metav1.Time`` -> seconds since the epoch (0.0 when absent or malformed)."""
    if not isinstance(raw, str) or not raw:
        return 0.0
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).astimezone(UTC).timestamp()
    except ValueError:
        return 0.0


# -- metadata ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Meta:
    """The parts of ``ObjectMeta`` the scheduler and controller need."""

    name: str
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    #: ``creation_timestamp`` already in seconds, when whoever built this view knows it (simulate)
    created_at: float | None = None
    #: set once a DELETE was accepted while finalizers hold the object
    deletion_timestamp: str = ""

    @property
    def created(self) -> float:
        if self.created_at is not None:
            return self.created_at
        return parse_timestamp(self.creation_timestamp)


class _NamedByMeta:
    """``name`` read from ``self.meta``, for the views below (which keep their own ``__slots__``)."""

    __slots__ = ()
    meta: Meta

    @property
    def name(self) -> str:
        return self.meta.name


class _NamespacedByMeta(_NamedByMeta):
    """``name``, ``namespace`` and the ``namespace/name`` key, read from ``self.meta``."""

    __slots__ = ()

    @property
    def namespace(self) -> str:
        return self.meta.namespace

    @property
    def key(self) -> str:
        return f"{self.meta.namespace}/{self.meta.name}"


def _meta(obj: Mapping[str, Any], errors: list[FieldError], *, namespaced: bool) -> Meta:
    raw = obj.get("metadata")
    if not isinstance(raw, Mapping):
        errors.append(FieldError.required("metadata"))
        return Meta(name="")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        if not raw.get("generateName"):
            errors.append(FieldError.required("metadata.name", "name or generateName is required"))
        name = ""
    namespace = raw.get("namespace") or ""
    if namespaced and not namespace:
        errors.append(FieldError.required("metadata.namespace"))
    generation = raw.get("generation")
    return Meta(
        name=name,
        namespace=str(namespace),
        uid=str(raw.get("uid") or ""),
        resource_version=str(raw.get("resourceVersion") or ""),
        generation=generation if isinstance(generation, int) else 0,
        creation_timestamp=str(raw.get("creationTimestamp") or ""),
        labels=string_map(raw.get("labels"), "metadata.labels", errors),
        annotations=string_map(raw.get("annotations"), "metadata.annotations", errors),
        deletion_timestamp=str(raw.get("deletionTimestamp") or ""),
    )


def _spec(obj: Mapping[str, Any], errors: list[FieldError], *, required: bool = False) -> Mapping[str, Any]:
    spec = obj.get("spec")
    if spec is None:
        if required:
            errors.append(FieldError.required("spec"))
        return {}
    if not isinstance(spec, Mapping):
        errors.append(FieldError.invalid("spec", None, "must be an object"))
        return {}
    return spec


def _enum(raw: Any, path: str, allowed: tuple[str, ...], default: str, errors: list[FieldError]) -> str:
    if raw is None or raw == "":
        return default
    if raw not in allowed:
        errors.append(FieldError.not_supported(path, raw, allowed))
        return default
    return str(raw)


def _reference(raw: Any, path: str, errors: list[FieldError], *, required: bool = False) -> str:
    """A reference to another Kueue object by name: the CRD schema's DNS-1123 subdomain of at most 253."""
    if raw is None or raw == "":
        if required:
            errors.append(FieldError.required(path))
        return ""
    if not isinstance(raw, str):
        errors.append(FieldError.invalid(path, str(raw), "must be a string"))
        return ""
    errors.extend(schema_name_errors(raw, path))
    return raw


class _NoSuchKey(Exception):
    """A CEL rule selected a field the object does not have (CEL's ``no such key`` evaluation error)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _field(obj: Mapping[str, Any], key: str) -> Any:
    """CEL field selection on an object: a missing field is an evaluation error, not a null."""
    if key not in obj:
        raise _NoSuchKey(key)
    return obj[key]


def _cel_failure(path: str, node_type: str, message: str, error: _NoSuchKey | None = None) -> FieldError:
    """How kube-apiserver reports a failed ``x-kubernetes-validations`` rule: ``Invalid value: "<type>"``
    and the rule's message, prefixed by the evaluation error when the rule could not be evaluated."""
    body = message if error is None else f"no such key: {error.key} evaluating rule: {message}"
    return FieldError.invalid(path, node_type, body)


def _cel_all(items: list[Mapping[str, Any]], predicate: Any) -> bool | _NoSuchKey:
    """CEL's ``self.all(x, p)``: false as soon as one item is false, else the first evaluation error, else
    true (CEL's logical operators absorb errors when the outcome is already decided)."""
    error: _NoSuchKey | None = None
    for item in items:
        try:
            if not predicate(item):
                return False
        except _NoSuchKey as exc:
            error = error or exc
    return error if error is not None else True


def _cel_check(
    outcome: bool | _NoSuchKey, path: str, node_type: str, message: str, errors: list[FieldError]
) -> None:
    if outcome is True:
        return
    errors.append(
        _cel_failure(path, node_type, message, outcome if isinstance(outcome, _NoSuchKey) else None)
    )


def _resource_name_errors(name: str, path: str) -> list[FieldError]:
    """Resource names (``nvidia.com/gpu``, ``cpu``) are checked as label keys (Kueue's ``IsLabelKey``)."""
    return validate_label_name(name, path)


def _quantity(raw: Any, path: str, errors: list[FieldError]) -> Quantity | None:
    try:
        quantity = parse_quantity(raw)
    except QuantityError as exc:
        errors.append(FieldError.invalid(path, raw if isinstance(raw, str | int) else str(raw), str(exc)))
        return None
    if quantity.nanos < 0:
        errors.append(FieldError.invalid(path, quantity.canonical(), "must be greater than or equal to 0"))
        return None
    return quantity


def _list(raw: Any, path: str, errors: list[FieldError]) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        errors.append(FieldError.invalid(path, None, "must be a list"))
        return []
    return raw


def _finish(value: T, errors: list[FieldError]) -> Parsed[T]:
    return errors if errors else value


# -- ResourceFlavor ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        # corev1.Taint.ToString: key=value:effect (value omitted when empty)
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True, slots=True)
class ResourceFlavor(_NamedByMeta):
    """Cluster-scoped: which nodes a flavor stands for (labels injected, taints to tolerate)."""

    meta: Meta
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Mapping[str, Any], ...] = ()
    topology_name: str = ""


TOLERATION_OPERATORS = ("Equal", "Exists")
#: the most taints, tolerations and node labels a flavor may carry (Kueue's CRD)
FLAVOR_LIST_LIMIT = 8


def _flavor_taints(raw: Any, errors: list[FieldError], rule_errors: list[FieldError]) -> list[Taint]:
    """``spec.nodeTaints``: the CRD's shape (key and effect required, effect enum) and Kueue's webhook checks
    (key a qualified name, value a label value, unique by key and effect)."""
    items = _list(raw, "spec.nodeTaints", errors)
    if len(items) > FLAVOR_LIST_LIMIT:
        errors.append(FieldError.too_many("spec.nodeTaints", len(items), FLAVOR_LIST_LIMIT))
    taints: list[Taint] = []
    seen: set[tuple[str, str]] = set()
    for index, item in enumerate(items):
        path = f"spec.nodeTaints[{index}]"
        if not isinstance(item, Mapping) or not item.get("key"):
            errors.append(FieldError.required(f"{path}.key"))
            continue
        effect = item.get("effect")
        if effect not in TAINT_EFFECTS:
            errors.append(FieldError.not_supported(f"{path}.effect", effect, TAINT_EFFECTS))
            continue
        taint = Taint(str(item["key"]), str(item.get("value") or ""), str(effect))
        rule_errors.extend(validate_label_name(taint.key, f"{path}.key"))
        value_problems = label_value_problems(taint.value)
        if value_problems:
            rule_errors.append(FieldError.invalid(f"{path}.value", taint.value, ";".join(value_problems)))
        if (taint.key, taint.effect) in seen:
            rule_errors.append(
                WordedError(
                    path,
                    ErrorType.DUPLICATE,
                    body=f"Duplicate value: {_go_taint(item)}: taints must be unique by key and effect pair",
                )
            )
            continue
        seen.add((taint.key, taint.effect))
        taints.append(taint)
    return taints


def _go_taint(raw: Mapping[str, Any]) -> str:
    """A taint as Go's ``%#v`` prints a ``corev1.Taint``: the shape of Kueue's duplicate-taint error. (Go
    prints a set ``timeAdded`` as a pointer address, which no one can reproduce; we print the time.)"""
    added = "(*v1.Time)(nil)" if raw.get("timeAdded") is None else f"(*v1.Time)({raw['timeAdded']})"
    key, value, effect = (str(raw.get(k) or "") for k in ("key", "value", "effect"))
    return f'v1.Taint{{Key:"{key}", Value:"{value}", Effect:"{effect}", TimeAdded:{added}}}'


#: Kueue's CRD rules on every toleration list, in its order (CEL's has() is true for a field set to "")
_TOLERATION_RULES: tuple[tuple[str, Any], ...] = (
    (
        "operator must be Exists when 'key' is empty, which means 'match all values and all keys'",
        lambda x: "key" in x or _field(x, "operator") == "Exists",
    ),
    (
        "effect must be 'NoExecute' when 'tolerationSeconds' is set",
        lambda x: "tolerationSeconds" not in x or _field(x, "effect") == "NoExecute",
    ),
    (
        "supported toleration values: 'Equal'(default), 'Exists'",
        lambda x: "operator" not in x or x["operator"] in TOLERATION_OPERATORS,
    ),
    (
        "a value must be empty when 'operator' is 'Exists'",
        lambda x: not (x.get("operator") == "Exists" and "value" in x),
    ),
    (
        "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
        lambda x: "effect" not in x or x["effect"] in TAINT_EFFECTS,
    ),
)


def _toleration_list(
    raw: Any, path: str, errors: list[FieldError], rule_errors: list[FieldError], *, enums: bool
) -> list[Mapping[str, Any]]:
    """A toleration list as Kueue's CRD and webhook check it: at most 8, the five CEL rules on the list,
    and every non-empty key a qualified name.

    Tolerations end up in pod templates, so one a pod would refuse has to be refused where it is written.
    ``enums``: the schema also has enums on ``operator`` and ``effect`` (our ResourceFlavor CRD keeps them, so
    "Unsupported value" names the field at fault); an enum failure stops the CEL rules, so the two rules
    restating the enums can then never be what fails.
    """
    items = _list(raw, path, errors)
    if len(items) > FLAVOR_LIST_LIMIT:
        errors.append(FieldError.too_many(path, len(items), FLAVOR_LIST_LIMIT))
    tolerations: list[Mapping[str, Any]] = []
    for index, item in enumerate(items):
        ipath = f"{path}[{index}]"
        if not isinstance(item, Mapping):
            errors.append(FieldError.invalid(ipath, None, "must be a toleration"))
            continue
        if enums and "operator" in item and item["operator"] not in TOLERATION_OPERATORS:
            errors.append(
                FieldError.not_supported(f"{ipath}.operator", item["operator"], TOLERATION_OPERATORS)
            )
        if enums and "effect" in item and item["effect"] not in TAINT_EFFECTS:
            errors.append(FieldError.not_supported(f"{ipath}.effect", item["effect"], TAINT_EFFECTS))
        key = item.get("key")
        if isinstance(key, str) and key:
            rule_errors.extend(validate_label_name(key, f"{ipath}.key"))
        tolerations.append(dict(item))
    for message, predicate in _TOLERATION_RULES:
        _cel_check(_cel_all(tolerations, predicate), path, "array", message, rule_errors)
    return tolerations


def validate_tolerations(raw: Any, path: str) -> list[FieldError]:
    """A toleration list with no enums in its schema (a Workload's ``podSetUpdates``): the schema's errors
    if any, else the CEL rules' and the webhook's, as kube-apiserver then Kueue's webhook would answer."""
    errors: list[FieldError] = []
    rule_errors: list[FieldError] = []
    _toleration_list(raw, path, errors, rule_errors, enums=False)
    return errors or rule_errors


def parse_resource_flavor(obj: Mapping[str, Any]) -> Parsed[ResourceFlavor]:
    """Kueue's ResourceFlavor rules: the CRD's schema first; its CEL rules and Kueue's webhook checks only
    when the schema holds, because kube-apiserver skips CEL rules on an object that already failed an enum,
    a required field or a size limit (and never calls the webhook)."""
    errors: list[FieldError] = []
    rule_errors: list[FieldError] = []
    meta = _meta(obj, errors, namespaced=False)
    spec = _spec(obj, errors)
    labels = string_map(spec.get("nodeLabels"), "spec.nodeLabels", errors)
    if len(labels) > FLAVOR_LIST_LIMIT:
        errors.append(FieldError.too_many("spec.nodeLabels", len(labels), FLAVOR_LIST_LIMIT))
    if "topologyName" in spec:
        # Kueue's CRD rule on spec: a topology needs node labels to find its nodes
        try:
            has_labels = len(_field(spec, "nodeLabels") or {}) >= 1
            outcome: bool | _NoSuchKey = has_labels
        except _NoSuchKey as exc:
            outcome = exc
        _cel_check(
            outcome, "spec", "object", "at least one nodeLabel is required when topology is set", rule_errors
        )
    taints = _flavor_taints(spec.get("nodeTaints"), errors, rule_errors)
    tolerations = _toleration_list(
        spec.get("tolerations"), "spec.tolerations", errors, rule_errors, enums=True
    )
    rule_errors.extend(validate_labels(labels, "spec.nodeLabels"))
    topology = _reference(spec.get("topologyName"), "spec.topologyName", errors)
    if not errors:
        errors = rule_errors
    flavor = ResourceFlavor(meta, labels, tuple(taints), tuple(tolerations), topology)
    return _finish(flavor, errors)


# -- resource groups (ClusterQueue and Cohort) ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    """One resource's quota in one flavor; ``None`` limits mean "no limit" (borrow all, lend all)."""

    name: str
    nominal: Quantity
    borrowing_limit: Quantity | None = None
    lending_limit: Quantity | None = None


@dataclass(frozen=True, slots=True)
class FlavorQuotas:
    name: str
    resources: tuple[ResourceQuota, ...]


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    """Resources that must all come from the same flavor, and the flavors to try in order."""

    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


def _resource_groups(
    raw: Any, path: str, errors: list[FieldError], *, has_parent: bool, is_cohort: bool
) -> tuple[ResourceGroup, ...]:
    parent_word = "parent" if is_cohort else "cohort"
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    groups: list[ResourceGroup] = []
    raw_groups = _list(raw, path, errors)
    if len(raw_groups) > 16:
        errors.append(FieldError.invalid(path, len(raw_groups), "must have at most 16 items"))
    total_flavors = 0
    for gi, raw_group in enumerate(raw_groups):
        gpath = f"{path}[{gi}]"
        if not isinstance(raw_group, Mapping):
            errors.append(FieldError.invalid(gpath, None, "must be an object"))
            continue
        covered: list[str] = []
        for ri, name in enumerate(
            _list(raw_group.get("coveredResources"), f"{gpath}.coveredResources", errors)
        ):
            rpath = f"{gpath}.coveredResources[{ri}]"
            name = str(name)
            errors.extend(_resource_name_errors(name, rpath))
            if name in seen_resources:
                errors.append(FieldError.duplicate(rpath, name))
            seen_resources.add(name)
            covered.append(name)
        if not covered:
            errors.append(FieldError.required(f"{gpath}.coveredResources"))
        flavors: list[FlavorQuotas] = []
        raw_flavors = _list(raw_group.get("flavors"), f"{gpath}.flavors", errors)
        if not raw_flavors:
            errors.append(FieldError.required(f"{gpath}.flavors"))
        total_flavors += len(raw_flavors)
        for fi, raw_flavor in enumerate(raw_flavors):
            fpath = f"{gpath}.flavors[{fi}]"
            if not isinstance(raw_flavor, Mapping):
                errors.append(FieldError.invalid(fpath, None, "must be an object"))
                continue
            fname = _reference(raw_flavor.get("name"), f"{fpath}.name", errors, required=True)
            if fname in seen_flavors:
                errors.append(FieldError.duplicate(f"{fpath}.name", fname))
            seen_flavors.add(fname)
            raw_resources = _list(raw_flavor.get("resources"), f"{fpath}.resources", errors)
            if len(raw_resources) != len(covered):
                errors.append(
                    FieldError.invalid(
                        gpath,
                        "object",
                        "flavors must have the same number of resources as the coveredResources",
                    )
                )
            quotas: list[ResourceQuota] = []
            for qi, raw_quota in enumerate(raw_resources):
                qpath = f"{fpath}.resources[{qi}]"
                if not isinstance(raw_quota, Mapping):
                    errors.append(FieldError.invalid(qpath, None, "must be an object"))
                    continue
                rname = str(raw_quota.get("name") or "")
                if qi < len(covered) and rname != covered[qi]:
                    errors.append(
                        FieldError.invalid(f"{qpath}.name", rname, "must match the name in coveredResources")
                    )
                if "nominalQuota" not in raw_quota:
                    errors.append(FieldError.required(f"{qpath}.nominalQuota"))
                    continue
                nominal = _quantity(raw_quota["nominalQuota"], f"{qpath}.nominalQuota", errors)
                borrowing = lending = None
                if raw_quota.get("borrowingLimit") is not None:
                    bpath = f"{qpath}.borrowingLimit"
                    borrowing = _quantity(raw_quota["borrowingLimit"], bpath, errors)
                    if not has_parent and borrowing is not None:
                        errors.append(
                            FieldError.invalid(
                                bpath, borrowing.canonical(), f"must be nil when {parent_word} is empty"
                            )
                        )
                if raw_quota.get("lendingLimit") is not None:
                    lpath = f"{qpath}.lendingLimit"
                    lending = _quantity(raw_quota["lendingLimit"], lpath, errors)
                    if lending is not None and not has_parent:
                        errors.append(
                            FieldError.invalid(
                                lpath, lending.canonical(), f"must be nil when {parent_word} is empty"
                            )
                        )
                    if lending is not None and nominal is not None and not is_cohort and lending > nominal:
                        errors.append(
                            FieldError.invalid(
                                lpath, lending.canonical(), "must be less than or equal to the nominalQuota"
                            )
                        )
                if nominal is not None:
                    quotas.append(ResourceQuota(rname, nominal, borrowing, lending))
            flavors.append(FlavorQuotas(fname, tuple(quotas)))
        groups.append(ResourceGroup(tuple(covered), tuple(flavors)))
    if total_flavors > 256:
        errors.append(
            FieldError.invalid(
                path,
                total_flavors,
                f"total number of flavors across all resourceGroups must be ≤ 256, got {total_flavors}",
            )
        )
    if not is_cohort:
        errors.extend(_resource_group_size_errors(raw_groups, path))
    return tuple(groups)


def _resource_group_size_errors(raw_groups: list[Any], path: str) -> list[FieldError]:
    """Kueue's ClusterQueue webhook bounds the whole quota table, not only each list: at most 256 covered
    resources over all groups and 512 flavor-resource quotas in one group (each is a scheduler cell)."""
    groups = [g for g in raw_groups if isinstance(g, Mapping)]
    errors: list[FieldError] = []
    covered = sum(len(g.get("coveredResources") or ()) for g in groups)
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
        cells = sum(len(f.get("resources") or ()) for f in group["flavors"] if isinstance(f, Mapping))
        if cells > 512:
            errors.append(
                FieldError.invalid(
                    f"{path}[{index}]",
                    cells,
                    f"number of flavor-resource combinations in a resourceGroup must be ≤ 512, got {cells}",
                )
            )
    return errors


def _fair_sharing_weight(raw: Any, path: str, errors: list[FieldError]) -> Quantity | None:
    if not isinstance(raw, Mapping) or raw.get("weight") is None:
        return None
    weight = _quantity(raw["weight"], f"{path}.weight", errors)
    if weight is not None and 0 < weight.nanos <= 1:
        errors.append(FieldError.invalid(path, weight.canonical(), "When not 0, weight must be > 10e-9"))
    return weight


# -- ClusterQueue -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    """v1beta2 flavorFungibility; both default to ``MayStopSearch`` / ``TryNextFlavor`` as the CRD does."""

    when_can_borrow: str = "MayStopSearch"
    when_can_preempt: str = "TryNextFlavor"
    #: ``BorrowingOverPreemption`` (Kueue's behaviour when unset) or ``PreemptionOverBorrowing``
    preference: str = "BorrowingOverPreemption"


@dataclass(frozen=True, slots=True)
class Preemption:
    """``spec.preemption``; ``webhook.core.preemption`` acts on it (all ``Never`` by default)."""

    within_cluster_queue: str = "Never"
    reclaim_within_cohort: str = "Never"
    borrow_within_cohort: str = "Never"
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class ClusterQueue(_NamedByMeta):
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
    fair_sharing_weight: Quantity | None = None

    def flavor_names(self) -> tuple[str, ...]:
        """Every flavor referenced, in spec order, without repeats."""
        names: dict[str, None] = {}
        for group in self.resource_groups:
            for flavor in group.flavors:
                names.setdefault(flavor.name, None)
        return tuple(names)


def _preemption(raw: Any, errors: list[FieldError]) -> Preemption:
    if raw is None:
        return Preemption()
    if not isinstance(raw, Mapping):
        errors.append(FieldError.invalid("spec.preemption", None, "must be an object"))
        return Preemption()
    path = "spec.preemption"
    within = _enum(
        raw.get("withinClusterQueue"), f"{path}.withinClusterQueue", WITHIN_CQ_POLICIES, "Never", errors
    )
    reclaim = _enum(
        raw.get("reclaimWithinCohort"), f"{path}.reclaimWithinCohort", RECLAIM_POLICIES, "Never", errors
    )
    borrow_raw = raw.get("borrowWithinCohort") or {}
    borrow = "Never"
    threshold: int | None = None
    if isinstance(borrow_raw, Mapping):
        borrow = _enum(
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
    borrow = _enum(
        raw.get("whenCanBorrow"), f"{path}.whenCanBorrow", FUNGIBILITY_POLICIES, "MayStopSearch", errors
    )
    preempt = _enum(
        raw.get("whenCanPreempt"), f"{path}.whenCanPreempt", FUNGIBILITY_POLICIES, "TryNextFlavor", errors
    )
    preference = _enum(
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
            _cel_failure(
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
    raw: Any, groups: tuple[ResourceGroup, ...], errors: list[FieldError]
) -> list[str]:
    """``spec.admissionChecksStrategy``: the CRD makes ``admissionChecks`` a list keyed by name and each
    ``onFlavors`` a set; Kueue's webhook wants every ``onFlavors`` entry to be one of the queue's flavors
    (a check bound to a flavor the queue never assigns would silently never run)."""
    if raw is None:
        return []
    path = "spec.admissionChecksStrategy"
    if not isinstance(raw, Mapping):
        errors.append(FieldError.invalid(path, None, "must be an object"))
        return []
    if "admissionChecks" not in raw:
        errors.append(FieldError.required(f"{path}.admissionChecks"))
    flavors = tuple(dict.fromkeys(f.name for g in groups for f in g.flavors))
    names: list[str] = []
    for index, entry in enumerate(_list(raw.get("admissionChecks"), f"{path}.admissionChecks", errors)):
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
        for fi, flavor in enumerate(_list(entry.get("onFlavors"), f"{epath}.onFlavors", errors)):
            fpath = f"{epath}.onFlavors[{fi}]"
            if flavor in seen:
                errors.append(FieldError.duplicate(fpath, flavor))
            elif flavor not in flavors:
                errors.append(FieldError.not_supported(fpath, flavor, flavors))
            seen.add(str(flavor))
    return names


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
    meta = _meta(obj, errors, namespaced=False)
    spec = _spec(obj, errors)
    cohort_raw = spec.get("cohortName") or spec.get("cohort")  # v1beta1 spelled it ``cohort``
    cohort_path = "spec.cohortName" if spec.get("cohortName") else "spec.cohort"
    cohort = _reference(cohort_raw, cohort_path, errors)
    if (
        "cohortName" not in spec
        and "cohort" not in spec
        and _sets_borrowing_limit(spec.get("resourceGroups"))
    ):
        # Kueue's CRD rule on spec, answered before its webhook's per-quota "must be nil" below
        errors.append(_cel_failure("spec", "object", "borrowingLimit must be nil when cohort is empty"))
    groups = _resource_groups(
        spec.get("resourceGroups"), "spec.resourceGroups", errors, has_parent=bool(cohort), is_cohort=False
    )
    selector: LabelSelector | None = None
    if spec.get("namespaceSelector") is not None:
        # Kueue's ClusterQueue webhook: ValidateLabelSelector on spec.namespaceSelector
        parsed_selector = label_selector(spec["namespaceSelector"], "spec.namespaceSelector")
        if isinstance(parsed_selector, list):
            errors.extend(parsed_selector)
        else:
            selector = parsed_selector
    strategy = _enum(
        spec.get("queueingStrategy"), "spec.queueingStrategy", QUEUEING_STRATEGIES, "BestEffortFIFO", errors
    )
    stop = _enum(spec.get("stopPolicy"), "spec.stopPolicy", STOP_POLICIES, "None", errors)
    checks: list[str] = [str(c) for c in _list(spec.get("admissionChecks"), "spec.admissionChecks", errors)]
    checks += _admission_checks_strategy(spec.get("admissionChecksStrategy"), groups, errors)
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
        fair_sharing_weight=_fair_sharing_weight(spec.get("fairSharing"), "spec.fairSharing", errors),
    )
    return _finish(queue, errors)


# -- Cohort -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cohort(_NamedByMeta):
    """An explicit cohort: its own quota (shared with its members) and an optional parent cohort."""

    meta: Meta
    parent_name: str = ""
    resource_groups: tuple[ResourceGroup, ...] = ()
    fair_sharing_weight: Quantity | None = None


def parse_cohort(obj: Mapping[str, Any]) -> Parsed[Cohort]:
    errors: list[FieldError] = []
    meta = _meta(obj, errors, namespaced=False)
    spec = _spec(obj, errors)
    parent = _reference(spec.get("parentName") or spec.get("parent"), "spec.parentName", errors)
    if parent and parent == meta.name:
        errors.append(FieldError.invalid("spec.parentName", parent, "cohort cannot be its own parent"))
    groups = _resource_groups(
        spec.get("resourceGroups"), "spec.resourceGroups", errors, has_parent=bool(parent), is_cohort=True
    )
    weight = _fair_sharing_weight(spec.get("fairSharing"), "spec.fairSharing", errors)
    return _finish(Cohort(meta, parent, groups, weight), errors)


# -- LocalQueue -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LocalQueue(_NamespacedByMeta):
    meta: Meta
    cluster_queue: str
    stop_policy: str = "None"


def parse_local_queue(obj: Mapping[str, Any]) -> Parsed[LocalQueue]:
    errors: list[FieldError] = []
    meta = _meta(obj, errors, namespaced=True)
    spec = _spec(obj, errors, required=True)
    cluster_queue = _reference(spec.get("clusterQueue"), "spec.clusterQueue", errors, required=True)
    stop = _enum(spec.get("stopPolicy"), "spec.stopPolicy", STOP_POLICIES, "None", errors)
    return _finish(LocalQueue(meta, cluster_queue, stop), errors)


# -- WorkloadPriorityClass --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkloadPriorityClass(_NamedByMeta):
    meta: Meta
    value: int
    description: str = ""


_INT32 = (-(2**31), 2**31 - 1)


def parse_workload_priority_class(obj: Mapping[str, Any]) -> Parsed[WorkloadPriorityClass]:
    errors: list[FieldError] = []
    meta = _meta(obj, errors, namespaced=False)
    value = obj.get("value")
    if value is None:
        errors.append(FieldError.required("value"))
        value = 0
    elif not isinstance(value, int) or isinstance(value, bool) or not _INT32[0] <= value <= _INT32[1]:
        errors.append(FieldError.invalid("value", value, "must be a 32-bit integer"))
        value = 0
    description = str(obj.get("description") or "")
    if len(description) > 2048:  # Kueue's CRD: maxLength
        errors.append(FieldError.too_long("description", 2048))
    return _finish(WorkloadPriorityClass(meta, value, description), errors)


# -- Workload ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""
    observed_generation: int | None = None

    @property
    def is_true(self) -> bool:
        return self.status == "True"


@dataclass(frozen=True, slots=True)
class PodSet:
    """A group of identical pods; ``requests`` is per pod, in nano-units, rounded as Kueue does."""

    name: str
    count: int
    requests: Requests
    template: Mapping[str, Any] = field(default_factory=dict)
    min_count: int | None = None

    def total(self, count: int | None = None) -> Requests:
        n = self.count if count is None else count
        return {name: amount * n for name, amount in self.requests.items()}


@dataclass(frozen=True, slots=True)
class PodSetAssignment:
    """``status.admission.podSetAssignments[]``: the flavor of each resource and what it charges."""

    name: str
    flavors: Mapping[str, str]
    resource_usage: Mapping[str, Quantity]
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "flavors": dict(sorted(self.flavors.items())),
            "resourceUsage": {r: q.canonical() for r, q in sorted(self.resource_usage.items())},
            "count": self.count,
        }


@dataclass(frozen=True, slots=True)
class Admission:
    """``status.admission``: the ClusterQueue that reserved quota and the per-pod-set assignments."""

    cluster_queue: str
    pod_set_assignments: tuple[PodSetAssignment, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "clusterQueue": self.cluster_queue,
            "podSetAssignments": [a.to_dict() for a in self.pod_set_assignments],
        }


CHECK_STATES = ("Pending", "Ready", "Retry", "Rejected")


@dataclass(frozen=True, slots=True)
class AdmissionCheckState:
    """One entry of ``status.admissionChecks``."""

    name: str
    state: str = "Pending"
    message: str = ""
    last_transition_time: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "state": self.state, "message": self.message}
        if self.last_transition_time:
            out["lastTransitionTime"] = self.last_transition_time
        return out


def _check_states(raw: Any, errors: list[FieldError]) -> tuple[AdmissionCheckState, ...]:
    out: list[AdmissionCheckState] = []
    for index, entry in enumerate(_list(raw, "status.admissionChecks", errors)):
        path = f"status.admissionChecks[{index}]"
        if not isinstance(entry, Mapping) or not entry.get("name"):
            errors.append(FieldError.required(f"{path}.name"))
            continue
        state = _enum(entry.get("state"), f"{path}.state", CHECK_STATES, "Pending", errors)
        out.append(
            AdmissionCheckState(
                str(entry["name"]),
                state,
                str(entry.get("message") or ""),
                str(entry.get("lastTransitionTime") or ""),
            )
        )
    return tuple(out)


@dataclass(frozen=True, slots=True)
class AdmissionCheck(_NamedByMeta):
    """Cluster-scoped ``AdmissionCheck``: which controller decides the check (``spec.controllerName``)."""

    meta: Meta
    controller_name: str
    parameters: Mapping[str, Any] = field(default_factory=dict)


def parse_admission_check(obj: Mapping[str, Any]) -> Parsed[AdmissionCheck]:
    errors: list[FieldError] = []
    meta = _meta(obj, errors, namespaced=False)
    spec = _spec(obj, errors, required=True)
    controller = spec.get("controllerName")
    if not isinstance(controller, str) or not controller:
        errors.append(FieldError.required("spec.controllerName"))
        controller = ""
    parameters = spec.get("parameters") or {}
    if not isinstance(parameters, Mapping):
        errors.append(FieldError.invalid("spec.parameters", None, "must be an object"))
        parameters = {}
    return _finish(AdmissionCheck(meta, controller, dict(parameters)), errors)


@dataclass(frozen=True, slots=True)
class Workload(_NamespacedByMeta):
    meta: Meta
    pod_sets: tuple[PodSet, ...]
    queue_name: str = ""
    priority: int | None = None
    priority_class_name: str = ""
    #: ``kueue.x-k8s.io`` (WorkloadPriorityClass) or ``scheduling.k8s.io`` (PriorityClass), or ""
    priority_class_group: str = ""
    active: bool = True
    conditions: tuple[Condition, ...] = ()
    admission: Admission | None = None
    #: ``status.admissionChecks``: the state each admission check of its ClusterQueue reported
    admission_checks: tuple[AdmissionCheckState, ...] = ()

    def condition(self, kind: str) -> Condition | None:
        for cond in self.conditions:
            if cond.type == kind:
                return cond
        return None

    def _is(self, kind: str) -> bool:
        cond = self.condition(kind)
        return cond is not None and cond.is_true

    @property
    def has_quota_reservation(self) -> bool:
        """Quota is held when QuotaReserved is True and an admission is recorded (Kueue's rule)."""
        return self.admission is not None and self._is("QuotaReserved")

    @property
    def is_admitted(self) -> bool:
        return self._is("Admitted")

    @property
    def is_finished(self) -> bool:
        return self._is("Finished")

    @property
    def is_evicted(self) -> bool:
        return self._is("Evicted")

    @property
    def is_deleting(self) -> bool:
        """Deleted, but held by a finalizer (Kueue's resource-in-use) until its quota is let go."""
        return bool(self.meta.deletion_timestamp)

    def total_requests(self) -> Requests:
        total: Requests = {}
        for pod_set in self.pod_sets:
            for name, amount in pod_set.requests.items():
                total[name] = total.get(name, 0) + amount * pod_set.count
        return total


def _int(raw: Any, path: str, errors: list[FieldError], *, minimum: int | None = None) -> int | None:
    if raw is None:
        return None
    if not isinstance(raw, int) or isinstance(raw, bool) or not _INT32[0] <= raw <= _INT32[1]:
        errors.append(
            FieldError.invalid(path, raw if isinstance(raw, int | str) else None, "must be a 32-bit integer")
        )
        return None
    if minimum is not None and raw < minimum:
        errors.append(FieldError.invalid(path, raw, f"must be greater than or equal to {minimum}"))
        return None
    return raw


def _conditions(raw: Any, errors: list[FieldError]) -> tuple[Condition, ...]:
    out: list[Condition] = []
    for index, cond in enumerate(_list(raw, "status.conditions", errors)):
        if not isinstance(cond, Mapping) or not cond.get("type"):
            errors.append(FieldError.required(f"status.conditions[{index}].type"))
            continue
        generation = cond.get("observedGeneration")
        out.append(
            Condition(
                type=str(cond["type"]),
                status=str(cond.get("status") or "Unknown"),
                reason=str(cond.get("reason") or ""),
                message=str(cond.get("message") or ""),
                last_transition_time=str(cond.get("lastTransitionTime") or ""),
                observed_generation=generation if isinstance(generation, int) else None,
            )
        )
    return tuple(out)


def _admission(raw: Any, errors: list[FieldError]) -> Admission | None:
    if raw is None:
        return None
    path = "status.admission"
    if not isinstance(raw, Mapping):
        errors.append(FieldError.invalid(path, None, "must be an object"))
        return None
    cluster_queue = _reference(raw.get("clusterQueue"), f"{path}.clusterQueue", errors, required=True)
    assignments: list[PodSetAssignment] = []
    for index, entry in enumerate(_list(raw.get("podSetAssignments"), f"{path}.podSetAssignments", errors)):
        apath = f"{path}.podSetAssignments[{index}]"
        if not isinstance(entry, Mapping):
            errors.append(FieldError.invalid(apath, None, "must be an object"))
            continue
        flavors = string_map(entry.get("flavors"), f"{apath}.flavors", errors)
        usage: dict[str, Quantity] = {}
        raw_usage = entry.get("resourceUsage") or {}
        if isinstance(raw_usage, Mapping):
            for rname, value in raw_usage.items():
                quantity = _quantity(value, f"{apath}.resourceUsage[{rname}]", errors)
                if quantity is not None:
                    usage[str(rname)] = quantity
        count = _int(entry.get("count"), f"{apath}.count", errors, minimum=0)
        assignments.append(PodSetAssignment(str(entry.get("name") or "main"), flavors, usage, count or 0))
    return Admission(cluster_queue, tuple(assignments))


#: Kueue v1beta2's limit on pod sets in one Workload (its CRD's maxItems)
MAX_POD_SETS = 18
PRIORITY_CLASS_KINDS = {GROUP: "WorkloadPriorityClass", "scheduling.k8s.io": "PriorityClass"}


def _priority_class_ref_errors(ref: Mapping[str, Any], *, has_priority: bool) -> list[FieldError]:
    """``spec.priorityClassRef``: the CRD's required fields and enums, then its CEL rules (a kind that belongs
    to the group; a resolved ``spec.priority`` alongside, since the scheduler orders by the number)."""
    path = "spec.priorityClassRef"
    errors: list[FieldError] = []
    for key in ("group", "kind", "name"):
        if key not in ref:
            errors.append(FieldError.required(f"{path}.{key}"))
    group, kind = ref.get("group"), ref.get("kind")
    if group is not None and group not in PRIORITY_CLASS_KINDS:
        errors.append(FieldError.not_supported(f"{path}.group", group, tuple(PRIORITY_CLASS_KINDS)))
    if kind is not None and kind not in PRIORITY_CLASS_KINDS.values():
        errors.append(FieldError.not_supported(f"{path}.kind", kind, tuple(PRIORITY_CLASS_KINDS.values())))
    name = ref.get("name")
    if name is not None:
        _reference(name, f"{path}.name", errors, required=True)
    if errors:  # kube-apiserver evaluates no CEL rule on an object that failed a required field or an enum
        return errors
    for rule_group, rule_kind in PRIORITY_CLASS_KINDS.items():
        if group == rule_group and kind != rule_kind:
            errors.append(
                _cel_failure(
                    path, "object", f"only the {rule_kind} kind is allowed for the {rule_group} group"
                )
            )
    if not has_priority:
        errors.append(
            _cel_failure("spec", "object", "priority should not be nil when priorityClassRef is set")
        )
    return errors


def parse_workload(obj: Mapping[str, Any]) -> Parsed[Workload]:
    errors: list[FieldError] = []
    meta = _meta(obj, errors, namespaced=True)
    spec = _spec(obj, errors, required=True)
    pod_sets: list[PodSet] = []
    raw_pod_sets = _list(spec.get("podSets"), "spec.podSets", errors)
    if not raw_pod_sets:
        errors.append(FieldError.required("spec.podSets"))
    elif len(raw_pod_sets) > MAX_POD_SETS:
        errors.append(FieldError.too_many("spec.podSets", len(raw_pod_sets), MAX_POD_SETS))
    seen: set[str] = set()
    for index, raw in enumerate(raw_pod_sets):
        path = f"spec.podSets[{index}]"
        if not isinstance(raw, Mapping):
            errors.append(FieldError.invalid(path, None, "must be an object"))
            continue
        name = str(raw.get("name") or "main")
        if name in seen:
            errors.append(FieldError.duplicate(f"{path}.name", name))
        seen.add(name)
        count = _int(raw.get("count", 1), f"{path}.count", errors, minimum=0)
        min_count = _int(raw.get("minCount"), f"{path}.minCount", errors, minimum=1)
        template = raw.get("template") or {}
        if not isinstance(template, Mapping):
            errors.append(FieldError.invalid(f"{path}.template", None, "must be a pod template"))
            template = {}
        requests, request_errors = pod_requests(template.get("spec") or {}, f"{path}.template.spec")
        errors.extend(request_errors)
        if min_count is not None and count is not None and min_count > count:
            # Kueue's CRD rule on each pod set: partial admission never asks for more pods than the set has
            errors.append(
                _cel_failure(path, "object", "minCount should be positive and less or equal to count")
            )
        pod_sets.append(PodSet(name, count or 0, requests, template, min_count))
    partial = sum(1 for pod_set in pod_sets if pod_set.min_count is not None)
    if partial > 1:  # Kueue's Workload webhook: partial admission shrinks one pod set, never several
        errors.append(FieldError.invalid("spec.podSets", partial, "at most one podSet can use minCount"))
    queue_name = _reference(spec.get("queueName"), "spec.queueName", errors) if spec.get("queueName") else ""
    priority = _int(spec.get("priority"), "spec.priority", errors)
    ref = spec.get("priorityClassRef")
    class_name, class_group = "", ""
    if isinstance(ref, Mapping):
        class_name = str(ref.get("name") or "")
        class_group = str(ref.get("group") or "")
        errors.extend(_priority_class_ref_errors(ref, has_priority="priority" in spec))
    elif spec.get("priorityClassName"):  # v1beta1 spelling
        class_name = str(spec["priorityClassName"])
        source = str(spec.get("priorityClassSource") or "")
        class_group = GROUP if source.endswith("workloadpriorityclass") else "scheduling.k8s.io"
    active = spec.get("active")
    status = obj.get("status") or {}
    if not isinstance(status, Mapping):
        errors.append(FieldError.invalid("status", None, "must be an object"))
        status = {}
    workload = Workload(
        meta=meta,
        pod_sets=tuple(pod_sets),
        queue_name=queue_name,
        priority=priority,
        priority_class_name=class_name,
        priority_class_group=class_group,
        active=active is not False,
        conditions=_conditions(status.get("conditions"), errors),
        admission=_admission(status.get("admission"), errors),
        admission_checks=_check_states(status.get("admissionChecks"), errors),
    )
    return _finish(workload, errors)


# -- dispatch ---------------------------------------------------------------------------------------

_PARSERS: dict[str, Any] = {
    "ResourceFlavor": parse_resource_flavor,
    "ClusterQueue": parse_cluster_queue,
    "Cohort": parse_cohort,
    "LocalQueue": parse_local_queue,
    "WorkloadPriorityClass": parse_workload_priority_class,
    "Workload": parse_workload,
    "AdmissionCheck": parse_admission_check,
}

KueueObject = (
    ResourceFlavor | ClusterQueue | Cohort | LocalQueue | WorkloadPriorityClass | Workload | AdmissionCheck
)


def parse_object(obj: Mapping[str, Any]) -> KueueObject | list[FieldError]:
    """Parse any Kueue object by its ``kind``; an unknown kind or group is an error naming it."""
    kind = obj.get("kind")
    api_version = str(obj.get("apiVersion") or "")
    if not api_version.startswith(f"{GROUP}/"):
        return [FieldError.invalid("apiVersion", api_version, f"expected {GROUP}/v1beta2 (or v1beta1)")]
    parser = _PARSERS.get(str(kind))
    if parser is None:
        return [FieldError.not_supported("kind", kind, tuple(_PARSERS))]
    result: KueueObject | list[FieldError] = parser(obj)
    return result
