"""What only a ``batch/v1`` Job adds to the admission every queued kind gets
(``kueue_webhook.admission.integrations``): the Job is one integration entry, and ``JobRules`` holds its own
rules.

Mutation (CREATE) follows Kueue's Job defaulter: a Job that names a LocalQueue, or any Job in a managed
namespace when ``manageJobsWithoutQueueName`` is set, is created suspended so that only the controller
starts it once its Workload is admitted; a Job without the label gets the namespace's default LocalQueue
(``default``, or the name the configuration gives for that namespace) when that LocalQueue exists.

Validation keeps Kueue's rules and messages verbatim (``jobframework/validation.go``); the Job's own, here:
the queue and prebuilt-workload labels are DNS-1123 subdomains (the label, not the legacy annotation), the
priority-class label may not be added to a running Job nor removed, ``max-exec-time-seconds`` is a positive
integer fixed once running, and partial admission's annotations (min-parallelism, completions equal to
parallelism) are checked as Kueue's Job webhook does; a Job queued through its owner keeps these field rules.
The rules shared with every kind (the queue label is immutable while the Job runs and may not be dropped
where a default queue exists) come with what Kueue leaves to external policy engines, each denial saying
which rule fired and what to do instead (the Job's wording is ``JobRules``'s):

* label policy: in a namespace matched by ``labelPolicy.enforcedNamespaceSelector`` a Job must carry the
  queue label (the denial lists the LocalQueues there) and the label can never be removed;
* owners: a Job is left to its owner (not suspended, no label policy) only when the owner it claims is real
  and queued (``kueue_webhook.api.integrations.owners``); and once queued on its own, no edit of its
  ownerReferences can make it a child of another object (only the controller identity may);
* anti-bypass: on a managed Job only the controller identity (the configured user name, and the one the
  API server reported for the controller's credentials) may flip ``spec.suspend`` from true to false,
  and may change the pod template's nodeSelector, tolerations or resources while the Job runs (the
  controller injects them from the assigned ResourceFlavor; a user editing them would escape the quota
  accounting).

Everything here is pure: the request, the configuration and a :class:`ClusterView` in, a Verdict out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_webhook.admission.fields import IMMUTABLE, label_path
from kueue_webhook.admission.integrations import mutate_queued, validate_queued
from kueue_webhook.admission.kind_rules import KindRules, atoi, max_exec_time_errors, queue_list
from kueue_webhook.admission.review import AdmissionRequest, Verdict
from kueue_webhook.admission.view import ClusterView
from kueue_webhook.api.config import Configuration
from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.integrations import JOB, Integration, engine
from kueue_webhook.api.integrations.engine import (
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    parse_go_bool,
)
from kueue_webhook.api.validation import dns1123_subdomain_problems

__all__ = [
    "JOB_RULES",
    "MAX_EXEC_TIME_LABEL",
    "PREBUILT_WORKLOAD_LABEL",
    "PRIORITY_CLASS_LABEL",
    "QUEUE_LABEL",
    "JobRules",
    "mutate_job",
    "validate_job",
]

assert JOB.partial_admission is not None and JOB.pod_sets[0].min_count is not None
assert JOB.staged_stop is not None
QUEUE_LABEL = QUEUE_NAME_LABEL
MAX_EXEC_TIME_LABEL = engine.MAX_EXEC_TIME_LABEL
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
#: the fewest pods a Job accepts to start with (Kueue's JobMinParallelismAnnotation)
MIN_PARALLELISM_ANNOTATION = JOB.pod_sets[0].min_count.annotation
#: ``"true"``: completions follow parallelism on partial admission (JobCompletionsEqualParallelismAnnotation)
COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION = JOB.partial_admission.follow_annotation
#: set while a partially admitted Job is suspended but its parallelism not yet restored (StoppingAnnotation)
STOPPING_ANNOTATION = JOB.staged_stop.annotation

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
        self.queue_name = engine.queue_name(obj) or ""
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
        self.pod_count = engine.pod_count(JOB, obj)
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


def _admitted_here(
    request: AdmissionRequest, config: Configuration, operations: tuple[str, ...]
) -> Verdict | Integration:
    """The Job integration to admit the request's Job with, or the answer when there is nothing to admit:
    a 400 for another kind or a Job not shaped like one (old Job too, on UPDATE), or allowed for another
    operation and while the batch/job integration is off (Jobs are then left alone)."""
    if (request.kind.group, request.kind.kind) != (JOB.group, JOB.kind):
        return Verdict.unprocessable(f"this endpoint admits batch/v1 Jobs, got {request.kind}")
    if request.operation not in operations:
        return Verdict.allow()
    try:
        _Job(request.object, "object")
        if request.operation == "UPDATE":
            _Job(request.old_object, "oldObject")
    except _Malformed as exc:
        return Verdict.unprocessable(str(exc))
    integration = config.integrations.for_kind(JOB.group, JOB.kind)
    return Verdict.allow() if integration is None else integration


def mutate_job(request: AdmissionRequest, *, config: Configuration, view: ClusterView) -> Verdict:
    """Kueue's Job defaulter: default queue label, then ``spec.suspend: true`` for managed Jobs (CREATE)."""
    integration = _admitted_here(request, config, ("CREATE",))
    if isinstance(integration, Verdict):
        return integration
    return mutate_queued(request, integration, JOB_RULES, config=config, view=view)


