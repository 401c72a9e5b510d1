"""The scenario's shape and the objects it creates, as Kueue's performance runner creates them.

Kueue describes a run as cohort sets x ClusterQueue sets x workload sets (its ``generator.yaml``); we keep
that shape as frozen dataclasses so the two published configurations (``baseline`` and ``large-scale``)
are data, not code paths. Object names, labels and specs follow the runner's generator
(test/performance/scheduler/runner/generator/generator.go): ClusterQueue, Namespace and LocalQueue share the
name ``<class>-<setIdx>-<idx>-<cohort>``, Workloads are ``<class>-<wlSetIdx>-<n>-<templateIdx>`` with one
pod set ``main`` of count 1, the priority in ``spec.priority`` (no WorkloadPriorityClass) and the run time
in a label. Creation is paced per workload set: each set waits its interval before every creation, all
sets of all queues at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

JSON = dict[str, Any]

GROUP_VERSION = "kueue.x-k8s.io/v1beta2"
RESOURCE_FLAVOR = "rf"
RUNNING_TIME_LABEL = "kueue.x-k8s.io/performance-scheduler-running-ms"
CLASS_LABEL = "kueue.x-k8s.io/performance-scheduler-class"
CLEANUP_LABEL = "kueue.x-k8s.io/performance-scheduler-cleanup"


@dataclass(frozen=True)
class WorkloadTemplate:
    class_name: str
    runtime_ms: int
    priority: int
    cpu: int


@dataclass(frozen=True)
class WorkloadSet:
    count: int
    interval_ms: int
    templates: tuple[WorkloadTemplate, ...]


@dataclass(frozen=True)
class QueueSet:
    class_name: str
    count: int
    nominal_cpu: int
    borrowing_limit_cpu: int
    reclaim_within_cohort: str
    within_cluster_queue: str
    workload_sets: tuple[WorkloadSet, ...]


@dataclass(frozen=True)
class CohortSet:
    class_name: str
    count: int
    queue_sets: tuple[QueueSet, ...]


@dataclass(frozen=True)
class Shape:
    name: str
    cohort_sets: tuple[CohortSet, ...]


def _shape(
    name: str,
    *,
    cohorts: int,
    queues: int,
    sets: tuple[tuple[int, int, str, int, int, int], ...],
) -> Shape:
    """The two published configs differ only in: (count, interval, class, runtime, priority, cpu)."""
    workload_sets = tuple(
        WorkloadSet(count, interval, (WorkloadTemplate(cls, runtime, priority, cpu),))
        for count, interval, cls, runtime, priority, cpu in sets
    )
    queue_set = QueueSet("cq", queues, 20, 100, "Any", "LowerPriority", workload_sets)
    return Shape(name, (CohortSet("cohort", cohorts, (queue_set,)),))


#: test/performance/scheduler/configs/baseline/generator.yaml
BASELINE = _shape(
    "baseline",
    cohorts=5,
    queues=6,
    sets=(
        (350, 100, "small", 200, 50, 1),
        (100, 500, "medium", 500, 100, 5),
        (50, 1200, "large", 1000, 200, 20),
    ),
)
#: test/performance/scheduler/configs/large-scale/generator.yaml
_LARGE_SETS = (
    (35, 60, "small", 150, 50, 1),
    (11, 300, "medium", 350, 100, 5),
    (4, 700, "large", 700, 200, 20),
)
LARGE = _shape("large", cohorts=10, queues=100, sets=_LARGE_SETS)
#: a tenth of large-scale: one of its ten cohorts (100 ClusterQueues, 5,000 Workloads), the same per-queue
#: workload sets, to check a real control plane completes it before trying the whole
LARGE_TENTH = _shape("large-tenth", cohorts=1, queues=100, sets=_LARGE_SETS)
#: a one-minute check of the harness itself, not one of Kueue's configurations
SMOKE = _shape(
    "smoke",
    cohorts=1,
    queues=2,
    sets=((40, 50, "small", 200, 50, 1), (8, 250, "medium", 500, 100, 5), (4, 500, "large", 1000, 200, 20)),
)
SHAPES = {shape.name: shape for shape in (BASELINE, LARGE, LARGE_TENTH, SMOKE)}


@dataclass(frozen=True)
class PlannedQueue:
    """One ClusterQueue with its Namespace and LocalQueue (same name), and what its users will submit."""

    name: str
    cohort: str
    class_name: str
    queue_set: QueueSet


@dataclass(frozen=True)
class PlannedWorkload:
    name: str
    namespace: str
    template: WorkloadTemplate


@dataclass(frozen=True)
class CreationStream:
    """One workload set of one queue: created one after another, ``interval_ms`` before each."""

    queue: PlannedQueue
    interval_ms: int
    workloads: tuple[PlannedWorkload, ...]


@dataclass(frozen=True)
class Plan:
    shape: Shape
    queues: tuple[PlannedQueue, ...]
    streams: tuple[CreationStream, ...]

    @property
    def workload_count(self) -> int:
        return sum(len(stream.workloads) for stream in self.streams)

    def cpu_seconds(self) -> float:
        """The work to run: the lower bound on wall time is this over the total nominal quota."""
        milli = sum(w.template.cpu * w.template.runtime_ms for s in self.streams for w in s.workloads)
        return milli / 1000

    def nominal_cpu(self) -> int:
        return sum(queue.queue_set.nominal_cpu for queue in self.queues)


def plan(shape: Shape) -> Plan:
    queues: list[PlannedQueue] = []
    streams: list[CreationStream] = []
    for cohort_set in shape.cohort_sets:
        for cohort_index in range(cohort_set.count):
            cohort = f"{cohort_set.class_name}-{cohort_index}"
            for set_index, queue_set in enumerate(cohort_set.queue_sets):
                for queue_index in range(queue_set.count):
                    name = f"{queue_set.class_name}-{set_index}-{queue_index}-{cohort}"
                    queue = PlannedQueue(name, cohort, queue_set.class_name, queue_set)
                    queues.append(queue)
                    for wl_set_index, wl_set in enumerate(queue_set.workload_sets):
                        workloads = tuple(
                            PlannedWorkload(f"{template.class_name}-{wl_set_index}-{n}-{t}", name, template)
                            for n in range(wl_set.count)
                            for t, template in enumerate(wl_set.templates)
                        )
                        streams.append(CreationStream(queue, wl_set.interval_ms, workloads))
    return Plan(shape, tuple(queues), tuple(streams))


def resource_flavor() -> JSON:
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "ResourceFlavor",
        "metadata": {"name": RESOURCE_FLAVOR, "labels": {CLEANUP_LABEL: "true"}},
    }


def namespace(queue: PlannedQueue) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": queue.name, "labels": {CLEANUP_LABEL: "true"}},
    }


def cluster_queue(queue: PlannedQueue) -> JSON:
    spec = queue.queue_set
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": queue.name, "labels": {CLASS_LABEL: queue.class_name, CLEANUP_LABEL: "true"}},
        "spec": {
            "cohortName": queue.cohort,
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
            "preemption": {
                "reclaimWithinCohort": spec.reclaim_within_cohort,
                "withinClusterQueue": spec.within_cluster_queue,
            },
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [
                        {
                            "name": RESOURCE_FLAVOR,
                            "resources": [
                                {
                                    "name": "cpu",
                                    "nominalQuota": str(spec.nominal_cpu),
                                    "borrowingLimit": str(spec.borrowing_limit_cpu),
                                }
                            ],
                        }
                    ],
                }
            ],
        },
    }


def local_queue(queue: PlannedQueue) -> JSON:
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": queue.name, "namespace": queue.name},
        "spec": {"clusterQueue": queue.name},
    }


def workload(planned: PlannedWorkload) -> JSON:
    template = planned.template
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": planned.name,
            "namespace": planned.namespace,
            "labels": {RUNNING_TIME_LABEL: str(template.runtime_ms), CLASS_LABEL: template.class_name},
        },
        "spec": {
            "queueName": planned.namespace,
            "priority": template.priority,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {"name": "c", "resources": {"requests": {"cpu": str(template.cpu)}}}
                            ],
                        }
                    },
                }
            ],
        },
    }
