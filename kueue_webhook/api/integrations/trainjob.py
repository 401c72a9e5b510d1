"""A Kubeflow Trainer TrainJob's pod sets, read from the training runtime it names, and its flavors handed
to the Trainer controller in a runtime patch of Kueue's.

A TrainJob holds almost nothing of its pods: ``spec.runtimeRef`` names a ClusterTrainingRuntime (the
default) or a TrainingRuntime in its namespace, whose ``spec.template`` is a JobSet template, and the
TrainJob adds overrides: ``spec.runtimePatches`` (strategic merge patches of that JobSet spec, one per
manager), ``spec.trainer.numNodes``, ``resourcesPerNode``, ``image``, ``command`` and ``args``. Kueue reads
its pod sets by having the Trainer library build the JobSet the TrainJob would run and reading that
JobSet's (``pkg/controller/jobs/trainjob``). ``resolve`` does the same build for what the quota depends on:

* each replicated job of the runtime, with every runtime patch but Kueue's own merged in, is a pod set
  named after it;
* a replicated job labelled as the trainer step (``trainer.kubeflow.org/trainjob-ancestor-step: trainer``)
  runs ``spec.trainer.numNodes`` pods (else the runtime's ``mlPolicy.numNodes``, else 1), one replica;
  with an MPI policy it is the ``node`` job that is counted so, one fewer when the launcher runs as a node;
  the dataset and model initializers run one replica; every job's parallelism and completions are set to
  its count, so a pod set has ``replicas * count`` pods (Kueue's JobSet ``podsCount``);
* ``resourcesPerNode`` is merged into the ``node`` container of the trainer step (or of the MPI launcher
  running as a node), and ``image``, ``command`` and ``args`` replace the trainer's.

The result is kept in the view under ``RUNTIME_VIEW`` (a key no object from the API server has), where the
kind's pod set source reads it; nothing is ever written there. Starting the TrainJob writes each pod set's
flavor (nodeSelector, tolerations) into the runtime patch of manager ``kueue.x-k8s.io/manager`` (Kueue's
``RunWithPodSetsInfo``), added when the TrainJob has none; stopping it empties that patch (Kueue's
``RestorePodSetsInfo``). As the Trainer merges patches strategically, a pod spec's tolerations in a patch
replace the runtime's: the patch carries the runtime's own tolerations followed by the flavor's, so none is
lost.

A TrainJob whose runtime does not exist gets no Workload, and a message saying what it waits for; the
runtime's arrival queues it. Kueue refuses such a TrainJob at creation (its webhook builds the pod sets
when topology-aware scheduling is on); here it is let in, as a runtime created in the same ``kubectl
apply`` may not have reached the controller's cache yet.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.integrations.model import Dependency, PodSetMarks, RuntimeLookup

__all__ = [
    "ANCESTOR_LABEL",
    "CLUSTER_TRAINING_RUNTIMES",
    "GROUP",
    "RUNTIME_PATCH_MANAGER",
    "RUNTIME_VIEW",
    "TRAINING_RUNTIMES",
    "admitted_changes",
    "clear_runtime_patch",
    "from_workload",
    "refers_to",
    "replicated_jobs",
    "resolve",
    "runtime_ref",
    "strategic_merge",
    "without_kueue_patch",
    "write_marked_runtime_patch",
    "write_runtime_patch",
]

JSON = dict[str, Any]

GROUP = "trainer.kubeflow.org"
#: the manager name of Kueue's runtime patch (Kueue's ``runtimePatchManagerName``)
RUNTIME_PATCH_MANAGER = "kueue.x-k8s.io/manager"
#: the label marking a replicated job as a step of the TrainJob (Trainer's ``LabelTrainJobAncestor``)
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
_TRAINER = "trainer"
_INITIALIZERS = frozenset({"dataset-initializer", "model-initializer"})
#: the name of the trainer's container, and of the MPI node job
_NODE = "node"
#: where the view keeps the runtime's replicated jobs as the TrainJob runs them
RUNTIME_VIEW = "__resolvedRuntime"

TRAINING_RUNTIMES = Dependency(GROUP, "v1alpha1", "TrainingRuntime", "trainingruntimes", namespaced=True)
CLUSTER_TRAINING_RUNTIMES = Dependency(
    GROUP, "v1alpha1", "ClusterTrainingRuntime", "clustertrainingruntimes", namespaced=False
)


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def runtime_ref(obj: Mapping[str, Any]) -> tuple[Dependency | None, str]:
    """The kind and name ``spec.runtimeRef`` names, with the CRD's defaults (group trainer.kubeflow.org,
    kind ClusterTrainingRuntime); the kind is None when it is not one of the two runtimes."""
    ref = _map(_map(obj.get("spec")).get("runtimeRef"))
    group = ref.get("apiGroup", GROUP)
    kind = ref.get("kind", CLUSTER_TRAINING_RUNTIMES.kind)
    name = ref.get("name")
    name = name if isinstance(name, str) else ""
    if group != GROUP:
        return None, name
    for dependency in (CLUSTER_TRAINING_RUNTIMES, TRAINING_RUNTIMES):
        if kind == dependency.kind:
            return dependency, name
    return None, name


def refers_to(obj: Mapping[str, Any], dependency: Dependency, name: str, namespace: str) -> bool:
    kind, ref_name = runtime_ref(obj)
    if kind != dependency or ref_name != name:
        return False
    return not dependency.namespaced or _map(obj.get("metadata")).get("namespace") == namespace


# -- strategic merge of a JobSet spec -----------------------------------------------------------------

#: the lists of a JobSet spec merged item by item in a strategic merge patch, by their merge key (the
#: ``patchMergeKey`` of JobSet's and core/v1's types); every other list is replaced whole
_MERGE_KEYS = {
    "replicatedJobs": "name",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
    "resourceClaims": "name",
}


def _merge_list(base: list[Any], patch: list[Any], key: str) -> list[Any]:
    out = [copy.deepcopy(item) for item in base]
    for item in patch:
        if not isinstance(item, Mapping) or key not in item:
            out.append(copy.deepcopy(item))
            continue
        for index, existing in enumerate(out):
            if isinstance(existing, Mapping) and existing.get(key) == item[key]:
                out[index] = strategic_merge(existing, item)
                break
        else:
            out.append(copy.deepcopy(dict(item)))
    return out


def strategic_merge(base: Mapping[str, Any], patch: Mapping[str, Any]) -> JSON:
    """``patch`` merged into ``base`` as a strategic merge patch of a JobSet spec: maps merged key by key
    (a null removes the key), the lists Kubernetes merges by key merged item by item, other values
    replaced."""
    out = copy.deepcopy(dict(base))
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
            continue
        current = out.get(key)
        merge_key = _MERGE_KEYS.get(key)
        if isinstance(value, list) and isinstance(current, list) and merge_key is not None:
            out[key] = _merge_list(current, value, merge_key)
        elif isinstance(value, Mapping) and isinstance(current, Mapping):
            out[key] = strategic_merge(current, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# -- the pod sets ---------------------------------------------------------------------------------------


def _patched_jobset_spec(obj: Mapping[str, Any], runtime: Mapping[str, Any]) -> JSON:
    """The runtime's JobSet spec with the TrainJob's runtime patches merged in, in order, Kueue's own left
    out (it holds the flavors, which are not what the TrainJob asks for)."""
    spec = dict(_map(_map(_map(runtime.get("spec")).get("template")).get("spec")))
    patches = _map(obj.get("spec")).get("runtimePatches")
    for patch in patches if isinstance(patches, list) else ():
        if not isinstance(patch, Mapping) or patch.get("manager") == RUNTIME_PATCH_MANAGER:
            continue
        template_patch = _map(_map(patch.get("trainingRuntimeSpec")).get("template")).get("spec")
        if isinstance(template_patch, Mapping):
            spec = strategic_merge(spec, template_patch)
    return spec


def _node_container(template: JSON) -> JSON | None:
    containers = _map(template.get("spec")).get("containers")
    for container in containers if isinstance(containers, list) else ():
        if isinstance(container, dict) and container.get("name") == _NODE:
            return container
    return None


def _merge_resources(container: JSON, per_node: Mapping[str, Any]) -> None:
    """Trainer's ``MergeResourceRequirements``: the requests and limits maps merged name by name."""
    resources = dict(_map(container.get("resources")))
    for field in ("requests", "limits"):
        extra = per_node.get(field)
        if isinstance(extra, Mapping):
            resources[field] = {**_map(resources.get(field)), **extra}
    container["resources"] = resources


