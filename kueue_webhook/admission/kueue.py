"""Validation of kueue.x-k8s.io objects: the object model's spec rules plus Kueue's update-only rules.

The spec rules (quotas, resource groups, flavor names, taints...) live in :mod:`kueue_webhook.api.objects`,
whose ``parse_*`` functions list every problem with its path; the scheduler, the controller and
``simulate`` use the same functions, so an object this webhook admits is one they can read. What needs
the old object as well lives here, with Kueue's messages (``pkg/webhooks``):

* LocalQueue: ``spec.clusterQueue`` is immutable (a CEL rule in Kueue's CRD, "field is immutable");
* ResourceFlavor: ``spec.topologyName`` cannot change or go once set (a CEL transition rule in Kueue's CRD);
* Topology: ``spec.levels`` change only while ``kubernetes.io/hostname`` stays the lowest level (likewise);
* Workload: ``status.admission`` must be set while ``QuotaReserved`` is true, names existing pod sets, and
  is immutable once set; the pod sets are immutable while quota is reserved; ``pods`` is reserved as a
  resource name; ``status.reclaimablePods`` names existing pod sets and never exceeds their count;
  and the rules of Kueue's Workload CRD that look at more than one field or at the old object (one
  assignment per pod set; priority class, queue and time limit frozen while quota is held; the dispatch
  cluster), which kube-apiserver evaluates as CEL and the test API server does not;
* Workload approval annotations (``approval.kueue-webhook.io/<check>``, the built-in manual-approval
  admission check) may be added, changed or removed only by the configured ``manualApproval.approvers``:
  the annotation is what the check controller acts on, so refusing it here is what makes it an approval.

A Workload is validated on its ``/status`` subresource too: that is where admissions are written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from kueue_webhook.admission.fields import IMMUTABLE, aggregate_message
from kueue_webhook.admission.review import AdmissionRequest, Verdict
from kueue_webhook.admission.view import ClusterView
from kueue_webhook.api.config import Configuration
from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.objects import GROUP, parse_object, validate_tolerations
from kueue_webhook.api.objects.list_bounds import list_bound_errors
from kueue_webhook.api.objects.topology import levels_update_errors
from kueue_webhook.api.quantity import QuantityError, parse_quantity
from kueue_webhook.api.validation import validate_annotations_field, validate_labels_field
from kueue_webhook.core.checks import approval_change_denial

__all__ = ["KUEUE_KINDS", "validate_kueue_object"]

#: the kinds this webhook validates (WorkloadPriorityClass and the MultiKueue kinds have no Kueue webhook,
#: only CRD rules, restated here so that every API server, the test one included, gives the same answer)
KUEUE_KINDS = (
    "ClusterQueue",
    "LocalQueue",
    "ResourceFlavor",
    "Cohort",
    "Workload",
    "WorkloadPriorityClass",
    "Topology",
    "MultiKueueCluster",
    "MultiKueueConfig",
)

Problem = FieldError | str
_ABSENT = object()
#: how kube-apiserver names the object root in a field error (a CEL rule on the whole object)
ROOT = "<nil>"
UpdateRule = Callable[[Mapping[str, Any], Mapping[str, Any]], list[Problem]]


def validate_kueue_object(
    request: AdmissionRequest, *, config: Configuration, view: ClusterView, kind: str | None = None
) -> Verdict:
    """Validate a CREATE or UPDATE of a Kueue object; ``kind`` pins the endpoint to one kind."""
    del view  # same signature as every handler; Kueue objects need no view of the cluster
    if (
        request.kind.group != GROUP
        or request.kind.kind not in KUEUE_KINDS
        or kind not in (None, request.kind.kind)
    ):
        expected = f"{GROUP} {kind}" if kind else f"{GROUP} objects"
        return Verdict.unprocessable(f"this endpoint validates {expected}, got {request.kind}")
    if request.operation not in ("CREATE", "UPDATE"):
        return Verdict.allow()
    new = request.object
    if new is None:
        return Verdict.unprocessable("object is missing")
    too_many = [
        *list_bound_errors(request.kind.kind, new),
        *(list_bound_errors(request.kind.kind, request.old_object) if request.old_object is not None else ()),
    ]
    if too_many:  # refused by kube-apiserver's schema validation before any rule (see list_bounds)
        return Verdict.deny(aggregate_message(too_many))
    parsed = parse_object(new)
    problems: list[Problem] = list(parsed) if isinstance(parsed, list) else []
    if request.kind.kind == "Workload":
        problems += _workload_rules(new, request.old_object)
    old = request.old_object
    if request.operation == "UPDATE" and old is not None:
        rule = _UPDATE_RULES.get(request.kind.kind)
        if rule is not None:
            problems += rule(old, new)
    if request.kind.kind == "Workload":  # on CREATE too: a Workload must not be born approved
        denial = approval_change_denial(
            old_annotations=_annotations(old) if old is not None else {},
            new_annotations=_annotations(new),
            user=request.username,
            groups=request.groups,
            approvers=config.manual_approval.approvers,
        )
        if denial is not None:
            problems.append(denial)
    if problems:
        return Verdict.deny(aggregate_message(problems))
    return Verdict.allow()


def _get(obj: Mapping[str, Any] | None, *path: str) -> Any:
    value: Any = obj
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _section(obj: Mapping[str, Any] | None, key: str) -> Mapping[str, Any]:
    """``obj[key]`` when it is an object, else empty: a field of the wrong type reads as absent here (the
    schema rules report it)."""
    value = _get(obj, key)
    return value if isinstance(value, Mapping) else {}


def _annotations(obj: Mapping[str, Any]) -> dict[str, str]:
    raw = _get(obj, "metadata", "annotations")
    if not isinstance(raw, Mapping):
        return {}
    return {str(key): str(value) for key, value in raw.items()}


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _local_queue_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Problem]:
    old_queue, new_queue = _get(old, "spec", "clusterQueue") or "", _get(new, "spec", "clusterQueue") or ""
    if old_queue != new_queue:
        return [FieldError.invalid("spec.clusterQueue", new_queue, IMMUTABLE)]
    return []


def _resource_flavor_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Problem]:
    """Kueue's CRD transition rule on ``spec``: a topology, once named, stays (nodes are grouped by it)."""
    old_spec, new_spec = _get(old, "spec"), _get(new, "spec")
    if (
        not isinstance(old_spec, Mapping)
        or not isinstance(new_spec, Mapping)
        or "topologyName" not in old_spec
    ):
        return []
    if new_spec.get("topologyName", _ABSENT) == old_spec["topologyName"]:
        return []
    return [FieldError.invalid("spec", "object", "topologyName is immutable when topologyName is set")]


