"""Jobs seen through Kueue's eyes: pod sets, the Workload to create, the patches that start and stop a Job.

A ``batch/v1`` Job becomes one Workload with one pod set ``main`` of ``min(parallelism, completions)``
pods (Kueue's ``podsCount``); the Workload's name is ``job-<name>-<5 hex>`` where the hex is the start of
the SHA-1 of kind, group, name and UID, exactly as Kueue's ``GetWorkloadNameForOwnerWithGVK`` computes it,
so a Workload created by Kueue and one created by us for the same Job have the same name and either can
take over. Everything here is pure: the controller sends what these functions build, and the webhook
asks the same functions whether a Job is managed, so the two can never disagree.

Starting a Job (after quota is reserved) sets ``spec.suspend=false`` and merges each assigned
ResourceFlavor's ``nodeLabels`` into the pod template's ``nodeSelector`` and appends its
``tolerations``; stopping it re-suspends and puts back the template as recorded in the Workload's pod
set, which is the template before any flavor was injected.

Partial admission (Kueue's ``kueue.x-k8s.io/job-min-parallelism`` annotation): the pod set gets
``minCount`` from the annotation, the start sets ``spec.parallelism`` to the admitted count
(``podSetAssignments[].count``) and the stop puts back the Workload's pod set ``count``, the Job's pod count
before admission, as Kueue's ``RunWithPodSetsInfo``/``RestorePodSetsInfo`` do; with
``kueue.x-k8s.io/job-completions-equal-parallelism: "true"`` completions follow parallelism both ways. A
running Job's parallelism may not change while it accepts partial admission, so, as Kueue's ``Job.Stop``,
stopping it takes two patches: suspend with ``kueue.x-k8s.io/stopping: "true"``, then restore and drop the
annotation (a Job carrying it does not count as suspended until the restore is written).
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from webhook.api.config import Configuration
from webhook.api.errors import FieldError
from webhook.api.finalizers import RESOURCE_IN_USE
from webhook.api.objects import API_VERSION, GROUP, PodSet, ResourceFlavor
from webhook.api.pods import pod_requests

__all__ = [
    "COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION",
    "JOB_UID_LABEL",
    "MIN_PARALLELISM_ANNOTATION",
    "PRIORITY_CLASS_LABEL",
    "QUEUED_OWNER_KINDS",
    "QUEUE_NAME_ANNOTATION",
    "QUEUE_NAME_LABEL",
    "STOPPING_ANNOTATION",
    "FlavorConflict",
    "is_managed",
    "is_stopping",
    "job_min_count",
    "job_pod_count",
    "job_pod_sets",
    "job_priority",
    "job_priority_class",
    "job_queue_name",
    "merge_patch_unsuspend",
    "parse_go_bool",
    "parse_go_int",
    "queued_through_owner",
    "resuspend_patch",
    "stop_patches",
    "syncs_completions",
    "unsuspend_patch",
    "workload_for_job",
    "workload_name",
]

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
#: deprecated in Kueue but still honoured by it, so honoured here
QUEUE_NAME_ANNOTATION = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
#: the fewest pods a Job accepts to start with (Kueue's JobMinParallelismAnnotation)
MIN_PARALLELISM_ANNOTATION = "kueue.x-k8s.io/job-min-parallelism"
#: ``"true"``: completions follow parallelism on partial admission (JobCompletionsEqualParallelismAnnotation)
COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION = "kueue.x-k8s.io/job-completions-equal-parallelism"
#: set while a partially admitted Job is suspended but its parallelism not yet restored (StoppingAnnotation)
STOPPING_ANNOTATION = "kueue.x-k8s.io/stopping"

_GO_INT = re.compile(r"[+-]?[0-9]+")
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})

_HASH_LENGTH = 5
#: Kueue's default (long) limit: 253 minus "-" and the hash
_MAX_PREFIX = 253 - 1 - _HASH_LENGTH


class FlavorConflict(ValueError):
    """A flavor's node label contradicts a nodeSelector the Job already sets; the Job cannot start there."""


