"""Admission rules for ``batch/v1`` Jobs: queue them on create, and keep them queued.

Mutation (CREATE) follows Kueue's Job defaulter: a Job that names a LocalQueue, or any Job in a managed
namespace when ``manageJobsWithoutQueueName`` is set, is created suspended so that only the controller
starts it once its Workload is admitted; a Job without the label gets the namespace's default LocalQueue
(``default``, or the name the configuration gives for that namespace) when that LocalQueue exists.

Validation keeps Kueue's rules and messages verbatim (``jobframework/validation.go``): the queue label is a
DNS-1123 subdomain, it is immutable while the Job runs and may not be dropped where a default queue exists,
the priority-class label may not be added to a running Job nor removed, ``max-exec-time-seconds`` is a
positive integer fixed once running. On top of those it enforces what Kueue leaves to external policy
engines, each denial saying which rule fired and what to do instead:

* label policy: in a namespace matched by ``labelPolicy.enforcedNamespaceSelector`` a Job must carry the
  queue label (the denial lists the LocalQueues there) and the label can never be removed;
* owners: a Job is left to its owner (not suspended, no label policy) only when the owner it claims is real
  and queued (``webhook.api.integrations.owners``); and once queued on its own, no edit of its
  ownerReferences can make it a child of another object (only the controller identity may);
* anti-bypass: on a managed Job only the controller identity (the configured user name, and the one the
  API server reported for the controller's credentials) may flip ``spec.suspend`` from true to false,
  and may change the pod template's nodeSelector, tolerations or resources while the Job runs (the
  controller injects them from the assigned ResourceFlavor; a user editing them would escape the quota
  accounting).

Everything here is pure: the request, the configuration and a :class:`ClusterView` in, a Verdict out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from webhook.admission.fields import IMMUTABLE, aggregate_message, label_path
from webhook.admission.owners import ancestry, reparented
from webhook.admission.review import AdmissionRequest, Verdict
from webhook.admission.view import ClusterView, namespace_labels_or_default
from webhook.api.config import Configuration
from webhook.api.errors import FieldError
from webhook.api.integrations import JOB, engine
from webhook.api.integrations.owners import Ancestry
from webhook.api.jobs import (
    COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION,
    MIN_PARALLELISM_ANNOTATION,
    QUEUE_NAME_LABEL,
    STOPPING_ANNOTATION,
    is_managed,
    job_pod_count,
    job_queue_name,
    parse_go_bool,
    parse_go_int,
)
from webhook.api.validation import dns1123_subdomain_problems

__all__ = [
    "MAX_EXEC_TIME_LABEL",
    "PREBUILT_WORKLOAD_LABEL",
    "PRIORITY_CLASS_LABEL",
    "QUEUE_LABEL",
    "max_exec_time_errors",
    "mutate_job",
    "validate_job",
]

QUEUE_LABEL = QUEUE_NAME_LABEL
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
MAX_EXEC_TIME_LABEL = engine.MAX_EXEC_TIME_LABEL
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"

_KUBECTL_HINT = (
    "kubectl create job cannot set labels: write the label into the manifest and use kubectl create -f, or "
    "pipe it: kubectl create job NAME --image=IMAGE --dry-run=client -o yaml | kubectl label --local -f - "
    f"{QUEUE_LABEL}=QUEUE -o yaml | kubectl create -f -"
)


class _Malformed(ValueError):
    """The Job in the review is not shaped like a Job; answered allowed=false with code 400."""


class _Job:
    """The few fields of a Job the rules read, checked for shape once."""

    __slots__ = (
        "annotations",
        "completion_mode",
        "completions",
        "labels",
        "parallelism",
        "pod_count",
        "queue_name",
        "suspended",
        "template_spec",
    )

    def __init__(self, obj: Mapping[str, Any] | None, where: str) -> None:
        if obj is None:
            raise _Malformed(f"{where} is missing")
        metadata = _mapping(obj.get("metadata"), f"{where}.metadata")
        labels = _mapping(metadata.get("labels"), f"{where}.metadata.labels")
        for key, value in labels.items():
            if not isinstance(value, str):
                raise _Malformed(f"{where}.metadata.labels[{key}] must be a string")
        self.labels: Mapping[str, str] = labels
        annotations = _mapping(metadata.get("annotations"), f"{where}.metadata.annotations")
        for key, value in annotations.items():
            if not isinstance(value, str):
                raise _Malformed(f"{where}.metadata.annotations[{key}] must be a string")
        self.annotations: Mapping[str, str] = annotations
        # the object model's reading (label, then Kueue's legacy annotation), so the controller agrees
        self.queue_name = job_queue_name(obj) or ""
        owners = metadata.get("ownerReferences") or []
        if not isinstance(owners, list):
            raise _Malformed(f"{where}.metadata.ownerReferences must be a list")
        spec = _mapping(obj.get("spec"), f"{where}.spec")
        suspend = spec.get("suspend")
        if suspend is not None and not isinstance(suspend, bool):
            raise _Malformed(f"{where}.spec.suspend must be a boolean")
        self.suspended = suspend is True
        self.parallelism = _optional_int(spec.get("parallelism"), f"{where}.spec.parallelism")
        self.completions = _optional_int(spec.get("completions"), f"{where}.spec.completions")
        self.completion_mode = spec.get("completionMode")
        self.pod_count = job_pod_count(obj)
        template = _mapping(spec.get("template"), f"{where}.spec.template")
        self.template_spec = _mapping(template.get("spec"), f"{where}.spec.template.spec")

    @property
    def kueue_suspended(self) -> bool:
        """Kueue's Job.IsSuspended: suspended, and not half-way through the controller's two-step stop."""
        return self.suspended and self.annotations.get(STOPPING_ANNOTATION) != "true"


def _optional_int(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise _Malformed(f"{where} must be an integer")
    return value


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _Malformed(f"{where} must be an object")
    return value


def _is_job(request: AdmissionRequest) -> bool:
    return request.kind.group == "batch" and request.kind.kind == "Job"


def _enabled(config: Configuration) -> bool:
    """Whether the batch/job integration is on; when it is off, Jobs are left alone."""
    return config.integrations.for_kind("batch", "Job") is not None


def _ancestry(
    obj: Mapping[str, Any] | None, request: AdmissionRequest, config: Configuration, view: ClusterView
) -> Ancestry:
    """Whether the Job is left to a real queued owner (``webhook.admission.owners``)."""
    return ancestry(obj, JOB, request, config, view)


def _pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


# -- mutation ---------------------------------------------------------------------------------------


def mutate_job(request: AdmissionRequest, *, config: Configuration, view: ClusterView) -> Verdict:
    """Kueue's Job defaulter: default queue label, then ``spec.suspend: true`` for managed Jobs (CREATE)."""
    if not _is_job(request):
        return Verdict.unprocessable(f"this endpoint admits batch/v1 Jobs, got {request.kind}")
    if request.operation != "CREATE":
        return Verdict.allow()
    try:
        job = _Job(request.object, "object")
    except _Malformed as exc:
        return Verdict.unprocessable(str(exc))
    if not _enabled(config) or _ancestry(request.object, request, config, view).through_owner:
        return Verdict.allow()
    namespace_labels = namespace_labels_or_default(view, request.namespace)
    managed = config.manages_namespace(namespace_labels)
    patch: list[dict[str, Any]] = []
    queue = job.queue_name
    if not queue and (managed or config.label_policy.is_enforced(namespace_labels)):
        default_queue = config.label_policy.default_queue_for(request.namespace)
        if default_queue in view.local_queue_names(request.namespace):
            queue = default_queue
            patch.append(add_label_op(request.object or {}, QUEUE_LABEL, queue))
    should_suspend = bool(queue) or (config.manage_jobs_without_queue_name and managed)
    if should_suspend and not job.suspended:
        if request.object is not None and isinstance(request.object.get("spec"), Mapping):
            patch.append({"op": "add", "path": "/spec/suspend", "value": True})
        else:
            patch.append({"op": "add", "path": "/spec", "value": {"suspend": True}})
    return Verdict.allow(patch)


