"""The scenario's shape and the objects it creates, as Kueue's performance runner creates them.

Kueue describes a run as cohort sets x ClusterQueue sets x workload sets (its ``generator.yaml``); we keep
that shape as frozen dataclasses so the two published configurations (``baseline`` and ``large-scale``)
are data, not code paths. Object names, labels and specs follow the runner's generator
(test/performance/scheduler/runner/generator/generator.go): ClusterQueue, Namespace and LocalQueue share the
name ``<class>-<setIdx>-<idx>-<cohort>``, Workloads are ``<class>-<wlSetIdx>-<n>-<templateIdx>`` with one
pod set ``main`` of count 1, the priority in ``spec.priority`` (no WorkloadPriorityClass) and the run time
in a label. Creation is paced per workload set: each set waits its interval before every creation, all
sets of all queues at once.

The ``tas`` config (configs/tas) adds what the runner's topology_generator.go creates first: Nodes named
``node-b<i>-r<j>-n<k>`` labelled with every level's value (``block-0``, ``rack-3``, ``node-17``: the
hostname label repeats across racks, as there), ``tas-node-group: tas`` and the cleanup label, allocatable
cpu, memory and 110 pods and ``Ready``; the Topology of those labels and the ResourceFlavor ``tas-flavor``
selecting the nodes; and Workloads whose pod set ``main`` has ``podCount`` pods, each requesting the
class's cpu over that count, with the ``topologyRequest`` the runner writes for ``required``,
``preferred`` and ``balanced`` (the last: ``podSetSliceRequiredTopology`` with ``podSetSliceSize``, alone).
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
    cpu: int  # the whole Workload's cpu: ``pods`` pods of ``cpu / pods`` each
    pods: int = 1
    tas: str = ""  # "", "required", "preferred" or "balanced" (generator.yaml's tasConstraint)
    tas_level: str = ""
    slice_size: int = 0

    @property
    def pod_cpu_milli(self) -> int:
        return self.cpu * 1000 // self.pods


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
class TopologyLevel:
    name: str
    count: int
    node_label: str


@dataclass(frozen=True)
class TopologySpec:
    """generator.yaml's ``topology`` and ``resourceFlavor`` sections."""

    name: str
    levels: tuple[TopologyLevel, ...]
    node_cpu: str
    node_memory: str
    flavor: str
    flavor_node_label: str
    #: label ``kubernetes.io/hostname`` with the Node's name (as a kubelet does) instead of the runner's
    #: ``node-<k>``, which repeats in every rack: an assignment names hosts only, so only unique hostnames
    #: let a check tell which rack a pod set was given
    unique_hostnames: bool = False


@dataclass(frozen=True)
class Shape:
    name: str
    cohort_sets: tuple[CohortSet, ...]
    topology: TopologySpec | None = None

    @property
    def flavor(self) -> str:
        return self.topology.flavor if self.topology else RESOURCE_FLAVOR


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

RACK = "cloud.provider.com/topology-rack"
HOSTNAME = "kubernetes.io/hostname"
#: test/performance/scheduler/configs/tas/generator.yaml: 1 block x 10 racks x 64 nodes of 96 cpu
TAS_TOPOLOGY = TopologySpec(
    name="default-topology",
    levels=(
        TopologyLevel("block", 1, "cloud.provider.com/topology-block"),
        TopologyLevel("rack", 10, RACK),
        TopologyLevel("node", 64, HOSTNAME),
    ),
    node_cpu="96",
    node_memory="256Gi",
    flavor="tas-flavor",
    flavor_node_label="tas-node-group",
)


