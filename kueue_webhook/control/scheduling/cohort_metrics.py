"""Kueue's cohort subtree series (its MetricsForCohorts gate, on by default since v0.18).

Per cohort, what its whole subtree holds: ``kueue_cohort_subtree_quota`` and
``kueue_cohort_subtree_resource_reservations`` per flavor and resource (a series only while above 0, as
Kueue clears it at 0), ``kueue_cohort_subtree_admitted_active_workloads``, the counter
``kueue_cohort_subtree_admitted_workloads_total`` (an admission counts in every cohort above its
ClusterQueue), and the hierarchy as ``kueue_cohort_info`` / ``kueue_cluster_queue_info`` (value 1, with the
parent and root cohort as labels, for joins). Implicit cohorts (named by ClusterQueues, no object) count
like the others, as in Kueue's hierarchy.

The queue status reporter feeds it: each ClusterQueue's reservations and admitted count when it reports
that queue's gauges, each admission it sees; a pass then reports the cohorts above the queues it touched.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping

from prometheus_client import Gauge

from kueue_webhook.api.quantity import NANO
from kueue_webhook.control.output.metrics import Metrics, drop_series
from kueue_webhook.core.ledger import Node
from kueue_webhook.core.model import FlavorResource
from kueue_webhook.core.view import SchedulerView

__all__ = ["CohortMetrics"]


class CohortMetrics:
    """What the cohorts' series are made of, kept between passes; ``report`` writes them."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        #: per ClusterQueue, as its gauges last reported: what its Workloads reserve, how many are admitted
        self._held: dict[str, tuple[dict[FlavorResource, int], int]] = {}
        #: admissions seen since the last pass: (ClusterQueue, priority class)
        self._admissions: list[tuple[str, str]] = []
        #: the cohorts reported, with the flavor/resources of their quota and reservation series
        self._reported: dict[str, tuple[set[FlavorResource], set[FlavorResource]]] = {}

    def held(self, cluster_queue: str, reserved: dict[FlavorResource, int], admitted: int) -> None:
        self._held[cluster_queue] = (reserved, admitted)

    def admitted(self, cluster_queue: str, priority_class: str) -> None:
        self._admissions.append((cluster_queue, priority_class))

    def forget_cluster_queue(self, cluster_queue: str) -> None:
        self._held.pop(cluster_queue, None)
        drop_series(self.metrics.cluster_queue_info, cluster_queue=cluster_queue)

    def report(self, state: SchedulerView, cluster_queues: Iterable[str]) -> None:
        """The series of every cohort above ``cluster_queues`` (and theirs), and the counts of the
        admissions seen since the last pass; series of cohorts that are gone are dropped."""
        metrics, role = self.metrics, self.metrics.role
        queues = state.ledger.queues
        admissions, self._admissions = self._admissions, []
        counter = metrics.cohort_subtree_admitted_workloads
        for cluster_queue, priority_class in admissions:
            for cohort in _ancestors(queues.get(cluster_queue)):
                metrics.series(counter, cohort.name, priority_class, role).inc()
        touched: dict[str, Node] = {}
        for name in cluster_queues:
            node = queues.get(name)
            if node is None:
                continue
            parent, root = _parent_and_root(node)
            metrics.cluster_queue_info.labels(name, parent, root, role).set(1)
            for cohort in _ancestors(node):
                touched[cohort.name] = cohort
        for cohort in touched.values():
            self._report_cohort(cohort)
        cohorts = state.ledger.cohorts
        for name in [n for n in self._reported if n not in cohorts]:
            self._forget_cohort(name)

    def _report_cohort(self, cohort: Node) -> None:
        metrics, role, name = self.metrics, self.metrics.role, cohort.name
        reserved: dict[FlavorResource, int] = {}
        admitted = 0
        for cluster_queue in cohort.queue_names():
            amounts, count = self._held.get(cluster_queue, ({}, 0))
            admitted += count
            for fr, nanos in amounts.items():
                reserved[fr] = reserved.get(fr, 0) + nanos
        parent, root = _parent_and_root(cohort)
        info = metrics.cohort_info
        for labels in list(info._metrics):
            if labels[0] == name and labels[1:3] != (parent, root):
                info.remove(*labels)  # moved in the tree
        info.labels(name, parent, root, role).set(1)
        metrics.cohort_subtree_admitted_active_workloads.labels(name, role).set(admitted)
        had_quota, had_reserved = self._reported.get(name, (set(), set()))
        quota_now = _positive(cohort.subtree)
        reserved_now = _positive(reserved)
        _write(metrics.cohort_subtree_quota, name, role, quota_now, had_quota)
        _write(metrics.cohort_subtree_resource_reservations, name, role, reserved_now, had_reserved)
        self._reported[name] = (set(quota_now), set(reserved_now))

    def _forget_cohort(self, name: str) -> None:
        self._reported.pop(name, None)
        metrics = self.metrics
        for gauge in (
            metrics.cohort_subtree_quota,
            metrics.cohort_subtree_resource_reservations,
            metrics.cohort_subtree_admitted_active_workloads,
            metrics.cohort_info,
        ):
            drop_series(gauge, cohort=name)


def _ancestors(node: Node | None) -> Iterator[Node]:
    parent = node.parent if node is not None else None
    while parent is not None:
        yield parent
        parent = parent.parent


def _parent_and_root(node: Node) -> tuple[str, str]:
    """The names of ``node``'s parent cohort and root cohort ("" for none)."""
    if node.parent is None:
        return "", ""
    return node.parent.name, node.root().name


def _positive(amounts: Mapping[FlavorResource, int]) -> dict[FlavorResource, int]:
    return {fr: nanos for fr, nanos in amounts.items() if nanos > 0}


def _write(
    gauge: Gauge, cohort: str, role: str, now: Mapping[FlavorResource, int], had: set[FlavorResource]
) -> None:
    """Set ``now``'s series of ``cohort`` and drop those of ``had`` no longer above 0 (Kueue clears them)."""
    for (flavor, resource), nanos in now.items():
        gauge.labels(cohort, flavor, resource, role).set(nanos / NANO)
    for flavor, resource in had - set(now):
        with contextlib.suppress(KeyError):  # dropped already (a change of role)
            gauge.remove(cohort, flavor, resource, role)