def add_label_op(obj: Mapping[str, Any], key: str, value: str) -> dict[str, Any]:
    """The JSON Patch op adding one label, creating ``labels`` (or ``metadata``) when absent."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        return {"op": "add", "path": "/metadata", "value": {"labels": {key: value}}}
    if not isinstance(metadata.get("labels"), Mapping):
        return {"op": "add", "path": "/metadata/labels", "value": {key: value}}
    return {"op": "add", "path": f"/metadata/labels/{_pointer(key)}", "value": value}


# -- validation -------------------------------------------------------------------------------------


def validate_job(request: AdmissionRequest, *, config: Configuration, view: ClusterView) -> Verdict:
    """Kueue's Job validation plus the label policy and the anti-bypass rules (CREATE and UPDATE)."""
    if not _is_job(request):
        return Verdict.unprocessable(f"this endpoint admits batch/v1 Jobs, got {request.kind}")
    if request.operation not in ("CREATE", "UPDATE"):
        return Verdict.allow()
    try:
        new = _Job(request.object, "object")
        old = _Job(request.old_object, "oldObject") if request.operation == "UPDATE" else None
    except _Malformed as exc:
        return Verdict.unprocessable(str(exc))
    if not _enabled(config):
        return Verdict.allow()
    errors = _label_value_errors(new)
    if old is None or new.annotations.get(MIN_PARALLELISM_ANNOTATION) != old.annotations.get(
        MIN_PARALLELISM_ANNOTATION
    ):
        errors += _min_parallelism_errors(new)
    errors += _completions_sync_errors(new)
    if old is None:
        errors += _policy_on_create(request, new, config, view)
    else:
        errors += _partial_admission_update_errors(old, new)
        errors += _kueue_update_errors(request, old, new, config, view)
        errors += _policy_on_update(request, old, new, config, view)
    if errors:
        return Verdict.deny(aggregate_message(errors))
    return Verdict.allow()