def replicated_jobs(obj: Mapping[str, Any], runtime: Mapping[str, Any]) -> list[JSON]:
    """Each replicated job of the JobSet the TrainJob runs with ``runtime``, in the runtime's order, as
    ``{name, replicas, count, template}``: ``count`` its pods (replicas times parallelism), ``template`` its
    pod template with the TrainJob's overrides."""
    spec = _patched_jobset_spec(obj, runtime)
    runtime_spec = _map(runtime.get("spec"))
    ml_policy = runtime_spec.get("mlPolicy")
    mpi = _map(ml_policy).get("mpi") if isinstance(ml_policy, Mapping) else None
    launcher_as_node = isinstance(mpi, Mapping) and mpi.get("runLauncherAsNode") is True
    trainer = _map(_map(obj.get("spec")).get("trainer"))
    num_nodes = trainer.get("numNodes")
    out: list[JSON] = []
    jobs = spec.get("replicatedJobs")
    for job in jobs if isinstance(jobs, list) else ():
        if not isinstance(job, Mapping):
            continue
        name = str(job.get("name") or "")
        job_template = _map(job.get("template"))
        ancestor = _map(_map(job_template.get("metadata")).get("labels")).get(ANCESTOR_LABEL)
        job_spec = _map(job_template.get("spec"))
        count = _int(job_spec.get("parallelism"), 1)
        if ancestor == _TRAINER and isinstance(ml_policy, Mapping):
            count = _int(ml_policy.get("numNodes"), 1)
        if isinstance(num_nodes, int) and not isinstance(num_nodes, bool):
            if isinstance(mpi, Mapping):
                if name == _NODE:
                    count = max(num_nodes - 1, 1) if launcher_as_node else num_nodes
            elif ancestor == _TRAINER:
                count = num_nodes
        replicas = 1 if ancestor == _TRAINER or ancestor in _INITIALIZERS else _int(job.get("replicas"), 1)
        template = copy.deepcopy(dict(_map(job_spec.get("template"))))
        node = _node_container(template)
        per_node = trainer.get("resourcesPerNode")
        trainer_step = ancestor == _TRAINER and isinstance(ml_policy, Mapping)
        sized = trainer_step or (launcher_as_node and name == _NODE)
        if node is not None and isinstance(per_node, Mapping) and sized:
            _merge_resources(node, per_node)
        if node is not None and ancestor == _TRAINER:
            for field in ("image", "command", "args"):
                if trainer.get(field) is not None:
                    node[field] = copy.deepcopy(trainer[field])
        out.append({"name": name, "replicas": replicas, "count": replicas * count, "template": template})
    return out


