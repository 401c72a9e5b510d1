"""What-if on the live state: the cluster's queues and Workloads replayed as they are and with proposed
quota edits, and per Workload how much sooner or later it would start.

The live state comes in as ``kueue_webhook.kubectl_kueue.estimate.LiveState`` (what ``kubectl kueue why``
reads)
and goes into the replay the same way (``live_replay``): admitted Workloads hold their admission from the
start and run until ``maximumExecutionTimeSeconds`` after their admission; pending ones arrive at their
creation time, so the queue order (priority, then creation) is the cluster's. The API has no run time for a
Workload without that limit, so it is taken to run ``assumed_runtime`` (``--assume-runtime``); the report
counts how many rest on that assumption, because every start after theirs does.

Edits are manifests of ResourceFlavors, Cohorts, ClusterQueues and LocalQueues. One naming an object that
exists is merged into it, the way ``kubectl patch`` merges (a key set to null is removed), with the list
rules of a strategic merge: items with a ``name`` merge by name (``resources`` of a flavor, ``flavors`` of a
group; an item with ``$patch: delete`` is removed), and a resource group merges into the group that already
lists one of its flavors. One naming an object that does not exist is added; ``$patch: delete`` at the top
removes one. v1beta1 edits are converted as the API server would convert them. Each result is then
validated as on a cluster.

Both runs replay the same Workloads with the same assumptions; only the queue objects differ. Pure: the
caller reads the cluster and the edit file.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from kueue_webhook.api.conversion import to_v1beta2
from kueue_webhook.kubectl_kueue.estimate import LiveState, limit, live_replay, live_workloads, replay_live
from kueue_webhook.kubectl_kueue.table import human_duration, render_table
from kueue_webhook.simulate.replay import Result, WorkloadRecord
from kueue_webhook.simulate.scenario import SimulationError

__all__ = [
    "EDITABLE_KINDS",
    "Edit",
    "LiveStateError",
    "WhatIf",
    "WorkloadChange",
    "apply_edits",
    "parse_edits",
    "what_if",
]

JSON = Mapping[str, Any]
GROUP = "kueue.x-k8s.io"
EDITABLE_KINDS = ("ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue")
_DELETE = "$patch"


class LiveStateError(SimulationError):
    """The cluster as read cannot be replayed (not the user's edits): a runtime failure, not bad input."""


@dataclass(frozen=True, slots=True)
class Edit:
    """One edit document, already in v1beta2: merged into the object of its kind and name, or added."""

    kind: str
    name: str
    namespace: str
    body: Mapping[str, Any]
    delete: bool = False

    @property
    def title(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"


def parse_edits(documents: Sequence[tuple[str, int, Any]]) -> list[Edit]:
    """Edit documents (source, index, document) checked for what can be merged; SimulationError otherwise."""
    out: list[Edit] = []
    for source, index, doc in documents:
        if doc is None:
            continue
        where = f"{source}: document {index + 1}"
        if not isinstance(doc, Mapping):
            raise SimulationError(f"{where}: an edit is a mapping (a manifest or a part of one)")
        kind = doc.get("kind")
        if kind not in EDITABLE_KINDS:
            raise SimulationError(
                f"{where}: kind {kind!r} cannot be edited here; give one of {', '.join(EDITABLE_KINDS)}"
            )
        api_version = str(doc.get("apiVersion") or f"{GROUP}/v1beta2")
        if api_version not in (f"{GROUP}/v1beta2", f"{GROUP}/v1beta1"):
            raise SimulationError(f"{where}: apiVersion {api_version!r}: give {GROUP}/v1beta2 (or v1beta1)")
        body = to_v1beta2({**doc, "apiVersion": api_version})
        meta = body.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        if not isinstance(name, str) or not name:
            raise SimulationError(f"{where} ({kind}): metadata.name is required")
        namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
        if kind == "LocalQueue" and (not isinstance(namespace, str) or not namespace):
            raise SimulationError(f"{where} (LocalQueue {name}): metadata.namespace is required")
        directive = body.get(_DELETE)
        if directive not in (None, "delete"):
            raise SimulationError(f"{where} ({kind} {name}): $patch may only be 'delete'")
        body = {k: v for k, v in body.items() if k != _DELETE}
        out.append(
            Edit(str(kind), name, str(namespace or "") if kind == "LocalQueue" else "", body, bool(directive))
        )
    return out


def _named(items: Sequence[Any]) -> bool:
    return all(isinstance(i, Mapping) and isinstance(i.get("name"), str) for i in items)


def _merge_named(base: list[Any], patch: Sequence[Any], path: str) -> list[Any]:
    out = [copy.deepcopy(i) for i in base]
    for item in patch:
        at = next((n for n, b in enumerate(out) if b.get("name") == item["name"]), None)
        if item.get(_DELETE) == "delete":
            if at is not None:
                del out[at]
            continue
        if at is None:
            out.append(_merge({}, item, path))
        else:
            out[at] = _merge(out[at], item, path)
    return out


def _flavor_names(group: Any) -> set[str]:
    flavors = group.get("flavors") if isinstance(group, Mapping) else None
    return {str(f.get("name")) for f in flavors or [] if isinstance(f, Mapping)}


def _merge_groups(base: list[Any], patch: Sequence[Any], path: str) -> list[Any]:
    out = [copy.deepcopy(g) for g in base]
    for group in patch:
        if not isinstance(group, Mapping):
            raise SimulationError(f"{path}: a resource group is a mapping")
        names = _flavor_names(group)
        at = next((n for n, b in enumerate(out) if names & _flavor_names(b)), None)
        if at is None:
            out.append(_merge({}, group, path))
        else:
            out[at] = _merge(out[at], group, path)
    return out


def _merge(base: Any, patch: Any, path: str = "") -> Any:
    """``patch`` merged into ``base`` (neither changed): see the module's docstring for the rules."""
    if isinstance(patch, Mapping) and isinstance(base, Mapping):
        out = {k: copy.deepcopy(v) for k, v in base.items()}
        for key, value in patch.items():
            if key == _DELETE:
                continue
            if value is None:
                out.pop(key, None)
            else:
                out[key] = _merge(out.get(key), value, f"{path}.{key}" if path else str(key))
        return out
    if isinstance(patch, list) and isinstance(base, list):
        if path.endswith("resourceGroups"):
            return _merge_groups(base, patch, path)
        if patch and _named(patch) and _named(base):
            return _merge_named(base, patch, path)
    if isinstance(patch, Mapping):
        return _merge({}, patch, path)
    return copy.deepcopy(patch)


def _key(obj: JSON) -> tuple[str, str, str]:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    namespace = str(meta.get("namespace") or "") if obj.get("kind") == "LocalQueue" else ""
    return str(obj.get("kind", "")), namespace, str(meta.get("name", ""))


def apply_edits(state: LiveState, edits: Sequence[Edit]) -> tuple[LiveState, list[str]]:
    """The state with the edits applied, and a line per edit saying what it did."""
    lists: dict[str, list[JSON]] = {
        "ResourceFlavor": [dict(o, kind="ResourceFlavor") for o in state.resource_flavors],
        "Cohort": [dict(o, kind="Cohort") for o in state.cohorts],
        "ClusterQueue": [dict(o, kind="ClusterQueue") for o in state.cluster_queues],
        "LocalQueue": [dict(o, kind="LocalQueue") for o in state.local_queues],
    }
    said: list[str] = []
    for edit in edits:
        items = lists[edit.kind]
        at = next((n for n, o in enumerate(items) if _key(o) == (edit.kind, edit.namespace, edit.name)), None)
        if edit.delete:
            if at is None:
                raise SimulationError(
                    f"{edit.title}: $patch: delete names an object the cluster does not have"
                )
            del items[at]
            said.append(f"{edit.title}: removed")
        elif at is None:
            items.append(_merge({}, edit.body))
            said.append(f"{edit.title}: added")
        else:
            merged = _merge(items[at], edit.body)
            changed = sorted(
                k
                for k in (edit.body.get("spec") or {})
                if (items[at].get("spec") or {}).get(k) != merged["spec"].get(k)
            )
            items[at] = merged
            said.append(
                f"{edit.title}: " + (f"changed spec.{', spec.'.join(changed)}" if changed else "no change")
            )
    edited = replace(
        state,
        resource_flavors=lists["ResourceFlavor"],
        cohorts=lists["Cohort"],
        cluster_queues=lists["ClusterQueue"],
        local_queues=lists["LocalQueue"],
    )
    return edited, said


@dataclass(frozen=True, slots=True)
class WorkloadChange:
    """One Workload's start in both runs: seconds from now (0: at once), None when never started."""

    namespace: str
    name: str
    cluster_queue: str
    priority: int
    status: str  # "pending" or "admitted" now
    runtime: float
    runtime_source: str  # "maximumExecutionTimeSeconds" or "assumed"
    before: float | None
    after: float | None
    preempted_before: int = 0
    preempted_after: int = 0

    @property
    def change(self) -> str:
        if self.before is None and self.after is None:
            return "never starts"
        if self.before is None:
            return "starts only with the edits"
        if self.after is None:
            return "never starts with the edits"
        delta = self.after - self.before
        return "sooner" if delta < 0 else "later" if delta > 0 else "unchanged"

    @property
    def delta(self) -> float | None:
        return None if self.before is None or self.after is None else self.after - self.before


@dataclass(frozen=True, slots=True)
class WhatIf:
    now: datetime
    assumed_runtime: float
    admitted: int
    pending: int
    assumed: int
    edits: list[str]
    workloads: list[WorkloadChange] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How many of the Workloads shown start sooner, later, at the same time, or start in one run only."""
        out = {"sooner": 0, "later": 0, "unchanged": 0, "other": 0}
        for change in filter(_shown, self.workloads):
            verdict = change.change
            out[verdict if verdict in out else "other"] += 1
        return out


def _meta(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _run(state: LiveState, *, now: datetime, assumed: float) -> tuple[Result, float]:
    def duration(workload: JSON) -> float:
        own = limit(workload)
        return assumed if own is None else own

    live = live_replay(state, live_workloads(state, None), members=None, now=now, duration=duration)
    return replay_live(live), live.elapsed


def what_if(state: LiveState, edits: Sequence[Edit], *, now: datetime, assumed_runtime: float) -> WhatIf:
    """Both replays and the comparison. LiveStateError when the cluster as it is cannot be replayed,
    SimulationError when the edited one cannot (an edit the API server would refuse)."""
    edited, said = apply_edits(state, edits)
    runs = []
    for which, current, error in (
        ("the cluster as it is", state, LiveStateError),
        ("the edited cluster", edited, SimulationError),
    ):
        try:
            runs.append(_run(current, now=now, assumed=assumed_runtime))
        except ValueError as exc:
            raise error(f"{which} could not be replayed: {exc}") from None
        except SimulationError as exc:
            raise error(f"{which}: {exc}") from None
    (before, before_now), (after, after_now) = runs
    workloads = live_workloads(state, None)
    changes: list[WorkloadChange] = []
    for workload in sorted(workloads, key=lambda w: (str(_meta(w).get("creationTimestamp", "")), _key(w))):
        meta = _meta(workload)
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        first, second = before.records.get(key), after.records.get(key)
        own = limit(workload)
        admitted = any(
            c.get("type") == "QuotaReserved" and c.get("status") == "True"
            for c in (workload.get("status") or {}).get("conditions") or []
        )

        def start(record: WorkloadRecord | None, elapsed: float) -> float | None:
            if record is None or record.admitted_at is None:
                return None
            return max(record.admitted_at - elapsed, 0.0)

        changes.append(
            WorkloadChange(
                namespace=str(meta.get("namespace", "")),
                name=str(meta.get("name", "")),
                cluster_queue=(second.cluster_queue if second else "")
                or (first.cluster_queue if first else ""),
                priority=int((workload.get("spec") or {}).get("priority") or 0),
                status="admitted" if admitted else "pending",
                runtime=assumed_runtime if own is None else own,
                runtime_source="assumed" if own is None else "maximumExecutionTimeSeconds",
                before=0.0 if admitted and first and not first.preemptions else start(first, before_now),
                after=0.0 if admitted and second and not second.preemptions else start(second, after_now),
                preempted_before=first.preemptions if first else 0,
                preempted_after=second.preemptions if second else 0,
            )
        )
    return WhatIf(
        now=now,
        assumed_runtime=assumed_runtime,
        admitted=sum(c.status == "admitted" for c in changes),
        pending=sum(c.status == "pending" for c in changes),
        assumed=sum(limit(w) is None for w in workloads),
        edits=said,
        workloads=changes,
    )


def _span(seconds: float) -> str:
    """A run time as it would be written on the command line: ``2h``, ``1h30m``, ``45m``, ``90s``."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "", f"{secs}s" if secs else ""]
    return "".join(parts) or "0s"


def _when(now: datetime, seconds: float | None) -> str:
    if seconds is None:
        return "never"
    return "now" if seconds <= 0 else f"in {human_duration(seconds)}"


def _at(now: datetime, seconds: float | None) -> str | None:
    return None if seconds is None else (now + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _verdict(change: WorkloadChange) -> str:
    delta = change.delta
    text = change.change
    if delta is not None and delta != 0:
        text += f" by {human_duration(abs(delta))}"
    if change.preempted_after > change.preempted_before:
        text += " (preempted with the edits)"
    elif change.preempted_before > change.preempted_after:
        text += " (no longer preempted)"
    return text


def _shown(change: WorkloadChange) -> bool:
    """Admitted Workloads keep their admission: shown only when a run preempts them."""
    return change.status == "pending" or bool(change.preempted_before or change.preempted_after)


def report_data(result: WhatIf) -> dict[str, Any]:
    """The comparison as data (``-o json|yaml``)."""
    return {
        "now": result.now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "admittedWorkloads": result.admitted,
        "pendingWorkloads": result.pending,
        "assumedRuntimeSeconds": result.assumed_runtime,
        "workloadsWithAssumedRuntime": result.assumed,
        "edits": list(result.edits),
        "summary": result.counts(),
        "workloads": [
            {
                "namespace": c.namespace,
                "name": c.name,
                "clusterQueue": c.cluster_queue,
                "priority": c.priority,
                "status": c.status,
                "runtimeSeconds": c.runtime,
                "runtimeFrom": c.runtime_source,
                "start": {"inSeconds": c.before, "at": _at(result.now, c.before)},
                "startWithEdits": {"inSeconds": c.after, "at": _at(result.now, c.after)},
                "change": c.change,
                "changeSeconds": c.delta,
                "preemptions": {"now": c.preempted_before, "withEdits": c.preempted_after},
            }
            for c in result.workloads
            if _shown(c)
        ],
    }


_COLUMNS = ("Namespace", "Workload", "ClusterQueue", "Priority", "Run Time", "Starts", "With Edits", "Change")


def render_text(result: WhatIf) -> str:
    """The comparison for a person: what was read and assumed, then one row per pending Workload."""
    lines = [
        f"Live cluster at {result.now.strftime('%Y-%m-%dT%H:%M:%SZ')}: {result.admitted} admitted and "
        f"{result.pending} pending Workload(s)."
    ]
    lines += [f"Edit: {line}" for line in result.edits] or ["Edit: none (both runs are the cluster as it is)"]
    if result.assumed:
        lines.append(
            f"Assumed: {result.assumed} Workload(s) have no spec.maximumExecutionTimeSeconds and are taken "
            f"to run {_span(result.assumed_runtime)} (--assume-runtime); the starts below rest on "
            "that."
        )
    lines.append(
        "Admitted Workloads run until their limit (or the assumed time) after their admission and keep it."
    )
    rows = [
        [
            c.namespace,
            c.name,
            c.cluster_queue or "-",
            str(c.priority),
            _span(c.runtime) + (" (assumed)" if c.runtime_source == "assumed" else ""),
            _when(result.now, c.before) if c.status == "pending" else "running",
            _when(result.now, c.after),
            _verdict(c),
        ]
        for c in result.workloads
        if _shown(c)
    ]
    lines.append("")
    if rows:
        lines.append(render_table(_COLUMNS, rows).rstrip("\n"))
    else:
        lines.append("No pending Workloads.")
    counts = result.counts()
    lines.append("")
    lines.append(
        f"{counts['sooner']} sooner, {counts['later']} later, {counts['unchanged']} unchanged"
        + (f", {counts['other']} other" if counts["other"] else "")
        + "."
    )
    return "\n".join(lines) + "\n"
