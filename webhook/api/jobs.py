"""``batch/v1`` Jobs seen through Kueue's eyes: the Job entry of the integrations
(``webhook.api.integrations``) under the names the rest of the code and its tests have always used.

A Job is one pod set ``main`` of ``min(parallelism, completions)`` pods (Kueue's ``podsCount``); its Workload
is ``job-<name>-<5 hex>`` as Kueue's ``GetWorkloadNameForOwnerWithGVK`` names it. Starting a Job (after
quota is reserved) sets ``spec.suspend=false`` and merges each assigned ResourceFlavor's ``nodeLabels`` into
the pod template's ``nodeSelector`` and appends its ``tolerations``; stopping it re-suspends and puts back the
template as recorded in the Workload's pod set.

Partial admission (Kueue's ``kueue.x-k8s.io/job-min-parallelism`` annotation): the pod set gets ``minCount``
from the annotation, the start sets ``spec.parallelism`` to the admitted count and the stop puts back the
Workload's pod set ``count``, as Kueue's ``RunWithPodSetsInfo``/``RestorePodSetsInfo`` do; with
``kueue.x-k8s.io/job-completions-equal-parallelism: "true"`` completions follow parallelism both ways. A
running Job's parallelism may not change while it accepts partial admission, so, as Kueue's ``Job.Stop``,
stopping it takes two patches: suspend with ``kueue.x-k8s.io/stopping: "true"``, then restore and drop the
annotation (a Job carrying it does not count as suspended until the restore is written).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webhook.api.config import Configuration
from webhook.api.errors import FieldError
from webhook.api.integrations import engine
from webhook.api.integrations.builtin import JOB
from webhook.api.integrations.engine import (
    JOB_UID_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    FlavorConflict,
    parse_go_bool,
    parse_go_int,
    workload_name,
)
from webhook.api.integrations.managed import is_managed as _is_managed
from webhook.api.integrations.owners import Ancestry
from webhook.api.objects import PodSet, ResourceFlavor

__all__ = [
    "COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION",
    "JOB_UID_LABEL",
    "MIN_PARALLELISM_ANNOTATION",
    "PRIORITY_CLASS_LABEL",
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
    "resuspend_patch",
    "stop_patches",
    "syncs_completions",
    "unsuspend_patch",
    "workload_for_job",
    "workload_name",
]

#: deprecated in Kueue but still honoured by it, so honoured here
QUEUE_NAME_ANNOTATION = QUEUE_NAME_LABEL
assert JOB.partial_admission is not None and JOB.pod_sets[0].min_count is not None
assert JOB.staged_stop is not None
#: the fewest pods a Job accepts to start with (Kueue's JobMinParallelismAnnotation)
MIN_PARALLELISM_ANNOTATION = JOB.pod_sets[0].min_count.annotation
#: ``"true"``: completions follow parallelism on partial admission (JobCompletionsEqualParallelismAnnotation)
COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION = JOB.partial_admission.follow_annotation
#: set while a partially admitted Job is suspended but its parallelism not yet restored (StoppingAnnotation)
STOPPING_ANNOTATION = JOB.staged_stop.annotation


def job_queue_name(job: Mapping[str, Any]) -> str | None:
    """The LocalQueue a Job asks for (label first, then the legacy annotation), or None."""
    return engine.queue_name(job)


def is_managed(
    job: Mapping[str, Any],
    *,
    ancestry: Ancestry,
    config: Configuration | None = None,
    namespace_labels: Mapping[str, str] | None = None,
) -> bool:
    """Whether we queue this Job (``webhook.api.integrations.managed.is_managed`` for the Job entry)."""
    return _is_managed(job, JOB, ancestry=ancestry, config=config, namespace_labels=namespace_labels)


def job_priority_class(job: Mapping[str, Any]) -> str | None:
    labels = (job.get("metadata") or {}).get("labels")
    if isinstance(labels, Mapping):
        value = labels.get(PRIORITY_CLASS_LABEL)
        if isinstance(value, str) and value:
            return value
    return None


def job_pod_count(job: Mapping[str, Any]) -> int:
    """``min(parallelism, completions)``; parallelism defaults to 1, unset completions do not bound it."""
    return engine.pod_count(JOB, job)


def job_min_count(job: Mapping[str, Any]) -> int | None:
    """The pod set's ``minCount``: the min-parallelism annotation as an integer, None when absent or not a
    number (Kueue's Job webhook rejects any value outside 1..count-1)."""
    return engine.min_count(JOB, job)


def syncs_completions(job: Mapping[str, Any]) -> bool:
    """Whether completions follow parallelism on a partial admission (an unparsable value: no)."""
    raw = ((job.get("metadata") or {}).get("annotations") or {}).get(COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION)
    return isinstance(raw, str) and parse_go_bool(raw) is True


def is_stopping(job: Mapping[str, Any]) -> bool:
    """Suspended by the first half of a stop whose restore has not been written yet."""
    return engine.is_stopping(JOB, job)


def job_pod_sets(job: Mapping[str, Any]) -> tuple[PodSet, ...] | list[FieldError]:
    """The single ``main`` pod set of a Job, or the errors in its pod template."""
    return engine.pod_sets(JOB, job)


def job_priority(
    job: Mapping[str, Any],
    *,
    workload_priority_classes: Mapping[str, int],
    pod_priority_classes: Mapping[str, int] | None = None,
) -> tuple[int, str, str]:
    """(priority, class name, class group) as Kueue fills a Workload's priority for a Job."""
    return engine.priority(
        JOB,
        job,
        workload_priority_classes=workload_priority_classes,
        pod_priority_classes=pod_priority_classes,
    )


def workload_for_job(
    job: Mapping[str, Any],
    *,
    workload_priority_classes: Mapping[str, int] | None = None,
    pod_priority_classes: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The Workload manifest to create for a managed Job."""
    return engine.workload_for(
        JOB,
        job,
        workload_priority_classes=workload_priority_classes,
        pod_priority_classes=pod_priority_classes,
    )


def _main(count: int | None) -> dict[str, int]:
    """A count for the Job's one pod set ``main``, keyed as the engine takes counts."""
    return {} if count is None else {"main": count}


def unsuspend_patch(
    job: Mapping[str, Any], flavors: Sequence[ResourceFlavor], *, count: int | None = None
) -> list[dict[str, Any]]:
    """JSON Patch starting an admitted Job on its flavors, with ``count`` pods in parallel when it accepts
    partial admission. Raises FlavorConflict when a flavor contradicts the Job."""
    return engine.start_patch(JOB, job, {"main": flavors}, counts=_main(count))


def merge_patch_unsuspend(
    job: Mapping[str, Any], flavors: Sequence[ResourceFlavor], *, count: int | None = None
) -> dict[str, Any]:
    """The same start as a merge patch (for clients that prefer ``application/merge-patch+json``)."""
    patch: dict[str, Any] = {"spec": {"suspend": False}}
    for op in unsuspend_patch(job, flavors, count=count)[2:]:
        *parents, leaf = op["path"].strip("/").split("/")[1:]
        target = patch["spec"]
        for name in parents:
            target = target.setdefault(name, {})
        target[leaf] = op["value"]
    return patch


def resuspend_patch(
    job: Mapping[str, Any], original_template: Mapping[str, Any], original_count: int | None = None
) -> list[dict[str, Any]]:
    """JSON Patch stopping a Job and restoring the nodeSelector/tolerations of ``original_template`` and,
    for a Job that accepts partial admission, its parallelism to ``original_count``."""
    return engine.restore_ops(JOB, job, [original_template], _main(original_count))


def stop_patches(
    job: Mapping[str, Any], original_template: Mapping[str, Any], original_count: int | None = None
) -> list[list[dict[str, Any]]]:
    """The JSON Patches that stop a Job and restore it, in order (two for a running, partially admitted
    Job)."""
    return engine.stop_patches(JOB, job, [original_template], _main(original_count))
