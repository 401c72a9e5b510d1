"""Admission rules for every queued kind other than ``batch/v1`` Job (JobSet, Kubeflow jobs, RayJob,
RayCluster, declared CRDs), from the kind's integration description.

The same rules as for Jobs (``webhook.admission.jobs``), where Kueue's ``jobframework`` base webhook applies
them to every integration: on CREATE the namespace's default LocalQueue is filled in and a queued object is
created suspended (through the kind's own suspend field: ``spec.runPolicy.suspend`` for a PyTorchJob); the
queue label is a DNS-1123 subdomain and immutable while the object runs. On top, as for Jobs: the label policy
(an enforced namespace requires the queue label, which can never be removed there) and anti-bypass (only the
controller may clear the suspend field of a queued object, and change a running one's pod templates'
nodeSelector, tolerations or resources). An object of a kind whose integration is off, or queued through a
real queued owner (the RayCluster of a RayJob; ``webhook.api.integrations.owners``), is left alone, and an
object queued on its own cannot be made another object's child by an edit of its ownerReferences.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from webhook.admission.fields import IMMUTABLE, aggregate_message, label_path
from webhook.admission.jobs import add_label_op, max_exec_time_errors, queue_list
from webhook.admission.owners import ancestry, reparented
from webhook.admission.pod_groups import pod_metadata_errors
from webhook.admission.pods import mark_pod, mark_template
from webhook.admission.review import AdmissionRequest, Verdict
from webhook.admission.through_pods import through_pods_update_errors
from webhook.admission.view import ClusterView, namespace_labels_or_default
from webhook.api.config import Configuration
from webhook.api.errors import FieldError
from webhook.api.integrations import Integration, engine
from webhook.api.integrations.engine import QUEUE_NAME_LABEL
from webhook.api.integrations.managed import is_managed
from webhook.api.integrations.owners import Ancestry
from webhook.api.validation import dns1123_subdomain_problems

__all__ = ["mutate_object", "validate_object"]


def _integration(request: AdmissionRequest, config: Configuration) -> Integration | None:
    return config.integrations.for_kind(request.kind.group, request.kind.kind)


def _ancestry(
    obj: Mapping[str, Any] | None,
    integration: Integration,
    request: AdmissionRequest,
    config: Configuration,
    view: ClusterView,
) -> Ancestry:
    return ancestry(obj, integration, request, config, view)


def _malformed(obj: Any) -> str | None:
    """Why the object cannot be read at all (answered with a 400), None when it can."""
    if not isinstance(obj, Mapping):
        return "object is missing"
    metadata = obj.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        return "object.metadata must be an object"
    for field in ("labels", "annotations"):
        values = (metadata or {}).get(field)
        if values is not None and (
            not isinstance(values, Mapping) or not all(isinstance(v, str) for v in values.values())
        ):
            return f"object.metadata.{field} must be a map of strings"
    return None


def mutate_object(request: AdmissionRequest, *, config: Configuration, view: ClusterView) -> Verdict:
    """Default the queue label, then suspend a queued object on CREATE (Kueue's base webhook ``Default``)."""
    integration = _integration(request, config)
    if integration is None or request.operation not in ("CREATE", "UPDATE"):
        return Verdict.allow()
    if request.operation == "UPDATE" and not integration.through_pods:
        # a Deployment's or StatefulSet's template follows its queue label after create (Kueue's Default
        # runs on update too): a StatefulSet queued by a later label must make gated pods
        return Verdict.allow()
    obj = request.object
    if (problem := _malformed(obj)) is not None:
        return Verdict.unprocessable(problem)
    assert obj is not None
    if engine.skipped(integration, obj) or _ancestry(obj, integration, request, config, view).through_owner:
        return Verdict.allow()
    namespace_labels = namespace_labels_or_default(view, request.namespace)
    managed = config.manages_namespace(namespace_labels)
    if integration.gate is not None and not managed:
        # Kueue's pod webhook: pods outside managedJobsNamespaceSelector (kube-system...) are never gated
        return Verdict.allow()
    patch: list[dict[str, Any]] = []
    queue = engine.queue_name(obj)
    if (
        request.operation == "CREATE"
        and not queue
        and (managed or config.label_policy.is_enforced(namespace_labels))
    ):
        default_queue = config.label_policy.default_queue_for(request.namespace)
        if default_queue in view.local_queue_names(request.namespace):
            queue = default_queue
            patch.append(add_label_op(obj, QUEUE_NAME_LABEL, queue))
    queued = bool(queue or (config.manage_jobs_without_queue_name and managed))
    if integration.through_pods:
        if queued:
            patched = _labelled(obj, queue, bool(patch))
            patch.extend(mark_template(patched, integration, queue))
        return Verdict.allow(patch)
    if queued and not engine.is_suspended(integration, obj):
        if integration.gate is not None:
            patch.extend(
                mark_pod(
                    _labelled(obj, queue, bool(patch)), engine.suspend_ops(integration, obj), integration
                )
            )
        else:
            patch.extend(engine.suspend_ops(integration, obj))
    return Verdict.allow(patch)


def _labelled(obj: Mapping[str, Any], queue: str | None, defaulted: bool) -> Mapping[str, Any]:
    """The object as the defaulted queue label leaves it, for the ops computed after that one."""
    if not defaulted or not queue:
        return obj
    out = copy.deepcopy(dict(obj))
    out.setdefault("metadata", {}).setdefault("labels", {})[QUEUE_NAME_LABEL] = queue
    return out


def validate_object(request: AdmissionRequest, *, config: Configuration, view: ClusterView) -> Verdict:
    """Kueue's base webhook validation plus the label policy and anti-bypass (CREATE and UPDATE)."""
    integration = _integration(request, config)
    if integration is None or request.operation not in ("CREATE", "UPDATE"):
        return Verdict.allow()
    new, old = request.object, request.old_object if request.operation == "UPDATE" else None
    for candidate in (new, old) if old is not None else (new,):
        if (problem := _malformed(candidate)) is not None:
            return Verdict.unprocessable(problem)
    assert new is not None
    # Kueue's pod webhook checks every pod it sees, a Job's pods too
    pod_errors = pod_metadata_errors(new, old) if (integration.group, integration.kind) == ("", "Pod") else []
    new_ancestry = _ancestry(new, integration, request, config, view)
    old_ancestry = _ancestry(old, integration, request, config, view) if old is not None else None
    if new_ancestry.through_owner and (old_ancestry is None or old_ancestry.through_owner):
        return Verdict.deny(aggregate_message(pod_errors)) if pod_errors else Verdict.allow()
    errors: list[FieldError] = []
    queue = engine.queue_name(new) or ""
    if queue and (problems := dns1123_subdomain_problems(queue)):
        errors.append(FieldError.invalid(label_path(QUEUE_NAME_LABEL), queue, ",".join(problems)))
    namespace_labels = namespace_labels_or_default(view, request.namespace)
    enforced = config.label_policy.is_enforced(namespace_labels)
    kind = integration.kind
    errors += _min_count_errors(integration, new, old)
    errors += _max_exec_time_errors(integration, new, old)
    if old is None:
        if not queue and enforced and not engine.skipped(integration, new):
            errors.append(
                FieldError.required(
                    label_path(QUEUE_NAME_LABEL),
                    f'namespace "{request.namespace}" requires every {kind} to name its LocalQueue in the '
                    f"label {QUEUE_NAME_LABEL}; {queue_list(view, request.namespace)}",
                )
            )
    else:
        assert old_ancestry is not None
        errors += _update_errors(
            request,
            integration,
            (old, old_ancestry),
            (new, new_ancestry),
            config,
            enforced,
            namespace_labels,
            view,
        )
    errors += pod_errors
    if errors:
        return Verdict.deny(aggregate_message(errors))
    return Verdict.allow()


def _update_errors(
    request: AdmissionRequest,
    integration: Integration,
    old_state: tuple[Mapping[str, Any], Ancestry],
    new_state: tuple[Mapping[str, Any], Ancestry],
    config: Configuration,
    enforced: bool,
    namespace_labels: Mapping[str, str],
    view: ClusterView,
) -> list[FieldError]:
    (old, old_ancestry), (new, new_ancestry) = old_state, new_state
    errors: list[FieldError] = []
    old_queue, new_queue = engine.queue_name(old) or "", engine.queue_name(new) or ""
    if integration.through_pods:
        queued = is_managed(
            new, integration, ancestry=new_ancestry, config=config, namespace_labels=namespace_labels
        )
        return _queue_label_errors(request, integration, old_queue, new_queue, enforced) + (
            through_pods_update_errors(
                integration, old, new, old_queue=old_queue, new_queue=new_queue, queued=queued, view=view
            )
        )
    if integration.gate is not None:
        new_suspended = engine.is_suspended(integration, new)
        old_suspended = engine.is_suspended(integration, old)
    else:
        new_suspended = integration.suspend.get(new) is True
        old_suspended = integration.suspend.get(old) is True
    path = label_path(QUEUE_NAME_LABEL)
    if not new_suspended and new_queue != old_queue:
        errors.append(FieldError.invalid(path, new_queue, IMMUTABLE))
    default_queue = config.label_policy.default_queue_for(request.namespace)
    if old_queue and not new_queue and default_queue in view.local_queue_names(request.namespace):
        # Kueue's validateUpdateForQueueName, for every kind as for Jobs
        errors.append(
            FieldError.invalid(path, "", "queue-name must not be empty in namespace with default queue")
        )
    if old_queue and not new_queue and enforced:
        errors.append(
            FieldError.forbidden(
                path,
                f'namespace "{request.namespace}" requires the label {QUEUE_NAME_LABEL}, so it cannot be '
                f"removed; to move the {integration.kind} to another LocalQueue, suspend it and change the "
                "label's value",
            )
        )
    identity = config.controller_identity
    if identity.trusts(request.username):
        return errors
    controller = " or ".join(identity.usernames)
    old_managed = is_managed(
        old, integration, ancestry=old_ancestry, config=config, namespace_labels=namespace_labels
    )
    if old_managed and reparented(request, integration, config, view):
        errors.append(
            FieldError.forbidden(
                "metadata.ownerReferences",
                f"the {integration.kind} is queued on its own (its Workload holds its quota), so only the "
                f"queueing controller ({controller}) may make another object its controller; user "
                f'"{request.username}" may not: delete it and create it from its owner instead',
            )
        )
    managed = old_managed or is_managed(
        new, integration, ancestry=new_ancestry, config=config, namespace_labels=namespace_labels
    )
    if not managed:
        return errors
    if old_suspended and not new_suspended:
        queue = new_queue or old_queue
        errors.append(
            FieldError.forbidden(
                str(integration.suspend),
                f"only the queueing controller ({controller}) may start a queued {integration.kind}, "
                f'user "{request.username}" may not; it starts by itself once its Workload is admitted'
                + (f' through LocalQueue "{queue}"' if queue else "")
                + f" (see kubectl get workloads -n {request.namespace} for why it is waiting)",
            )
        )
    if not old_suspended:
        errors += _admitted_template_changes(integration, old, new)
        errors += _admitted_count_changes(integration, old, new)
    return errors


def _max_exec_time_errors(
    integration: Integration, new: Mapping[str, Any], old: Mapping[str, Any] | None
) -> list[FieldError]:
    """Kueue's jobframework rules for the ``max-exec-time-seconds`` label, for every kind as for Jobs
    (``webhook.admission.jobs``): on create a decimal integer above 0 (validateCreateForMaxExecTime); on
    update unchanged unless the object was and stays suspended (validateUpdateForMaxExecTime)."""
    path = label_path(engine.MAX_EXEC_TIME_LABEL)
    new_value = _label(new, engine.MAX_EXEC_TIME_LABEL)
    if old is None:
        return max_exec_time_errors(new_value)
    old_value = _label(old, engine.MAX_EXEC_TIME_LABEL)
    if integration.through_pods or old_value == new_value:
        return []
    if engine.is_suspended(integration, new) and engine.is_suspended(integration, old):
        return []
    return [FieldError.invalid(path, new_value or "", IMMUTABLE)]


def _label(obj: Mapping[str, Any], key: str) -> str | None:
    labels = (obj.get("metadata") or {}).get("labels")
    value = labels.get(key) if isinstance(labels, Mapping) else None
    return value if isinstance(value, str) else None


def _min_count_errors(
    integration: Integration, new: Mapping[str, Any], old: Mapping[str, Any] | None
) -> list[FieldError]:
    """A declared pod set's minCount field is an integer in 1..count-1, checked on create and whenever it
    changes (as Kueue's Job webhook checks its min-parallelism annotation); the Job's own rules are in
    ``webhook.admission.jobs``."""
    before = {e.name: e for e in engine.elements(integration, old)} if old is not None else {}
    errors: list[FieldError] = []
    for element in engine.elements(integration, new):
        rule = element.source.min_count
        if rule is None or rule.path is None:
            continue
        value = rule.path.get(element.value)
        previous = before.get(element.name)
        if value is None or (previous is not None and rule.path.get(previous.value) == value):
            continue
        count = engine.element_count(element)
        if engine.element_min_count(element) is None:
            errors.append(
                FieldError.invalid(
                    f"{element.where}.{rule.path}",
                    value,
                    f"must be an integer from 1 to {count - 1}, fewer than the pod set's {count} pods"
                    if count > 1
                    else f"the pod set has {count} pod(s), too few to start with fewer",
                )
            )
    return errors


def _admitted_count_changes(
    integration: Integration, old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[FieldError]:
    """A running pod set that accepts partial admission keeps the count it was admitted with (Kueue's Job
    webhook: parallelism cannot change while partial admission is enabled and the job runs)."""
    before = {e.name: e for e in engine.elements(integration, old)}
    errors: list[FieldError] = []
    for element in engine.elements(integration, new):
        previous = before.get(element.name)
        rule = element.source.min_count
        if previous is None or rule is None or rule.path is None:
            continue
        if not engine.accepts_partial_admission(previous):
            continue
        field = element.source.count[0].path
        if field.get(previous.value) != field.get(element.value):
            errors.append(
                FieldError.forbidden(
                    f"{element.where}.{field}",
                    f"cannot change while the {integration.kind} runs: the queueing controller set it to "
                    f"the admitted count; delete and recreate the {integration.kind} to change it",
                )
            )
    return errors


def _queue_label_errors(
    request: AdmissionRequest, integration: Integration, old_queue: str, new_queue: str, enforced: bool
) -> list[FieldError]:
    """A kind queued through its pods: its queue label is required in an enforced namespace (when it may
    change is Kueue's rule, ``through_pods_update_errors``)."""
    path = label_path(QUEUE_NAME_LABEL)
    if not new_queue and not old_queue and enforced:
        return [
            FieldError.required(
                path, f'namespace "{request.namespace}" requires the label on every {integration.kind}'
            )
        ]
    return []


def _admitted_template_changes(
    integration: Integration, old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[FieldError]:
    hint = (
        f"cannot be changed while the {integration.kind} is admitted: the queueing controller sets it from "
        "the assigned ResourceFlavor and quota; "
        f"delete and recreate the {integration.kind} with the new value instead"
    )
    before = {e.name: e for e in engine.elements(integration, old)}
    errors: list[FieldError] = []
    for element in engine.elements(integration, new):
        previous = before.get(element.name)
        old_spec = ((previous.template() or {}).get("spec") or {}) if previous is not None else {}
        new_spec = (element.template() or {}).get("spec") or {}
        base = f"{element.where}.{element.source.template}.spec"
        for key in ("nodeSelector", "tolerations"):
            if (old_spec.get(key) or None) != (new_spec.get(key) or None):
                errors.append(FieldError.forbidden(f"{base}.{key}", hint))
        for key in ("initContainers", "containers"):
            if _resources(old_spec.get(key)) != _resources(new_spec.get(key)):
                errors.append(FieldError.forbidden(f"{base}.{key}[*].resources", hint))
    return errors


def _resources(containers: Any) -> list[Any]:
    if not isinstance(containers, list):
        return []
    return [
        (c.get("name"), c.get("resources") or None) if isinstance(c, Mapping) else None for c in containers
    ]
