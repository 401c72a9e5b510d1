"""The latest admissions, preemptions and evictions, as the Workloads' own conditions record them.

The dashboard shows what happened lately. The scheduler's decisions are made on the leader alone, and are
gone when it restarts; the outcome of each is written on the Workload (``Admitted=True``, ``Preempted=True``,
``Evicted=True``, each with its ``lastTransitionTime``, reason and message), and every replica's store sees
those writes. So the record is read from the Workloads: every replica, leader or not, keeps the same list,
and a replica that starts fills it from the Workloads it lists, newest first.

:class:`RecentDecisions` keeps at most ``capacity`` entries, the newest by transition time; an entry older
than all it holds once full is not kept, and one seen again (a relist, an unrelated update of the same
Workload) is not added twice. Pure: the caller feeds it each Workload change.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kueue_webhook.api.objects import admitted_cluster_queue

__all__ = ["DEFAULT_CAPACITY", "RecentDecision", "RecentDecisions", "decisions_between"]

JSON = Mapping[str, Any]
#: how many entries a replica keeps (and the dashboard shows)
DEFAULT_CAPACITY = 50


@dataclass(frozen=True, slots=True, order=True)
class RecentDecision:
    """One transition: ``kind`` is ``Admitted``, ``Preempted`` or ``Evicted``; ``at`` the condition's
    ``lastTransitionTime`` (RFC 3339, so its text sorts as time does)."""

    at: str
    kind: str
    namespace: str
    name: str
    cluster_queue: str
    reason: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {
            "at": self.at,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "clusterQueue": self.cluster_queue,
            "reason": self.reason,
            "message": self.message,
        }


#: the conditions whose transitions are decisions worth showing
_KINDS = ("Admitted", "Preempted", "Evicted")


def _true_conditions(workload: JSON | None) -> dict[str, JSON]:
    """The Workload's conditions of ``_KINDS`` that are True, by type (every Workload change of every
    replica passes here: the conditions of no interest are skipped at the cost of one lookup each)."""
    if workload is None:
        return {}
    status = workload.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    if not isinstance(conditions, list):
        return {}
    out: dict[str, JSON] = {}
    for condition in conditions:
        if isinstance(condition, dict):
            kind = condition.get("type")
            if kind in _KINDS and condition.get("status") == "True":
                out[kind] = condition
    return out


def decisions_between(old: JSON | None, new: JSON | None) -> list[RecentDecision]:
    """The transitions ``new`` records that ``old`` did not: a condition that is True in ``new`` and was
    not True with the same ``lastTransitionTime`` in ``old`` (``old`` None: a Workload just listed, whose
    standing conditions are its history). An eviction that is a preemption is one ``Preempted`` entry
    (Kueue sets both conditions at once), not two."""
    after = _true_conditions(new)
    if not after or new is None:
        return []
    before = _true_conditions(old)
    metadata = new.get("metadata")
    meta = metadata if isinstance(metadata, Mapping) else {}
    out: list[RecentDecision] = []
    for kind in _KINDS:
        condition = after.get(kind)
        if condition is None:
            continue
        at = str(condition.get("lastTransitionTime") or "")
        previous = before.get(kind)
        if previous is not None and str(previous.get("lastTransitionTime") or "") == at:
            continue
        if kind == "Evicted" and "Preempted" in after and condition.get("reason") == "Preempted":
            continue
        out.append(
            RecentDecision(
                at=at,
                kind=kind,
                namespace=str(meta.get("namespace", "")),
                name=str(meta.get("name", "")),
                cluster_queue=admitted_cluster_queue(new),
                reason=str(condition.get("reason", "")),
                message=str(condition.get("message", "")),
            )
        )
    return out


class RecentDecisions:
    """The newest ``capacity`` transitions seen, oldest first."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._entries: list[RecentDecision] = []

    def observe(self, old: JSON | None, new: JSON | None) -> None:
        """Record what a Workload's change from ``old`` to ``new`` says happened."""
        for decision in decisions_between(old, new):
            self.add(decision)

    def add(self, decision: RecentDecision) -> None:
        entries = self._entries
        index = bisect.bisect_left(entries, decision)
        if index < len(entries) and entries[index] == decision:
            return  # seen before (a relist)
        if len(entries) >= self.capacity and index == 0:
            return  # older than everything kept
        entries.insert(index, decision)
        if len(entries) > self.capacity:
            del entries[0]

    def latest(self) -> Sequence[RecentDecision]:
        """Newest first."""
        return tuple(reversed(self._entries))

    def __len__(self) -> int:
        return len(self._entries)
