"""The scheduler's own compact records, compiled once from the API views.

The API views (``kueue_webhook.api.objects``) keep everything a user wrote; the scheduler needs a few numbers
it reads millions of times. Compiling a Workload into a ``WorkloadInfo`` (integers in nano-units,
resources sorted, an ordering key) when it arrives, not on every cycle, is what keeps a decision's cost
flat as the number of pending workloads grows. Typed names (``ClusterQueueName``...) keep a LocalQueue
name from being passed where a ClusterQueue name is expected.
"""

from __future__ import annotations

import sys
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NewType

from kueue_webhook.api.objects import Admission, ClusterQueue, PodSet, Workload, parse_timestamp
from kueue_webhook.api.quantity import Format, Quantity
from kueue_webhook.api.topology_request import TopologyRequest, parse_topology_request
from kueue_webhook.core.node_affinity import FIELD, Term
from kueue_webhook.core.shared_shapes import NO_USAGE, SharedValues, shared_admission, shared_usage

__all__ = [
    "ClusterQueueName",
    "CohortName",
    "FlavorName",
    "FlavorResource",
    "PodSetInfo",
    "QueueKey",
    "WorkloadInfo",
    "WorkloadKey",
    "amount_quantity",
    "format_amount",
    "order_key",
]

ClusterQueueName = NewType("ClusterQueueName", str)
CohortName = NewType("CohortName", str)
FlavorName = NewType("FlavorName", str)
#: ``namespace/name`` of a LocalQueue
QueueKey = NewType("QueueKey", str)
#: ``namespace/name`` of a Workload
WorkloadKey = NewType("WorkloadKey", str)
FlavorResource = tuple[str, str]

_BINARY_RESOURCES = ("memory", "ephemeral-storage")


def amount_quantity(resource: str, nanos: int) -> Quantity:
    """An amount as Kueue's resource formatter builds it for messages, ``resourceUsage`` and status:
    binary SI for memory, ephemeral storage and huge pages, decimal SI otherwise."""
    binary = resource in _BINARY_RESOURCES or resource.startswith("hugepages-")
    return Quantity(nanos, Format.BINARY_SI if binary else Format.DECIMAL_SI)


def format_amount(resource: str, nanos: int) -> str:
    return amount_quantity(resource, nanos).canonical()


def order_key(priority: int, timestamp: float, name: str) -> tuple[int, float, str]:
    """Queue order: higher priority first, then older, then name. Kueue breaks a tie of creation seconds
    by UID (baseCompareFunc), which users see as chance; by name, the same objects queue the same way on
    every run."""
    return (-priority, timestamp, name)


@dataclass(frozen=True, slots=True)
class PodSetInfo:
    name: str
    count: int
    #: per-pod requests, nano-units, zero requests dropped (they never need a flavor)
    requests: tuple[tuple[str, int], ...]
    #: what the pod template says about nodes; a flavor must be compatible with it
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    #: required node-affinity terms (ORed), each a tuple of (key, operator, values) ANDed (``node_affinity``)
    affinity_terms: tuple[Term, ...] = ()
    #: ``minCount``: partial admission may run as few pods (``partial.py``); None: all or nothing
    min_count: int | None = None
    #: what it asks of a TAS flavor's topology (``spec.podSets[].topologyRequest``); None: nothing
    topology: TopologyRequest | None = None


