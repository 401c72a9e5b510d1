"""What the controller must know about a suspendable kind to queue it, as data.

Kueue teaches its controller each kind in Go (``pkg/controller/jobs/*``: ``IsSuspended``, ``PodSets``,
``RunWithPodSetsInfo``, ``RestorePodSetsInfo``, ``Finished``, ``IsActive``, ``PodsReady``). Almost all of that
code reads or writes a few fields at known places, so here an integration is a frozen description of
those places, and one pure engine (``kueue_webhook.api.integrations.engine``) does the reading and writing for
every kind: ``batch/v1`` Job is one entry like JobSet or RayJob, and an admin can declare another CRD in
the ConfigMap with the same fields (``kueue_webhook.api.integrations.declare``). Paths are relative to the
object
unless a field says it is relative to a pod set's element (an item of ``spec.replicatedJobs``, a value of
``spec.pytorchReplicaSpecs``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.integrations.paths import FieldPath

__all__ = [
    "ActiveRule",
    "CountFactor",
    "Dependency",
    "Expanded",
    "FieldIs",
    "FinishedRule",
    "Integration",
    "MinCount",
    "PartialAdmission",
    "PodSetInfos",
    "PodSetMarks",
    "PodSetSource",
    "PodsReadyRule",
    "Resolver",
    "RuntimeLookup",
    "SchedulingGate",
    "StagedStop",
]


_TEMPLATE = FieldPath(("template",))


@dataclass(frozen=True, slots=True)
class FieldIs:
    """A field's value is one of ``values``; an absent field reads as ``missing``."""

    path: FieldPath
    values: frozenset[str]
    missing: str = ""

    def holds(self, obj: Any) -> bool:
        value = self.path.get(obj)
        return (self.missing if value is None else str(value)) in self.values


@dataclass(frozen=True, slots=True)
class CountFactor:
    """One factor of a pod set's count: the integer at ``path`` (``default`` when unset), capped by the
    integer at ``at_most`` when that is set (a Job's completions cap its parallelism)."""

    path: FieldPath
    default: int = 1
    at_most: FieldPath | None = None


@dataclass(frozen=True, slots=True)
class MinCount:
    """Where a pod set's ``minCount`` is, making it partially admittable (Kueue's PartialAdmission): the
    integer at ``path`` in the pod set's element (a declared kind's field), or the object's ``annotation``
    parsed as a Go integer (a Job's ``kueue.x-k8s.io/job-min-parallelism``).

    Starting the object under a partial admission writes the admitted count into the pod set's single
    count field, and stopping it writes back the Workload's ``count`` (Kueue's ``RunWithPodSetsInfo`` and
    ``RestorePodSetsInfo`` for a Job's parallelism), whenever the value reads as an integer. In the
    Workload, a value outside ``1..count-1`` leaves the pod set all or nothing (nothing to shrink, Kueue's
    ``CanBePartiallyAdmitted``) unless ``as_written``: Kueue's Job copies its annotation whatever it says,
    its webhook keeping it in range."""

    path: FieldPath | None = None
    annotation: str = ""
    as_written: bool = False


