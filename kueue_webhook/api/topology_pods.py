"""Which gated pod of a topology-aware Workload goes to which domain: the decision half of Kueue's TAS
topology ungater (pkg/controller/tas/topology_ungater.go), pure.

A pod of a pod set whose admission carries a ``topologyAssignment`` is created behind the scheduling gate
``kueue.x-k8s.io/topology`` and labelled with its pod set (``kueue.x-k8s.io/podset``), annotated with its
Workload (``kueue.x-k8s.io/workload``). Once the Workload is admitted, each gated pod is given the node
selector of one assigned domain (every level of the assignment: with a hostname lowest level Kueue writes
only the hostname) and its gate removed; a domain never gets more pods than its count.

Which domain: Kueue's rank-based ordering where the pod set says how to read a pod's rank
(``topologyRequest.podIndexLabel``, and for a JobSet ``subGroupIndexLabel``/``subGroupCount``): the
domains laid out in order, one slot per pod, and the pod of rank r takes slot r, so neighbouring ranks land
on neighbouring hosts. When ranks cannot be read (a pod without the label, ranks out of range or colliding,
an already ungated pod whose node selector disagrees with its rank), the greedy order: pods already
ungated are counted against the domain their node selector names, and the gated pods, oldest first, fill
the domains in assignment order up to their counts.

Everything is derived from the pods as they are (their gates and node selectors), so a restart or a new
leader computes the same placement and ungates no pod twice. Pods on a node the Workload lists as
unhealthy stay gated until the assignment names a replacement (Kueue's ungater does the same).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kueue_webhook.api.topology_assignment import Domain
from kueue_webhook.api.topology_request import (
    POD_INDEX_LABELS,
    PREFERRED_ANNOTATION,
    REQUIRED_ANNOTATION,
    SLICE_CONSTRAINTS_ANNOTATION,
    SLICE_REQUIRED_ANNOTATION,
    UNCONSTRAINED_ANNOTATION,
)

__all__ = [
    "HOSTNAME_LABEL",
    "PODSET_LABEL",
    "POD_INDEX_OFFSET_ANNOTATION",
    "TOPOLOGY_GATE",
    "UNCONSTRAINED_ANNOTATION",
    "WORKLOAD_ANNOTATION",
    "Placement",
    "PodView",
    "RankSource",
    "TopologyStart",
    "is_topology_pod",
    "node_selector",
    "owner_rank_source",
    "place_gated_pods",
    "pod_view",
    "rank_source",
    "topology_starts",
]

JSON = dict[str, Any]

#: the scheduling gate holding a pod until its domain's node selector is set (Kueue's TopologySchedulingGate)
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
#: pod-template label naming the pod set a pod belongs to (Kueue's constants.PodSetLabel)
PODSET_LABEL = "kueue.x-k8s.io/podset"
#: pod-template annotation naming the admitted Workload (Kueue's WorkloadAnnotation)
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
#: the first rank of a replica's pods, when it is not 0 (Kueue's PodIndexOffsetAnnotation)
POD_INDEX_OFFSET_ANNOTATION = "kueue.x-k8s.io/pod-index-offset"
HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass(frozen=True, slots=True)
class RankSource:
    """Where a pod's rank is read (Kueue's PodSetTopologyRequest podIndexLabel / subGroup fields)."""

    pod_index_label: str
    sub_group_index_label: str | None = None
    sub_group_count: int | None = None


@dataclass(frozen=True, slots=True)
class PodView:
    """What placement reads of one pod."""

    name: str
    gated: bool
    node_selector: Mapping[str, str]
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    #: creation time, for the greedy order (RFC 3339 text sorts in time order)
    created: str = ""


@dataclass(frozen=True, slots=True)
class Placement:
    """Ungate ``pod``, giving it ``node_selector`` (merged into what it has)."""

    pod: str
    node_selector: dict[str, str]


def _str_map(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, str)}


def _section(obj: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = obj.get(name)
    return value if isinstance(value, Mapping) else {}


#: any of these on a pod makes it topology-aware (Kueue's IsTAS and IsExplicitTAS, pkg/util/tas)
_TOPOLOGY_ANNOTATIONS = (
    PREFERRED_ANNOTATION,
    REQUIRED_ANNOTATION,
    SLICE_REQUIRED_ANNOTATION,
    SLICE_CONSTRAINTS_ANNOTATION,
    UNCONSTRAINED_ANNOTATION,
)


def is_topology_pod(pod: Mapping[str, Any]) -> bool:
    """Whether Kueue's topology ungater looks at ``pod`` (its ``IsTAS``): a topology annotation of its pod
    set's, or the unconstrained one a start puts on a pod set placed by topology implicitly, whatever its
    value."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return any(name in annotations for name in _TOPOLOGY_ANNOTATIONS)