def resolve(obj: Mapping[str, Any], lookup: RuntimeLookup) -> JSON | str:
    """The TrainJob with its runtime's replicated jobs under ``RUNTIME_VIEW``, or why it cannot be read."""
    dependency, name = runtime_ref(obj)
    ref = _map(_map(obj.get("spec")).get("runtimeRef"))
    if dependency is None:
        return (
            f"spec.runtimeRef: unsupported runtime {ref.get('apiGroup', GROUP)}/"
            f"{ref.get('kind', CLUSTER_TRAINING_RUNTIMES.kind)}: only {TRAINING_RUNTIMES.kind} and "
            f"{CLUSTER_TRAINING_RUNTIMES.kind} of {GROUP}"
        )
    namespace = str(_map(obj.get("metadata")).get("namespace") or "") if dependency.namespaced else ""
    runtime = lookup(dependency, name, namespace)
    if runtime is None:
        where = f"{namespace}/{name}" if namespace else name
        return (
            f"{dependency.kind} {where!r} not found (spec.runtimeRef): the TrainJob gets its Workload "
            f"once it exists"
        )
    view = dict(obj)
    view[RUNTIME_VIEW] = {"replicatedJobs": replicated_jobs(obj, runtime)}
    return view


def from_workload(obj: Mapping[str, Any], workload: Mapping[str, Any]) -> JSON:
    """The TrainJob with the pod sets its Workload recorded under ``RUNTIME_VIEW``, for when its runtime is
    gone: one replica of ``count`` pods each."""
    pod_sets = _map(workload.get("spec")).get("podSets")
    jobs = [
        {
            "name": str(p.get("name") or ""),
            "replicas": 1,
            "count": _int(p.get("count"), 1),
            "template": copy.deepcopy(dict(_map(p.get("template")))),
        }
        for p in (pod_sets if isinstance(pod_sets, list) else ())
        if isinstance(p, Mapping)
    ]
    view = dict(obj)
    view[RUNTIME_VIEW] = {"replicatedJobs": jobs}
    return view


# -- the flavors, in Kueue's runtime patch --------------------------------------------------------------


def _kueue_patch_index(obj: Mapping[str, Any]) -> int | None:
    patches = _map(obj.get("spec")).get("runtimePatches")
    for index, patch in enumerate(patches if isinstance(patches, list) else ()):
        if isinstance(patch, Mapping) and patch.get("manager") == RUNTIME_PATCH_MANAGER:
            return index
    return None


def _view_job(obj: Mapping[str, Any], segments: tuple[str | int, ...]) -> Mapping[str, Any]:
    jobs = _map(obj.get(RUNTIME_VIEW)).get("replicatedJobs")
    index = segments[-1] if segments else None
    if isinstance(jobs, list) and isinstance(index, int) and 0 <= index < len(jobs):
        return _map(jobs[index])
    return {}


