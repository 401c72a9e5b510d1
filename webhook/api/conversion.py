"""Conversion between Kueue's deprecated ``kueue.x-k8s.io/v1beta1`` and the stored ``v1beta2``.

kube-apiserver stores every Kueue object as v1beta2 and calls the CRD's conversion webhook whenever a client
reads or writes v1beta1, so users' v1beta1 manifests (``spec.cohort``, ``priorityClassSource`` ...) keep
working. The rules are Kueue's, field for field (apis/kueue/v1beta1/*_conversion.go and the generated
zz_generated.conversion.go; the JSON names from apis/kueue/v1beta{1,2}/*_types.go):

* ClusterQueue: ``spec.cohort`` <-> ``spec.cohortName``; v1beta1 ``spec.admissionChecks`` (names) becomes
  ``spec.admissionChecksStrategy.admissionChecks[].name`` and replaces any strategy given next to it;
  ``flavorFungibility`` ``Preempt``/``Borrow`` become ``MayStopSearch``. v1beta2-only
  ``spec.concurrentAdmissionPolicy`` and v1beta1-only ``status.pendingWorkloadsStatus`` and
  ``status.fairSharing.admissionFairSharingStatus`` are dropped.
* LocalQueue: ``status.flavorUsage`` <-> ``status.flavorsUsage``; v1beta1-only ``status.flavors`` dropped.
* Workload: ``spec.priorityClassSource`` + ``spec.priorityClassName`` <-> ``spec.priorityClassRef``
  {group, kind, name}; ``status.accumulatedPastExexcutionTimeSeconds`` (v1beta1's misspelling) <->
  ``status.accumulatedPastExecutionTimeSeconds``; topology assignments ``domains`` <-> ``slices``;
  v1beta2-only ``spec.preemptionGates``, ``status.preemptionGates`` and
  ``podSets[].topologyRequest.podsetSliceRequiredTopologyConstraints`` are dropped.
* AdmissionCheck: v1beta1-only ``spec.retryDelayMinutes`` dropped.
* ResourceFlavor, Cohort, WorkloadPriorityClass: same fields, only ``apiVersion`` changes.

Kueue keeps no annotation for what the other version cannot hold: it drops it (Workload_conversion.go says
so of the topology constraints). We do the same, so an object written through v1beta1 looks exactly as it
would under Kueue. Everything a v1beta2 object can say in v1beta1 survives v1beta2 -> v1beta1 -> v1beta2
unchanged. The functions are pure: a dict in, a new dict out, the input untouched.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "KINDS",
    "V1BETA1",
    "V1BETA2",
    "ConversionError",
    "convert",
    "to_v1beta1",
    "to_v1beta2",
]

Obj = dict[str, Any]

GROUP = "kueue.x-k8s.io"
V1BETA1 = f"{GROUP}/v1beta1"
V1BETA2 = f"{GROUP}/v1beta2"
KINDS = frozenset(
    {
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
        "Cohort",
        "WorkloadPriorityClass",
        "Workload",
        "AdmissionCheck",
    }
)

# v1beta1 priorityClassSource values and the v1beta2 {group, kind} they stand for (workload_types.go).
_WORKLOAD_PRIORITY_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
_POD_PRIORITY_SOURCE = "scheduling.k8s.io/priorityclass"
_SOURCE_TO_REF = {
    _WORKLOAD_PRIORITY_SOURCE: (GROUP, "WorkloadPriorityClass"),
    _POD_PRIORITY_SOURCE: ("scheduling.k8s.io", "PriorityClass"),
}
_REF_TO_SOURCE = {ref: source for source, ref in _SOURCE_TO_REF.items()}
# FlavorFungibility values v1beta1 still accepts and v1beta2 renamed (clusterqueue_conversion.go).
_FUNGIBILITY_RENAMES = {
    "whenCanPreempt": ("Preempt", "MayStopSearch"),
    "whenCanBorrow": ("Borrow", "MayStopSearch"),
}


class ConversionError(ValueError):
    """The object cannot be converted: not a Kueue kind, or a version we do not serve."""


def convert(obj: Mapping[str, Any], desired_api_version: str) -> Obj:
    """``obj`` (v1beta1 or v1beta2) in ``desired_api_version``; an object already there is returned copied."""
    if not isinstance(obj, Mapping):
        raise ConversionError(f"object must be a JSON object, got {type(obj).__name__}")
    kind = obj.get("kind")
    if kind not in KINDS:
        raise ConversionError(f"kind {kind!r} is not a {GROUP} kind this webhook converts")
    source = obj.get("apiVersion")
    if source not in (V1BETA1, V1BETA2):
        raise ConversionError(f"{kind} has apiVersion {source!r}; expected {V1BETA1} or {V1BETA2}")
    if desired_api_version not in (V1BETA1, V1BETA2):
        raise ConversionError(
            f"desiredAPIVersion {desired_api_version!r} is not served; expected {V1BETA1} or {V1BETA2}"
        )
    if source == desired_api_version:
        return copy.deepcopy(dict(obj))
    return to_v1beta2(obj) if desired_api_version == V1BETA2 else to_v1beta1(obj)


def to_v1beta2(obj: Mapping[str, Any]) -> Obj:
    """A v1beta1 Kueue object as v1beta2."""
    out = copy.deepcopy(dict(obj))
    out["apiVersion"] = V1BETA2
    _UP.get(str(out.get("kind")), _same)(out)
    return out


def to_v1beta1(obj: Mapping[str, Any]) -> Obj:
    """A v1beta2 Kueue object as v1beta1."""
    out = copy.deepcopy(dict(obj))
    out["apiVersion"] = V1BETA1
    _DOWN.get(str(out.get("kind")), _same)(out)
    return out


def _same(_: Obj) -> None:
    """ResourceFlavor, Cohort, WorkloadPriorityClass: identical fields in both versions."""


def _section(obj: Obj, name: str) -> Obj | None:
    value = obj.get(name)
    return value if isinstance(value, dict) else None


def _rename(mapping: Obj, old: str, new: str) -> None:
    if old in mapping:
        mapping[new] = mapping.pop(old)


# ---- ClusterQueue ------------------------------------------------------------------------------------------
def _cluster_queue_up(obj: Obj) -> None:
    spec = _section(obj, "spec")
    if spec is not None:
        _rename(spec, "cohort", "cohortName")
        checks = spec.pop("admissionChecks", None)
        if isinstance(checks, list) and checks:
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": name} for name in checks]}
        fungibility = _section(spec, "flavorFungibility")
        if fungibility is not None:
            for field, (old, new) in _FUNGIBILITY_RENAMES.items():
                if fungibility.get(field) == old:
                    fungibility[field] = new
    status = _section(obj, "status")
    if status is not None:
        status.pop("pendingWorkloadsStatus", None)
        fair = _section(status, "fairSharing")
        if fair is not None:
            fair.pop("admissionFairSharingStatus", None)


def _cluster_queue_down(obj: Obj) -> None:
    spec = _section(obj, "spec")
    if spec is not None:
        _rename(spec, "cohortName", "cohort")
        spec.pop("concurrentAdmissionPolicy", None)


# ---- LocalQueue --------------------------------------------------------------------------------------------
def _local_queue_up(obj: Obj) -> None:
    status = _section(obj, "status")
    if status is not None:
        status.pop("flavors", None)
        _rename(status, "flavorUsage", "flavorsUsage")


def _local_queue_down(obj: Obj) -> None:
    status = _section(obj, "status")
    if status is not None:
        _rename(status, "flavorsUsage", "flavorUsage")


# ---- Workload ----------------------------------------------------------------------------------------------
def _workload_up(obj: Obj) -> None:
    spec = _section(obj, "spec")
    if spec is not None:
        name = spec.pop("priorityClassName", None)
        ref = _SOURCE_TO_REF.get(spec.pop("priorityClassSource", None) or "")
        if ref is not None:
            spec["priorityClassRef"] = {"group": ref[0], "kind": ref[1], "name": name or ""}
    status = _section(obj, "status")
    if status is not None:
        _rename(status, "accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds")
        _each_topology_assignment(status, _domains_to_slices)


def _workload_down(obj: Obj) -> None:
    spec = _section(obj, "spec")
    if spec is not None:
        spec.pop("preemptionGates", None)
        ref = spec.pop("priorityClassRef", None)
        if isinstance(ref, dict):
            source = _REF_TO_SOURCE.get((str(ref.get("group")), str(ref.get("kind"))))
            if source is not None:
                spec["priorityClassSource"] = source
                spec["priorityClassName"] = ref.get("name", "")
        for pod_set in spec.get("podSets") or []:
            request = _section(pod_set, "topologyRequest") if isinstance(pod_set, dict) else None
            if request is not None:
                request.pop("podsetSliceRequiredTopologyConstraints", None)
    status = _section(obj, "status")
    if status is not None:
        status.pop("preemptionGates", None)
        _rename(status, "accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds")
        _each_topology_assignment(status, _slices_to_domains)


def _each_topology_assignment(status: Obj, change: Callable[[Obj], None]) -> None:
    admission = _section(status, "admission")
    for assignment in (admission or {}).get("podSetAssignments") or []:
        topology = _section(assignment, "topologyAssignment") if isinstance(assignment, dict) else None
        if topology is not None:
            change(topology)


def _slices_to_domains(topology: Obj) -> None:
    """v1beta2's compressed slices expanded to v1beta1's one entry per domain, in order.

    Decoding as Kueue's pkg/util/tas (InternalSeqFrom): per slice, ``domainCount`` domains; each level's value
    is ``universal`` or ``prefix + roots[i] + suffix``; the pod count is ``universal`` or ``individual[i]``.
    """
    levels = topology.get("levels") or []
    domains = []
    for piece in topology.pop("slices", None) or []:
        per_level = piece.get("valuesPerLevel") or []
        counts = piece.get("podCounts") or {}
        for i in range(int(piece.get("domainCount") or 0)):
            values = [_value_at(per_level[level], i) for level in range(len(levels))]
            count = counts["universal"] if counts.get("universal") is not None else counts["individual"][i]
            domains.append({"values": values, "count": count})
    topology["domains"] = domains


def _value_at(values: Mapping[str, Any], index: int) -> str:
    if values.get("universal") is not None:
        return str(values["universal"])
    individual = values.get("individual") or {}
    return f"{individual.get('prefix') or ''}{individual['roots'][index]}{individual.get('suffix') or ''}"


def _domains_to_slices(topology: Obj) -> None:
    """v1beta1's domains as one v1beta2 slice: a level or count that is the same everywhere is ``universal``.

    A valid encoding of the same assignment; Kueue's encoder may further split it into prefix runs, which
    readers decode to the same domains.
    """
    domains = topology.pop("domains", None) or []
    if not domains:
        topology.pop("slices", None)
        return
    levels = len(topology.get("levels") or [])
    per_level = []
    for level in range(levels):
        values = [d["values"][level] for d in domains]
        if len(set(values)) == 1:
            per_level.append({"universal": values[0]})
        else:
            per_level.append({"individual": {"roots": values}})
    counts = [d.get("count", 0) for d in domains]
    pod_counts = {"universal": counts[0]} if len(set(counts)) == 1 else {"individual": counts}
    topology["slices"] = [{"domainCount": len(domains), "valuesPerLevel": per_level, "podCounts": pod_counts}]


# ---- AdmissionCheck ----------------------------------------------------------------------------------------
def _admission_check_up(obj: Obj) -> None:
    spec = _section(obj, "spec")
    if spec is not None:
        spec.pop("retryDelayMinutes", None)


_UP: dict[str, Callable[[Obj], None]] = {
    "ClusterQueue": _cluster_queue_up,
    "LocalQueue": _local_queue_up,
    "Workload": _workload_up,
    "AdmissionCheck": _admission_check_up,
}
_DOWN: dict[str, Callable[[Obj], None]] = {
    "ClusterQueue": _cluster_queue_down,
    "LocalQueue": _local_queue_down,
    "Workload": _workload_down,
}
