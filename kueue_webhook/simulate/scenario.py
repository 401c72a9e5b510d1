"""Documents in, a ``Scenario`` out: the cluster's objects, and the trace placed on the simulated clock.

The input is what ``kubectl apply`` takes, so every object goes through the same parsers and validation as
on a cluster (``kueue_webhook.api``) and a bad one is refused with the file, the document and the field. Jobs,
and objects of every other queued kind (a built-in one the ConfigMap's ``integrations.frameworks`` turns on,
or a CRD its ``integrations.declaredKinds`` declares), become Workloads exactly as the controller names and
sizes them, through the same integration description (``kueue_webhook.api.integrations.engine``). Their
priority
is the controller's rule, finished when the replay starts because a priority class may come later in the
input than the object that names it; likewise an object of a kind the ConfigMap declares may come before
the ConfigMap, so it waits for it. Nothing here runs the scheduler: that is ``replay``.
"""

from __future__ import annotations

import contextlib
import gc
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import yaml

from kueue_webhook.api.config import (
    CONFIG_KEY,
    CONFIGMAP_NAME,
    Configuration,
    ConfigurationErrors,
    parse_configuration,
)
from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.integrations import BUILTIN, JOB, Integration, engine
from kueue_webhook.api.integrations.engine import JOB_UID_LABEL
from kueue_webhook.api.integrations.engine.priority import class_priority
from kueue_webhook.api.integrations.model import Dependency
from kueue_webhook.api.multikueue import MULTIKUEUE_CONTROLLER
from kueue_webhook.api.nodes import NodeView, node_view
from kueue_webhook.api.objects import (
    GROUP,
    AdmissionCheck,
    ClusterQueue,
    Cohort,
    LocalQueue,
    Meta,
    ResourceFlavor,
    Topology,
    Workload,
    WorkloadPriorityClass,
    parse_object,
    parse_workload,
)
from kueue_webhook.api.objects.multikueue import (
    MultiKueueCluster,
    MultiKueueConfig,
    parameters_config,
)

__all__ = [
    "ARRIVAL_ANNOTATION",
    "RUNTIME_ANNOTATION",
    "Scenario",
    "SimulationError",
    "Submission",
    "add_document",
    "load_scenario",
    "parse_duration",
    "scenario_from_documents",
    "unresolved",
    "with_job_priority",
]

ARRIVAL_ANNOTATION = "simulate.kueue-webhook/arrival"
RUNTIME_ANNOTATION = "simulate.kueue-webhook/runtime"
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
_EPOCH_SECONDS = EPOCH.timestamp()

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|µs|ns)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}

#: the kinds of the cluster's configuration a scenario keeps, in the order the replay applies them: what
#: others name comes first (priority classes, flavors, cohorts before the ClusterQueues that use them)
CONFIG_KINDS: Final = (
    WorkloadPriorityClass,
    Topology,
    ResourceFlavor,
    AdmissionCheck,
    NodeView,
    Cohort,
    ClusterQueue,
    LocalQueue,
)
ConfigObject = (
    WorkloadPriorityClass
    | Topology
    | ResourceFlavor
    | AdmissionCheck
    | NodeView
    | Cohort
    | ClusterQueue
    | LocalQueue
)


class SimulationError(ValueError):
    """Bad input: the message names the file, the document and the field."""


