"""Admission of every queued kind (Job, JobSet, Kubeflow jobs, the Ray kinds, SparkApplication, AppWrapper,
pods, Deployments, StatefulSets, LeaderWorkerSets, declared CRDs), from the kind's integration description:
one flow, the kind's differences asked of its ``KindRules`` (``kueue_webhook.admission.kind_rules``; a Job's
are ``kueue_webhook.admission.jobs``).

The rules Kueue's ``jobframework`` base webhook applies to every integration: on CREATE the namespace's
default LocalQueue is filled in and a queued object is created suspended (through the kind's own suspend
field: ``spec.runPolicy.suspend`` for a PyTorchJob); the queue label is a DNS-1123 subdomain and immutable
while the object runs. On top: the label policy (an enforced namespace requires the queue label, which can
never be removed there) and anti-bypass (only the controller may clear the suspend field of a queued object,
and change a running one's pod templates' nodeSelector, tolerations or resources). An object of a kind whose
integration is off, or (but for a Job's own field rules) queued through a real queued owner (the RayCluster
of a RayJob; ``kueue_webhook.api.integrations.owners``), is left alone, and an object queued on its own
cannot be
made another object's child by an edit of its ownerReferences.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kueue_webhook.admission.fields import IMMUTABLE, aggregate_message, label_path
from kueue_webhook.admission.kind_rules import KIND_RULES, KindRules, add_label_op
from kueue_webhook.admission.owners import ancestry, reparented
from kueue_webhook.admission.pod_groups import pod_metadata_errors
from kueue_webhook.admission.pods import mark_pod, mark_template
from kueue_webhook.admission.review import AdmissionRequest, Verdict
from kueue_webhook.admission.through_pods import through_pods_update_errors
from kueue_webhook.admission.view import ClusterView, namespace_labels_or_default
from kueue_webhook.api import admission_gates
from kueue_webhook.api.config import Configuration
from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.integrations import Integration, engine
from kueue_webhook.api.integrations.engine import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from kueue_webhook.api.integrations.engine.priority import DEFAULT_WORKLOAD_PRIORITY_CLASS
from kueue_webhook.api.integrations.managed import is_managed
from kueue_webhook.api.integrations.owners import Ancestry
from kueue_webhook.api.multikueue import managed_by_default_ops, with_default_ops
from kueue_webhook.api.topology_validation import object_topology_errors

__all__ = ["mutate_object", "mutate_queued", "validate_object", "validate_queued"]


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
    if (problem := _malformed(request.object)) is not None:
        return Verdict.unprocessable(problem)
    return mutate_queued(request, integration, KIND_RULES, config=config, view=view)


def mutate_queued(
    request: AdmissionRequest,
    integration: Integration,
    rules: KindRules,
    *,
    config: Configuration,
    view: ClusterView,
) -> Verdict:
    """The defaulting of an object of an enabled integration whose shape was checked."""
    obj = request.object
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
            obj = _labelled(obj, QUEUE_NAME_LABEL, queue)
    if (
        request.operation == "CREATE"
        and not _label(obj, PRIORITY_CLASS_LABEL)
        and view.has_workload_priority_class(DEFAULT_WORKLOAD_PRIORITY_CLASS)
    ):
        # Kueue's ApplyDefaultWorkloadPriorityClass (WorkloadPriorityClassDefaulting, on by default)
        patch.append(add_label_op(obj, PRIORITY_CLASS_LABEL, DEFAULT_WORKLOAD_PRIORITY_CLASS))
        obj = _labelled(obj, PRIORITY_CLASS_LABEL, DEFAULT_WORKLOAD_PRIORITY_CLASS)
    queued = bool(queue or (config.manage_jobs_without_queue_name and managed))
    if integration.through_pods:
        if queued:
            patch.extend(mark_template(obj, integration, queue))
        return Verdict.allow(patch)
    if request.operation == "CREATE" and queue and view.dispatches_to_workers(request.namespace, queue):
        # Kueue's ApplyDefaultForManagedBy: the manager's copy is MultiKueue's, its own controller skips it
        managed_ops = managed_by_default_ops(integration.group, integration.kind, obj)
        patch.extend(managed_ops)
        obj = with_default_ops(obj, managed_ops)
    if queued and not rules.created_suspended(integration, obj):
        suspend = rules.suspend_ops(integration, obj)
        if integration.gate is not None:
            patch.extend(mark_pod(obj, suspend, integration))
        else:
            patch.extend(suspend)
    return Verdict.allow(patch)


def _labelled(obj: Mapping[str, Any], key: str, value: str) -> Mapping[str, Any]:
    """The object as a defaulted label leaves it, for the ops computed after that one."""
    out = copy.deepcopy(dict(obj))
    out.setdefault("metadata", {}).setdefault("labels", {})[key] = value
    return out


def _label(obj: Mapping[str, Any], key: str) -> str:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    value = labels.get(key) if isinstance(labels, Mapping) else None
    return value if isinstance(value, str) else ""


def validate_object(request: AdmissionRequest, *, config: Configuration, view: ClusterView) -> Verdict:
    """Kueue's base webhook validation plus the label policy and anti-bypass (CREATE and UPDATE)."""
    integration = _integration(request, config)
    if integration is None or request.operation not in ("CREATE", "UPDATE"):
        return Verdict.allow()
    new, old = request.object, request.old_object if request.operation == "UPDATE" else None
    for candidate in (new, old) if old is not None else (new,):
        if (problem := _malformed(candidate)) is not None:
            return Verdict.unprocessable(problem)
    return validate_queued(request, integration, KIND_RULES, config=config, view=view)


