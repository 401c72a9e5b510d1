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
* MultiKueueCluster: v1beta1 ``spec.kubeConfig`` and ``spec.clusterProfileRef`` <-> v1beta2
  ``spec.clusterSource.kubeConfig`` and ``spec.clusterSource.clusterProfileRef`` (a v1beta1 kubeConfig with
  an empty location is dropped, as Kueue's ``Convert_v1beta1_MultiKueueClusterSpec`` does).
* MultiKueueConfig: v1beta2-only ``spec.quotaManagement`` dropped (its CRD converts without the webhook).
* ResourceFlavor, Cohort, WorkloadPriorityClass: same fields, only ``apiVersion`` changes.

Kueue keeps no annotation for what the other version cannot hold: it drops it (Workload_conversion.go says
so of the topology constraints). We do the same, so an object written through v1beta1 looks exactly as it
would under Kueue. Everything a v1beta2 object can say in v1beta1 survives v1beta2 -> v1beta1 -> v1beta2
unchanged. The functions are pure: a dict in, a new dict out, the input untouched.

v1beta2's topology slices are compressed: a 600-byte slice saying ``domainCount: 1000000`` with universal
values stands for a million v1beta1 domains. Before expanding anything, :func:`expanded_domains` checks each
slice against the Workload CRD's rules (``domainCount`` equal to the length of every individual list, those
lists at most :data:`MAX_DOMAINS` long, ``valuesPerLevel`` one per level) and counts what the expansion
would produce, so a caller can refuse an expansion beyond its budget before paying for it; the expansion
itself refuses more than :data:`MAX_DOMAINS` domains per assignment (the most a v1beta2 slice can list one
by one, so every assignment Kueue writes converts).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from itertools import repeat
from typing import Any

import orjson

from kueue_webhook.api.bounds import shown
from kueue_webhook.api.topology_assignment import (
    MAX_DOMAINS,
    MAX_LEVELS,
    TooManyDomains,
    TopologyAssignmentError,
    all_of_type,
    checked_slices,
    domain_objects,
    encode_rows,
)
from kueue_webhook.api.topology_text import Slice, domains_size, domains_text