def _tas_shape(name: str, *, divide: int = 1, unique_hostnames: bool = False) -> Shape:
    """configs/tas: the baseline's queues and cpu per class, each class split in three constraints;
    ``divide`` scales every workload set's count down (a correctness check in a fraction of the time)."""
    # (count, interval, class, runtime, priority, cpu of the Workload, pods, constraint, slice size)
    rows = (
        (120, 100, "small-required-rack", 200, 50, 1, 2, "required", 0),
        (120, 100, "small-preferred-rack", 200, 50, 1, 2, "preferred", 0),
        (110, 100, "small-balanced-rack", 200, 50, 1, 2, "balanced", 1),
        (34, 500, "medium-required-rack", 500, 100, 5, 4, "required", 0),
        (33, 500, "medium-preferred-rack", 500, 100, 5, 4, "preferred", 0),
        (33, 500, "medium-balanced-rack", 500, 100, 5, 4, "balanced", 2),
        (17, 1200, "large-required-rack", 1000, 200, 20, 8, "required", 0),
        (17, 1200, "large-preferred-rack", 1000, 200, 20, 8, "preferred", 0),
        (16, 1200, "large-balanced-rack", 1000, 200, 20, 8, "balanced", 4),
    )
    workload_sets = tuple(
        WorkloadSet(
            max(1, count // divide),
            interval,
            (WorkloadTemplate(cls, runtime, priority, cpu, pods, tas, RACK, size),),
        )
        for count, interval, cls, runtime, priority, cpu, pods, tas, size in rows
    )
    queue_set = QueueSet("cq", 6, 20, 100, "Any", "LowerPriority", workload_sets)
    topology = TopologySpec(**{**TAS_TOPOLOGY.__dict__, "unique_hostnames": unique_hostnames})
    return Shape(name, (CohortSet("cohort", 5, (queue_set,)),), topology)


TAS = _tas_shape("tas")
#: a tenth of the Workloads, hostnames unique: every assignment's rack can be checked
TAS_TENTH = _tas_shape("tas-tenth", divide=10, unique_hostnames=True)
SHAPES = {shape.name: shape for shape in (BASELINE, LARGE, LARGE_TENTH, SMOKE, TAS, TAS_TENTH)}


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


def resource_flavor(shape: Shape | None = None) -> JSON:
    topology = shape.topology if shape else None
    flavor: JSON = {
        "apiVersion": GROUP_VERSION,
        "kind": "ResourceFlavor",
        "metadata": {"name": RESOURCE_FLAVOR, "labels": {CLEANUP_LABEL: "true"}},
    }
    if topology is not None:
        flavor["metadata"]["name"] = topology.flavor
        flavor["spec"] = {"nodeLabels": {topology.flavor_node_label: "tas"}, "topologyName": topology.name}
    return flavor


def topology_object(topology: TopologySpec) -> JSON:
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "Topology",
        "metadata": {"name": topology.name, "labels": {CLEANUP_LABEL: "true"}},
        "spec": {"levels": [{"nodeLabel": level.node_label} for level in topology.levels]},
    }


def _node_paths(levels: tuple[TopologyLevel, ...]) -> list[tuple[str, ...]]:
    """Every leaf's label values, ``<level name>-<i>`` at each level, in the runner's recursion order."""
    paths: list[tuple[str, ...]] = [()]
    for level in levels:
        paths = [(*path, f"{level.name}-{i}") for path in paths for i in range(level.count)]
    return paths


def nodes(topology: TopologySpec) -> list[tuple[JSON, JSON]]:
    """(Node, its status) for every leaf: a Node's status is written through ``/status`` after creation."""
    out: list[tuple[JSON, JSON]] = []
    for path in _node_paths(topology.levels):
        name = "node" + "".join(f"-{value[0]}{value.split('-')[1]}" for value in path)
        labels = {CLEANUP_LABEL: "true", topology.flavor_node_label: "tas"}
        for level, value in zip(topology.levels, path, strict=True):
            labels[level.node_label] = value
        if topology.unique_hostnames and labels.get(HOSTNAME) is not None:
            labels[HOSTNAME] = name
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}
        status = {
            "status": {
                "allocatable": {"cpu": topology.node_cpu, "memory": topology.node_memory, "pods": "110"},
                "capacity": {"cpu": topology.node_cpu, "memory": topology.node_memory, "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            }
        }
        out.append((node, status))
    return out


def rack_of_host(topology: TopologySpec) -> dict[str, str]:
    """Hostname label -> rack label of the Nodes (meaningful only with unique hostnames)."""
    out: dict[str, str] = {}
    for node, _ in nodes(topology):
        labels = node["metadata"]["labels"]
        out[labels[HOSTNAME]] = labels[RACK]
    return out


def namespace(queue: PlannedQueue) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": queue.name, "labels": {CLEANUP_LABEL: "true"}},
    }


def cluster_queue(queue: PlannedQueue, flavor: str = RESOURCE_FLAVOR) -> JSON:
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
                            "name": flavor,
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


def topology_request(template: WorkloadTemplate) -> JSON | None:
    """What the runner's generator sets on the pod set for the class's ``tasConstraint``."""
    if template.tas == "required":
        return {"required": template.tas_level}
    if template.tas == "preferred":
        return {"preferred": template.tas_level}
    if template.tas == "balanced":
        request: JSON = {"podSetSliceRequiredTopology": template.tas_level}
        if template.slice_size > 0:
            request["podSetSliceSize"] = template.slice_size
        return request
    return None


def workload(planned: PlannedWorkload) -> JSON:
    template = planned.template
    body = {
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
                    "count": template.pods,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": _cpu(template)}}}],
                        }
                    },
                }
            ],
        },
    }
    request = topology_request(template)
    if request is not None:
        body["spec"]["podSets"][0]["topologyRequest"] = request
    return body


def _cpu(template: WorkloadTemplate) -> str:
    milli = template.pod_cpu_milli
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"