def parse_duration(text: Any) -> float:
    """Seconds in a Go-style duration (``1h30m``, ``2m``, ``500ms``) or a plain number of seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"{text!r}: must not be negative")
        return float(text)
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"{text!r}: expected a duration like 30s, 2m or 1h30m")
    value = text.strip()
    head = value[:-1]
    if value[-1] == "s" and head.replace(".", "", 1).isdigit():  # the common ``12.5s``, without regex
        return float(head)
    try:
        seconds = float(value)
    except ValueError:
        pos, seconds = 0, 0.0
        for match in _DURATION_PART.finditer(value):
            if match.start() != pos:
                break
            seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
            pos = match.end()
        if pos != len(value) or pos == 0:
            raise ValueError(f"{text!r}: expected a duration like 30s, 2m or 1h30m") from None
    if seconds < 0:
        raise ValueError(f"{text!r}: must not be negative")
    return seconds


def _timestamp(offset: float) -> str:
    moment = EPOCH + timedelta(seconds=offset)
    if moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(slots=True)
class Submission:
    """One Workload of the trace, with when it arrives and how long it runs once admitted."""

    workload: Workload
    arrival: float
    runtime: float | None
    #: the object it stands for when it names a priority class: resolved when the replay starts, with the
    #: priority classes of the whole input (``with_job_priority``)
    job: Mapping[str, Any] | None = None
    #: the queued kind of ``job`` (a Job when None)
    integration: Integration | None = None
    #: made from a queued object (not a Workload of the input): naming no class, it gets the input's
    #: default PriorityClass, if any
    from_object: bool = False


@dataclass(slots=True)
class Scenario:
    """Everything the input says: the cluster's objects and configuration, and the trace."""

    namespaces: dict[str, Mapping[str, str]] = field(default_factory=dict)
    #: ResourceFlavors, Cohorts, ClusterQueues, LocalQueues and WorkloadPriorityClasses, in input order
    objects: list[ConfigObject] = field(default_factory=list)
    #: ``scheduling.k8s.io`` PriorityClasses, as the input gives them (value checked)
    pod_priority_classes: list[Mapping[str, Any]] = field(default_factory=list)
    submissions: list[Submission] = field(default_factory=list)
    #: the controller's ConfigMap when the input has one (fair sharing and its strategies)
    configuration: Configuration = field(default_factory=Configuration)
    #: objects of kinds no enabled integration knows yet: the ConfigMap may still declare them
    deferred: list[tuple[str, int, Mapping[str, Any]]] = field(default_factory=list)
    #: MultiKueue (``kueue_webhook.simulate.multicluster``): AdmissionCheck -> its MultiKueueConfig
    multikueue_checks: dict[str, str] = field(default_factory=dict)
    #: MultiKueueConfig -> its clusters, in order
    multikueue_configs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: the MultiKueueClusters of the input, in order
    multikueue_clusters: list[str] = field(default_factory=list)
    #: objects queued kinds read their pod sets from (a TrainJob's training runtimes), by (group, kind,
    #: namespace, name)
    dependencies: dict[tuple[str, str, str, str], Mapping[str, Any]] = field(default_factory=dict)
    #: queued objects whose pod sets are read with such an object, resolved once the whole input is read
    #: (a runtime may come after the TrainJob naming it)
    awaiting_dependencies: list[tuple[str, int, Mapping[str, Any], Integration]] = field(default_factory=list)

    @property
    def cluster_queues(self) -> list[ClusterQueue]:
        return [obj for obj in self.objects if isinstance(obj, ClusterQueue)]

    @property
    def workload_priority_classes(self) -> dict[str, int]:
        """WorkloadPriorityClasses: name -> value (the last one of a name wins, as on a cluster)."""
        return {obj.name: obj.value for obj in self.objects if isinstance(obj, WorkloadPriorityClass)}

    @property
    def priority_classes(self) -> engine.PriorityClasses:
        """Every priority class of the input, as a Workload's priority reads them."""
        pods = engine.PriorityClasses.from_objects((), self.pod_priority_classes)
        return replace(pods, workload=self.workload_priority_classes)


def with_job_priority(submission: Submission, classes: engine.PriorityClasses) -> Workload:
    """The submission's Workload with the priority the controller would give its object, once every
    priority class of the input is known (``engine.priority``: the WorkloadPriorityClass label, else the
    kind's or the pod template's PriorityClass, else the default PriorityClass). A class the input does not
    define counts as 0: the controller would make no Workload until it exists, a what-if shows the object
    queued anyway."""
    job = submission.job
    if job is not None:
        priority, class_name, class_group = engine.priority(submission.integration or JOB, job, classes)
    elif submission.from_object:
        priority, class_name, class_group = class_priority(None, classes)
    else:
        return submission.workload
    return replace(
        submission.workload,
        priority=priority,
        priority_class_name=class_name,
        priority_class_group=class_group,
    )


