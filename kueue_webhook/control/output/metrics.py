"""Prometheus metrics under Kueue's names and labels, on a registry owned by the process.

Dashboards and alerts written for Kueue must keep working after a migration, so every metric that has a Kueue
counterpart keeps Kueue's name (subsystem ``kueue``), label names and bucket layout, including the
``replica_role`` label (``leader`` / ``follower``). Metrics live on a private ``CollectorRegistry``
rather than the global one so that tests and several in-process replicas never collide. Our own metrics
say so in their prefix, ``kueue_webhook_`` (config reloads, GPU-seconds for chargeback, API writes).

The class body of ``Metrics`` is the table of them, one row each (type, name, help, labels); the constructor
makes every row on the instance's registry in one loop.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar, overload

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

from kueue_webhook import __version__

ROLE = "replica_role"
CQ_RESOURCE_LABELS = ("cohort", "cluster_queue", "flavor", "resource", ROLE)
QUEUE_AND_PRIORITY = ("cluster_queue", "priority_class", ROLE)
QUEUE_AND_STATUS = ("cluster_queue", "status", ROLE)
#: The ClusterQueue states Kueue reports in ``kueue_cluster_queue_status`` (one-hot per queue).
CLUSTER_QUEUE_STATES = ("pending", "active", "terminating")
#: Kueue's LocalQueue series are labelled by the LocalQueue's ``name`` and ``namespace``
LQ = ("name", "namespace", ROLE)
LQ_AND_PRIORITY = ("name", "namespace", "priority_class", ROLE)
LQ_RESOURCE_LABELS = ("name", "namespace", "flavor", "resource", ROLE)
#: The values of ``active`` in ``kueue_local_queue_status`` (its Active condition; one-hot per queue).
LOCAL_QUEUE_STATES = ("True", "False", "Unknown")

M = TypeVar("M", Counter, Gauge, Histogram)

#: Kueue's ``kueue_build_info`` labels (its names kept, so queries written for Kueue find the series)
BUILD_LABELS = ("git_version", "git_commit", "build_date", "go_version", "compiler", "platform")
#: Go's names for the machines an image is built for, as Kueue's ``platform`` label spells them
_GO_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64", "ppc64le": "ppc64le", "s390x": "s390x"}


def build_labels(version: str) -> tuple[str, ...]:
    """``kueue_build_info``'s label values for this process: the package ``version``, the commit and date
    the image was built from when its build passed them (``KUEUE_WEBHOOK_GIT_COMMIT``,
    ``KUEUE_WEBHOOK_BUILD_DATE``; else ``unknown``), the Python that runs it where Kueue names its Go
    toolchain, and ``os/arch``."""
    machine = platform.machine().lower()
    return (
        f"v{version}",
        os.environ.get("KUEUE_WEBHOOK_GIT_COMMIT") or "unknown",
        os.environ.get("KUEUE_WEBHOOK_BUILD_DATE") or "unknown",
        f"python{platform.python_version()}",
        platform.python_implementation().lower(),
        f"{platform.system().lower()}/{_GO_ARCH.get(machine, machine)}",
    )


#: Prometheus' default buckets (Go client ``DefBuckets``), which Kueue's admission attempt duration keeps
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
#: Kueue's workload creation latency buckets: 10 ms doubling, 11 of them (``ExponentialBuckets(0.01, 2, 11)``)
LATENCY_BUCKETS = tuple(0.01 * 2**i for i in range(11))


def _kueue_buckets(count: int) -> list[float]:
    """Kueue's wait-time buckets: 1 s, then 2.5 s doubling (``generateExponentialBuckets`` in metrics.go)."""
    return [1.0] + [2.5 * 2**i for i in range(count - 1)]