__all__ = [
    "KINDS",
    "MAX_DOMAINS",
    "V1BETA1",
    "V1BETA2",
    "ConversionError",
    "convert",
    "convert_for_answer",
    "expanded_domains",
    "expanded_size",
    "expansion",
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
        "Topology",
        "MultiKueueCluster",
        "MultiKueueConfig",
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
    return _convert(obj, desired_api_version, for_answer=False)


def convert_for_answer(obj: Any, desired_api_version: str) -> Obj:
    """:func:`convert` of an object the caller has just decoded and serialises with orjson right after (a
    ConversionReview's): converted in place rather than copied, and expanded v1beta1 topology domains
    written as their JSON text (an ``orjson.Fragment``, :mod:`kueue_webhook.api.topology_text`): the same
    bytes,
    a tenth of the time for Kueue's largest assignments."""
    return _convert(obj, desired_api_version, for_answer=True)


def _convert(obj: Any, desired_api_version: str, *, for_answer: bool) -> Obj:
    if not isinstance(obj, Mapping):
        raise ConversionError(f"object must be a JSON object, got {type(obj).__name__}")
    kind = obj.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        raise ConversionError(f"kind {shown(kind)} is not a {GROUP} kind this webhook converts")
    source = obj.get("apiVersion")
    if source not in (V1BETA1, V1BETA2):
        raise ConversionError(f"{kind} has apiVersion {shown(source)}; expected {V1BETA1} or {V1BETA2}")
    if desired_api_version not in (V1BETA1, V1BETA2):
        raise ConversionError(
            f"desiredAPIVersion {shown(desired_api_version)} is not served; expected {V1BETA1} or {V1BETA2}"
        )
    out = obj if for_answer and isinstance(obj, dict) else _copy(obj)
    if source == desired_api_version:
        return out
    if desired_api_version == V1BETA2:
        _to_v1beta2(out)
    else:
        _to_v1beta1(out, for_answer)
    return out


def to_v1beta2(obj: Mapping[str, Any]) -> Obj:
    """A v1beta1 Kueue object as v1beta2."""
    out = _copy(obj)
    _to_v1beta2(out)
    return out


def to_v1beta1(obj: Mapping[str, Any]) -> Obj:
    """A v1beta2 Kueue object as v1beta1."""
    out = _copy(obj)
    _to_v1beta1(out, False)
    return out


def _to_v1beta2(out: Obj) -> None:
    out["apiVersion"] = V1BETA2
    _UP.get(str(out.get("kind")), _same)(out)


def _to_v1beta1(out: Obj, domains_as_text: bool) -> None:
    out["apiVersion"] = V1BETA1
    if out.get("kind") == "Workload":
        _workload_down(out, domains_as_text)
    else:
        _DOWN.get(str(out.get("kind")), _same)(out)


def _copy(obj: Mapping[str, Any]) -> Obj:
    """A deep copy; through orjson when the object is plain JSON (ten times faster than deepcopy)."""
    try:
        copied = orjson.loads(orjson.dumps(obj))
    except TypeError:  # not plain JSON (a Mapping type orjson does not know, a set...): copy it slowly
        return copy.deepcopy(dict(obj))
    return copied if isinstance(copied, dict) else copy.deepcopy(dict(obj))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _same(_: Obj) -> None:
    """ResourceFlavor, Cohort, WorkloadPriorityClass, Topology: identical fields in both versions."""


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


def _workload_down(obj: Obj, domains_as_text: bool = False) -> None:
    spec = _section(obj, "spec")
    if spec is not None:
        spec.pop("preemptionGates", None)
        ref = spec.pop("priorityClassRef", None)
        if isinstance(ref, dict):
            source = _REF_TO_SOURCE.get((str(ref.get("group")), str(ref.get("kind"))))
            if source is not None:
                spec["priorityClassSource"] = source
                spec["priorityClassName"] = ref.get("name", "")
        for pod_set in _list(spec.get("podSets")):
            request = _section(pod_set, "topologyRequest") if isinstance(pod_set, dict) else None
            if request is not None:
                request.pop("podsetSliceRequiredTopologyConstraints", None)
    status = _section(obj, "status")
    if status is not None:
        status.pop("preemptionGates", None)
        _rename(status, "accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds")
        expand = _slices_to_domain_text if domains_as_text else _slices_to_domains
        _each_topology_assignment(status, expand)


def _each_topology_assignment(status: Obj, change: Callable[[str, Obj], None]) -> None:
    admission = _section(status, "admission")
    for index, assignment in enumerate(_list((admission or {}).get("podSetAssignments"))):
        topology = _section(assignment, "topologyAssignment") if isinstance(assignment, dict) else None
        if topology is not None:
            change(f"status.admission.podSetAssignments[{index}].topologyAssignment", topology)


def _topology_assignments(obj: Mapping[str, Any]) -> list[tuple[str, Obj]]:
    status = obj.get("status")
    found: list[tuple[str, Obj]] = []
    if isinstance(status, dict):
        _each_topology_assignment(status, lambda where, topology: found.append((where, topology)))
    return found


def expanded_domains(obj: Mapping[str, Any], desired_api_version: str) -> int:
    """How many v1beta1 topology domains converting ``obj`` to ``desired_api_version`` writes out: the sum
    of the slices' ``domainCount`` of a v1beta2 Workload read as v1beta1, else 0.

    Checks every slice's shape first (raising :class:`ConversionError` naming the field), in C-speed passes
    over its lists, so a caller can refuse a review before expanding anything.
    """
    return expansion(obj, desired_api_version)[0]


def expanded_size(obj: Mapping[str, Any], desired_api_version: str) -> int:
    """The bytes of JSON the v1beta1 domains of :func:`expanded_domains` take (exactly: commas, brackets and
    escapes included)."""
    return expansion(obj, desired_api_version)[1]


def expansion(obj: Mapping[str, Any], desired_api_version: str) -> tuple[int, int]:
    """:func:`expanded_domains` and :func:`expanded_size` at once, checking the slices once."""
    if not _expands(obj, desired_api_version):
        return 0, 0
    domains = size = 0
    for where, topology in _topology_assignments(obj):
        pieces = _checked_slices(where, topology)
        domains += sum(piece[0] for piece in pieces)
        size += domains_size(pieces)
    return domains, size


def _expands(obj: Mapping[str, Any], desired_api_version: str) -> bool:
    return (
        isinstance(obj, Mapping)
        and obj.get("kind") == "Workload"
        and obj.get("apiVersion") == V1BETA2
        and desired_api_version == V1BETA1
    )


def _checked_slices(where: str, topology: Obj) -> list[Slice]:
    """The slices of a v1beta2 topology assignment, refused unless shaped as the Workload CRD requires
    (:func:`kueue_webhook.api.topology_assignment.checked_slices`), refused as a :class:`ConversionError`."""
    try:
        return checked_slices(topology, where)
    except TooManyDomains as error:
        raise ConversionError(
            f"{error} and this webhook expands; read this Workload as kueue.x-k8s.io/v1beta2"
        ) from None
    except TopologyAssignmentError as error:
        raise ConversionError(str(error)) from None


def _slices_to_domains(where: str, topology: Obj) -> None:
    """v1beta2's compressed slices expanded to v1beta1's one entry per domain, in order (decoded as
    Kueue's pkg/util/tas InternalSeqFrom, :mod:`kueue_webhook.api.topology_assignment`)."""
    domains: list[Obj] = []
    for piece in _checked_slices(where, topology):
        domains.extend(domain_objects(piece))
    topology.pop("slices", None)
    topology["domains"] = domains


def _slices_to_domain_text(where: str, topology: Obj) -> None:
    """:func:`_slices_to_domains`, the domains written as their JSON text."""
    text = domains_text(_checked_slices(where, topology))
    topology.pop("slices", None)
    topology["domains"] = orjson.Fragment(text)


def _domains_to_slices(where: str, topology: Obj) -> None:
    """v1beta1's domains as one v1beta2 slice (:func:`kueue_webhook.api.topology_assignment.encode_rows`).

    A valid encoding of the same assignment; Kueue's encoder may further split it into prefix runs, which
    readers decode to the same domains.
    """
    domains = topology.pop("domains", None) or []
    if not domains:
        topology.pop("slices", None)
        return
    levels = topology.get("levels")
    if not isinstance(levels, list) or len(levels) > MAX_LEVELS:
        raise ConversionError(f"{where}.levels must be a list of at most {MAX_LEVELS} strings")
    if not isinstance(domains, list):
        raise ConversionError(f"{where}.domains must be a list")
    # each pass below runs at C speed: a v1beta1 list of 60,000 domains converts in milliseconds
    rows: list[Any] | None = None
    if all_of_type(domains, dict):
        rows = list(map(dict.get, domains, repeat("values")))
    if rows is None or not all_of_type(rows, list) or min(map(len, rows)) < len(levels):
        for index, domain in enumerate(domains):
            values = domain.get("values") if isinstance(domain, dict) else None
            if not isinstance(values, list) or len(values) < len(levels):
                raise ConversionError(
                    f"{where}.domains[{index}].values must have a value for each of the levels"
                )
        rows = [domain["values"] for domain in domains]
    counts = list(map(dict.get, domains, repeat("count"), repeat(0)))
    topology["slices"] = encode_rows(levels, rows, counts)["slices"]


# ---- AdmissionCheck ----------------------------------------------------------------------------------------
def _admission_check_up(obj: Obj) -> None:
    spec = _section(obj, "spec")
    if spec is not None:
        spec.pop("retryDelayMinutes", None)


# ---- MultiKueue --------------------------------------------------------------------------------------------
def _multikueue_cluster_up(obj: Obj) -> None:
    spec = _section(obj, "spec")
    if spec is None:
        return
    source: Obj = {}
    kube = spec.pop("kubeConfig", None)
    if isinstance(kube, dict) and kube.get("location"):
        source["kubeConfig"] = kube
    profile = spec.pop("clusterProfileRef", None)
    if profile is not None:
        source["clusterProfileRef"] = profile
    spec["clusterSource"] = source


def _multikueue_cluster_down(obj: Obj) -> None:
    spec = _section(obj, "spec")
    if spec is None:
        return
    source = spec.pop("clusterSource", None)
    if isinstance(source, dict):
        for key in ("kubeConfig", "clusterProfileRef"):
            if source.get(key) is not None:
                spec[key] = source[key]


def _multikueue_config_down(obj: Obj) -> None:
    spec = _section(obj, "spec")
    if spec is not None:
        spec.pop("quotaManagement", None)


_UP: dict[str, Callable[[Obj], None]] = {
    "MultiKueueCluster": _multikueue_cluster_up,
    "ClusterQueue": _cluster_queue_up,
    "LocalQueue": _local_queue_up,
    "Workload": _workload_up,
    "AdmissionCheck": _admission_check_up,
}
_DOWN: dict[str, Callable[[Obj], None]] = {
    "MultiKueueCluster": _multikueue_cluster_down,
    "MultiKueueConfig": _multikueue_config_down,
    "ClusterQueue": _cluster_queue_down,
    "LocalQueue": _local_queue_down,
    "Workload": _workload_down,
}