class _Where:
    """``file: document N (Kind/name)`` for error messages, spelled out only when an error needs it."""

    __slots__ = ("doc", "index", "source")

    def __init__(self, source: str, index: int, doc: Mapping[str, Any]) -> None:
        self.source, self.index, self.doc = source, index, doc

    def __str__(self) -> str:
        doc = self.doc
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
        name = meta.get("name") if isinstance(meta, Mapping) else None
        kind = doc.get("kind") or "document"
        return f"{self.source}: document {self.index + 1} ({kind}{'/' + str(name) if name else ''})"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def _errors(where: _Where, errors: Sequence[FieldError]) -> SimulationError:
    return SimulationError(f"{where}: " + "; ".join(str(e) for e in errors))


def _timing(where: _Where, meta: Mapping[str, Any]) -> tuple[float, float | None]:
    annotations = meta.get("annotations") or {}
    try:
        arrival = parse_duration(annotations.get(ARRIVAL_ANNOTATION, 0))
    except ValueError as exc:
        raise SimulationError(f"{where}: metadata.annotations[{ARRIVAL_ANNOTATION}]: {exc}") from None
    runtime: float | None = None
    if RUNTIME_ANNOTATION in annotations:
        try:
            runtime = parse_duration(annotations[RUNTIME_ANNOTATION])
        except ValueError as exc:
            raise SimulationError(f"{where}: metadata.annotations[{RUNTIME_ANNOTATION}]: {exc}") from None
    return arrival, runtime


def _object_submission(
    where: _Where, integration: Integration, obj: Mapping[str, Any], index: int, scenario: Scenario
) -> Submission:
    """A queued object (a Job, a JobSet, a declared kind ...) as the Workload the controller would create;
    a kind whose pod sets are partly in an object it names (a TrainJob) is read with that object of the
    input."""
    if integration.resolver is not None:

        def lookup(dependency: Dependency, name: str, namespace: str) -> Mapping[str, Any] | None:
            return scenario.dependencies.get((dependency.group, dependency.kind, namespace, name))

        resolved = integration.resolver.resolve(obj, lookup)
        if isinstance(resolved, str):
            raise SimulationError(f"{where}: {resolved} in the input")
        obj = resolved
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("name"):
        raise SimulationError(f"{where}: metadata.name: Required value")
    queue = engine.queue_name(obj)
    if queue is None:
        raise SimulationError(
            f"{where}: metadata.labels[kueue.x-k8s.io/queue-name]: Required value: "
            f"a {integration.kind} without a queue is not managed and would run outside any quota"
        )
    pod_sets = engine.pod_sets(integration, obj)
    if isinstance(pod_sets, list):
        raise _errors(where, pod_sets)
    arrival, runtime = _timing(where, meta)
    name = str(meta["name"])
    uid = str(meta.get("uid") or f"simulated-{index}")
    namespace = str(meta.get("namespace") or "default")
    labels = meta.get("labels") or {}
    # the classes are not all read yet: a named class is looked up again when the replay starts
    priority, class_name, class_group = engine.priority(integration, obj, engine.NO_CLASSES)
    workload = Workload(
        meta=Meta(
            name=engine.workload_name(name, uid, kind=integration.kind, group=integration.group),
            namespace=namespace,
            uid=uid,
            creation_timestamp=_timestamp(arrival),
            created_at=_EPOCH_SECONDS + arrival,
            labels={**labels, JOB_UID_LABEL: uid},
        ),
        pod_sets=pod_sets,
        queue_name=queue,
        priority=priority,
        priority_class_name=class_name,
        priority_class_group=class_group,
    )
    job = obj if class_name else None
    return Submission(workload, arrival, runtime, job=job, integration=integration, from_object=True)


