"""The admission rules every queued kind shares, as one overridable object: ``KindRules``.

Kueue's jobframework base webhook applies the same rules to every integration, and its Job webhook adds a
few of its own on top (``kueue_webhook.admission.jobs``). Here the shared flow
(``kueue_webhook.admission.integrations``)
asks a ``KindRules`` for the parts that differ: the field values it checks, its extra update rules, the JSON
Patch op that suspends it on create, and the wording of its denials. ``KIND_RULES`` is what every kind but
``batch/v1`` Job gets; each rule reads the object through the kind's integration description.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kueue_webhook.admission.fields import IMMUTABLE, label_path
from kueue_webhook.admission.review import AdmissionRequest
from kueue_webhook.admission.view import ClusterView
from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.integrations import Integration, engine
from kueue_webhook.api.integrations.engine import MAX_EXEC_TIME_LABEL, QUEUE_NAME_LABEL, parse_go_int
from kueue_webhook.api.validation import dns1123_subdomain_problems

__all__ = ["KIND_RULES", "KindRules", "add_label_op", "atoi", "max_exec_time_errors", "queue_list"]

JSON = dict[str, Any]


def add_label_op(obj: Mapping[str, Any], key: str, value: str) -> JSON:
    """The JSON Patch op adding one label, creating ``labels`` (or ``metadata``) when absent."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        return {"op": "add", "path": "/metadata", "value": {"labels": {key: value}}}
    if not isinstance(metadata.get("labels"), Mapping):
        return {"op": "add", "path": "/metadata/labels", "value": {key: value}}
    pointer = key.replace("~", "~0").replace("/", "~1")
    return {"op": "add", "path": f"/metadata/labels/{pointer}", "value": value}


def queue_list(view: ClusterView, namespace: str) -> str:
    """The LocalQueues a denial offers, or what to ask for when there is none."""
    names = sorted(view.local_queue_names(namespace))
    if not names:
        return (
            f'there is no LocalQueue in namespace "{namespace}" yet: ask a cluster administrator to create '
            "one (kind: LocalQueue, apiVersion: kueue.x-k8s.io/v1beta2)"
        )
    shown = ", ".join(f'"{name}"' for name in names)
    return f'LocalQueues in namespace "{namespace}": {shown}'


class KindRules:
    """The rules and wording of a queued kind's admission; a kind with rules of its own overrides some."""

    #: an object queued through a real queued owner is not checked at all (Kueue's base webhook); a Job's
    #: own field rules still apply to it (Kueue's Job webhook)
    children_left_alone = True
    #: how a denial names the object it is about
    subject = "it"
    #: what a denial of a missing queue label adds after the LocalQueues it lists
    missing_label_hint = ""

    def value_errors(
        self, integration: Integration, new: Mapping[str, Any], old: Mapping[str, Any] | None
    ) -> list[FieldError]:
        """The object's field values: the queue name is a DNS-1123 subdomain; a declared pod set's minCount
        field is an integer in 1..count-1, checked on create and whenever it changes; the kind's own rules
        for a queued object (``Integration.value_rules``); the time-limit label as Kueue's jobframework
        checks it for every integration."""
        errors: list[FieldError] = []
        queue = engine.queue_name(new) or ""
        if queue and (problems := dns1123_subdomain_problems(queue)):
            errors.append(FieldError.invalid(label_path(QUEUE_NAME_LABEL), queue, ",".join(problems)))
        errors += _min_count_errors(integration, new, old)
        if queue and integration.value_rules is not None:
            errors += integration.value_rules(new)
        return errors + _max_exec_time_errors(integration, new, old)

    def running_update_errors(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldError]:
        """The kind's own rules on what a running object may change, checked before the queue label's."""
        del old, new
        return []

    def label_update_errors(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldError]:
        """The kind's own rules on its other labels' changes, checked after the queue label's."""
        del old, new
        return []

    def created_suspended(self, integration: Integration, obj: Mapping[str, Any]) -> bool:
        """The object is created suspended already (Kueue's ``IsSuspended``), so it needs no patch."""
        return engine.is_suspended(integration, obj)

    def suspend_ops(self, integration: Integration, obj: Mapping[str, Any]) -> list[JSON]:
        """The JSON Patch that creates the object suspended."""
        return engine.suspend_ops(integration, obj)

    def missing_label_message(
        self, integration: Integration, request: AdmissionRequest, view: ClusterView
    ) -> str:
        return (
            f'namespace "{request.namespace}" requires every {integration.kind} to name its LocalQueue in '
            f"the label {QUEUE_NAME_LABEL}; {queue_list(view, request.namespace)}{self.missing_label_hint}"
        )

    def removed_label_message(
        self, integration: Integration, request: AdmissionRequest, view: ClusterView
    ) -> str:
        del view
        return (
            f'namespace "{request.namespace}" requires the label {QUEUE_NAME_LABEL}, so it cannot be '
            f"removed; to move the {integration.kind} to another LocalQueue, suspend it and change the "
            "label's value"
        )

    def reparented_message(self, integration: Integration, controller: str, username: str) -> str:
        return (
            f"the {integration.kind} is queued on its own (its Workload holds its quota), so only the "
            f"queueing controller ({controller}) may make another object its controller; user "
            f'"{username}" may not: delete {self.subject} and create it from its owner instead'
        )

    def started_message(self, integration: Integration, controller: str, username: str) -> str:
        """The start of the denial of a user's start (the queue and where to look follow)."""
        return (
            f"only the queueing controller ({controller}) may start a queued {integration.kind}, "
            f'user "{username}" may not; {self.subject} starts by itself once its Workload is admitted'
        )

    def admitted_changes(
        self, integration: Integration, old: Mapping[str, Any], new: Mapping[str, Any]
    ) -> list[FieldError]:
        """What a running object may not change: its pod templates' nodeSelector, tolerations and resources
        (the controller sets them from the admission), a partially admitted pod set's count, and what the
        kind's own rules add (``Integration.admitted_rules``)."""
        own = integration.admitted_rules(old, new) if integration.admitted_rules is not None else []
        return (
            _admitted_template_changes(integration, old, new)
            + _admitted_count_changes(integration, old, new)
            + own
        )


