"""An AppWrapper's pod sets and flavors, as Kueue reads and writes them (``pkg/controller/jobs/appwrapper``
with the AppWrapper project's ``pkg/utils``).

An AppWrapper (``workload.codeflare.dev/v1beta2``) wraps whole objects, ``spec.components[].template`` (a
Job, a JobSet, a PyTorchJob, a RayCluster ...), and its own controller creates them once it is started. Each
component has pod sets: a ``path`` to a pod template inside it, written from ``template`` (``template.spec.
template``, ``template.spec.replicatedJobs[1].template.spec.template``), and a ``replicas`` count (1 when
unset). They are, in this order of preference, those the AppWrapper controller recorded in
``status.componentStatus`` (once it recorded every component), those the component declares in ``podSets``,
or those the AppWrapper project infers for the kinds it knows (Job, JobSet, PyTorchJob, RayCluster, RayJob,
Pod, Deployment, StatefulSet). Every pod set of every component, in order, is one Workload pod set, named
``<appwrapper name>-<index>``.

The flavors do not go into the wrapped templates: Kueue hands each pod set's nodeSelector and tolerations to
the AppWrapper controller in ``spec.components[].podSetInfos`` (one entry per pod set of the component), and
a stop clears every ``podSetInfos``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "clear_pod_set_infos",
    "component_pod_sets",
    "elements",
    "infer_pod_sets",
    "parse_template_path",
    "workload_template",
    "write_pod_set_infos",
]

JSON = dict[str, Any]
Segments = tuple[str | int, ...]

_STEP = re.compile(r"\.([A-Za-z0-9_-]+)|\[(\d+)\]")


def parse_template_path(path: str) -> Segments | None:
    """``template.spec.replicatedJobs[0].template`` as segments relative to the component, None when it is
    not such a path (it must start with ``template``, as the AppWrapper project requires)."""
    if not path.startswith("template"):
        return None
    segments: list[str | int] = ["template"]
    rest = path[len("template") :]
    while rest:
        match = _STEP.match(rest)
        if match is None:
            return None
        segments.append(match.group(1) if match.group(1) is not None else int(match.group(2)))
        rest = rest[match.end() :]
    return tuple(segments)


def _at(obj: Any, segments: Segments) -> Any:
    for step in segments:
        if isinstance(step, int):
            if not isinstance(obj, list) or not 0 <= step < len(obj):
                return None
            obj = obj[step]
        else:
            if not isinstance(obj, Mapping):
                return None
            obj = obj.get(step)
    return obj


def _int(value: Any, default: int = 1) -> int | None:
    """An integer count (``default`` when unset), None when it is something else."""
    if value is None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def _pod_set(path: str, replicas: Any) -> JSON:
    return {"path": path, "replicas": replicas}


def _replicas_at(component: Mapping[str, Any], path: str) -> int | None:
    found = parse_template_path(path)
    return _int(_at(component, found)) if found is not None else None


def _ray_pod_sets(component: Mapping[str, Any], prefix: str) -> list[JSON]:
    out = [_pod_set(f"{prefix}headGroupSpec.template", 1)]
    workers = _at(component, parse_template_path(f"{prefix}workerGroupSpecs") or ())
    for index, _ in enumerate(workers if isinstance(workers, list) else ()):
        group = f"{prefix}workerGroupSpecs[{index}]."
        if _at(component, parse_template_path(f"{group}template") or ()) is not None:
            out.append(_pod_set(f"{group}template", _replicas_at(component, f"{group}replicas")))
    return out


def _jobset_pod_sets(component: Mapping[str, Any]) -> list[JSON]:
    out = []
    jobs = _at(component, ("template", "spec", "replicatedJobs"))
    for index, job in enumerate(jobs if isinstance(jobs, list) else ()):
        if not isinstance(job, Mapping) or job.get("template") is None:
            continue
        spec = _at(job, ("template", "spec"))
        pods = _capped(spec if isinstance(spec, Mapping) else {})
        replicas = job.get("replicas")
        replicas = replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 1
        path = f"template.spec.replicatedJobs[{index}].template.spec.template"
        out.append(_pod_set(path, replicas * pods))
    return out


def _capped(job_spec: Mapping[str, Any]) -> int:
    """A Job's pods at once: parallelism (1 unset) capped by completions, as the AppWrapper project counts."""
    parallelism, completions = job_spec.get("parallelism"), job_spec.get("completions")
    count = parallelism if isinstance(parallelism, int) and not isinstance(parallelism, bool) else 1
    if isinstance(completions, int) and not isinstance(completions, bool) and completions < count:
        count = completions
    return count