def pod_view(pod: Mapping[str, Any]) -> PodView:
    meta = _section(pod, "metadata")
    spec = _section(pod, "spec")
    gates = spec.get("schedulingGates")
    gates = gates if isinstance(gates, list) else []
    gated = any(isinstance(g, Mapping) and g.get("name") == TOPOLOGY_GATE for g in gates)
    return PodView(
        name=str(meta.get("name") or ""),
        gated=gated,
        node_selector=_str_map(spec.get("nodeSelector")),
        labels=_str_map(meta.get("labels")),
        annotations=_str_map(meta.get("annotations")),
        created=str(meta.get("creationTimestamp") or ""),
    )


def rank_source(pod_set: Mapping[str, Any]) -> RankSource | None:
    """The rank source a Workload's pod set names in ``topologyRequest`` (None: it names none)."""
    request = pod_set.get("topologyRequest")
    if not isinstance(request, Mapping):
        return None
    label = request.get("podIndexLabel")
    if not isinstance(label, str) or not label:
        return None
    sub_label = request.get("subGroupIndexLabel")
    sub_count = request.get("subGroupCount")
    return RankSource(
        label,
        sub_label if isinstance(sub_label, str) and sub_label else None,
        sub_count if type(sub_count) is int else None,
    )


def owner_rank_source(api_version: str, kind: str) -> RankSource | None:
    """The rank source Kueue's integration for an owner of ``api_version``/``kind`` writes into a pod set's
    ``topologyRequest`` (a JobSet's needs its replica counts, so only its Workload can say it)."""
    group = api_version.rpartition("/")[0]
    label = POD_INDEX_LABELS.get((group, kind))
    return RankSource(label) if label is not None else None


@dataclass(frozen=True, slots=True)
class TopologyStart:
    """What starting a pod set placed by topology puts on its pods (Kueue's PodSetInfo of a topology
    assignment): the pod set label, the Workload annotation, the topology gate and, for a pod set without
    a topology request of its own, the unconstrained annotation."""

    workload: str
    pod_set: str
    implicit: bool = False

    def labels(self) -> dict[str, str]:
        return {PODSET_LABEL: self.pod_set}

    def annotations(self) -> dict[str, str]:
        marks = {WORKLOAD_ANNOTATION: self.workload}
        if self.implicit:
            marks[UNCONSTRAINED_ANNOTATION] = "true"
        return marks


_REQUEST_FIELDS = ("required", "preferred", "unconstrained")


def topology_starts(workload: Mapping[str, Any]) -> dict[str, TopologyStart]:
    """By pod set name, the pod sets of ``workload``'s admission placed by topology (Kueue's podset
    FromAssignment with a topologyAssignment)."""
    name = str((workload.get("metadata") or {}).get("name") or "")
    pod_sets = {
        str(p.get("name") or "main"): p
        for p in (workload.get("spec") or {}).get("podSets") or []
        if isinstance(p, Mapping)
    }
    admission = (workload.get("status") or {}).get("admission") or {}
    out: dict[str, TopologyStart] = {}
    for assignment in admission.get("podSetAssignments") or []:
        if not isinstance(assignment, Mapping) or not isinstance(
            assignment.get("topologyAssignment"), Mapping
        ):
            continue
        set_name = str(assignment.get("name") or "main")
        request = (pod_sets.get(set_name) or {}).get("topologyRequest")
        explicit = isinstance(request, Mapping) and any(request.get(f) is not None for f in _REQUEST_FIELDS)
        out[set_name] = TopologyStart(name, set_name, implicit=not explicit)
    return out


def node_selector(levels: Sequence[str], values: Sequence[str]) -> dict[str, str]:
    """The node selector of a domain: each level's node label set to the domain's value at that level."""
    return dict(zip(levels, values, strict=True))


class _NoRanks(Exception):
    """Ranks cannot be used for this pod set; place greedily."""


