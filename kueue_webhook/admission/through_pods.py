"""What may change on a Deployment, StatefulSet or LeaderWorkerSet queued through its pods (Kueue's
deployment, statefulset and leaderworkerset webhooks, ``ValidateUpdate``).

Both: the queue label may change only while no replica is ready (``status.readyReplicas`` 0, Kueue's
"suspended" for these kinds) and may never be removed; a WorkloadPriorityClass label cannot be added once a
replica is ready, nor ever removed. A queued StatefulSet is one Workload of ``replicas`` pods, so on top:
the template's scheduling shape is frozen (Kueue's ``ValidateImmutablePodGroupPodSpec``: requests, ports,
nodeSelector, affinity, tolerations...), and ``replicas`` only goes to zero or up from zero, once the pods
of the scale-down are gone and its Workload is on hold. A queued LeaderWorkerSet is a Workload per group:
the shape of both its templates and its group size are frozen, its replicas free.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueue_webhook.admission.fields import IMMUTABLE, label_path
from kueue_webhook.admission.view import ClusterView
from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.integrations import Integration
from kueue_webhook.api.integrations.engine import PRIORITY_CLASS_LABEL
from kueue_webhook.api.integrations.statefulsets import released_at_zero, replicas, statefulset_workload_name
from kueue_webhook.api.pod_shape import ShapeList, ShapeMap, spec_shape

__all__ = ["through_pods_update_errors"]

_TEMPLATE_SPEC = "spec.template.spec"


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    found: Any = obj
    for key in path:
        found = found.get(key) if isinstance(found, Mapping) else None
    return found


def _label(obj: Mapping[str, Any], key: str) -> str:
    value = _get(obj, "metadata", "labels", key)
    return value if isinstance(value, str) else ""


def _shape_errors(new: Any, old: Any, path: str) -> list[FieldError]:
    """Kueue's ``validateImmutablePodGroupPodSpecPath``: shape lists item by item (whole when their lengths
    differ), shape maps key by key, anything else whole."""
    errors: list[FieldError] = []
    if isinstance(new, ShapeList) and isinstance(old, ShapeList) and len(new) == len(old):
        for index, (n, o) in enumerate(zip(new, old, strict=True)):
            errors += _shape_errors(n, o, f"{path}[{index}]")
    elif isinstance(new, ShapeMap) and isinstance(old, ShapeMap):
        for key in sorted(set(new) | set(old)):
            errors += _shape_errors(new.get(key), old.get(key), f"{path}.{key}")
    elif new != old:
        errors.append(FieldError.invalid(path, new, IMMUTABLE))
    return errors


def _queue_errors(
    old: Mapping[str, Any], new: Mapping[str, Any], old_queue: str, new_queue: str
) -> list[FieldError]:
    ready = _get(old, "status", "readyReplicas")
    suspended = not (isinstance(ready, int) and ready > 0)
    errors: list[FieldError] = []
    if (not suspended or not new_queue) and new_queue != old_queue:
        errors.append(FieldError.invalid(label_path("kueue.x-k8s.io/queue-name"), new_queue, IMMUTABLE))
    old_class, new_class = _label(old, PRIORITY_CLASS_LABEL), _label(new, PRIORITY_CLASS_LABEL)
    path = label_path(PRIORITY_CLASS_LABEL)
    if not suspended and not old_class and new_class:
        errors.append(
            FieldError.invalid(
                path, new_class, "WorkloadPriorityClass cannot be added to a non-suspended workload"
            )
        )
    if old_class and not new_class:
        errors.append(
            FieldError.invalid(path, new_class, "WorkloadPriorityClass cannot be removed from a workload")
        )
    return errors


def _replica_errors(old: Mapping[str, Any], new: Mapping[str, Any], view: ClusterView) -> list[FieldError]:
    old_count, new_count = replicas(old), replicas(new)
    path = "spec.replicas"
    if old_count != 0 and new_count != 0:
        if _get(new, "spec", "replicas") != _get(old, "spec", "replicas"):
            return [FieldError.invalid(path, _get(new, "spec", "replicas"), IMMUTABLE)]
        return []
    if old_count == 0 and new_count > 0:
        terminating = _get(new, "status", "replicas")
        if isinstance(terminating, int) and terminating > 0:
            return [FieldError.forbidden(path, "scaling down is still in progress")]
        meta = old.get("metadata") or {}
        name = statefulset_workload_name(str(meta.get("name") or ""), str(meta.get("uid") or ""))
        workload = view.workload(str(meta.get("namespace") or ""), name)
        if workload is not None and not released_at_zero(workload):
            return [FieldError.forbidden(path, "workload from previous scale-down is still being deleted")]
    return []


def _group_template_errors(
    integration: Integration, old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[FieldError]:
    """A queued LeaderWorkerSet (Kueue's webhook): each pod template's scheduling shape is frozen (a template
    added or removed is a change of the whole), and so is the group size (``LWSImmutableGroupSize``, on by
    default)."""
    errors: list[FieldError] = []
    for path in integration.pod_templates:
        new_template, old_template = path.get(new), path.get(old)
        if not isinstance(new_template, Mapping) or not isinstance(old_template, Mapping):
            if (new_template is None) != (old_template is None):
                errors.append(FieldError.invalid(str(path), new_template, IMMUTABLE))
            continue
        new_spec, old_spec = new_template.get("spec"), old_template.get("spec")
        errors += _shape_errors(
            spec_shape(new_spec if isinstance(new_spec, Mapping) else {}),
            spec_shape(old_spec if isinstance(old_spec, Mapping) else {}),
            f"{path}.spec",
        )
    new_size = _get(new, "spec", "leaderWorkerTemplate", "size")
    old_size = _get(old, "spec", "leaderWorkerTemplate", "size")
    if (new_size if new_size is not None else 1) != (old_size if old_size is not None else 1):
        errors.append(FieldError.invalid("spec.leaderWorkerTemplate.size", new_size, IMMUTABLE))
    return errors


def through_pods_update_errors(
    integration: Integration,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    old_queue: str,
    new_queue: str,
    queued: bool,
    view: ClusterView,
) -> list[FieldError]:
    """Kueue's ``ValidateUpdate`` of a Deployment or (``through_pods == "group"``) a StatefulSet; ``queued``:
    the object is queued (Kueue's ``WorkloadShouldBeSuspended``)."""
    errors = _queue_errors(old, new, old_queue, new_queue)
    if integration.through_pods == "groups" and queued:
        return errors + _group_template_errors(integration, old, new)
    if integration.through_pods != "group" or not queued:
        return errors
    new_spec, old_spec = _get(new, *_TEMPLATE_SPEC.split(".")), _get(old, *_TEMPLATE_SPEC.split("."))
    errors += _shape_errors(
        spec_shape(new_spec if isinstance(new_spec, Mapping) else {}),
        spec_shape(old_spec if isinstance(old_spec, Mapping) else {}),
        _TEMPLATE_SPEC,
    )
    return errors + _replica_errors(old, new, view)