class _Metric(Generic[M]):
    """One row of the table: made on each instance's registry, where it then is a plain attribute."""

    def __init__(
        self,
        make: type[M],
        name: str,
        documentation: str,
        labels: Sequence[str] = (),
        *,
        buckets: int | tuple[float, ...] = 0,
    ) -> None:
        self.make: type[M] = make
        self.name = name
        self.documentation = documentation
        self.labels = list(labels)
        self.buckets = buckets

    def on(self, registry: CollectorRegistry) -> M:
        options: dict[str, Any] = {}
        if isinstance(self.buckets, tuple):
            options["buckets"] = list(self.buckets)
        elif self.buckets:
            options["buckets"] = _kueue_buckets(self.buckets)
        return self.make(self.name, self.documentation, self.labels, registry=registry, **options)

    @overload
    def __get__(self, obj: None, owner: type) -> _Metric[M]: ...

    @overload
    def __get__(self, obj: Metrics, owner: type) -> M: ...

    def __get__(self, obj: Metrics | None, owner: type) -> M | _Metric[M]:
        """The row itself on the class; an instance's own attribute (set in ``__init__``) hides it."""
        if obj is None:
            return self
        raise AttributeError(f"{self.name} is made by Metrics.__init__")


def gauge_series(metric: Gauge | SideGauge, *labels: str) -> Any:
    """``metric.labels(*labels)`` of a series that may exist already, found in the metric's own table first:
    the queue status pass sets a few gauges per queue and LocalQueue every second, and ``labels`` checks and
    converts its arguments and takes a lock each time. A series removed since (``drop_series``) is made
    anew by ``labels``, so no cache here can outlive it."""
    child = metric._metrics.get(labels)
    return child if child is not None else metric.labels(*labels)


def drop_series(metric: Gauge | SideGauge, **match: str) -> None:
    """Remove every series of ``metric`` whose labels named in ``match`` have those values (a queue, a
    cohort or a role that is gone stops appearing in scrapes)."""
    where = [(metric._labelnames.index(label), value) for label, value in match.items()]
    for labels in list(metric._metrics):
        if all(labels[index] == value for index, value in where):
            metric.remove(*labels)


class SideGauge:
    """A gauge whose name the client library's registry holds for a counter already: Kueue serves
    ``kueue_finished_workloads`` beside ``kueue_finished_workloads_total``, which prometheus_client refuses
    to register twice (a counter claims its name without ``_total``). Served by a collector of its own that
    declares no names; the text format keeps the two apart (the counter's family is ``..._total``). Offers
    the part of ``Gauge`` used here: ``labels(...).set``, ``remove``, ``_labelnames`` and ``_metrics``."""

    def __init__(
        self, name: str, documentation: str, labels: Sequence[str], *, registry: CollectorRegistry
    ) -> None:
        self.name, self.documentation = name, documentation
        self._labelnames = tuple(labels)
        self._metrics: dict[tuple[str, ...], _SideValue] = {}
        registry.register(self)

    def labels(self, *values: str) -> _SideValue:
        child = self._metrics.get(values)
        if child is None:
            child = self._metrics[values] = _SideValue()
        return child

    def remove(self, *values: str) -> None:
        del self._metrics[values]

    def describe(self) -> list[GaugeMetricFamily]:
        return []  # no names claimed: see the class docstring

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(self.name, self.documentation, labels=self._labelnames)
        for values, child in list(self._metrics.items()):
            family.add_metric(list(values), child.value)
        yield family


class _SideValue:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def set(self, value: float) -> None:
        self.value = float(value)


