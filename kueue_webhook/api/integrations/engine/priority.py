"""A queued object's Workload priority as Kueue's jobframework resolves it (``ExtractPriority``).

The ``kueue.x-k8s.io/priority-class`` label names a WorkloadPriorityClass and wins; otherwise the kind's own
priority class field (a Kubeflow job's ``runPolicy.schedulingPolicy.priorityClass``) or the first pod
template's ``priorityClassName`` names a scheduling.k8s.io PriorityClass; an object naming none gets the
cluster's ``globalDefault`` PriorityClass (the lowest value when several claim it, as Kueue picks), else 0.
A class that is named but does not exist is not 0: Kueue makes no Workload until it exists
(``missing_class``), so the object stays suspended rather than queue at a priority nobody chose.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kueue_webhook.api.integrations.engine.pod_sets import elements
from kueue_webhook.api.integrations.engine.reading import PRIORITY_CLASS_LABEL, metadata_of
from kueue_webhook.api.integrations.model import Integration
from kueue_webhook.api.objects import GROUP

__all__ = [
    "DEFAULT_WORKLOAD_PRIORITY_CLASS",
    "NO_CLASSES",
    "POD_PRIORITY_GROUP",
    "PriorityClasses",
    "class_kind",
    "class_priority",
    "missing_class",
    "named_class",
    "priority",
    "priority_fields",
]

#: the API group of a pod PriorityClass, as a Workload's ``priorityClassRef`` names it
POD_PRIORITY_GROUP = "scheduling.k8s.io"
#: the WorkloadPriorityClass the webhook gives a new object that names none, when it exists (Kueue's
#: WorkloadPriorityClassDefaulting, beta and on by default since v0.20)
DEFAULT_WORKLOAD_PRIORITY_CLASS = "default"


@dataclass(frozen=True, slots=True)
class PriorityClasses:
    """The cluster's priority classes as a Workload's priority reads them."""

    #: WorkloadPriorityClass values by name
    workload: Mapping[str, int] = field(default_factory=dict)
    #: PriorityClass (scheduling.k8s.io) values by name
    pod: Mapping[str, int] = field(default_factory=dict)
    #: (name, value) of the PriorityClass with ``globalDefault: true``, the lowest value when several are
    pod_default: tuple[str, int] | None = None

    @classmethod
    def from_objects(
        cls, workload_classes: Iterable[Mapping[str, Any]], pod_classes: Iterable[Mapping[str, Any]]
    ) -> PriorityClasses:
        """From WorkloadPriorityClass and PriorityClass objects as the API serves them (each a top-level
        ``value``; a PriorityClass also ``globalDefault``)."""
        pod_classes = list(pod_classes)
        pod = _values(pod_classes)
        defaults = {
            str(metadata_of(item).get("name") or "")
            for item in pod_classes
            if item.get("globalDefault") is True
        }
        default = min(
            ((name, value) for name, value in pod.items() if name in defaults),
            key=lambda d: d[1],
            default=None,
        )
        return cls(_values(workload_classes), pod, default)

    def of_group(self, group: str) -> Mapping[str, int]:
        """The values of the classes of API ``group`` (a WorkloadPriorityClass's, else a PriorityClass's)."""
        return self.workload if group == GROUP else self.pod


NO_CLASSES = PriorityClasses()


def _values(items: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        value, name = item.get("value"), str(metadata_of(item).get("name") or "")
        if isinstance(value, int) and not isinstance(value, bool) and name:
            out[name] = value
    return out


def named_class(integration: Integration, obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """(API group, name) of the class the object names for its priority, None when it names none."""
    labels = metadata_of(obj).get("labels")
    wpc = labels.get(PRIORITY_CLASS_LABEL) if isinstance(labels, Mapping) else None
    if isinstance(wpc, str) and wpc:
        return GROUP, wpc
    names = [path.get(obj) for path in integration.priority_class]
    specs = [(e.quota_template().get("spec") or {}) for e in elements(integration, obj)]
    names += [spec.get("priorityClassName") for spec in specs if isinstance(spec, Mapping)]
    for name in names:
        if isinstance(name, str) and name:
            return POD_PRIORITY_GROUP, name
    return None


def class_priority(named: tuple[str, str] | None, classes: PriorityClasses) -> tuple[int, str, str]:
    """(priority, class name, class group) of the class an object names (``named_class``), or of the
    cluster's default PriorityClass when it names none. A class that does not exist counts as 0 here: the
    controller makes no Workload for it (``missing_class``); what-if tools built on this see the priority
    the object would have."""
    if named is not None:
        group, name = named
        return classes.of_group(group).get(name, 0), name, group
    if classes.pod_default is not None:
        name, value = classes.pod_default
        return value, name, POD_PRIORITY_GROUP
    return 0, "", ""


def missing_class(workload: Mapping[str, Any], classes: PriorityClasses) -> tuple[str, str] | None:
    """(API group, name) of the class a Workload built for an object names (its ``priorityClassRef``) when
    that class does not exist, else None: Kueue's reconciler then fails to build the Workload, with a
    ``WorkloadPriorityClassNotFound`` Warning for a WorkloadPriorityClass, and tries again later."""
    ref = (workload.get("spec") or {}).get("priorityClassRef")
    if not isinstance(ref, Mapping) or not ref.get("name"):
        return None
    group, name = str(ref.get("group") or ""), str(ref["name"])
    return None if name in classes.of_group(group) else (group, name)


def class_kind(group: str) -> str:
    """The kind of a priority class of API ``group``."""
    return "WorkloadPriorityClass" if group == GROUP else "PriorityClass"


def priority_fields(value: int, name: str, group: str) -> dict[str, Any]:
    """A Workload's ``spec.priorityClassRef`` (when a class gave the priority) and ``spec.priority``."""
    ref = {"priorityClassRef": {"group": group, "kind": class_kind(group), "name": name}} if name else {}
    return {**ref, "priority": value}


def priority(
    integration: Integration, obj: Mapping[str, Any], classes: PriorityClasses
) -> tuple[int, str, str]:
    """(priority, class name, class group) as Kueue fills a Workload's ``priority`` and ``priorityClassRef``
    (``ExtractPriority``)."""
    return class_priority(named_class(integration, obj), classes)