@dataclass(slots=True)
class WorkloadInfo:
    """What the scheduler knows of one Workload; ``admission`` is set while it holds quota."""

    key: WorkloadKey
    name: str
    namespace: str
    queue_name: str
    priority: int
    created: float
    pod_sets: tuple[PodSetInfo, ...]
    uid: str = ""
    #: the owning Job's UID (label ``kueue.x-k8s.io/job-uid``), quoted in preemption messages
    job_uid: str = ""
    active: bool = True
    admission: Admission | None = None
    #: ``(flavor, resource) -> nanos`` charged while admitted; read-only, shared by Workloads of one shape
    usage: Mapping[FlavorResource, int] = field(default_factory=lambda: NO_USAGE)
    finished: bool = False
    #: workloads of one shape (namespace and pod sets) fit or fail together against the same quota
    shape: Hashable = None
    #: parked after failing, with the condition under which it may fit (see ``queues.RetryCondition``);
    #: a head still parked whose condition is unmet is put back without a new attempt
    parked: bool = False
    retry_when: Any = None

    #: queue order (``order_key``), computed once: ``key``, ``priority`` and ``created`` are never changed
    #: on a WorkloadInfo (an update of the Workload builds a new one), and the pending queues read it on
    #: every push, pop, park and rank
    sort_key: tuple[int, float, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.sort_key = order_key(self.priority, self.created, self.key)

    @classmethod
    def from_workload(
        cls, workload: Workload, *, priority: int | None = None, excluded: tuple[str, ...] = ()
    ) -> WorkloadInfo:
        """``excluded``: prefixes of resource names that are not counted (``excludeResourcePrefixes``)."""
        reclaimable = workload.reclaimable_pods
        pod_sets = tuple(_pod_set_info(ps, reclaimable.get(ps.name, 0), excluded) for ps in workload.pod_sets)
        shape, pod_sets = _shared_shape(workload.namespace, pod_sets)
        info = cls(
            key=WorkloadKey(workload.key),
            name=workload.name,
            # one string per namespace and queue name, not one per Workload parsed from JSON
            namespace=sys.intern(workload.namespace),
            queue_name=sys.intern(workload.queue_name),
            priority=priority if priority is not None else (workload.priority or 0),
            created=_queue_order_time(workload),
            pod_sets=pod_sets,
            uid=workload.meta.uid,
            job_uid=workload.meta.labels.get("kueue.x-k8s.io/job-uid", ""),
            active=workload.active,
            finished=workload.is_finished,
            shape=shape,
        )
        if workload.has_quota_reservation and not workload.is_finished and workload.admission is not None:
            info.admission = shared_admission(workload.admission)
            info.usage = shared_usage(usage_of_admission(workload.admission, workload.pod_sets, reclaimable))
        return info


#: Evicted reasons after which a workload queues from its eviction time, not its creation
_REQUEUED_FROM_EVICTION = ("AdmissionCheck", "PodsReadyTimeout")


def _queue_order_time(workload: Workload) -> float:
    """When the workload entered its queue, for ordering: its creation, or, after an eviction by an
    admission check or a PodsReady timeout, the eviction (Kueue's GetQueueOrderTimestamp, with
    waitForPodsReady's default requeuingStrategy.timestamp Eviction), so a retried workload goes to the
    back of its priority instead of jumping the queue again."""
    if workload.conditions:
        evicted = workload.condition("Evicted")
        if (
            evicted is not None
            and evicted.is_true
            and evicted.reason in ("AdmissionCheck", "PodsReadyTimeout")
        ):
            moment = parse_timestamp(evicted.last_transition_time)
            if moment:
                return moment
    return workload.meta.created


def _shape(namespace: str, pod_sets: tuple[PodSetInfo, ...]) -> Hashable:
    return (
        namespace,
        tuple(
            (
                ps.name,
                ps.count,
                ps.requests,
                tuple(sorted(ps.node_selector.items())),
                repr(ps.tolerations),
                ps.affinity_terms,
                ps.min_count,
                ps.topology,
            )
            for ps in pod_sets
        ),
    )


#: one shape key and one tuple of pod set records per shape, however many Workloads have it
_SHAPES: SharedValues[tuple[Hashable, tuple[PodSetInfo, ...]]] = SharedValues()


def _shared_shape(
    namespace: str, pod_sets: tuple[PodSetInfo, ...]
) -> tuple[Hashable, tuple[PodSetInfo, ...]]:
    """The shape of ``pod_sets`` in ``namespace`` and pod set records equal to them, both shared with
    every Workload of that shape (equal shapes mean equal records: the shape covers every field)."""
    shape = _shape(namespace, pod_sets)
    return _SHAPES.get(shape, lambda: (shape, pod_sets))


def running_count(pod_set: PodSet, reclaimable: int) -> int:
    """The pods of a pod set that may still run: its count less those its Workload reports reclaimable
    (``status.reclaimablePods``), never below zero (Kueue's podSetsCountsAfterReclaim)."""
    return pod_set.count - min(max(reclaimable, 0), pod_set.count)


def _pod_set_info(pod_set: PodSet, reclaimable: int = 0, excluded: tuple[str, ...] = ()) -> PodSetInfo:
    """A pending Workload asks for the pods that may still run (Kueue's totalRequestsFromPodSets), so one
    requeued after some of its pods succeeded queues for the rest only; resources named with an
    ``excluded`` prefix are not asked for at all (Kueue's dropExcludedResources)."""
    if reclaimable > 0:
        count = running_count(pod_set, reclaimable)
        min_count = pod_set.min_count if pod_set.min_count is not None and pod_set.min_count < count else None
        pod_set = replace(pod_set, count=count, min_count=min_count)
    spec = pod_set.template.get("spec") or {}
    if not isinstance(spec, Mapping):
        spec = {}
    requests = tuple(
        sorted((r, a) for r, a in pod_set.requests.items() if a > 0 and not r.startswith(excluded))
    )
    topology = parse_topology_request(pod_set.topology_request) if pod_set.topology_request else None
    if "nodeSelector" not in spec and "tolerations" not in spec and "affinity" not in spec:
        # most pods say nothing of nodes
        return PodSetInfo(
            pod_set.name, pod_set.count, requests, {}, min_count=pod_set.min_count, topology=topology
        )
    selector = spec.get("nodeSelector") or {}
    tolerations = spec.get("tolerations") or []
    terms: list[Term] = []
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or []:
        exprs = tuple(
            (
                f"{FIELD if source == 'matchFields' else ''}{e.get('key', '')}",
                str(e.get("operator", "")),
                tuple(str(v) for v in e.get("values") or ()),
            )
            for source in ("matchExpressions", "matchFields")
            for e in (term.get(source) or [])
            if isinstance(e, Mapping)
        )
        terms.append(exprs)
    return PodSetInfo(
        pod_set.name,
        pod_set.count,
        requests,
        {str(k): str(v) for k, v in selector.items()} if isinstance(selector, Mapping) else {},
        tuple(t for t in tolerations if isinstance(t, Mapping)) if isinstance(tolerations, list) else (),
        tuple(terms),
        pod_set.min_count,
        topology,
    )


def usage_of_admission(
    admission: Admission, pod_sets: Iterable[PodSet] = (), reclaimable: Mapping[str, int] | None = None
) -> dict[FlavorResource, int]:
    """Quota charged by a recorded admission, the one place an admitted Workload's usage is computed: each
    pod set's ``resourceUsage`` on its flavors, scaled down to the pods that may still run when its Workload
    reports some reclaimable (``status.reclaimablePods``, Kueue's totalRequestsFromAdmission): a pod set
    admitted for ``count`` pods with ``r`` reclaimable of its ``spec`` count ``n`` is charged
    ``resourceUsage / count * (n - r)`` while that is fewer than ``count``. A partial admission already
    charged for fewer pods than may run keeps its charge."""
    by_name = {pod_set.name: pod_set for pod_set in pod_sets} if reclaimable else {}
    usage: dict[FlavorResource, int] = {}
    for assignment in admission.pod_set_assignments:
        pod_set = by_name.get(assignment.name)
        # an admission written without ``count`` is for the whole pod set (Kueue reads it so)
        admitted = assignment.count or (pod_set.count if pod_set is not None else 0)
        running = admitted
        if reclaimable and pod_set is not None:
            running = running_count(pod_set, reclaimable.get(assignment.name, 0))
        for resource, quantity in assignment.resource_usage.items():
            flavor = assignment.flavors.get(resource)
            if flavor is None or quantity.nanos == 0:
                continue
            amount = quantity.nanos
            if running < admitted:
                amount = amount // admitted * running
                if amount == 0:
                    continue
            key = (flavor, resource)
            usage[key] = usage.get(key, 0) + amount
    return usage


def covered_flavor_resources(queue: ClusterQueue) -> Mapping[FlavorResource, int]:
    """``(flavor, resource) -> nominal`` for every quota a ClusterQueue declares."""
    return {
        (flavor.name, quota.name): quota.nominal.nanos
        for group in queue.resource_groups
        for flavor in group.flavors
        for quota in flavor.resources
    }