def _patch_entry(replicated_jobs_patch: list[JSON] | None) -> JSON:
    spec: JSON = {} if replicated_jobs_patch is None else {"replicatedJobs": replicated_jobs_patch}
    return {"manager": RUNTIME_PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": spec}}}


def _set_kueue_patch_ops(obj: Mapping[str, Any], entry: JSON) -> list[JSON]:
    index = _kueue_patch_index(obj)
    if index is not None:
        where = f"/spec/runtimePatches/{index}"
        return [
            {"op": "test", "path": f"{where}/manager", "value": RUNTIME_PATCH_MANAGER},
            {"op": "replace", "path": where, "value": entry},
        ]
    if isinstance(_map(obj.get("spec")).get("runtimePatches"), list):
        return [{"op": "add", "path": "/spec/runtimePatches/-", "value": entry}]
    return [{"op": "add", "path": "/spec/runtimePatches", "value": [entry]}]


def write_runtime_patch(
    obj: Mapping[str, Any],
    infos: Sequence[tuple[tuple[str | int, ...], Mapping[str, str], Sequence[Any]]],
) -> list[JSON]:
    """The JSON Patch writing each pod set's nodeSelector and tolerations into Kueue's runtime patch
    (``obj`` is the resolved view; ``infos`` in pod set order)."""
    return write_marked_runtime_patch(obj, [PodSetMarks(*info) for info in infos])


def write_marked_runtime_patch(obj: Mapping[str, Any], infos: Sequence[PodSetMarks]) -> list[JSON]:
    """The JSON Patch writing into Kueue's runtime patch what each pod set's start hands over (Kueue's
    ``RunWithPodSetsInfo``): nodeSelector and tolerations in the pod spec, with the pods' labels,
    annotations and scheduling gates (a topology placement's, a MultiKueue worker's label)."""
    jobs: list[JSON] = []
    for info in infos:
        job = _view_job(obj, info.segments)
        pod_spec = _map(_map(job.get("template")).get("spec"))
        own = pod_spec.get("tolerations")
        merged = list(own) if isinstance(own, list) else []
        merged += [t for t in info.tolerations if t not in merged]
        patch_spec: JSON = {}
        if info.node_selector:
            patch_spec["nodeSelector"] = dict(info.node_selector)
        if info.tolerations:
            patch_spec["tolerations"] = copy.deepcopy(merged)
        if info.scheduling_gates:
            patch_spec["schedulingGates"] = [{"name": gate} for gate in info.scheduling_gates]
        pod_template: JSON = {"spec": patch_spec}
        metadata = {
            key: dict(value)
            for key, value in (("labels", info.labels), ("annotations", info.annotations))
            if value
        }
        if metadata:
            pod_template = {"metadata": metadata, **pod_template}
        jobs.append({"name": job.get("name", ""), "template": {"spec": {"template": pod_template}}})
    return _set_kueue_patch_ops(obj, _patch_entry(jobs))


def clear_runtime_patch(obj: Mapping[str, Any]) -> list[JSON]:
    """The JSON Patch emptying Kueue's runtime patch (nothing when it holds nothing)."""
    index = _kueue_patch_index(obj)
    if index is None:
        return []
    patches = _map(obj.get("spec")).get("runtimePatches")
    assert isinstance(patches, list)
    if patches[index] == _patch_entry(None):
        return []
    return _set_kueue_patch_ops(obj, _patch_entry(None))


def without_kueue_patch(spec: JSON) -> None:
    """Drop Kueue's runtime patch from a TrainJob spec (a MultiKueue worker's copy: the worker's own
    controller writes its own, Kueue's ``SyncJob`` for TrainJob)."""
    patches = spec.get("runtimePatches")
    if not isinstance(patches, list):
        return
    kept = [p for p in patches if not (isinstance(p, Mapping) and p.get("manager") == RUNTIME_PATCH_MANAGER)]
    if kept:
        spec["runtimePatches"] = kept
    else:
        spec.pop("runtimePatches", None)


def _kueue_patch(obj: Mapping[str, Any]) -> Any:
    index = _kueue_patch_index(obj)
    patches = _map(obj.get("spec")).get("runtimePatches")
    return patches[index] if index is not None and isinstance(patches, list) else None


def admitted_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldError]:
    """A running TrainJob's runtime patch of Kueue's holds the flavors its admission assigned: only the
    controller may change it (a user moving the pods to other nodes would run them outside the flavor)."""
    if _kueue_patch(old) == _kueue_patch(new):
        return []
    return [
        FieldError.forbidden(
            "spec.runtimePatches",
            f"the runtime patch of manager {RUNTIME_PATCH_MANAGER} cannot be changed while the TrainJob is "
            "admitted: the queueing controller writes it from the assigned ResourceFlavors",
        )
    ]