def _reserves_quota(workload: Mapping[str, Any] | None) -> bool:
    conditions = _get(workload, "status", "conditions")
    if not isinstance(conditions, list):
        return False
    return any(
        isinstance(c, Mapping) and c.get("type") == "QuotaReserved" and c.get("status") == "True"
        for c in conditions
    )


def _workload_rules(new: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Problem]:
    problems: list[Problem] = []
    pod_sets = _get(new, "spec", "podSets")
    for i, pod_set in enumerate(pod_sets if isinstance(pod_sets, list) else []):
        # Kueue's validatePodSet (WorkloadValidationForPodSetMetadata, on by default): the template's
        # labels and annotations as a pod's, before its containers
        metadata = f"spec.podSets[{i}].template.metadata"
        problems += validate_labels_field(
            _get(pod_set, "template", "metadata", "labels"), f"{metadata}.labels"
        )
        problems += validate_annotations_field(
            _get(pod_set, "template", "metadata", "annotations"), f"{metadata}.annotations"
        )
        for kind in ("initContainers", "containers"):
            containers = _get(pod_set, "template", "spec", kind)
            for c, container in enumerate(containers if isinstance(containers, list) else []):
                for part in ("requests", "limits"):
                    resources = _get(container, "resources", part)
                    if isinstance(resources, Mapping) and "pods" in resources:
                        path = f"spec.podSets[{i}].template.spec.{kind}[{c}].resources.{part}[pods]"
                        problems.append(
                            FieldError.invalid(path, "pods", "the key is reserved for internal kueue use")
                        )
    names = [
        str(p.get("name") or "main")
        for p in (pod_sets if isinstance(pod_sets, list) else [])
        if isinstance(p, Mapping)
    ]
    counts = {
        str(p.get("name") or "main"): p.get("count", 1)
        for p in (pod_sets if isinstance(pod_sets, list) else [])
        if isinstance(p, Mapping)
    }
    if _reserves_quota(new):
        assignments = _get(new, "status", "admission", "podSetAssignments")
        for i, assignment in enumerate(assignments if isinstance(assignments, list) else []):
            name = _get(assignment, "name")
            if isinstance(name, str) and name not in names:
                problems.append(f'status.admission.podSetAssignments[{i}].name: Not found: "{name}"')
            problems += _usage_multiple_rules(assignment, f"status.admission.podSetAssignments[{i}]")
    reclaimable = _get(new, "status", "reclaimablePods")
    for entry in reclaimable if isinstance(reclaimable, list) else []:
        name, count = _get(entry, "name"), _get(entry, "count")
        path = f"status.reclaimablePods[{name}]"
        if not isinstance(name, str) or name not in counts:
            problems.append(FieldError.not_supported(f"{path}.name", name, tuple(names)))
        elif isinstance(count, int) and isinstance(counts[name], int) and count > counts[name]:
            problems.append(
                FieldError.invalid(f"{path}.count", count, f"should be less or equal to {counts[name]}")
            )
    if _reserves_quota(new) and _get(new, "status", "admission") is None:
        old_without_admission = _reserves_quota(old) and _get(old, "status", "admission") is None
        if not old_without_admission:
            problems.append(
                FieldError.required(
                    "status.admission", "must be set while the QuotaReserved condition is true"
                )
            )
    problems += _workload_object_rules(new)
    problems += _pod_set_update_rules(new, names)
    return problems