def _uint_below(labels: Mapping[str, str], key: str, bound: int) -> int:
    """Kueue's ReadUIntFromLabelBelowBound: a decimal below ``bound``, or no ranks."""
    text = labels.get(key)
    if text is None or not text.isdigit() or not text.isascii():
        raise _NoRanks
    value = int(text)
    if value >= bound:
        raise _NoRanks
    return value


def _ranks(pods: Sequence[PodView], source: RankSource, size: int, offset: int) -> dict[int, PodView]:
    """Kueue's readRanksForLabels: each pod's rank, unique and in ``[0, size)``."""
    single_job = size
    if source.sub_group_index_label is not None:
        if source.sub_group_count is None or source.sub_group_count <= 0:
            raise _NoRanks
        single_job = size // source.sub_group_count
    ranks: dict[int, PodView] = {}
    for pod in pods:
        index = _uint_below(pod.labels, source.pod_index_label, size + offset)
        rank = index - offset
        if source.sub_group_index_label is not None and source.sub_group_count is not None:
            job = _uint_below(pod.labels, source.sub_group_index_label, source.sub_group_count)
            if index >= single_job:
                raise _NoRanks
            rank = index + job * single_job - offset
        if not 0 <= rank < size or rank in ranks:
            raise _NoRanks
        ranks[rank] = pod
    return ranks


def _offset(pods: Sequence[PodView]) -> int:
    """Kueue reads the offset of a replica from its first pod; a malformed one leaves the pods gated."""
    if not pods:
        return 0
    text = pods[0].annotations.get(POD_INDEX_OFFSET_ANNOTATION)
    if text is None:
        return 0
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{POD_INDEX_OFFSET_ANNOTATION} {text!r} is not a number") from None


def _by_rank(
    levels: Sequence[str], domains: Sequence[Domain], pods: Sequence[PodView], source: RankSource, size: int
) -> list[tuple[PodView, Domain]] | None:
    slots = [domain for domain in domains for _ in range(max(domain.count, 0))]
    try:
        ranks = _ranks(pods, source, size, _offset(pods))
    except _NoRanks:
        return None
    for rank, pod in ranks.items():
        if rank >= len(slots):
            return None  # the assignment holds fewer pods than the pod set: Kueue falls back to greedy
        if (
            not pod.gated
            and tuple(pod.node_selector.get(level, "") for level in levels) != slots[rank].values
        ):
            return None  # an ungated pod sits elsewhere than its rank says: ranks no longer describe it
    return [(pod, slots[rank]) for rank, pod in sorted(ranks.items()) if pod.gated]


def _greedy(
    levels: Sequence[str], domains: Sequence[Domain], pods: Sequence[PodView]
) -> list[tuple[PodView, Domain]]:
    placed: dict[tuple[str, ...], int] = {}
    gated: list[PodView] = []
    for pod in pods:
        if pod.gated:
            gated.append(pod)
        else:
            values = tuple(pod.node_selector.get(level, "") for level in levels)
            placed[values] = placed.get(values, 0) + 1
    gated.sort(key=lambda pod: (pod.created, pod.name))
    out: list[tuple[PodView, Domain]] = []
    for domain in domains:
        room = domain.count - placed.get(domain.values, 0)
        while room > 0 and len(out) < len(gated):
            out.append((gated[len(out)], domain))
            room -= 1
    return out


def place_gated_pods(
    levels: Sequence[str],
    domains: Sequence[Domain],
    pods: Iterable[PodView],
    *,
    size: int,
    ranks: RankSource | None,
    unhealthy_nodes: Iterable[str] = (),
) -> list[Placement]:
    """The gated pods of one pod set to ungate now, each with its domain's node selector.

    ``pods``: the pod set's pods that are not terminated (gated and ungated); ``size``: the pod set's
    admitted count; ``ranks``: where to read a pod's rank, None for greedy placement. Pods whose domain is
    a node in ``unhealthy_nodes`` stay gated. Raises ValueError for a malformed
    ``kueue.x-k8s.io/pod-index-offset`` (Kueue leaves the pod set gated and reports it).
    """
    pods = list(pods)
    chosen = _by_rank(levels, domains, pods, ranks, size) if ranks is not None else None
    if chosen is None:
        chosen = _greedy(levels, domains, pods)
    unhealthy = set(unhealthy_nodes)
    hostname_level = bool(levels) and levels[-1] == HOSTNAME_LABEL
    return [
        Placement(pod.name, node_selector(levels, domain.values))
        for pod, domain in chosen
        if not (hostname_level and domain.values[-1] in unhealthy)
    ]