def _queued_kind(scenario: Scenario, doc: Mapping[str, Any]) -> Integration | None:
    """The integration an object is queued through: Jobs always (``simulate`` is about quotas, so a Job in
    the input is one to queue), any other kind when the input's configuration enables or declares it."""
    if doc.get("kind") == "Job":
        return JOB
    return scenario.configuration.integrations.for_object(doc)


def _not_queued(where: _Where, doc: Mapping[str, Any]) -> SimulationError:
    return SimulationError(
        f"{where}: {doc.get('kind')} of {doc.get('apiVersion')} is not a kind simulate queues: enable its "
        "integration in the ConfigMap's integrations.frameworks, or declare it in integrations.declaredKinds"
    )


def unresolved(scenario: Scenario) -> None:
    """Raise for the first object of a kind the whole input never enabled or declared; queue the objects
    that waited for the objects they name (a TrainJob for its runtime), raising for the first whose object
    the input lacks."""
    for source, index, doc in scenario.deferred:
        raise _not_queued(_Where(source, index, doc), doc)
    awaiting, scenario.awaiting_dependencies = scenario.awaiting_dependencies, []
    for source, index, doc, integration in awaiting:
        scenario.submissions.append(
            _object_submission(_Where(source, index, doc), integration, doc, index, scenario)
        )


def _dependency_key(doc: Mapping[str, Any]) -> tuple[str, str, str, str] | None:
    """The key of an object a built-in kind reads its pod sets from (None for any other object)."""
    group = str(doc.get("apiVersion", "")).rpartition("/")[0]
    for integration in BUILTIN.values():
        for dependency in integration.resolver.dependencies if integration.resolver is not None else ():
            if (dependency.group, dependency.kind) == (group, doc.get("kind")):
                meta = doc.get("metadata") or {}
                namespace = str(meta.get("namespace") or "default") if dependency.namespaced else ""
                return group, dependency.kind, namespace, str(meta.get("name") or "")
    return None


def _workload_submission(where: _Where, doc: Mapping[str, Any]) -> Submission:
    """A Workload document as it is: its own ``spec.priority`` (or class reference) is its priority."""
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    arrival, runtime = _timing(where, meta)
    stamped = dict(doc)
    stamped_meta = dict(meta)
    stamped_meta.setdefault("namespace", "default")
    stamped_meta["creationTimestamp"] = _timestamp(arrival)
    stamped["metadata"] = stamped_meta
    parsed = parse_workload(stamped)
    if isinstance(parsed, list):
        raise _errors(where, parsed)
    meta = replace(parsed.meta, created_at=_EPOCH_SECONDS + arrival)
    return Submission(replace(parsed, meta=meta), arrival, runtime)