def _metadata(job: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = job.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def job_queue_name(job: Mapping[str, Any]) -> str | None:
    """The LocalQueue a Job asks for (label first, then the legacy annotation), or None."""
    meta = _metadata(job)
    for source in (meta.get("labels"), meta.get("annotations")):
        if isinstance(source, Mapping):
            value = source.get(QUEUE_NAME_LABEL)
            if isinstance(value, str) and value:
                return value
    return None


#: kinds Kueue integrates: a Job controlled by one of these is queued through its owner, not on its own
QUEUED_OWNER_KINDS = frozenset(
    {
        "JobSet",
        "RayJob",
        "RayCluster",
        "RayService",
        "MPIJob",
        "PyTorchJob",
        "TFJob",
        "XGBoostJob",
        "PaddleJob",
        "JAXJob",
        "TrainJob",
        "AppWrapper",
    }
)


def queued_through_owner(job: Mapping[str, Any]) -> bool:
    """Whether the Job's controller is a higher-level workload that Kueue queues instead of the Job."""
    owners = _metadata(job).get("ownerReferences")
    return isinstance(owners, list) and any(
        isinstance(ref, Mapping) and ref.get("controller") is True and ref.get("kind") in QUEUED_OWNER_KINDS
        for ref in owners
    )


def is_managed(
    job: Mapping[str, Any],
    *,
    config: Configuration | None = None,
    namespace_labels: Mapping[str, str] | None = None,
) -> bool:
    """Whether we queue this Job: the one rule the webhook (suspend, anti-bypass) and the controller
    (Workload per Job) share, so they can never disagree. Not when a higher-level workload owns it; yes when
    it names a queue; otherwise only with ``manageJobsWithoutQueueName`` in a managed namespace (without a
    ``config``, Kueue's default: false)."""
    if queued_through_owner(job):
        return False
    if job_queue_name(job) is not None:
        return True
    return (
        config is not None
        and config.manage_jobs_without_queue_name
        and config.manages_namespace(namespace_labels or {})
    )


def job_priority_class(job: Mapping[str, Any]) -> str | None:
    labels = _metadata(job).get("labels")
    if isinstance(labels, Mapping):
        value = labels.get(PRIORITY_CLASS_LABEL)
        if isinstance(value, str) and value:
            return value
    return None


def workload_name(job_name: str, job_uid: str, *, kind: str = "Job", group: str = "batch") -> str:
    """Kueue's Workload name for an owner: ``<kind>-<name>`` cut to 247 characters, ``-``, 5 hex of SHA-1."""
    digest = hashlib.sha1(f"{kind}\n{group}\n{job_name}\n{job_uid}".encode(), usedforsecurity=False)
    prefix = f"{kind.lower()}-{job_name}"[:_MAX_PREFIX]
    return f"{prefix}-{digest.hexdigest()[:_HASH_LENGTH]}"


def _int_field(spec: Mapping[str, Any], name: str) -> int | None:
    value = spec.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def job_pod_count(job: Mapping[str, Any]) -> int:
    """``min(parallelism, completions)``; parallelism defaults to 1, unset completions do not bound it."""
    spec = job.get("spec") or {}
    parallelism = _int_field(spec, "parallelism")
    count = 1 if parallelism is None else parallelism
    completions = _int_field(spec, "completions")
    if completions is not None and completions < count:
        count = completions
    return max(count, 0)


def parse_go_int(text: str) -> int | None:
    """Go's ``strconv.Atoi`` (decimal, optional sign, nothing else; 64-bit), None when it would fail."""
    if not _GO_INT.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def parse_go_bool(text: str) -> bool | None:
    """Go's ``strconv.ParseBool``, None when it would fail."""
    return True if text in _GO_TRUE else False if text in _GO_FALSE else None


def _annotation(job: Mapping[str, Any], key: str) -> str | None:
    annotations = _metadata(job).get("annotations")
    value = annotations.get(key) if isinstance(annotations, Mapping) else None
    return value if isinstance(value, str) else None


def job_min_count(job: Mapping[str, Any]) -> int | None:
    """The pod set's ``minCount``: the min-parallelism annotation as an integer (Kueue's minPodsCount;
    the Job webhook rejects any value outside 1..count-1), None when absent or not a number."""
    raw = _annotation(job, MIN_PARALLELISM_ANNOTATION)
    return None if raw is None else parse_go_int(raw)


def syncs_completions(job: Mapping[str, Any]) -> bool:
    """Whether completions follow parallelism on a partial admission (an unparsable value: no)."""
    raw = _annotation(job, COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION)
    return raw is not None and parse_go_bool(raw) is True


def is_stopping(job: Mapping[str, Any]) -> bool:
    """Suspended by the first half of a stop whose restore has not been written yet."""
    return _annotation(job, STOPPING_ANNOTATION) == "true"


def _template(job: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = job.get("spec") or {}
    template = spec.get("template") if isinstance(spec, Mapping) else None
    return template if isinstance(template, Mapping) else {}


def job_pod_sets(job: Mapping[str, Any]) -> tuple[PodSet, ...] | list[FieldError]:
    """The single ``main`` pod set of a Job, or the errors in its pod template."""
    template = _template(job)
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, Mapping) or not pod_spec.get("containers"):
        return [FieldError.required("spec.template.spec.containers")]
    requests, errors = pod_requests(pod_spec, "spec.template.spec")
    if errors:
        return errors
    return (PodSet("main", job_pod_count(job), requests, template, job_min_count(job)),)


def job_priority(
    job: Mapping[str, Any],
    *,
    workload_priority_classes: Mapping[str, int],
    pod_priority_classes: Mapping[str, int] | None = None,
) -> tuple[int, str, str]:
    """(priority, class name, class group) as Kueue fills a Workload's priority for a Job.

    The ``kueue.x-k8s.io/priority-class`` label names a WorkloadPriorityClass and wins; otherwise the
    pod template's ``priorityClassName`` (a scheduling.k8s.io PriorityClass), otherwise the template's
    ``priority``, otherwise 0. An unknown class counts as 0, like a missing default class.
    """
    wpc = job_priority_class(job)
    if wpc is not None:
        return workload_priority_classes.get(wpc, 0), wpc, GROUP
    pod_spec = _template(job).get("spec") or {}
    name = pod_spec.get("priorityClassName") if isinstance(pod_spec, Mapping) else None
    if isinstance(name, str) and name:
        return (pod_priority_classes or {}).get(name, 0), name, "scheduling.k8s.io"
    value = pod_spec.get("priority") if isinstance(pod_spec, Mapping) else None
    return (value if isinstance(value, int) else 0), "", ""


def workload_for_job(
    job: Mapping[str, Any],
    *,
    workload_priority_classes: Mapping[str, int] | None = None,
    pod_priority_classes: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The Workload manifest to create for a managed Job: owned by it (so it is garbage-collected) and
    holding Kueue's resource-in-use finalizer (so deleting it cannot free quota the Job's pods still use)."""
    meta = _metadata(job)
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    template = copy.deepcopy(dict(_template(job)))
    priority, class_name, class_group = job_priority(
        job,
        workload_priority_classes=workload_priority_classes or {},
        pod_priority_classes=pod_priority_classes,
    )
    pod_set: dict[str, Any] = {"name": "main", "count": job_pod_count(job), "template": template}
    min_count = job_min_count(job)
    if min_count is not None:
        pod_set["minCount"] = min_count
    spec: dict[str, Any] = {
        "active": True,
        "podSets": [pod_set],
        "queueName": job_queue_name(job) or "",
    }
    if class_name:
        kind = "WorkloadPriorityClass" if class_group == GROUP else "PriorityClass"
        spec["priorityClassRef"] = {"group": class_group, "kind": kind, "name": class_name}
    spec["priority"] = priority
    metadata: dict[str, Any] = {
        "name": workload_name(name, uid),
        "namespace": meta.get("namespace") or "default",
        "labels": {JOB_UID_LABEL: uid} if uid and len(uid) <= 63 else {},
        "finalizers": [RESOURCE_IN_USE],
        "ownerReferences": [
            {
                "apiVersion": str(job.get("apiVersion") or "batch/v1"),
                "kind": "Job",
                "name": name,
                "uid": uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    return {"apiVersion": API_VERSION, "kind": "Workload", "metadata": metadata, "spec": spec}


def _escape(segment: str) -> str:
    """JSON Pointer escaping (RFC 6901): ``~`` -> ``~0``, ``/`` -> ``~1``."""
    return segment.replace("~", "~0").replace("/", "~1")


def _flavor_injection(
    pod_spec: Mapping[str, Any], flavors: Sequence[ResourceFlavor]
) -> tuple[dict[str, str], list[Any]]:
    selector = dict(pod_spec.get("nodeSelector") or {})
    tolerations = list(pod_spec.get("tolerations") or [])
    for flavor in flavors:
        for key, value in flavor.node_labels.items():
            if key in selector and selector[key] != value:
                raise FlavorConflict(
                    f"nodeSelector {key}={selector[key]} conflicts with ResourceFlavor {flavor.name} "
                    f"node label {key}={value}"
                )
            selector[key] = value
        for toleration in flavor.tolerations:
            if dict(toleration) not in tolerations:
                tolerations.append(dict(toleration))
    return selector, tolerations


def _count_ops(job: Mapping[str, Any], count: int | None) -> list[dict[str, Any]]:
    """Set parallelism (and, when they follow it, completions) to ``count`` on a Job that accepts partial
    admission (Kueue sets them only when the min-parallelism annotation parses)."""
    if count is None or job_min_count(job) is None:
        return []
    spec = job.get("spec") or {}
    fields = ("parallelism", "completions") if syncs_completions(job) else ("parallelism",)
    return [
        {"op": "add", "path": f"/spec/{name}", "value": count}
        for name in fields
        if _int_field(spec, name) != count
    ]


def unsuspend_patch(
    job: Mapping[str, Any], flavors: Sequence[ResourceFlavor], *, count: int | None = None
) -> list[dict[str, Any]]:
    """JSON Patch starting an admitted Job on its flavors, with ``count`` pods in parallel when it accepts
    partial admission (``count``: the admission's ``podSetAssignments[].count``).

    The first op tests that the Job is still suspended, so a patch built from a stale view fails (422)
    instead of silently starting a Job twice. Raises FlavorConflict when a flavor contradicts the Job.
    """
    pod_spec = _template(job).get("spec") or {}
    selector, tolerations = _flavor_injection(pod_spec, flavors)
    ops: list[dict[str, Any]] = [{"op": "test", "path": "/spec/suspend", "value": True}]
    ops.append({"op": "replace", "path": "/spec/suspend", "value": False})
    ops.extend(_count_ops(job, count))
    if selector != (pod_spec.get("nodeSelector") or {}):
        ops.append({"op": "add", "path": "/spec/template/spec/nodeSelector", "value": selector})
    if tolerations != list(pod_spec.get("tolerations") or []):
        ops.append({"op": "add", "path": "/spec/template/spec/tolerations", "value": tolerations})
    return ops


def merge_patch_unsuspend(
    job: Mapping[str, Any], flavors: Sequence[ResourceFlavor], *, count: int | None = None
) -> dict[str, Any]:
    """The same start as a merge patch (for clients that prefer ``application/merge-patch+json``)."""
    pod_spec = _template(job).get("spec") or {}
    selector, tolerations = _flavor_injection(pod_spec, flavors)
    template_spec: dict[str, Any] = {}
    if selector:
        template_spec["nodeSelector"] = selector
    if tolerations:
        template_spec["tolerations"] = tolerations
    patch: dict[str, Any] = {"spec": {"suspend": False}}
    for op in _count_ops(job, count):
        patch["spec"][op["path"].rsplit("/", 1)[1]] = op["value"]
    if template_spec:
        patch["spec"]["template"] = {"spec": template_spec}
    return patch


def resuspend_patch(
    job: Mapping[str, Any], original_template: Mapping[str, Any], original_count: int | None = None
) -> list[dict[str, Any]]:
    """JSON Patch stopping a Job and restoring the nodeSelector/tolerations of ``original_template`` and,
    for a Job that accepts partial admission, its parallelism to ``original_count``.

    ``original_template`` and ``original_count`` are the Workload's pod set template and count, i.e. the
    Job's before admission changed them; template fields absent there are removed from the Job. The
    stopping annotation of a half-done stop goes too.
    """
    current = _template(job).get("spec") or {}
    original = original_template.get("spec") or {}
    ops: list[dict[str, Any]] = [{"op": "replace", "path": "/spec/suspend", "value": True}]
    for field_name in ("nodeSelector", "tolerations"):
        path = f"/spec/template/spec/{_escape(field_name)}"
        if field_name in original:
            if current.get(field_name) != original[field_name]:
                ops.append({"op": "add", "path": path, "value": copy.deepcopy(original[field_name])})
        elif field_name in current:
            ops.append({"op": "remove", "path": path})
    ops.extend(_count_ops(job, original_count))
    if STOPPING_ANNOTATION in (_metadata(job).get("annotations") or {}):
        ops.append(dict(_REMOVE_STOPPING))
    return ops


_REMOVE_STOPPING = {"op": "remove", "path": f"/metadata/annotations/{_escape(STOPPING_ANNOTATION)}"}


def stop_patches(
    job: Mapping[str, Any], original_template: Mapping[str, Any], original_count: int | None = None
) -> list[list[dict[str, Any]]]:
    """The JSON Patches that stop a Job and restore it (``resuspend_patch``), in order.

    One, except when a running Job's parallelism is to be restored: Kueue's Job webhook forbids changing
    the parallelism of a running Job that accepts partial admission, so, as Kueue's ``Job.Stop``, the Job
    is first suspended and marked ``kueue.x-k8s.io/stopping: "true"``, then restored and unmarked.
    """
    restore = resuspend_patch(job, original_template, original_count)
    running = (job.get("spec") or {}).get("suspend") is not True
    if not running or not any(op["path"] == "/spec/parallelism" for op in restore):
        return [restore]
    annotations = _metadata(job).get("annotations")
    mark: dict[str, Any] = (
        {"op": "add", "path": f"/metadata/annotations/{_escape(STOPPING_ANNOTATION)}", "value": "true"}
        if isinstance(annotations, Mapping)
        else {"op": "add", "path": "/metadata/annotations", "value": {STOPPING_ANNOTATION: "true"}}
    )
    suspend = [{"op": "replace", "path": "/spec/suspend", "value": True}, mark]
    if _REMOVE_STOPPING not in restore:
        restore.append(dict(_REMOVE_STOPPING))
    return [suspend, restore]