def _usage_multiple_rules(assignment: Any, path: str) -> list[Problem]:
    """Kueue's validateAdmission: with a ``count``, each ``resourceUsage`` is ``count`` pods' worth (a whole
    multiple of it, in milli-units for CPU and units otherwise), as a partial admission records it. (Kueue
    prints the count through a pointer, which shows an address; the count itself is printed here.)"""
    count = _get(assignment, "count")
    usage = _get(assignment, "resourceUsage")
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0 or not isinstance(usage, Mapping):
        return []
    problems: list[Problem] = []
    for resource, raw in usage.items():
        try:
            quantity = parse_quantity(raw)
        except QuantityError:
            continue  # the schema's quantity check reports it
        scale = 10**6 if resource == "cpu" else 10**9
        value = -(-quantity.nanos // scale)  # Quantity.MilliValue / Value round up
        if value % count:
            problems.append(
                FieldError.invalid(f"{path}.resourceUsage[{resource}]", raw, f"is not a multiple of {count}")
            )
    return problems


def _pod_set_update_rules(new: Mapping[str, Any], pod_set_names: list[str]) -> list[Problem]:
    """What an admission check asks to change in the pods (``status.admissionChecks[].podSetUpdates``) is
    copied into the Job's pod template on admission, so Kueue's webhook checks it as a pod would: a known
    pod set, tolerations (the CRD's CEL rules, keys), annotations, node selector and labels."""
    problems: list[Problem] = []
    known = tuple(sorted(set(pod_set_names)))
    checks = _get(new, "status", "admissionChecks")
    for i, check in enumerate(checks if isinstance(checks, list) else []):
        updates = _get(check, "podSetUpdates")
        for j, update in enumerate(updates if isinstance(updates, list) else []):
            if not isinstance(update, Mapping):
                continue
            path = f"status.admissionChecks[{i}].podSetUpdates[{j}]"
            if update.get("name") not in known:
                problems.append(FieldError.not_supported(f"{path}.name", update.get("name"), known))
            problems += validate_tolerations(update.get("tolerations"), f"{path}.tolerations")
            problems += validate_annotations_field(update.get("annotations"), f"{path}.annotations")
            problems += validate_labels_field(update.get("nodeSelector"), f"{path}.nodeSelector")
            problems += validate_labels_field(update.get("labels"), f"{path}.labels")
    return problems


def _cel(path: str, message: str, *, missing: str = "") -> FieldError:
    """A failed CEL rule of Kueue's Workload CRD as kube-apiserver words it (``<nil>`` is the object root);
    ``missing`` names the field whose absence stopped the rule from being evaluated."""
    body = f"no such key: {missing} evaluating rule: {message}" if missing else message
    return FieldError.invalid(path, "object", body)


def _workload_object_rules(new: Mapping[str, Any]) -> list[Problem]:
    """Kueue's CRD rules on a Workload that need no old object (create, update and ``/status`` alike)."""
    problems: list[Problem] = []
    admission = _get(new, "status", "admission")
    if _reserves_quota(new) and isinstance(admission, Mapping):
        message = "podSetAssignments must have the same number of podSets as the spec"
        assignments, pod_sets = admission.get("podSetAssignments"), _get(new, "spec", "podSets")
        if "podSetAssignments" not in admission:
            problems.append(_cel(ROOT, message, missing="podSetAssignments"))
        elif (
            isinstance(assignments, list) and isinstance(pod_sets, list) and len(assignments) != len(pod_sets)
        ):
            problems.append(_cel(ROOT, message))
    status = _get(new, "status")
    if isinstance(status, Mapping) and "clusterName" in status and status.get("nominatedClusterNames"):
        problems.append(_cel("status", "clusterName and nominatedClusterNames are mutually exclusive"))
    return problems


def _has_condition(workload: Mapping[str, Any], kind: str) -> bool:
    conditions = _get(workload, "status", "conditions")
    return isinstance(conditions, list) and any(
        isinstance(c, Mapping) and c.get("type") == kind and c.get("status") == "True" for c in conditions
    )


def _workload_transition_rules(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Problem]:
    """Kueue's CRD transition rules: what a Workload holding quota may no longer change (its priority
    class, its queue) and what an admitted one keeps (its time limit), and a dispatch cluster once chosen."""
    problems: list[Problem] = []
    old_spec, new_spec = _section(old, "spec"), _section(new, "spec")
    if _reserves_quota(old):
        old_ref, new_ref = old_spec.get("priorityClassRef"), new_spec.get("priorityClassRef")
        if (old_ref is None) != (new_ref is None):
            problems.append(_cel(ROOT, "priorityClassRef is immutable while workload quota reserved"))
        elif isinstance(old_ref, Mapping) and isinstance(new_ref, Mapping):
            for key in ("group", "kind"):
                if old_ref.get(key) != new_ref.get(key):
                    problems.append(
                        _cel(ROOT, f"priorityClassRef.{key} is immutable while workload quota reserved")
                    )
            pod_class = (new_ref.get("group"), new_ref.get("kind")) == ("scheduling.k8s.io", "PriorityClass")
            if pod_class and old_ref.get("name") != new_ref.get("name"):
                problems.append(
                    _cel(
                        ROOT,
                        "priorityClassRef.name is immutable for scheduling.k8s.io/priorityclass "
                        "while workload quota reserved",
                    )
                )
        if _reserves_quota(new) and old_spec.get("queueName", _ABSENT) != new_spec.get("queueName", _ABSENT):
            problems.append(_cel(ROOT, "queueName is immutable while workload quota reserved"))
    if _has_condition(old, "Admitted") and _has_condition(new, "Admitted"):
        limit = "maximumExecutionTimeSeconds"
        if old_spec.get(limit, 0) != new_spec.get(limit, 0):
            problems.append(
                _cel(ROOT, "maximumExecutionTimeSeconds is immutable while workload quota reserved")
            )
    old_status, new_status = _get(old, "status"), _get(new, "status")
    if (
        isinstance(old_status, Mapping)
        and isinstance(new_status, Mapping)
        and "clusterName" in old_status
        and "clusterName" in new_status
        and old_status["clusterName"] != new_status["clusterName"]
    ):
        problems.append(_cel("status", "clusterName is immutable once set"))
    return problems


def _reclaimable_counts(workload: Mapping[str, Any]) -> dict[str, Any]:
    entries = _get(workload, "status", "reclaimablePods")
    return {
        str(e.get("name")): e.get("count")
        for e in (entries if isinstance(entries, list) else [])
        if isinstance(e, Mapping)
    }


def _reclaimable_pods_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Problem]:
    """Kueue's webhook, while quota stays reserved: a pod set's reclaimable count only grows and is never
    dropped, since the quota it gave back may already be someone else's."""
    if not (_reserves_quota(old) and _reserves_quota(new)):
        return []
    before, after = _reclaimable_counts(old), _reclaimable_counts(new)
    if not before or before == after:
        return []
    problems: list[Problem] = []
    for name, count in after.items():
        previous = before.get(name)
        if isinstance(count, int) and isinstance(previous, int) and count < previous:
            path = f"status.reclaimablePods[{name}].count"
            problems.append(FieldError.invalid(path, count, f"cannot be less than {previous}"))
    problems += [
        FieldError.required(f"status.reclaimablePods[{name}]", "cannot be removed")
        for name in before
        if name not in after
    ]
    return problems