def _name(where: _Where, doc: Mapping[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    if not meta.get("name"):
        raise SimulationError(f"{where}: metadata.name: Required value")
    return str(meta["name"])


def add_document(scenario: Scenario, doc: Any, *, source: str, index: int) -> None:
    """Add one YAML document to the scenario; raises SimulationError naming the document and field."""
    if doc is None:
        return
    if not isinstance(doc, Mapping):
        raise SimulationError(f"{source}: document {index + 1}: expected a Kubernetes object (a mapping)")
    where = _Where(source, index, doc)
    kind = doc.get("kind")
    if kind in ("List", "NamespaceList") and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            add_document(scenario, item, source=source, index=index)
        return
    if kind == "Namespace":
        name = _name(where, doc)
        scenario.namespaces[name] = dict((doc.get("metadata") or {}).get("labels") or {})
        return
    if kind == "Node" and doc.get("apiVersion") == "v1":
        # a node of a TAS flavor: its labels place it in the topology, its allocatable is what pods fit in
        view = node_view(doc)
        if view is None:
            raise SimulationError(f"{where}: metadata.name: Required value")
        scenario.objects.append(view)
        return
    dependency = _dependency_key(doc)
    if dependency is not None:
        scenario.dependencies[dependency] = doc
        return
    integration = _queued_kind(scenario, doc)
    if integration is not None and integration.resolver is not None:
        scenario.awaiting_dependencies.append((source, index, doc, integration))
        return
    if integration is not None:
        scenario.submissions.append(_object_submission(where, integration, doc, index, scenario))
        return
    if not str(doc.get("apiVersion", "")).startswith(f"{GROUP}/") and kind not in (
        "ConfigMap",
        "PriorityClass",
    ):
        scenario.deferred.append((source, index, doc))  # the ConfigMap may come later and declare it
        return
    if kind == "PriorityClass" and str(doc.get("apiVersion", "")).startswith("scheduling.k8s.io/"):
        _name(where, doc)  # a PriorityClass without a name is refused, as on a cluster
        value = doc.get("value")
        if not isinstance(value, int) or isinstance(value, bool):
            raise SimulationError(f"{where}: value: Required value: a 32-bit integer")
        scenario.pod_priority_classes.append(doc)
        return
    if kind == "ConfigMap":
        meta = doc.get("metadata") or {}
        if meta.get("name") != CONFIGMAP_NAME:
            return  # someone else's ConfigMap: nothing to simulate
        parsed_config = parse_configuration((doc.get("data") or {}).get(CONFIG_KEY))
        if isinstance(parsed_config, ConfigurationErrors):
            raise SimulationError(f"{where}: data[{CONFIG_KEY}]: {parsed_config}")
        scenario.configuration = parsed_config
        waiting, scenario.deferred = scenario.deferred, []
        for source_, index_, deferred in waiting:
            add_document(scenario, deferred, source=source_, index=index_)
        return
    if kind == "Workload":
        scenario.submissions.append(_workload_submission(where, doc))
        return
    parsed = parse_object(doc)
    if isinstance(parsed, list):
        raise _errors(where, parsed)
    if isinstance(parsed, AdmissionCheck):
        # its controller is taken to serve it (Active): checks pass at once on a simulated clock
        scenario.objects.append(replace(parsed, active=True))
        if parsed.controller_name == MULTIKUEUE_CONTROLLER:
            config, problem = parameters_config({"spec": {"parameters": dict(parsed.parameters)}})
            if config is None:
                raise SimulationError(f"{where}: spec.parameters: {problem}")
            scenario.multikueue_checks[parsed.name] = config
    elif isinstance(parsed, CONFIG_KINDS):
        scenario.objects.append(parsed)
    elif isinstance(parsed, MultiKueueCluster):
        scenario.multikueue_clusters.append(parsed.name)
    elif isinstance(parsed, MultiKueueConfig):
        scenario.multikueue_configs[parsed.name] = parsed.clusters


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: loading and replaying allocate millions of small objects
    that live until the end and hold no cycles, so its repeated scans would find nothing."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def scenario_from_documents(documents: Iterable[tuple[str, int, Any]]) -> Scenario:
    """A scenario from ``(source, index, document)`` triples; raises SimulationError at the first bad one."""
    scenario = Scenario()
    with gc_paused():
        for source, index, doc in documents:
            add_document(scenario, doc, source=source, index=index)
    unresolved(scenario)
    return scenario


def load_scenario(paths: Iterable[str | Path]) -> Scenario:
    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    def documents() -> Iterable[tuple[str, int, Any]]:
        for path in paths:
            source = str(path)
            try:
                text = Path(path).read_text(encoding="utf-8")
            except OSError as exc:
                raise SimulationError(f"{source}: {exc.strerror or exc}") from None
            try:
                loaded = list(yaml.load_all(text, Loader=loader))
            except yaml.YAMLError as exc:
                raise SimulationError(f"{source}: not valid YAML: {exc}") from None
            for index, doc in enumerate(loaded):
                yield source, index, doc

    return scenario_from_documents(documents())