#: (group, version, kind) -> [(template path, replicas path or "")] for the simple kinds
_SIMPLE: Mapping[tuple[str, str, str], tuple[tuple[str, str], ...]] = {
    ("", "v1", "Pod"): (("template", ""),),
    ("apps", "v1", "Deployment"): (("template.spec.template", "template.spec.replicas"),),
    ("apps", "v1", "StatefulSet"): (("template.spec.template", "template.spec.replicas"),),
}


def infer_pod_sets(component: Mapping[str, Any]) -> list[JSON]:
    """The AppWrapper project's ``InferPodSets`` for a component of a kind it knows; [] for another."""
    template = component.get("template")
    if not isinstance(template, Mapping):
        return []
    group, _, version = str(template.get("apiVersion") or "").rpartition("/")
    gvk = (group, version, str(template.get("kind") or ""))
    if gvk == ("batch", "v1", "Job"):
        spec = template.get("spec")
        return [_pod_set("template.spec.template", _capped(spec if isinstance(spec, Mapping) else {}))]
    if gvk == ("jobset.x-k8s.io", "v1alpha2", "JobSet"):
        return _jobset_pod_sets(component)
    if gvk == ("kubeflow.org", "v1", "PyTorchJob"):
        out = []
        for replica_type in ("Master", "Worker"):
            prefix = f"template.spec.pytorchReplicaSpecs.{replica_type}."
            if _at(component, parse_template_path(f"{prefix}template") or ()) is not None:
                out.append(_pod_set(f"{prefix}template", _replicas_at(component, f"{prefix}replicas")))
        return out
    if gvk == ("ray.io", "v1", "RayCluster"):
        return _ray_pod_sets(component, "template.spec.")
    if gvk == ("ray.io", "v1", "RayJob"):
        return _ray_pod_sets(component, "template.spec.rayClusterSpec.")
    out = []
    for path, replicas in _SIMPLE.get(gvk, ()):
        if _at(component, parse_template_path(path) or ()) is not None:
            out.append(_pod_set(path, _replicas_at(component, replicas) if replicas else 1))
    return out