#: one pod set a kind's own reading found: its name, JSON Pointer segments, text path and element
Expanded = tuple[str, tuple[str | int, ...], str, Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class PodSetInfos:
    """A kind that takes its pod sets' nodeSelector and tolerations in fields of its own, for its controller
    to apply to what it creates, rather than in pod templates (an AppWrapper's ``podSetInfos``): ``write``
    gives the JSON Patch handing them over (each pod set's segments, nodeSelector and tolerations, in pod
    set order), ``clear`` the one taking them all back on a stop."""

    write: Callable[
        [Mapping[str, Any], Sequence[tuple[tuple[str | int, ...], Mapping[str, str], Sequence[Any]]]],
        list[dict[str, Any]],
    ]
    clear: Callable[[Mapping[str, Any]], list[dict[str, Any]]]
    #: when set, used instead of ``write`` with each pod set's marks too (``PodSetMarks``: a topology
    #: placement's labels, annotations and gate, a MultiKueue worker's pod label), as Kueue's PodSetInfo
    #: carries them to a TrainJob's runtime patch
    write_marked: Callable[[Mapping[str, Any], Sequence[PodSetMarks]], list[dict[str, Any]]] | None = None


@dataclass(frozen=True, slots=True)
class PodSetMarks:
    """What starting one pod set hands over (Kueue's PodSetInfo): the flavors' nodeSelector and
    tolerations, the labels and annotations its pods get, and the scheduling gates they are created with."""

    segments: tuple[str | int, ...]
    node_selector: Mapping[str, str]
    tolerations: Sequence[Any]
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    scheduling_gates: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PodSetSource:
    """Where pod sets live: one element at ``path`` (named ``name``), each item of a list there (named by
    the item's ``name_field``), or each value of a map there (named by its key, in ``order`` when given:
    Kueue's ordered replica types, keys not listed being ignored). Names are lowercased as Kueue's
    ``NewPodSetReference`` does. ``template`` and ``count`` are read from the element; ``min_count``, only
    for one element counted by one field, says it may run with fewer pods.

    ``default_template`` is what the quota is computed from when the element has no template (KubeRay's
    default submitter pod); nothing is injected into an absent template. ``only_if`` limits the pod set
    to objects where a field has one of some values (a RayJob's submitter exists only in K8sJobMode).
    ``build_template`` and ``scheduling`` are for a pod set whose pods are described by the element's own
    fields."""

    path: FieldPath
    each: Literal["one", "list", "map"] = "one"
    name: str = ""
    name_field: FieldPath | None = None
    order: tuple[str, ...] = ()
    template: FieldPath = _TEMPLATE
    count: tuple[CountFactor, ...] = ()
    default_template: Mapping[str, Any] | None = None
    only_if: FieldIs | None = None
    min_count: MinCount | None = None
    #: builds the pod template from the element, for a kind that describes its pods by fields of its own
    #: rather than by a template (a SparkApplication's driver and executor); the template is then only
    #: what the quota and the Workload read, and nothing is written into it
    build_template: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    #: where the flavor's ``nodeSelector`` and ``tolerations`` are written, relative to the element (the
    #: element itself when empty); None: the template's ``spec``
    scheduling: FieldPath | None = None
    #: the pod sets are found by the kind's own reading of the object rather than at ``path`` (an
    #: AppWrapper's wrapped components): each as (name, JSON Pointer segments, text path, element), the
    #: element read with ``count`` and ``template`` as any other
    expand: Callable[[Mapping[str, Any]], Sequence[Expanded]] | None = None


@dataclass(frozen=True, slots=True)
class FinishedRule:
    """When the object is done, and whether it succeeded (Kueue's ``Finished``): a True condition among
    ``succeeded``/``failed`` condition types, or a phase field among ``succeeded_phases``/``failed_phases``.
    ``success`` overrides which finished objects count as succeeded (a RayJob's jobStatus);
    ``message`` is where the message is when it is not the condition's."""

    succeeded: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    phase: FieldPath | None = None
    succeeded_phases: tuple[str, ...] = ()
    failed_phases: tuple[str, ...] = ()
    success: FieldIs | None = None
    message: FieldPath | None = None
    #: a failed object is not finished while a condition among these is True (an AppWrapper still deleting
    #: what it created)
    failed_held_by: tuple[str, ...] = ()
    #: (phase, message): the Finished message for a phase when the object writes none (an AppWrapper's)
    phase_messages: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ActiveRule:
    """Whether pods may still run (Kueue's ``IsActive``): the integers at ``counts`` (``*`` allowed) sum
    above 0, the field ``when`` names holds, or a condition among ``conditions`` is True. Quota of an
    evicted object is released only once it is not active."""

    counts: tuple[FieldPath, ...] = ()
    when: FieldIs | None = None
    conditions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PodsReadyRule:
    """waitForPodsReady (Kueue's ``PodsReady``): a True condition among ``conditions``, or the field
    ``when`` names holding and, when ``ready`` is given, the ``ready`` counts (an integer counts as itself,
    a list as its length, a map as its values among ``ready_states`` when those are given) reaching the
    ``total`` counts (the pod sets' pod count when ``total`` is empty)."""

    conditions: tuple[str, ...] = ()
    when: FieldIs | None = None
    ready: tuple[FieldPath, ...] = ()
    total: tuple[FieldPath, ...] = ()
    ready_states: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class PartialAdmission:
    """What a Job adds to its pod set's ``MinCount``: the admitted count is also written into
    ``follow_fields`` when ``follow_annotation`` is "true"."""

    follow_annotation: str
    follow_fields: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StagedStop:
    """A kind whose running objects cannot be suspended and restored in one write. kube-apiserver lets a
    Job's pod template scheduling directives (nodeSelector, tolerations) change only while the stored Job
    is suspended and has no ``status.startTime`` (``pkg/registry/batch/job/strategy.go``), and Kueue's Job
    webhook forbids a running Job's parallelism to change. So, as Kueue's ``Job.Stop``, a running object is
    first suspended and marked with ``annotation``, its ``start_time`` cleared through the status
    subresource when still set, and only then restored and unmarked."""

    annotation: str
    start_time: FieldPath


@dataclass(frozen=True, slots=True)
class SchedulingGate:
    """A kind held back by a scheduling gate rather than a suspend field (Kueue's pod integration): created
    with the gate ``name`` in ``spec.schedulingGates``, started by removing it with the flavors injected into
    the object's own pod spec in the same patch (kube-apiserver lets a gated pod's nodeSelector and
    tolerations grow), and stopped by deletion, as a gate can never be added back after creation.
    ``finalizer`` keeps a stopped object around until its end has been seen (Kueue's
    ``kueue.x-k8s.io/managed`` finalizer on pods), ``managed_label`` marks the objects queued here."""

    name: str
    finalizer: str = ""
    managed_label: str = ""


@dataclass(frozen=True, slots=True)
class Dependency:
    """A kind of object a queued kind's pod sets are read from (a TrainJob's training runtimes)."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool


#: an object of a dependency kind by (kind, name, namespace: "" for a cluster-scoped one); None when absent
RuntimeLookup = Callable[[Dependency, str, str], Mapping[str, Any] | None]


@dataclass(frozen=True, slots=True)
class Resolver:
    """A kind whose pod sets are not all in the object itself: part of them is in another object it names
    (a TrainJob's pods are described by the TrainingRuntime it refers to, with its own overrides).

    ``resolve`` gives the object as the engine reads it, the other object's part merged in where the kind's
    pod set sources look for it, or a message saying why that cannot be done (the referenced object is
    missing). ``from_workload`` gives that view from the pod sets the object's Workload recorded, for an
    object whose referenced object went away after its Workload was made: it can still be started, stopped
    and finished. ``refers_to`` says whether an object names a given dependency object, so that a change of
    the latter reconciles the former. Everything the object's patches write is in the object itself; the
    view's extra part is only read."""

    dependencies: tuple[Dependency, ...]
    resolve: Callable[[Mapping[str, Any], RuntimeLookup], dict[str, Any] | str]
    from_workload: Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]
    refers_to: Callable[[Mapping[str, Any], Dependency, str, str], bool]


@dataclass(frozen=True, slots=True)
class Integration:
    """One suspendable kind, under the framework ``name`` Kueue's ``integrations.frameworks`` uses."""

    name: str
    group: str
    version: str
    kind: str
    plural: str
    suspend: FieldPath
    pod_sets: tuple[PodSetSource, ...]
    finished: FinishedRule
    active: ActiveRule
    pods_ready: PodsReadyRule | None = None
    #: object fields naming a PriorityClass, read before the pod templates' priorityClassName
    priority_class: tuple[FieldPath, ...] = ()
    #: fields that, when set, mean the object is not queued (a RayJob using an existing cluster)
    skip_when_set: tuple[FieldPath, ...] = ()
    partial_admission: PartialAdmission | None = None
    staged_stop: StagedStop | None = None
    #: held back by a scheduling gate (``suspend`` then names the gates' list)
    gate: SchedulingGate | None = None
    #: never suspended itself: its pod template is marked so that its pods are queued one by one ("pods", a
    #: Deployment's), as one group of ``replicas`` ("group", a StatefulSet's) or as one group per replica
    #: ("groups", a LeaderWorkerSet's) through the pod integration
    through_pods: Literal["", "pods", "group", "groups"] = ""
    #: the pod templates marked so that the pods made from them are queued (a kind queued through its pods)
    pod_templates: tuple[FieldPath, ...] = (FieldPath(("spec", "template")),)
    #: the kind takes its pod sets' flavors in fields of its own rather than in their templates
    pod_set_infos: PodSetInfos | None = None
    #: the kind's pod sets are read with another object the queued one names (``Resolver``)
    resolver: Resolver | None = None
    #: the kind's own rules on a queued object's fields (Kueue's webhook of that kind), every problem found
    value_rules: Callable[[Mapping[str, Any]], list[FieldError]] | None = None
    #: what the kind lets no one but the controller change while the object runs, beside its pod templates'
    #: flavors and resources (a TrainJob's runtime patch of Kueue's)
    admitted_rules: Callable[[Mapping[str, Any], Mapping[str, Any]], list[FieldError]] | None = None
    #: the pods of each pod set that will never run again, by pod set name, from the object as its plan
    #: reads it (Kueue's ``JobWithReclaimablePods``; ``kueue_webhook.api.integrations.reclaimable``); None:
    #: the kind reports none
    reclaimable: Callable[[Mapping[str, Any]], dict[str, int]] | None = None
    #: declared in the ConfigMap rather than built in
    declared: bool = field(default=False, compare=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def matches(self, api_version: object, kind: object) -> bool:
        """Whether an object (or an ownerReference) of ``apiVersion``/``kind`` is of this kind; the version
        is not compared, as one kind is one kind whatever version a client used."""
        if kind != self.kind or not isinstance(api_version, str):
            return False
        group = api_version.rpartition("/")[0]
        return group == self.group