def _cluster_name_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Problem]:
    """Kueue's webhook: a dispatch cluster is chosen among the clusters nominated before."""
    old_status, new_status = _section(old, "status"), _section(new, "status")
    if "clusterName" in old_status or new_status.get("clusterName") is None:
        return []
    nominated = old_status.get("nominatedClusterNames")
    if isinstance(nominated, list) and new_status["clusterName"] in nominated:
        return []
    return [
        FieldError.invalid(
            "status.clusterName",
            new_status["clusterName"],
            "when setting clusterName it must be one of the nominatedClusterNames",
        )
    ]


def _workload_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Problem]:
    problems: list[Problem] = _workload_transition_rules(old, new)
    problems += _reclaimable_pods_update(old, new)
    problems += _cluster_name_update(old, new)
    if _reserves_quota(old):
        old_sets, new_sets = _get(old, "spec", "podSets") or [], _get(new, "spec", "podSets") or []
        if len(old_sets) != len(new_sets):
            problems.append(f"spec.podSets: Invalid value: {_json(new_sets)}: {IMMUTABLE}")
        else:
            for index, (before, after) in enumerate(zip(old_sets, new_sets, strict=True)):
                if before != after:
                    problems.append(f"spec.podSets.{index}: Invalid value: {_json(after)}: {IMMUTABLE}")
    old_admission, new_admission = _get(old, "status", "admission"), _get(new, "status", "admission")
    if (
        old_admission is not None
        and new_admission is not None
        and not _same_admission(old_admission, new_admission)
    ):
        problems.append(f"status.admission: Invalid value: {_json(new_admission)}: {IMMUTABLE}")
    return problems