def _label_value_errors(job: _Job) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in (QUEUE_LABEL, PREBUILT_WORKLOAD_LABEL):
        # Kueue's jobframework ValidateLabelAsCRDName: IsDNS1123Subdomain, its problems joined by ","
        value = job.labels.get(key)
        if value is not None and (problems := dns1123_subdomain_problems(value)):
            errors.append(FieldError.invalid(label_path(key), value, ",".join(problems)))
    errors += max_exec_time_errors(job.labels.get(MAX_EXEC_TIME_LABEL))
    return errors


def max_exec_time_errors(raw: str | None) -> list[FieldError]:
    """Kueue's validateCreateForMaxExecTime (every integration): the label, when set, is what Go's
    ``strconv.Atoi`` reads as an integer above 0."""
    if raw is None:
        return []
    path = label_path(MAX_EXEC_TIME_LABEL)
    seconds = parse_go_int(raw)
    if seconds is None:
        problem = "value out of range" if re.fullmatch(r"[+-]?[0-9]+", raw) else "invalid syntax"
        return [FieldError.invalid(path, raw, f'strconv.Atoi: parsing "{raw}": {problem}')]
    return [] if seconds > 0 else [FieldError.invalid(path, seconds, "should be greater than 0")]


def _annotation_path(key: str) -> str:
    return f"metadata.annotations[{key}]"


def _int32(value: int) -> int:
    """Go's ``int32(v)`` conversion: wraps around."""
    return (value + 2**31) % 2**32 - 2**31


def _min_parallelism_errors(job: _Job) -> list[FieldError]:
    """Kueue's validatePartialAdmissionCreate: the min-parallelism annotation is an integer in
    1..podsCount-1 (checked on create, and on update when the annotation changes)."""
    raw = job.annotations.get(MIN_PARALLELISM_ANNOTATION)
    if raw is None:
        return []
    path = _annotation_path(MIN_PARALLELISM_ANNOTATION)
    value = parse_go_int(raw)
    if value is None:
        problem = "value out of range" if re.fullmatch(r"[+-]?[0-9]+", raw) else "invalid syntax"
        return [FieldError.invalid(path, raw, f'strconv.Atoi: parsing "{raw}": {problem}')]
    if _int32(value) >= job.pod_count or value <= 0:
        return [FieldError.invalid(path, value, f"should be between 0 and {job.pod_count - 1}")]
    return []


