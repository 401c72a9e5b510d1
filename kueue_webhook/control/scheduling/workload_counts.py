"""Kueue's gauges that count Workloads by their state, kept from every Workload change the queue status
reporter sees and written by its passes.

Not admitted, by why (Kueue's UnadmittedWorkloadsObservability, on by default since v0.19):
``kueue_unadmitted_workloads{cluster_queue, reason, underlying_cause}`` and, per LocalQueue,
``kueue_local_queue_unadmitted_workloads{name, namespace, cluster_queue, reason, underlying_cause}``.
Finished and not yet deleted: ``kueue_finished_workloads{cluster_queue}`` and
``kueue_local_queue_finished_workloads{name, namespace}``.

A Workload counts while it is neither admitted nor finished nor being deleted: ``reason`` is its Admitted
condition's reason (``NoReservation`` while it has none), ``underlying_cause`` its QuotaReserved condition's
reason while that is False (``PendingEvaluation`` while it has none; empty while quota is reserved and the
admission checks are still out). The queue status reporter feeds every Workload change here; a pass writes
the counts that moved.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from typing import Any, Generic, NamedTuple, TypeVar

from kueue_webhook.api.conditions import is_true
from kueue_webhook.control.output.conditions import find
from kueue_webhook.control.output.metrics import Metrics

__all__ = ["FinishedWorkloads", "UnadmittedWorkloads", "why_unadmitted"]

JSON = dict[str, Any]
Key = tuple[str, str]
S = TypeVar("S")
CQ = TypeVar("CQ")
LQ = TypeVar("LQ")


class Why(NamedTuple):
    cluster_queue: str
    namespace: str
    local_queue: str
    reason: str
    cause: str


def why_unadmitted(workload: JSON, cluster_queue: str) -> Why | None:
    """Why ``workload`` (of ``cluster_queue``, "" when unknown) is not admitted; None when it is, or is
    finished or being deleted."""
    meta, status = workload.get("metadata") or {}, workload.get("status") or {}
    if meta.get("deletionTimestamp"):
        return None
    if is_true(workload, "Admitted") or is_true(workload, "Finished"):
        return None
    conditions = status.get("conditions")
    admitted, reserved = find(conditions, "Admitted"), find(conditions, "QuotaReserved")
    reason = str(admitted.get("reason", "")) if admitted is not None else "NoReservation"
    if reserved is None:
        cause = "PendingEvaluation"
    elif reserved.get("status") == "True":
        cause = ""
    else:
        cause = str(reserved.get("reason", ""))
    queue_name = str((workload.get("spec") or {}).get("queueName", ""))
    return Why(cluster_queue, str(meta.get("namespace", "")), queue_name, reason, cause)


class _Counts(ABC, Generic[S, CQ, LQ]):
    """Each Workload's last known state, and how many Workloads are in each state per ClusterQueue and per
    LocalQueue; the counts that moved since the last pass are written by ``report``."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self._state: dict[Key, S] = {}
        self._per_cq: Counter[CQ] = Counter()
        self._per_lq: Counter[LQ] = Counter()
        self._moved_cq: set[CQ] = set()
        self._moved_lq: set[LQ] = set()

    def update(self, key: Key, state: S | None) -> None:
        """``state``: the Workload's state now (None: not counted, or gone)."""
        old = self._state.get(key)
        if old == state:
            return
        if old is not None:
            self._count(old, -1)
            del self._state[key]
        if state is not None:
            self._state[key] = state
            self._count(state, 1)

    def _count(self, state: S, step: int) -> None:
        per_cq, per_lq = self._split(state)
        self._per_cq[per_cq] += step
        self._per_lq[per_lq] += step
        self._moved_cq.add(per_cq)
        self._moved_lq.add(per_lq)

    @abstractmethod
    def _split(self, state: S) -> tuple[CQ, LQ]:
        """Where a Workload in ``state`` counts: its ClusterQueue's key and its LocalQueue's."""

    def all_moved(self) -> None:
        """Write every count again next pass (a new term, or the LocalQueue series configured anew)."""
        self._moved_cq.update(self._per_cq)
        self._moved_lq.update(self._per_lq)


class UnadmittedWorkloads(_Counts[Why, tuple[str, str, str], Why]):
    """Workloads not admitted, by why."""

    def _split(self, state: Why) -> tuple[tuple[str, str, str], Why]:
        return (state.cluster_queue, state.reason, state.cause), state

    def report(self, *, local_queue_exposed: Callable[[str, str], bool]) -> None:
        """Write the counts that moved since the last pass (a count at 0 drops its series, as in Kueue);
        ``local_queue_exposed(namespace, name)`` says whether a LocalQueue's series are exposed."""
        metrics, role = self.metrics, self.metrics.role
        moved_cq, self._moved_cq = self._moved_cq, set()
        moved_lq, self._moved_lq = self._moved_lq, set()
        for cluster_queue, reason, cause in moved_cq:
            count = self._per_cq[(cluster_queue, reason, cause)]
            cq_labels = (cluster_queue, reason, cause, role)
            if count <= 0:
                del self._per_cq[(cluster_queue, reason, cause)]
                _drop(metrics.unadmitted_workloads, cq_labels)
            elif cluster_queue:  # a Workload whose LocalQueue names no known ClusterQueue counts nowhere
                metrics.unadmitted_workloads.labels(*cq_labels).set(count)
        for why in moved_lq:
            count = self._per_lq[why]
            labels = (why.local_queue, why.namespace, why.cluster_queue, why.reason, why.cause, role)
            if count > 0 and local_queue_exposed(why.namespace, why.local_queue):
                metrics.lq_unadmitted_workloads.labels(*labels).set(count)
            else:
                if count <= 0:
                    del self._per_lq[why]
                _drop(metrics.lq_unadmitted_workloads, labels)


def _drop(gauge: Any, labels: tuple[str, ...]) -> None:
    if labels in gauge._metrics:
        gauge.remove(*labels)


class FinishedWorkloads(_Counts[tuple[str, Key], str, Key]):
    """The finished Workloads that still exist, per ClusterQueue and per LocalQueue (Kueue's queue
    manager keeps them until the Workload is deleted). A Workload's state is its ClusterQueue and its
    LocalQueue (namespace, name) while it is finished."""

    def _split(self, state: tuple[str, Key]) -> tuple[str, Key]:
        return state

    def report(self, *, local_queue_exposed: Callable[[str, str], bool]) -> None:
        metrics, role = self.metrics, self.metrics.role
        moved_cq, self._moved_cq = self._moved_cq, set()
        moved_lq, self._moved_lq = self._moved_lq, set()
        for cluster_queue in moved_cq:
            count = self._per_cq[cluster_queue]
            if count <= 0:
                del self._per_cq[cluster_queue]
            if cluster_queue:
                metrics.finished_workloads_gauge.labels(cluster_queue, role).set(max(count, 0))
        for namespace, name in moved_lq:
            count = self._per_lq[(namespace, name)]
            if count <= 0:
                del self._per_lq[(namespace, name)]
            if name and local_queue_exposed(namespace, name):
                metrics.lq_finished_workloads_gauge.labels(name, namespace, role).set(max(count, 0))