def _components(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = obj.get("spec")
    found = spec.get("components") if isinstance(spec, Mapping) else None
    return [c if isinstance(c, Mapping) else {} for c in found] if isinstance(found, list) else []


def _recorded(obj: Mapping[str, Any], count: int) -> list[Any] | None:
    """The pod sets the AppWrapper controller recorded per component, when it recorded every component."""
    status = obj.get("status")
    found = status.get("componentStatus") if isinstance(status, Mapping) else None
    if not isinstance(found, list) or len(found) != count:
        return None
    return [s.get("podSets") if isinstance(s, Mapping) else None for s in found]


def component_pod_sets(obj: Mapping[str, Any]) -> list[list[JSON]]:
    """Each component's pod sets (path, replicas), as Kueue's ``GetComponentPodSpecs`` finds them."""
    components = _components(obj)
    recorded = _recorded(obj, len(components))
    out = []
    for index, component in enumerate(components):
        found = recorded[index] if recorded is not None else component.get("podSets")
        if not found and recorded is None:
            found = infer_pod_sets(component)
        out.append([dict(p) for p in found if isinstance(p, Mapping)] if isinstance(found, list) else [])
    return out


def elements(obj: Mapping[str, Any]) -> list[tuple[str, Segments, str, Mapping[str, Any]]]:
    """Every pod set as (name, segments, text path, element): the element holds its ``replicas`` and the
    ``template`` it points at; a pod set whose path leads to no pod template is skipped, as Kueue skips it."""
    meta = obj.get("metadata")
    name = str(meta.get("name") or "") if isinstance(meta, Mapping) else ""
    components = _components(obj)
    out: list[tuple[str, Segments, str, Mapping[str, Any]]] = []
    for c, pod_sets in enumerate(component_pod_sets(obj)):
        for pod_set in pod_sets:
            path = pod_set.get("path")
            segments = parse_template_path(path) if isinstance(path, str) else None
            template = _at(components[c], segments) if segments is not None else None
            if (
                segments is None
                or not isinstance(template, Mapping)
                or not isinstance(template.get("spec"), Mapping)
            ):
                continue
            replicas = pod_set.get("replicas")
            element = {"replicas": 1 if replicas is None else replicas, "template": template}
            where = f"spec.components[{c}].{path}"
            out.append((f"{name}-{len(out)}".lower(), ("spec", "components", c, *segments), where, element))
    return out


def write_pod_set_infos(
    obj: Mapping[str, Any], infos: Sequence[tuple[Segments, Mapping[str, str], Sequence[Any]]]
) -> list[JSON]:
    """JSON Patch handing each pod set's nodeSelector and tolerations (``infos``, by the pod set's segments,
    in pod set order) to the AppWrapper controller: ``spec.components[c].podSetInfos``, one entry per pod set
    of the component, as Kueue's ``SetPodSetInfos``."""
    per_component: dict[int, list[JSON]] = {}
    for segments, selector, tolerations in infos:
        entry: JSON = {}
        if selector:
            entry["nodeSelector"] = dict(selector)
        if tolerations:
            entry["tolerations"] = [dict(t) for t in tolerations]
        index = segments[2]
        if isinstance(index, int):
            per_component.setdefault(index, []).append(entry)
    return [
        {"op": "add", "path": f"/spec/components/{index}/podSetInfos", "value": entries}
        for index, entries in sorted(per_component.items())
    ]


def clear_pod_set_infos(obj: Mapping[str, Any]) -> list[JSON]:
    """JSON Patch removing every component's ``podSetInfos`` (Kueue's ``ClearPodSetInfos``)."""
    return [
        {"op": "remove", "path": f"/spec/components/{index}/podSetInfos"}
        for index, component in enumerate(_components(obj))
        if "podSetInfos" in component
    ]


_SPEC_FIELDS = (
    "initContainers",
    "containers",
    "restartPolicy",
    "nodeSelector",
    "nodeName",
    "securityContext",
    "affinity",
    "schedulerName",
    "tolerations",
    "priorityClassName",
    "preemptionPolicy",
    "overhead",
    "topologySpreadConstraints",
)
_CONTAINER_FIELDS = ("name", "image", "command", "args", "resources", "securityContext")


def workload_template(element: Mapping[str, Any]) -> Mapping[str, Any]:
    """The part of a wrapped pod template Kueue's Workload holds (the AppWrapper project's
    ``GetPodTemplateSpec``): its labels and annotations, and the scheduling fields of its spec with only the
    name, image, command, args, resources and security context of each container."""
    template = element.get("template")
    template = template if isinstance(template, Mapping) else {}
    spec = template.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    out_spec: JSON = {}
    for key in _SPEC_FIELDS:
        value = spec.get(key)
        if value is None:
            continue
        if key in ("initContainers", "containers") and isinstance(value, list):
            value = [
                {k: c[k] for k in _CONTAINER_FIELDS if k in c} if isinstance(c, Mapping) else c for c in value
            ]
        out_spec[key] = value
    out: JSON = {"spec": out_spec}
    meta = template.get("metadata")
    if isinstance(meta, Mapping):
        kept = {k: meta[k] for k in ("labels", "annotations") if isinstance(meta.get(k), Mapping)}
        if kept:
            out["metadata"] = kept
    return out