def validate_queued(
    request: AdmissionRequest,
    integration: Integration,
    rules: KindRules,
    *,
    config: Configuration,
    view: ClusterView,
) -> Verdict:
    """The validation of an object of an enabled integration whose shape was checked."""
    new, old = request.object, request.old_object if request.operation == "UPDATE" else None
    assert new is not None
    # Kueue's pod webhook checks every pod it sees, a Job's pods too
    pod_errors = pod_metadata_errors(new, old) if (integration.group, integration.kind) == ("", "Pod") else []
    new_ancestry = _ancestry(new, integration, request, config, view)
    old_ancestry = _ancestry(old, integration, request, config, view) if old is not None else None
    left_to_owner = new_ancestry.through_owner and (old_ancestry is None or old_ancestry.through_owner)
    if rules.children_left_alone and left_to_owner:
        return Verdict.deny(aggregate_message(pod_errors)) if pod_errors else Verdict.allow()
    errors = rules.value_errors(integration, new, old)
    errors += object_topology_errors(integration, new)  # Kueue's ValidateTASPodSetRequest and its kin
    if (integration.group, integration.kind) != ("", "Pod"):  # Kueue's pod webhook leaves gates alone
        errors += (
            admission_gates.create_errors(new.get("metadata"))
            if old is None
            else admission_gates.update_errors(old.get("metadata"), new.get("metadata"))
        )
    queue = engine.queue_name(new) or ""
    namespace_labels = namespace_labels_or_default(view, request.namespace)
    enforced = config.label_policy.is_enforced(namespace_labels)
    if old is None:
        skipped = engine.skipped(integration, new) or new_ancestry.through_owner
        if not queue and enforced and not skipped:
            errors.append(
                FieldError.required(
                    label_path(QUEUE_NAME_LABEL), rules.missing_label_message(integration, request, view)
                )
            )
    else:
        assert old_ancestry is not None
        errors += _update_errors(
            request,
            integration,
            rules,
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
    rules: KindRules,
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
    new_suspended = engine.suspend_written(integration, new)
    old_suspended = engine.suspend_written(integration, old)
    errors += rules.running_update_errors(old, new)
    path = label_path(QUEUE_NAME_LABEL)
    if not new_suspended and new_queue != old_queue:
        errors.append(FieldError.invalid(path, new_queue, IMMUTABLE))
    default_queue = config.label_policy.default_queue_for(request.namespace)
    if old_queue and not new_queue and default_queue in view.local_queue_names(request.namespace):
        # Kueue's validateUpdateForQueueName, for every kind as for Jobs
        errors.append(
            FieldError.invalid(path, "", "queue-name must not be empty in namespace with default queue")
        )
    errors += rules.label_update_errors(old, new)
    if old_queue and not new_queue and enforced:
        errors.append(FieldError.forbidden(path, rules.removed_label_message(integration, request, view)))
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
                rules.reparented_message(integration, controller, request.username),
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
                rules.started_message(integration, controller, request.username)
                + (f' through LocalQueue "{queue}"' if queue else "")
                + f" (see kubectl get workloads -n {request.namespace} for why it is waiting)",
            )
        )
    if not old_suspended:
        errors += rules.admitted_changes(integration, old, new)
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
