"""Workload and what decides its place and its admission: PodSet, the Admission the scheduler records, the
state of each admission check, WorkloadPriorityClass and AdmissionCheck.

A Workload is the unit the scheduler queues and admits, created for each Job or directly by users; its
status (conditions, ``admission``, ``admissionChecks``) is the cluster's record of what was decided, which is
why a restart can rebuild the quota ledger from these views alone. Priority classes and admission checks are
small kinds that exist only to be named by Workloads and ClusterQueues, so they stay beside the Workload that
reads them rather than with the queues.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kueue_webhook.api.admission_gates import ANNOTATION
from kueue_webhook.api.conditions import is_true
from kueue_webhook.api.dra import dra_problem
from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.objects.cel import cel_failure
from kueue_webhook.api.objects.common import (
    GROUP,
    Condition,
    Meta,
    NamedByMeta,
    NamespacedByMeta,
    Parsed,
    enum_value,
    finish,
    int32_field,
    is_int32,
    list_field,
    name_reference,
    object_field,
    object_items,
    optional_object,
    parse_conditions,
    parse_meta,
    parse_spec,
    quantity_field,
)
from kueue_webhook.api.pods import Requests, pod_requests
from kueue_webhook.api.quantity import Quantity
from kueue_webhook.api.validation import string_map

__all__ = [
    "MAX_POD_SETS",
    "Admission",
    "AdmissionCheck",
    "AdmissionCheckState",
    "PodSet",
    "PodSetAssignment",
    "Workload",
    "WorkloadPriorityClass",
    "admitted_cluster_queue",
    "has_quota_reservation",
    "parse_admission_check",
    "parse_workload",
    "parse_workload_priority_class",
]

#: Kueue v1beta2's limit on pod sets in one Workload (its CRD's maxItems)
MAX_POD_SETS = 18
PRIORITY_CLASS_KINDS = {GROUP: "WorkloadPriorityClass", "scheduling.k8s.io": "PriorityClass"}

CHECK_STATES = ("Pending", "Ready", "Retry", "Rejected")


# -- the Workload and its parts ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodSet:
    """A group of identical pods; ``requests`` is per pod, in nano-units, rounded as Kueue does."""

    name: str
    count: int
    requests: Requests
    template: Mapping[str, Any] = field(default_factory=dict)
    min_count: int | None = None
    #: ``topologyRequest`` as written (read by :mod:`kueue_webhook.api.topology_request`)
    topology_request: Mapping[str, Any] | None = None

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
    #: ``topologyAssignment`` in Kueue's v1beta2 encoding (:mod:`kueue_webhook.api.topology_assignment`)
    topology_assignment: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "flavors": dict(sorted(self.flavors.items())),
            "resourceUsage": {r: q.canonical() for r, q in sorted(self.resource_usage.items())},
            "count": self.count,
        }
        if self.topology_assignment is not None:
            out["topologyAssignment"] = self.topology_assignment
        return out


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


@dataclass(frozen=True, slots=True)
class Workload(NamespacedByMeta):
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
    #: ``status.reclaimablePods``: pod set name -> pods of it that will never run again (zero left out)
    reclaimable_pods: Mapping[str, int] = field(default_factory=dict)
    #: the devices its pods claim through DRA are in the pod sets' requests (``kueue_webhook.api.dra``)
    claims_counted: bool = False
    #: why those claims could not be counted ("" when they were, or nobody tried)
    claims_problem: str = ""

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
        """Kueue's rule (``workload.HasQuotaReservation``, as ``has_quota_reservation`` reads it on JSON):
        quota is reserved when QuotaReserved is True and an admission is recorded."""
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
    def is_backing_off(self) -> bool:
        """Evicted by a PodsReady timeout and sitting out its requeue backoff (Requeued=False, reason
        PodsReadyTimeout, until the backoff ends and Requeued turns True): not to be admitted meanwhile."""
        requeued = self.condition("Requeued")
        return requeued is not None and requeued.status == "False" and requeued.reason == "PodsReadyTimeout"

    @property
    def is_on_hold(self) -> bool:
        """QuotaReserved False with reason OnHold (Kueue's ``IsOnHold``, a StatefulSet scaled to zero): its
        quota released on purpose, it is not queued until its owner scales it up again. "On hold" means
        only this: Kueue's reason, on the wire."""
        cond = self.condition("QuotaReserved")
        return cond is not None and cond.status == "False" and cond.reason == "OnHold"

    @property
    def admission_gates(self) -> str:
        """The admission gates that keep it out of the queue (``admission_gates``); "" when none."""
        return self.meta.annotations.get(ANNOTATION, "")

    def dra_problem(self) -> str | None:
        """Why it cannot be admitted because its pods claim devices through DRA (``kueue_webhook.api.dra``):
        the reason they could not be counted, or, when nobody tried, that they are not; None when they
        claim none or have been counted into the pod sets' requests."""
        if self.claims_problem:
            return self.claims_problem
        if self.claims_counted:
            return None
        return dra_problem((pod_set.name, pod_set.template) for pod_set in self.pod_sets)

    @property
    def is_deleting(self) -> bool:
        """Deleted, its finalizer (Kueue's resource-in-use) not yet removed: it stays until its quota is
        let go (``kueue_webhook.api.finalizers``)."""
        return bool(self.meta.deletion_timestamp)

    def total_requests(self) -> Requests:
        total: Requests = {}
        for pod_set in self.pod_sets:
            for name, amount in pod_set.total().items():
                total[name] = total.get(name, 0) + amount
        return total


# -- Workload ---------------------------------------------------------------------------------------


def admitted_cluster_queue(workload: Mapping[str, Any]) -> str:
    """``status.admission.clusterQueue`` of a Workload as the API serves it (JSON); "" when none is
    recorded."""
    status = workload.get("status")
    admission = status.get("admission") if isinstance(status, Mapping) else None
    return str(admission.get("clusterQueue") or "") if isinstance(admission, Mapping) else ""


def has_quota_reservation(workload: Mapping[str, Any]) -> bool:
    """``Workload.has_quota_reservation`` on a Workload as the API serves it (JSON), for callers that read
    the store without parsing: QuotaReserved is True and ``status.admission`` is recorded."""
    status = workload.get("status")
    return (
        isinstance(status, Mapping) and bool(status.get("admission")) and is_true(workload, "QuotaReserved")
    )


def parse_workload(obj: Mapping[str, Any]) -> Parsed[Workload]:
    errors: list[FieldError] = []
    meta = parse_meta(obj, errors, namespaced=True)
    spec = parse_spec(obj, errors, required=True)
    pod_sets = _pod_sets(spec.get("podSets"), errors)
    queue_name = (
        name_reference(spec.get("queueName"), "spec.queueName", errors) if spec.get("queueName") else ""
    )
    priority = int32_field(spec.get("priority"), "spec.priority", errors)
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
    status = object_field(obj.get("status") or {}, "status", errors) or {}
    workload = Workload(
        meta=meta,
        pod_sets=pod_sets,
        queue_name=queue_name,
        priority=priority,
        priority_class_name=class_name,
        priority_class_group=class_group,
        active=active is not False,
        conditions=parse_conditions(status.get("conditions"), errors),
        admission=_admission(status.get("admission"), errors),
        admission_checks=_check_states(status.get("admissionChecks"), errors),
        reclaimable_pods=_reclaimable_pods(status.get("reclaimablePods"), errors),
    )
    return finish(workload, errors)


def _pod_sets(raw: Any, errors: list[FieldError]) -> tuple[PodSet, ...]:
    """``spec.podSets``: 1 to 18, unique names, a count and an optional ``minCount`` each, per-pod requests
    read from the template (a missing request falls back to its limit)."""
    pod_sets: list[PodSet] = []
    raw_pod_sets = list_field(raw, "spec.podSets", errors)
    if not raw_pod_sets:
        errors.append(FieldError.required("spec.podSets"))
    elif len(raw_pod_sets) > MAX_POD_SETS:
        errors.append(FieldError.too_many("spec.podSets", len(raw_pod_sets), MAX_POD_SETS))
    seen: set[str] = set()
    for _, path, pod_set in object_items(raw_pod_sets, "spec.podSets", errors):
        name = str(pod_set.get("name") or "main")
        if name in seen:
            errors.append(FieldError.duplicate(f"{path}.name", name))
        seen.add(name)
        count = int32_field(pod_set.get("count", 1), f"{path}.count", errors, minimum=0)
        min_count = int32_field(pod_set.get("minCount"), f"{path}.minCount", errors, minimum=1)
        template = pod_set.get("template") or {}
        if not isinstance(template, Mapping):
            errors.append(FieldError.invalid(f"{path}.template", None, "must be a pod template"))
            template = {}
        requests, request_errors = pod_requests(template.get("spec") or {}, f"{path}.template.spec")
        errors.extend(request_errors)
        if min_count is not None and count is not None and min_count > count:
            # Kueue's CRD rule on each pod set: partial admission never asks for more pods than the set has
            errors.append(
                cel_failure(path, "object", "minCount should be positive and less or equal to count")
            )
        topology = pod_set.get("topologyRequest")
        pod_sets.append(
            PodSet(
                name,
                count or 0,
                requests,
                template,
                min_count,
                topology if isinstance(topology, Mapping) else None,
            )
        )
    partial = sum(1 for parsed in pod_sets if parsed.min_count is not None)
    if partial > 1:  # Kueue's Workload webhook: partial admission shrinks one pod set, never several
        errors.append(FieldError.invalid("spec.podSets", partial, "at most one podSet can use minCount"))
    return tuple(pod_sets)


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
        name_reference(name, f"{path}.name", errors, required=True)
    if errors:  # kube-apiserver evaluates no CEL rule on an object that failed a required field or an enum
        return errors
    for rule_group, rule_kind in PRIORITY_CLASS_KINDS.items():
        if group == rule_group and kind != rule_kind:
            errors.append(
                cel_failure(
                    path, "object", f"only the {rule_kind} kind is allowed for the {rule_group} group"
                )
            )
    if not has_priority:
        errors.append(
            cel_failure("spec", "object", "priority should not be nil when priorityClassRef is set")
        )
    return errors


def _admission(raw: Any, errors: list[FieldError]) -> Admission | None:
    path = "status.admission"
    raw = optional_object(raw, path, errors)
    if raw is None:
        return None
    cluster_queue = name_reference(raw.get("clusterQueue"), f"{path}.clusterQueue", errors, required=True)
    assignments: list[PodSetAssignment] = []
    raw_assignments = list_field(raw.get("podSetAssignments"), f"{path}.podSetAssignments", errors)
    for _, apath, entry in object_items(raw_assignments, f"{path}.podSetAssignments", errors):
        flavors = string_map(entry.get("flavors"), f"{apath}.flavors", errors)
        usage: dict[str, Quantity] = {}
        raw_usage = entry.get("resourceUsage") or {}
        if isinstance(raw_usage, Mapping):
            for rname, value in raw_usage.items():
                quantity = quantity_field(value, f"{apath}.resourceUsage[{rname}]", errors)
                if quantity is not None:
                    usage[str(rname)] = quantity
        count = int32_field(entry.get("count"), f"{apath}.count", errors, minimum=0)
        topology = entry.get("topologyAssignment")
        assignments.append(
            PodSetAssignment(
                str(entry.get("name") or "main"),
                flavors,
                usage,
                count or 0,
                topology if isinstance(topology, Mapping) else None,
            )
        )
    return Admission(cluster_queue, tuple(assignments))


def _reclaimable_pods(raw: Any, errors: list[FieldError]) -> dict[str, int]:
    """``status.reclaimablePods`` by pod set name; an entry that does not read is reported and left out."""
    out: dict[str, int] = {}
    for i, entry in enumerate(list_field(raw, "status.reclaimablePods", errors) or []):
        path = f"status.reclaimablePods[{i}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            errors.append(FieldError.required(f"{path}.name", "a pod set name"))
            continue
        count = int32_field(entry.get("count"), f"{path}.count", errors, minimum=0)
        if count:
            out[entry["name"]] = count
    return out


def _check_states(raw: Any, errors: list[FieldError]) -> tuple[AdmissionCheckState, ...]:
    out: list[AdmissionCheckState] = []
    for index, entry in enumerate(list_field(raw, "status.admissionChecks", errors)):
        path = f"status.admissionChecks[{index}]"
        if not isinstance(entry, Mapping) or not entry.get("name"):
            errors.append(FieldError.required(f"{path}.name"))
            continue
        state = enum_value(entry.get("state"), f"{path}.state", CHECK_STATES, "Pending", errors)
        out.append(
            AdmissionCheckState(
                str(entry["name"]),
                state,
                str(entry.get("message") or ""),
                str(entry.get("lastTransitionTime") or ""),
            )
        )
    return tuple(out)


# -- WorkloadPriorityClass --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkloadPriorityClass(NamedByMeta):
    meta: Meta
    value: int
    description: str = ""


def parse_workload_priority_class(obj: Mapping[str, Any]) -> Parsed[WorkloadPriorityClass]:
    errors: list[FieldError] = []
    meta = parse_meta(obj, errors, namespaced=False)
    value = obj.get("value")
    if value is None:
        errors.append(FieldError.required("value"))
        value = 0
    elif not is_int32(value):
        errors.append(FieldError.invalid("value", value, "must be a 32-bit integer"))
        value = 0
    description = str(obj.get("description") or "")
    if len(description) > 2048:  # Kueue's CRD: maxLength
        errors.append(FieldError.too_long("description", 2048))
    return finish(WorkloadPriorityClass(meta, value, description), errors)


# -- AdmissionCheck ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AdmissionCheck(NamedByMeta):
    """Cluster-scoped ``AdmissionCheck``: which controller decides the check (``spec.controllerName``), and
    whether that controller serves it (``status`` condition ``Active=True``, set by the controller)."""

    meta: Meta
    controller_name: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    active: bool = False


def parse_admission_check(obj: Mapping[str, Any]) -> Parsed[AdmissionCheck]:
    errors: list[FieldError] = []
    meta = parse_meta(obj, errors, namespaced=False)
    spec = parse_spec(obj, errors, required=True)
    controller = spec.get("controllerName")
    if not isinstance(controller, str) or not controller:
        errors.append(FieldError.required("spec.controllerName"))
        controller = ""
    parameters = object_field(spec.get("parameters") or {}, "spec.parameters", errors) or {}
    active = is_true(obj, "Active")
    return finish(AdmissionCheck(meta, controller, dict(parameters), active), errors)
