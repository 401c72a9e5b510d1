"""When a pending Workload should start: the live cohort replayed through ``simulate`` (the scheduler core).

The cluster's own objects go in as they are (ResourceFlavors, Cohorts, the ClusterQueues of the Workload's
cohort and their LocalQueues, Namespaces when readable) with the cohort's admitted and pending Workloads. The
replay starts at the oldest pending Workload's creation, so queue order (priority, then creation) is the
cluster's: admitted Workloads hold their quota from the start, pending ones arrive when they were created.

How long a Workload runs is not in the cluster. The one statement of it is its
``spec.maximumExecutionTimeSeconds`` (Kueue evicts a Workload that runs longer), so an admitted Workload is
taken to run until that limit from its admission, and a pending one for that long once admitted; one without
it runs for an unknown time, and when the Workload asked about can only start after one of those finishes,
the estimate says "unknown" rather than invent a duration. Admission checks are taken to pass at once and
evicted Workloads keep their creation order (Kueue orders them by eviction time), as ``simulate`` does.
Pure: the caller reads the cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kueue_webhook.kubectl_kueue.columns import condition, workload_cluster_queue
from kueue_webhook.kubectl_kueue.table import parse_time
from kueue_webhook.simulate import (
    ARRIVAL_ANNOTATION,
    RUNTIME_ANNOTATION,
    Result,
    SimulationError,
    replay,
    scenario_from_documents,
)

__all__ = [
    "ASSUMPTION",
    "Estimate",
    "LiveReplay",
    "LiveState",
    "cohort_members",
    "estimate_start",
    "limit",
    "live_replay",
    "live_workloads",
    "replay_live",
]

JSON = Mapping[str, Any]
ASSUMPTION = (
    "admitted Workloads run until their spec.maximumExecutionTimeSeconds after admission, pending ones for "
    "that long once admitted; a Workload without it runs for an unknown time"
)


@dataclass(frozen=True, slots=True)
class LiveState:
    """What was read from the cluster (every list may be partial: see ``notes``)."""

    cluster_queues: Sequence[JSON]
    local_queues: Sequence[JSON]
    resource_flavors: Sequence[JSON]
    cohorts: Sequence[JSON]
    workloads: Sequence[JSON]
    #: namespace -> labels; None when Namespaces could not be read (selectors are then opened)
    namespaces: Mapping[str, Mapping[str, str]] | None


@dataclass(frozen=True, slots=True)
class Estimate:
    """``start`` when known; otherwise ``unknown`` says why. The counts say what the replay rested on."""

    start: datetime | None
    unknown: str = ""
    assumption: str = ASSUMPTION
    #: how many admitted / pending Workloads of the cohort were replayed, and how many run for an unknown time
    admitted: int = 0
    pending: int = 0
    without_limit: int = 0


def _meta(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _name(obj: JSON) -> str:
    return str(_meta(obj).get("name", ""))


def _root(cohort: str, parents: Mapping[str, str]) -> str:
    seen = set()
    while cohort in parents and parents[cohort] and cohort not in seen:
        seen.add(cohort)
        cohort = parents[cohort]
    return cohort


def cohort_members(cluster_queue: str, state: LiveState) -> set[str]:
    """The ClusterQueues that share quota with ``cluster_queue``: its cohort tree's (itself when alone)."""
    parents = {_name(c): str((c.get("spec") or {}).get("parentName") or "") for c in state.cohorts}
    cohort_of = {
        _name(cq): str((cq.get("spec") or {}).get("cohortName") or "") for cq in state.cluster_queues
    }
    own = cohort_of.get(cluster_queue, "")
    if not own:
        return {cluster_queue}
    root = _root(own, parents)
    return {name for name, cohort in cohort_of.items() if cohort and _root(cohort, parents) == root}


def limit(workload: JSON) -> float | None:
    value = (workload.get("spec") or {}).get("maximumExecutionTimeSeconds")
    return float(value) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _admitted_at(workload: JSON) -> datetime | None:
    for kind in ("Admitted", "QuotaReserved"):
        cond = condition(workload, kind)
        if cond is not None and cond.get("status") == "True":
            return parse_time(cond.get("lastTransitionTime"))
    return None


def _is_true(workload: JSON, kind: str) -> bool:
    cond = condition(workload, kind)
    return cond is not None and cond.get("status") == "True"


def _stamped(workload: JSON, arrival: float, runtime: float | None) -> dict[str, Any]:
    meta = dict(_meta(workload))
    annotations = dict(meta.get("annotations") or {})
    annotations[ARRIVAL_ANNOTATION] = f"{max(arrival, 0.0):.3f}"
    if runtime is not None:
        annotations[RUNTIME_ANNOTATION] = f"{max(runtime, 0.0):.3f}"
    meta["annotations"] = annotations
    meta.pop("managedFields", None)
    return {**workload, "metadata": meta}


def _queue_document(obj: JSON, *, open_selector: bool) -> dict[str, Any]:
    meta = {k: v for k, v in _meta(obj).items() if k in ("name", "namespace", "labels")}
    spec = dict(obj.get("spec") or {})
    if obj.get("kind") == "ClusterQueue":
        if open_selector:
            spec["namespaceSelector"] = {}
        # checks are taken to pass at once, and the AdmissionChecks are not read: a ClusterQueue naming a
        # check the replay does not have would otherwise be inactive there
        spec.pop("admissionChecks", None)
        spec.pop("admissionChecksStrategy", None)
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": meta, "spec": spec}