KIND_RULES = KindRules()


def atoi(path: str, raw: str) -> int | FieldError:
    """Go's ``strconv.Atoi`` on a label or annotation, as Kueue's webhooks call it: the integer, or the
    error they report with Go's wording."""
    value = parse_go_int(raw)
    if value is not None:
        return value
    problem = "value out of range" if re.fullmatch(r"[+-]?[0-9]+", raw) else "invalid syntax"
    return FieldError.invalid(path, raw, f'strconv.Atoi: parsing "{raw}": {problem}')


def max_exec_time_errors(raw: str | None) -> list[FieldError]:
    """Kueue's validateCreateForMaxExecTime (every integration): the label, when set, is what Go's
    ``strconv.Atoi`` reads as an integer above 0."""
    if raw is None:
        return []
    path = label_path(MAX_EXEC_TIME_LABEL)
    seconds = atoi(path, raw)
    if isinstance(seconds, FieldError):
        return [seconds]
    return [] if seconds > 0 else [FieldError.invalid(path, seconds, "should be greater than 0")]


def _max_exec_time_errors(
    integration: Integration, new: Mapping[str, Any], old: Mapping[str, Any] | None
) -> list[FieldError]:
    """The ``max-exec-time-seconds`` label: on create ``max_exec_time_errors``; on update unchanged unless
    the object was and stays suspended (Kueue's validateUpdateForMaxExecTime). A Job's are ``JobRules``'."""
    new_value = _label(new, MAX_EXEC_TIME_LABEL)
    if old is None:
        return max_exec_time_errors(new_value)
    old_value = _label(old, MAX_EXEC_TIME_LABEL)
    if integration.through_pods or old_value == new_value:
        return []
    if engine.is_suspended(integration, new) and engine.is_suspended(integration, old):
        return []
    return [FieldError.invalid(label_path(MAX_EXEC_TIME_LABEL), new_value or "", IMMUTABLE)]


def _label(obj: Mapping[str, Any], key: str) -> str | None:
    labels = (obj.get("metadata") or {}).get("labels")
    value = labels.get(key) if isinstance(labels, Mapping) else None
    return value if isinstance(value, str) else None


def _min_count_errors(
    integration: Integration, new: Mapping[str, Any], old: Mapping[str, Any] | None
) -> list[FieldError]:
    """A declared pod set's minCount field is an integer in 1..count-1, checked on create and whenever it
    changes (as Kueue's Job webhook checks its min-parallelism annotation)."""
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
        old_place = (previous.scheduling_spec() or {}) if previous is not None else {}
        new_place = element.scheduling_spec() or {}
        for key in ("nodeSelector", "tolerations"):
            if (old_place.get(key) or None) != (new_place.get(key) or None):
                errors.append(FieldError.forbidden(f"{element.scheduling_where()}.{key}", hint))
        old_spec = (previous.quota_template().get("spec") or {}) if previous is not None else {}
        new_spec = element.quota_template().get("spec") or {}
        built = element.source.build_template is not None
        base = element.where if built else f"{element.where}.{element.source.template}.spec"
        for key in ("initContainers", "containers"):
            if _resources(old_spec.get(key)) != _resources(new_spec.get(key)):
                errors.append(FieldError.forbidden(base if built else f"{base}.{key}[*].resources", hint))
    return errors


def _resources(containers: Any) -> list[Any]:
    if not isinstance(containers, list):
        return []
    return [
        (c.get("name"), c.get("resources") or None) if isinstance(c, Mapping) else None for c in containers
    ]