def _completions_sync_errors(job: _Job) -> list[FieldError]:
    """Kueue's validateSyncCompletionCreate: ``job-completions-equal-parallelism`` is a Go bool; when true
    the Job is Indexed and its completions equal its parallelism."""
    raw = job.annotations.get(COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION)
    if raw is None:
        return []
    path = _annotation_path(COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION)
    enabled = parse_go_bool(raw)
    if enabled is None:
        return [FieldError.invalid(path, raw, f'strconv.ParseBool: parsing "{raw}": invalid syntax')]
    errors: list[FieldError] = []
    if enabled:
        if job.completion_mode in (None, "NonIndexed"):
            errors.append(FieldError.invalid(path, raw, "should not be enabled for NonIndexed jobs"))
        parallelism = 1 if job.parallelism is None else job.parallelism
        completions = 1 if job.completions is None else job.completions
        if parallelism != completions:
            errors.append(
                FieldError.invalid(
                    "spec.completions",
                    job.completions,
                    "should be equal to parallelism when "
                    f"{COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION} annotation is true",
                )
            )
    return errors


def _partial_admission_update_errors(old: _Job, new: _Job) -> list[FieldError]:
    """Kueue's validatePartialAdmissionUpdate: a running Job that accepts partial admission keeps its
    parallelism (the admitted count), and completions-follow-parallelism is fixed while it runs."""
    errors: list[FieldError] = []
    parallelism_changed = _parallelism(old) != _parallelism(new)
    if MIN_PARALLELISM_ANNOTATION in old.annotations and not old.suspended and parallelism_changed:
        errors.append(
            FieldError.forbidden(
                "spec.parallelism",
                "cannot change when partial admission is enabled and the job is not suspended",
            )
        )
    both_running = not old.kueue_suspended and not new.kueue_suspended
    if both_running and _syncs(old) != _syncs(new):
        errors.append(
            FieldError.forbidden(
                _annotation_path(COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION),
                f"{IMMUTABLE} while the job is not suspended",
            )
        )
    return errors


def _parallelism(job: _Job) -> int:
    return 1 if job.parallelism is None else job.parallelism


def _syncs(job: _Job) -> bool:
    raw = job.annotations.get(COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION)
    return raw is not None and parse_go_bool(raw) is True


def _kueue_update_errors(
    request: AdmissionRequest, old: _Job, new: _Job, config: Configuration, view: ClusterView
) -> list[FieldError]:
    errors: list[FieldError] = []
    queue_path = label_path(QUEUE_LABEL)
    if not new.suspended and new.queue_name != old.queue_name:
        errors.append(FieldError.invalid(queue_path, new.queue_name, IMMUTABLE))
    if not new.queue_name and old.queue_name:
        default_queue = config.label_policy.default_queue_for(request.namespace)
        if default_queue in view.local_queue_names(request.namespace):
            errors.append(
                FieldError.invalid(
                    queue_path, "", "queue-name must not be empty in namespace with default queue"
                )
            )
    if not new.suspended or not old.suspended:
        old_limit, new_limit = (
            old.labels.get(MAX_EXEC_TIME_LABEL, ""),
            new.labels.get(MAX_EXEC_TIME_LABEL, ""),
        )
        if old_limit != new_limit:
            errors.append(FieldError.invalid(label_path(MAX_EXEC_TIME_LABEL), new_limit, IMMUTABLE))
    old_priority, new_priority = (
        old.labels.get(PRIORITY_CLASS_LABEL, ""),
        new.labels.get(PRIORITY_CLASS_LABEL, ""),
    )
    priority_path = label_path(PRIORITY_CLASS_LABEL)
    if not new.suspended and not old_priority and new_priority:
        errors.append(
            FieldError.invalid(
                priority_path,
                new_priority,
                "WorkloadPriorityClass cannot be added to a non-suspended workload",
            )
        )
    if not new_priority and old_priority:
        errors.append(
            FieldError.invalid(priority_path, "", "WorkloadPriorityClass cannot be removed from a workload")
        )
    return errors