@dataclass(frozen=True, slots=True)
class LiveReplay:
    """The live state as ``simulate`` input: documents, the instant the replay's clock starts at (the
    oldest pending Workload's creation, or now), and which Workloads went in admitted and pending."""

    documents: list[dict[str, Any]]
    base: datetime
    admitted: list[JSON]
    pending: list[JSON]
    #: where ``now`` is on the replay's clock, in seconds
    elapsed: float


def live_workloads(state: LiveState, members: Collection[str] | None) -> list[JSON]:
    """The Workloads that hold or wait for quota (not finished, not being deleted), of ``members`` (the
    ClusterQueues' names; every one when None)."""
    local_queues = {(str(_meta(q).get("namespace", "")), _name(q)): q for q in state.local_queues}
    out = []
    for workload in state.workloads:
        if _is_true(workload, "Finished") or _meta(workload).get("deletionTimestamp"):
            continue
        if members is None or workload_cluster_queue(workload, local_queues) in members:
            out.append(workload)
    return out


def live_replay(
    state: LiveState,
    workloads: Sequence[JSON],
    *,
    members: Collection[str] | None,
    now: datetime,
    duration: Callable[[JSON], float | None],
) -> LiveReplay:
    """``workloads`` on the queues of ``members`` (every ClusterQueue when None) as replay documents.

    Admitted Workloads (QuotaReserved) go in at the start holding their admission; one runs ``duration``
    from its admission (what is left of it from now on; None: it never finishes). Pending ones arrive when
    they were created and run ``duration`` once admitted."""
    admitted = [w for w in workloads if _is_true(w, "QuotaReserved")]
    pending = [w for w in workloads if not _is_true(w, "QuotaReserved")]
    created = [parse_time(_meta(w).get("creationTimestamp")) or now for w in pending]
    base = min(created, default=now)
    elapsed = (now - base).total_seconds()
    documents: list[dict[str, Any]] = []
    open_selectors = state.namespaces is None
    if state.namespaces is not None:
        for name, labels in state.namespaces.items():
            documents.append(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
            )
    documents += [_queue_document(f, open_selector=False) for f in state.resource_flavors]
    documents += [_queue_document(c, open_selector=False) for c in state.cohorts]
    documents += [
        _queue_document(q, open_selector=open_selectors)
        for q in state.cluster_queues
        if members is None or _name(q) in members
    ]
    documents += [
        _queue_document(q, open_selector=False)
        for q in state.local_queues
        if members is None or str((q.get("spec") or {}).get("clusterQueue", "")) in members
    ]
    for workload in admitted:
        runs = duration(workload)
        since = _admitted_at(workload) or now
        runtime = None if runs is None else elapsed + runs - (now - since).total_seconds()
        documents.append(_stamped(workload, 0.0, runtime))
    for workload, moment in zip(pending, created, strict=True):
        documents.append(_stamped(workload, (moment - base).total_seconds(), duration(workload)))
    return LiveReplay(documents, base, admitted, pending, elapsed)


def replay_live(live: LiveReplay) -> Result:
    """Replay the documents (raises SimulationError or ValueError for a state that cannot be replayed)."""
    return replay(scenario_from_documents(_sources(live.documents)), resolution=1.0)


def estimate_start(target: JSON, state: LiveState, *, now: datetime) -> Estimate:
    """When ``target`` (a pending Workload) should be admitted, replaying its cohort from the live state."""
    local_queues = {(str(_meta(q).get("namespace", "")), _name(q)): q for q in state.local_queues}
    own_queue = workload_cluster_queue(target, local_queues)
    if not own_queue:
        return Estimate(None, unknown="its LocalQueue or ClusterQueue could not be read")
    members = cohort_members(own_queue, state)
    cohort_workloads = live_workloads(state, members)
    target_key = f"{_meta(target).get('namespace', '')}/{_name(target)}"
    if not any(f"{_meta(w).get('namespace', '')}/{_name(w)}" == target_key for w in cohort_workloads):
        cohort_workloads.append(target)
    live = live_replay(state, cohort_workloads, members=members, now=now, duration=limit)
    running_unknown = sum(limit(w) is None for w in live.admitted)
    pending_unknown = sum(limit(w) is None and _meta(w).get("name") != _name(target) for w in live.pending)
    without_limit = running_unknown + pending_unknown
    counts = (len(live.admitted), len(live.pending), without_limit)
    try:
        result = replay_live(live)
    except (SimulationError, ValueError) as exc:
        return Estimate(None, f"the live state could not be replayed: {exc}", ASSUMPTION, *counts)
    record = result.records.get(target_key)
    if record is None or record.admitted_at is None:
        reason = (
            f"{running_unknown} admitted and {pending_unknown} other pending Workload(s) of the cohort have "
            "no maximumExecutionTimeSeconds, so how long they run is unknown, and it can only start after "
            "some of them finish"
            if without_limit
            else "the replay never admits it with the quota as it is (see the reason above)"
        )
        return Estimate(None, reason, ASSUMPTION, *counts)
    start = live.base + timedelta(seconds=record.admitted_at)
    return Estimate(max(start, now), "", ASSUMPTION, *counts)


def _sources(documents: Iterable[dict[str, Any]]) -> Iterable[tuple[str, int, Any]]:
    for index, doc in enumerate(documents):
        yield "cluster", index, doc