def validate_job(request: AdmissionRequest, *, config: Configuration, view: ClusterView) -> Verdict:
    """Kueue's Job validation plus the label policy and the anti-bypass rules (CREATE and UPDATE)."""
    integration = _admitted_here(request, config, ("CREATE", "UPDATE"))
    if isinstance(integration, Verdict):
        return integration
    return validate_queued(request, integration, JOB_RULES, config=config, view=view)


class JobRules(KindRules):
    """The Job's own admission rules and wording (Kueue's Job webhook), on top of every kind's."""

    children_left_alone = False
    subject = "the Job"
    missing_label_hint = f". {_KUBECTL_HINT}"

    def value_errors(
        self, integration: Integration, new: Mapping[str, Any], old: Mapping[str, Any] | None
    ) -> list[FieldError]:
        job = _Job(new, "object")
        errors = _label_value_errors(job)
        min_parallelism = job.annotations.get(MIN_PARALLELISM_ANNOTATION)
        if old is None or min_parallelism != _Job(old, "oldObject").annotations.get(
            MIN_PARALLELISM_ANNOTATION
        ):
            errors += _min_parallelism_errors(job)
        return errors + _completions_sync_errors(job)

    def running_update_errors(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldError]:
        return _partial_admission_update_errors(_Job(old, "oldObject"), _Job(new, "object"))

    def label_update_errors(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldError]:
        return _label_update_errors(_Job(old, "oldObject"), _Job(new, "object"))

    def created_suspended(self, integration: Integration, obj: Mapping[str, Any]) -> bool:
        """Kueue's Job defaulter reads ``spec.suspend`` alone (a stopping mark does not count)."""
        return engine.suspend_written(integration, obj)

    def suspend_ops(self, integration: Integration, obj: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Kueue's Job defaulter sets ``spec.suspend`` with an ``add``, whether or not it is there."""
        return engine.suspend_ops(integration, obj, op="add")

    def removed_label_message(
        self, integration: Integration, request: AdmissionRequest, view: ClusterView
    ) -> str:
        return (
            f'namespace "{request.namespace}" requires the label {QUEUE_LABEL}, so it cannot be removed; '
            "to move the Job to another LocalQueue, set spec.suspend: true and change the label's value "
            f"({queue_list(view, request.namespace)})"
        )

    def admitted_changes(
        self, integration: Integration, old: Mapping[str, Any], new: Mapping[str, Any]
    ) -> list[FieldError]:
        """Every kind's rule; a Job whose edit drops its ``spec`` is compared as an empty one (its template's
        fields read as unset, as Kueue's Job webhook reads them), not skipped."""
        return super().admitted_changes(integration, _with_spec(old), _with_spec(new))


JOB_RULES = JobRules()


def _with_spec(job: Mapping[str, Any]) -> Mapping[str, Any]:
    return job if isinstance(job.get("spec"), Mapping) else {**job, "spec": {}}


def _label_value_errors(job: _Job) -> list[FieldError]:
    errors: list[FieldError] = []
    for key in (QUEUE_LABEL, PREBUILT_WORKLOAD_LABEL):
        # Kueue's jobframework ValidateLabelAsCRDName: IsDNS1123Subdomain, its problems joined by ","
        value = job.labels.get(key)
        if value is not None and (problems := dns1123_subdomain_problems(value)):
            errors.append(FieldError.invalid(label_path(key), value, ",".join(problems)))
    return errors + max_exec_time_errors(job.labels.get(MAX_EXEC_TIME_LABEL))


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
    value = atoi(path, raw)
    if isinstance(value, FieldError):
        return [value]
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


def _label_update_errors(old: _Job, new: _Job) -> list[FieldError]:
    """Kueue's Job rules for its other labels: ``max-exec-time-seconds`` is fixed unless the Job stays
    suspended; the priority-class label may not be added to a running Job, nor removed."""
    errors: list[FieldError] = []
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