def queue_list(view: ClusterView, namespace: str) -> str:
    names = sorted(view.local_queue_names(namespace))
    if not names:
        return (
            f'there is no LocalQueue in namespace "{namespace}" yet: ask a cluster administrator to create '
            "one (kind: LocalQueue, apiVersion: kueue.x-k8s.io/v1beta2)"
        )
    shown = ", ".join(f'"{name}"' for name in names)
    return f'LocalQueues in namespace "{namespace}": {shown}'


def _policy_on_create(
    request: AdmissionRequest, job: _Job, config: Configuration, view: ClusterView
) -> list[FieldError]:
    if job.queue_name or _ancestry(request.object, request, config, view).through_owner:
        return []
    if not config.label_policy.is_enforced(namespace_labels_or_default(view, request.namespace)):
        return []
    return [
        FieldError.required(
            label_path(QUEUE_LABEL),
            f'namespace "{request.namespace}" requires every Job to name its LocalQueue in the label '
            f"{QUEUE_LABEL}; "
            f"{queue_list(view, request.namespace)}. {_KUBECTL_HINT}",
        )
    ]


def _policy_on_update(
    request: AdmissionRequest, old: _Job, new: _Job, config: Configuration, view: ClusterView
) -> list[FieldError]:
    namespace_labels = namespace_labels_or_default(view, request.namespace)
    errors: list[FieldError] = []
    if old.queue_name and not new.queue_name and config.label_policy.is_enforced(namespace_labels):
        errors.append(
            FieldError.forbidden(
                label_path(QUEUE_LABEL),
                f'namespace "{request.namespace}" requires the label {QUEUE_LABEL}, so it cannot be removed; '
                "to move the Job to another LocalQueue, set spec.suspend: true and change the label's value "
                f"({queue_list(view, request.namespace)})",
            )
        )
    identity = config.controller_identity
    if identity.trusts(request.username):
        return errors
    controller = " or ".join(identity.usernames)
    old_ancestry = _ancestry(request.old_object, request, config, view)
    new_ancestry = _ancestry(request.object, request, config, view)
    old_managed = is_managed(
        request.old_object or {}, ancestry=old_ancestry, config=config, namespace_labels=namespace_labels
    )
    if old_managed and reparented(request, JOB, config, view):
        errors.append(
            FieldError.forbidden(
                "metadata.ownerReferences",
                "the Job is queued on its own (its Workload holds its quota), so only the queueing "
                f"controller ({controller}) may make another object its controller; "
                f'user "{request.username}" may not: delete the Job and create it from its owner instead',
            )
        )
    managed = old_managed or is_managed(
        request.object or {}, ancestry=new_ancestry, config=config, namespace_labels=namespace_labels
    )
    if not managed:
        return errors
    queue = new.queue_name or old.queue_name
    if old.suspended and not new.suspended:
        errors.append(
            FieldError.forbidden(
                "spec.suspend",
                f"only the queueing controller ({controller}) may start a queued Job, "
                f'user "{request.username}" may not; the Job starts by itself once its Workload is admitted'
                + (f' through LocalQueue "{queue}"' if queue else "")
                + f" (see kubectl get workloads -n {request.namespace} for why it is waiting)",
            )
        )
    if not old.suspended:
        errors += _admitted_template_changes(old, new)
    return errors


def _admitted_template_changes(old: _Job, new: _Job) -> list[FieldError]:
    hint = (
        "cannot be changed while the Job is admitted: the queueing controller sets it from the assigned "
        "ResourceFlavor and quota; delete and recreate the Job with the new value instead"
    )
    base = "spec.template.spec"
    errors: list[FieldError] = []
    for key in ("nodeSelector", "tolerations"):
        if (old.template_spec.get(key) or None) != (new.template_spec.get(key) or None):
            errors.append(FieldError.forbidden(f"{base}.{key}", hint))
    for key in ("initContainers", "containers"):
        if _resources(old.template_spec.get(key)) != _resources(new.template_spec.get(key)):
            errors.append(FieldError.forbidden(f"{base}.{key}[*].resources", hint))
    return errors


def _resources(containers: Any) -> Sequence[Any]:
    if not isinstance(containers, list):
        return ()
    return [
        (c.get("name"), c.get("resources") or None) if isinstance(c, Mapping) else None for c in containers
    ]