#: what may change in an admission once set: where its pods go (Kueue's validateAdmissionUpdate with
#: TopologyAwareScheduling: a topology assignment is set late, or a failed node replaced in it)
_PLACEMENT_FIELDS = ("topologyAssignment", "delayedTopologyRequest")


def _same_admission(old: Any, new: Any) -> bool:
    """Whether ``new`` equals ``old`` but for the placement fields of each pod set assignment."""
    if old == new:
        return True
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return False
    old_sets, new_sets = old.get("podSetAssignments"), new.get("podSetAssignments")
    if not isinstance(old_sets, list) or not isinstance(new_sets, list) or len(old_sets) != len(new_sets):
        return False

    def without_placement(assignments: list[Any]) -> list[Any]:
        return [
            {k: v for k, v in a.items() if k not in _PLACEMENT_FIELDS} if isinstance(a, Mapping) else a
            for a in assignments
        ]

    rest_old = {k: v for k, v in old.items() if k != "podSetAssignments"}
    rest_new = {k: v for k, v in new.items() if k != "podSetAssignments"}
    return rest_old == rest_new and without_placement(old_sets) == without_placement(new_sets)


_UPDATE_RULES: dict[str, UpdateRule] = {
    "LocalQueue": _local_queue_update,
    "ResourceFlavor": _resource_flavor_update,
    "Workload": _workload_update,
    "Topology": lambda old, new: list(levels_update_errors(new, old)),
}