class Metrics:
    """All metrics of one process; ``role`` fills ``replica_role`` and flips on leader election."""

    admission_attempts = _Metric(
        Counter,
        "kueue_admission_attempts_total",
        "Scheduling cycles that tried workloads; result is success when one was admitted, else inadmissible.",
        ("result", ROLE),
    )
    admission_attempt_duration = _Metric(
        Histogram,
        "kueue_admission_attempt_duration_seconds",
        "Time a scheduling cycle took to decide; result is success when it admitted a workload, else "
        "inadmissible.",
        ("result", ROLE),
        buckets=DEFAULT_BUCKETS,
    )
    admission_cycle_preemption_skips = _Metric(
        Gauge,
        "kueue_admission_cycle_preemption_skips",
        "Preemptors of a cluster_queue that found candidates but were passed over because a workload "
        "before them in the cycle took the room (the last cycle that passed one over).",
        ("cluster_queue", ROLE),
    )
    build_info = _Metric(
        Gauge,
        "kueue_build_info",
        "Build information: 1, labelled by version, commit, build date, language runtime, its implementation "
        "and platform.",
        BUILD_LABELS,
    )
    admitted_workloads = _Metric(
        Counter, "kueue_admitted_workloads_total", "Admitted workloads per cluster_queue.", QUEUE_AND_PRIORITY
    )
    multikueue_dispatched = _Metric(
        Counter,
        "multikueue_workloads_dispatched_total",
        "Workload copies the MultiKueue manager created in a worker cluster, per cluster_queue and cluster.",
        ("cluster_queue", "cluster", ROLE),
    )
    multikueue_admitted = _Metric(
        Counter,
        "multikueue_workloads_admitted_total",
        "Admissions of a Workload copy in a worker cluster, per cluster_queue and cluster (again after a "
        "re-admission).",
        ("cluster_queue", "cluster", ROLE),
    )
    quota_reserved_workloads = _Metric(
        Counter,
        "kueue_quota_reserved_workloads_total",
        "Workloads that got a quota reservation per cluster_queue.",
        QUEUE_AND_PRIORITY,
    )
    finished_workloads = _Metric(
        Counter, "kueue_finished_workloads_total", "Finished workloads per cluster_queue.", QUEUE_AND_PRIORITY
    )
    pending_workloads = _Metric(
        Gauge,
        "kueue_pending_workloads",
        "Pending workloads per cluster_queue and status (active or inadmissible).",
        QUEUE_AND_STATUS,
    )
    reserving_active_workloads = _Metric(
        Gauge,
        "kueue_reserving_active_workloads",
        "Workloads holding a quota reservation per cluster_queue.",
        ("cluster_queue", ROLE),
    )
    admitted_active_workloads = _Metric(
        Gauge,
        "kueue_admitted_active_workloads",
        "Admitted, not finished workloads per cluster_queue.",
        ("cluster_queue", ROLE),
    )
    admission_wait_time = _Metric(
        Histogram,
        "kueue_admission_wait_time_seconds",
        "Time from a workload's creation or requeue until admission, per cluster_queue.",
        QUEUE_AND_PRIORITY,
        buckets=16,
    )
    quota_reserved_wait_time = _Metric(
        Histogram,
        "kueue_quota_reserved_wait_time_seconds",
        "Time from a workload's creation or requeue until quota reservation, per cluster_queue.",
        QUEUE_AND_PRIORITY,
        buckets=14,
    )
    admission_checks_wait_time = _Metric(
        Histogram,
        "kueue_admission_checks_wait_time_seconds",
        "Time from a workload's quota reservation until admission, per cluster_queue (workloads with "
        "admission checks).",
        QUEUE_AND_PRIORITY,
        buckets=14,
    )
    ready_wait_time = _Metric(
        Histogram,
        "kueue_ready_wait_time_seconds",
        "Time from a workload's creation or requeue until its pods were first ready, per cluster_queue.",
        QUEUE_AND_PRIORITY,
        buckets=14,
    )
    admitted_until_ready_wait_time = _Metric(
        Histogram,
        "kueue_admitted_until_ready_wait_time_seconds",
        "Time from a workload's admission until its pods were first ready, per cluster_queue.",
        QUEUE_AND_PRIORITY,
        buckets=14,
    )
    execution_time = _Metric(
        Histogram,
        "kueue_execution_time_seconds",
        "Execution time of a finished admitted workload, from admission to completion (earlier admissions "
        "included), per cluster_queue.",
        QUEUE_AND_PRIORITY,
        buckets=16,
    )
    workload_creation_latency = _Metric(
        Histogram,
        "kueue_workload_creation_latency_seconds",
        "Time from a queued object's creation until its Workload's, per job_kind (objects of generation 1).",
        ("job_kind", ROLE),
        buckets=LATENCY_BUCKETS,
    )
    cluster_queue_status = _Metric(
        Gauge,
        "kueue_cluster_queue_status",
        "Status of a cluster_queue: 1 for the current state among pending, active, terminating.",
        QUEUE_AND_STATUS,
    )
    resource_usage = _Metric(
        Gauge,
        "kueue_cluster_queue_resource_usage",
        "Resource usage of admitted workloads per cluster_queue, flavor and resource.",
        CQ_RESOURCE_LABELS,
    )
    resource_reservation = _Metric(
        Gauge,
        "kueue_cluster_queue_resource_reservation",
        "Resources reserved by workloads per cluster_queue, flavor and resource.",
        CQ_RESOURCE_LABELS,
    )
    nominal_quota = _Metric(
        Gauge,
        "kueue_cluster_queue_nominal_quota",
        "Nominal quota per cluster_queue, flavor and resource.",
        CQ_RESOURCE_LABELS,
    )
    borrowing_limit = _Metric(
        Gauge,
        "kueue_cluster_queue_borrowing_limit",
        "Borrowing limit per cluster_queue, flavor and resource.",
        CQ_RESOURCE_LABELS,
    )
    lending_limit = _Metric(
        Gauge,
        "kueue_cluster_queue_lending_limit",
        "Lending limit per cluster_queue, flavor and resource.",
        CQ_RESOURCE_LABELS,
    )
    pods_ready_to_evicted_time = _Metric(
        Histogram,
        "kueue_pods_ready_to_evicted_time_seconds",
        "Seconds between a workload's pods being ready and its eviction, per cluster_queue, reason and "
        "underlying_cause (as kueue_evicted_workloads_total).",
        ("cluster_queue", "reason", "underlying_cause", ROLE),
        buckets=14,
    )
    workload_eviction_latency = _Metric(
        Histogram,
        "kueue_workload_eviction_latency_seconds",
        "Seconds from a workload's eviction (Evicted=True) until its quota is released and it is pending "
        "again, per cluster_queue and eviction reason.",
        ("cluster_queue", "reason", ROLE),
        buckets=14,
    )
    evicted_workloads = _Metric(
        Counter,
        "kueue_evicted_workloads_total",
        "Evicted workloads per cluster_queue; reason is Preempted, AdmissionCheck, ClusterQueueStopped, "
        "LocalQueueStopped or Deactivated, underlying_cause what led to a deactivation.",
        ("cluster_queue", "reason", "underlying_cause", "priority_class", ROLE),
    )
    evicted_workloads_once = _Metric(
        Counter,
        "kueue_evicted_workloads_once_total",
        "Workloads evicted for a reason and underlying_cause for the first time, per cluster_queue.",
        ("cluster_queue", "reason", "underlying_cause", "priority_class", ROLE),
    )
    preempted_workloads = _Metric(
        Counter,
        "kueue_preempted_workloads_total",
        "Preempted workloads per preempting_cluster_queue; reason is InClusterQueue, "
        "InCohortReclamation, InCohortFairSharing or InCohortReclaimWhileBorrowing.",
        ("preempting_cluster_queue", "reason", ROLE),
    )
    cluster_queue_weighted_share = _Metric(
        Gauge,
        "kueue_cluster_queue_weighted_share",
        "Largest ratio of usage above nominal quota to what the cohort can lend, over the ClusterQueue's "
        "resources, divided by its fair-sharing weight (0: within nominal quota).",
        ("cluster_queue", "cohort", ROLE),
    )
    cohort_weighted_share = _Metric(
        Gauge,
        "kueue_cohort_weighted_share",
        "The weighted share of a Cohort, computed as for a ClusterQueue.",
        ("cohort", ROLE),
    )
    unadmitted_workloads = _Metric(
        Gauge,
        "kueue_unadmitted_workloads",
        "Workloads not admitted per cluster_queue, by their Admitted reason and the QuotaReserved reason "
        "under it (underlying_cause).",
        ("cluster_queue", "reason", "underlying_cause", ROLE),
    )
    lq_unadmitted_workloads = _Metric(
        Gauge,
        "kueue_local_queue_unadmitted_workloads",
        "Workloads not admitted per LocalQueue, by their Admitted reason and the QuotaReserved reason under "
        "it (underlying_cause).",
        ("name", "namespace", "cluster_queue", "reason", "underlying_cause", ROLE),
    )
    # -- per cohort subtree and the hierarchy (Kueue's MetricsForCohorts) ---------------------------------
    cohort_subtree_quota = _Metric(
        Gauge,
        "kueue_cohort_subtree_quota",
        "Nominal quota of all the ClusterQueues and cohorts in a cohort's subtree, per flavor and resource.",
        ("cohort", "flavor", "resource", ROLE),
    )
    cohort_subtree_resource_reservations = _Metric(
        Gauge,
        "kueue_cohort_subtree_resource_reservations",
        "Resources reserved by the workloads of a cohort's subtree, per flavor and resource.",
        ("cohort", "flavor", "resource", ROLE),
    )
    cohort_subtree_admitted_active_workloads = _Metric(
        Gauge,
        "kueue_cohort_subtree_admitted_active_workloads",
        "Admitted, not finished workloads in a cohort's subtree.",
        ("cohort", ROLE),
    )
    cohort_subtree_admitted_workloads = _Metric(
        Counter,
        "kueue_cohort_subtree_admitted_workloads_total",
        "Workloads admitted in a cohort's subtree.",
        ("cohort", "priority_class", ROLE),
    )
    cohort_info = _Metric(
        Gauge,
        "kueue_cohort_info",
        "1 per cohort, with its parent and root cohort as labels.",
        ("cohort", "parent_cohort", "root_cohort", ROLE),
    )
    cluster_queue_info = _Metric(
        Gauge,
        "kueue_cluster_queue_info",
        "1 per ClusterQueue, with its parent and root cohort as labels.",
        ("cluster_queue", "parent_cohort", "root_cohort", ROLE),
    )
    # -- per LocalQueue (Kueue's LocalQueueMetrics, ``metrics.localQueueMetrics`` in the ConfigMap) --------
    lq_pending_workloads = _Metric(
        Gauge,
        "kueue_local_queue_pending_workloads",
        "Pending workloads per LocalQueue and status (active or inadmissible).",
        ("name", "namespace", "status", ROLE),
    )
    lq_reserving_active_workloads = _Metric(
        Gauge,
        "kueue_local_queue_reserving_active_workloads",
        "Workloads holding a quota reservation per LocalQueue.",
        LQ,
    )
    lq_admitted_active_workloads = _Metric(
        Gauge,
        "kueue_local_queue_admitted_active_workloads",
        "Admitted, not finished workloads per LocalQueue.",
        LQ,
    )
    lq_status = _Metric(
        Gauge,
        "kueue_local_queue_status",
        "Active condition of a LocalQueue: 1 for its current status among True, False, Unknown.",
        ("name", "namespace", "active", ROLE),
    )
    lq_admission_fair_sharing_usage = _Metric(
        Gauge,
        "kueue_local_queue_admission_fair_sharing_usage",
        "Admission fair sharing usage of a LocalQueue: its weighted consumed resources and pending entry "
        "penalties, divided by its weight (lower goes first).",
        ("name", "namespace", "cluster_queue", ROLE),
    )
    lq_resource_usage = _Metric(
        Gauge,
        "kueue_local_queue_resource_usage",
        "Resource usage of admitted workloads per LocalQueue, flavor and resource.",
        LQ_RESOURCE_LABELS,
    )
    lq_resource_reservation = _Metric(
        Gauge,
        "kueue_local_queue_resource_reservation",
        "Resources reserved by workloads per LocalQueue, flavor and resource.",
        LQ_RESOURCE_LABELS,
    )
    lq_quota_reserved_workloads = _Metric(
        Counter,
        "kueue_local_queue_quota_reserved_workloads_total",
        "Workloads that got a quota reservation per LocalQueue.",
        LQ_AND_PRIORITY,
    )
    lq_admitted_workloads = _Metric(
        Counter,
        "kueue_local_queue_admitted_workloads_total",
        "Admitted workloads per LocalQueue.",
        LQ_AND_PRIORITY,
    )
    lq_finished_workloads = _Metric(
        Counter,
        "kueue_local_queue_finished_workloads_total",
        "Finished workloads per LocalQueue.",
        LQ_AND_PRIORITY,
    )
    lq_evicted_workloads = _Metric(
        Counter,
        "kueue_local_queue_evicted_workloads_total",
        "Evicted workloads per LocalQueue, reason and underlying_cause.",
        ("name", "namespace", "reason", "underlying_cause", "priority_class", ROLE),
    )
    lq_quota_reserved_wait_time = _Metric(
        Histogram,
        "kueue_local_queue_quota_reserved_wait_time_seconds",
        "Time from a workload's creation or requeue until quota reservation, per LocalQueue.",
        LQ_AND_PRIORITY,
        buckets=14,
    )
    lq_admission_wait_time = _Metric(
        Histogram,
        "kueue_local_queue_admission_wait_time_seconds",
        "Time from a workload's creation or requeue until admission, per LocalQueue.",
        LQ_AND_PRIORITY,
        buckets=14,
    )
    lq_admission_checks_wait_time = _Metric(
        Histogram,
        "kueue_local_queue_admission_checks_wait_time_seconds",
        "Time from a workload's quota reservation until admission, per LocalQueue (workloads with "
        "admission checks).",
        LQ_AND_PRIORITY,
        buckets=14,
    )
    lq_ready_wait_time = _Metric(
        Histogram,
        "kueue_local_queue_ready_wait_time_seconds",
        "Time from a workload's creation or requeue until its pods were first ready, per LocalQueue.",
        LQ_AND_PRIORITY,
        buckets=14,
    )
    lq_admitted_until_ready_wait_time = _Metric(
        Histogram,
        "kueue_local_queue_admitted_until_ready_wait_time_seconds",
        "Time from a workload's admission until its pods were first ready, per LocalQueue.",
        LQ_AND_PRIORITY,
        buckets=14,
    )
    lq_execution_time = _Metric(
        Histogram,
        "kueue_local_queue_execution_time_seconds",
        "Execution time of a finished admitted workload, from admission to completion (earlier admissions "
        "included), per LocalQueue.",
        LQ_AND_PRIORITY,
        buckets=16,
    )
    config_reloads = _Metric(
        Counter,
        "kueue_webhook_config_reloads_total",
        "Reloads of the kueue-webhook-config ConfigMap; result is applied or rejected.",
        ("result",),
    )
    config_last_reload_success = _Metric(
        Gauge,
        "kueue_webhook_config_last_reload_successful",
        "1 if the last edit of the ConfigMap was applied, 0 if it was rejected.",
    )
    gpu_seconds = _Metric(
        Counter,
        "kueue_webhook_cluster_queue_gpu_seconds_total",
        "GPU-seconds held by admitted workloads per cluster_queue and GPU resource, for chargeback.",
        ("cluster_queue", "resource"),
    )
    api_writes = _Metric(
        Counter,
        "kueue_webhook_api_writes_total",
        "Writes sent to the API server by the controller, per kind and verb.",
        ("kind", "verb"),
    )
    events_dropped = _Metric(
        Counter,
        "kueue_webhook_events_dropped_total",
        "Events not written because more were recorded than the informational write budget lets through.",
    )
    write_budget_rate = _Metric(
        Gauge,
        "kueue_webhook_informational_writes_per_second",
        "The rate informational writes (Events, pending reasons, queue status) may take now, by the API "
        "server's health.",
    )
    store_listener_errors = _Metric(
        Counter,
        "kueue_webhook_store_listener_errors_total",
        "Store changes a listener failed on (the other listeners still got them), per kind and listener.",
        ("kind", "listener"),
    )
    scheduling_cycles = _Metric(
        Counter, "kueue_webhook_scheduling_cycles_total", "Scheduling cycles run by the leader."
    )
    leader = _Metric(
        Gauge,
        "kueue_webhook_leader",
        "1 while this replica holds the leader Lease and schedules, 0 while it follows; summed over the "
        "replicas it is 1 when the install works.",
    )

    def __init__(self, *, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.role = "follower"
        for attr, row in vars(Metrics).items():
            if isinstance(row, _Metric):
                setattr(self, attr, row.on(self.registry))
        self.build_info.labels(*build_labels(__version__)).set(1)
        self.finished_workloads_gauge = SideGauge(
            "kueue_finished_workloads",
            "Finished workloads not deleted yet, per cluster_queue.",
            ("cluster_queue", ROLE),
            registry=self.registry,
        )
        self.lq_finished_workloads_gauge = SideGauge(
            "kueue_local_queue_finished_workloads",
            "Finished workloads not deleted yet, per LocalQueue.",
            LQ,
            registry=self.registry,
        )
        self._series: dict[tuple[Counter | Histogram, tuple[str, ...]], Any] = {}

    def series(self, metric: Counter | Histogram, *labels: str) -> Any:
        """``metric.labels(*labels)``, looked up once: on the paths that count every write or admission the
        lookup costs more than the count. Only counters and histograms, whose series are never removed
        (a gauge's may be, by ``forget_role`` or ``forget_cluster_queue``)."""
        key = (metric, labels)
        child = self._series.get(key)
        if child is None:
            child = self._series[key] = metric.labels(*labels)
        return child

    def set_cluster_queue_state(self, *, cluster_queue: str, state: str) -> None:
        """One-hot the queue's state, as Kueue reports it."""
        for candidate in CLUSTER_QUEUE_STATES:
            gauge_series(self.cluster_queue_status, cluster_queue, candidate, self.role).set(
                1 if candidate == state else 0
            )

    def forget_cluster_queue(self, *, cluster_queue: str) -> None:
        """Drop every series labelled with a deleted queue so it stops appearing in scrapes."""
        for metric in (
            self.pending_workloads,
            self.reserving_active_workloads,
            self.admitted_active_workloads,
            self.cluster_queue_status,
            self.resource_usage,
            self.resource_reservation,
            self.nominal_quota,
            self.borrowing_limit,
            self.lending_limit,
            self.cluster_queue_weighted_share,
            self.unadmitted_workloads,
            self.finished_workloads_gauge,
            self.admission_cycle_preemption_skips,
        ):
            drop_series(metric, cluster_queue=cluster_queue)

    def set_local_queue_state(self, *, namespace: str, name: str, active: str) -> None:
        """One-hot the LocalQueue's Active condition status, as Kueue reports it."""
        for candidate in LOCAL_QUEUE_STATES:
            gauge_series(self.lq_status, name, namespace, candidate, self.role).set(
                1 if candidate == active else 0
            )

    def forget_local_queue(self, *, namespace: str, name: str) -> None:
        """Drop every gauge series of a LocalQueue that is gone, or whose series are no longer exposed."""
        for metric in (
            self.lq_pending_workloads,
            self.lq_reserving_active_workloads,
            self.lq_admitted_active_workloads,
            self.lq_status,
            self.lq_resource_usage,
            self.lq_resource_reservation,
            self.lq_unadmitted_workloads,
            self.lq_finished_workloads_gauge,
            self.lq_admission_fair_sharing_usage,
        ):
            drop_series(metric, name=name, namespace=namespace)

    def forget_role(self, role: str) -> None:
        """Drop every gauge series labelled ``replica_role=role``: a replica that stops leading no longer
        updates the leader's queue gauges, so without this a sum over ``replica_role="leader"`` would count
        its last values next to the new leader's. Counters and histograms stay: they count what happened."""
        for value in vars(self).values():
            if isinstance(value, Gauge | SideGauge) and ROLE in value._labelnames:
                drop_series(value, **{ROLE: role})

    def exposition(self) -> bytes:
        """The text format served at /metrics."""
        return bytes(generate_latest(self.registry))
