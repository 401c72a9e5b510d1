"""An object's pod sets as Kueue's ``PodSets`` reads them: where they are, their counts and minCount, their
templates (the Workload built from them: ``workload``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.integrations.engine.reading import (
    annotation,
    as_int,
    parse_go_int,
)
from kueue_webhook.api.integrations.model import Integration, PodSetSource
from kueue_webhook.api.integrations.paths import FieldPath, pointer
from kueue_webhook.api.objects import PodSet
from kueue_webhook.api.pods import pod_requests
from kueue_webhook.api.topology_request import POD_INDEX_LABELS, template_topology_request

__all__ = [
    "Element",
    "accepts_partial_admission",
    "element_count",
    "element_min_count",
    "elements",
    "min_count",
    "pod_count",
    "pod_sets",
    "written_min_count",
]

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Element:
    """One pod set's place in the object: its source, name, JSON Pointer segments and text path."""

    source: PodSetSource
    name: str
    segments: tuple[str | int, ...]
    where: str
    value: Mapping[str, Any]
    #: the whole object (for what a pod set reads from its metadata)
    obj: Mapping[str, Any] = field(compare=False, repr=False)

    def template(self) -> Mapping[str, Any] | None:
        """The pod template; for an element that is itself a pod (an empty template path), its spec alone."""
        if not self.source.template:
            spec = self.value.get("spec")
            return {"spec": spec} if isinstance(spec, Mapping) else None
        found = self.source.template.get(self.value)
        return found if isinstance(found, Mapping) else None

    def template_pointer(self, *rest: str) -> str:
        return pointer((*self.segments, *self.source.template, *rest))

    def quota_template(self) -> Mapping[str, Any]:
        """The template the quota and the Workload read: the kind's own build of it, else the template,
        else the pod set's default one."""
        if self.source.build_template is not None:
            return self.source.build_template(self.value)
        template = self.template()
        if template is None and self.source.default_template is not None:
            return self.source.default_template
        return template or {}

    def _scheduling_path(self) -> FieldPath:
        where = self.source.scheduling
        return FieldPath((*self.source.template, "spec")) if where is None else where

    def scheduling_spec(self) -> Mapping[str, Any] | None:
        """Where the flavor's nodeSelector and tolerations go (the template's spec unless the kind says
        otherwise); None when there is no such place (no template of its own: nothing is injected)."""
        if self.source.scheduling is None:
            template = self.template()
            if template is None:
                return None
            spec = template.get("spec")
            return spec if isinstance(spec, Mapping) else {}
        found = self.source.scheduling.get(self.value)
        return found if isinstance(found, Mapping) else {}

    def scheduling_pointer(self, name: str) -> str:
        return pointer((*self.segments, *self._scheduling_path(), name))

    def scheduling_where(self) -> str:
        """The text path of where the flavor goes (for error messages)."""
        inner = str(self._scheduling_path())
        return f"{self.where}.{inner}" if inner else self.where


def elements(integration: Integration, obj: Mapping[str, Any]) -> list[Element]:
    """Every pod set's element, in pod set order (Kueue's order: sources in turn, list order, map order)."""
    out: list[Element] = []
    for source in integration.pod_sets:
        if source.only_if is not None and not source.only_if.holds(obj):
            continue
        if source.expand is not None:
            for name, segments, where, value in source.expand(obj):
                out.append(Element(source, name, segments, where, value, obj))
            continue
        found = source.path.get(obj)
        base, where = tuple(source.path), str(source.path)
        if source.each == "one":
            if isinstance(found, Mapping):
                out.append(Element(source, source.name.lower(), base, where, found, obj))
        elif source.each == "list":
            for index, item in enumerate(found if isinstance(found, list) else ()):
                if isinstance(item, Mapping):
                    raw = source.name_field.get(item) if source.name_field is not None else None
                    name = str(raw).lower() if raw is not None else str(index)
                    out.append(Element(source, name, (*base, index), f"{where}[{index}]", item, obj))
        elif isinstance(found, Mapping):
            keys = [k for k in source.order if k in found] if source.order else sorted(found)
            for key in keys:
                item = found.get(key)
                if isinstance(item, Mapping):
                    out.append(Element(source, str(key).lower(), (*base, key), f"{where}[{key}]", item, obj))
    return out


def _factor(element: Mapping[str, Any], path: FieldPath, default: int, at_most: FieldPath | None) -> int:
    value = as_int(path.get(element))
    count = default if value is None else value
    cap = as_int(at_most.get(element)) if at_most is not None else None
    return cap if cap is not None and cap < count else count


def element_count(element: Element) -> int:
    count = 1
    for factor in element.source.count:
        count *= _factor(element.value, factor.path, factor.default, factor.at_most)
    return max(count, 0)


def pod_count(integration: Integration, obj: Mapping[str, Any]) -> int:
    """The pods of every pod set together."""
    return sum(element_count(e) for e in elements(integration, obj))


def written_min_count(element: Element) -> int | None:
    """The pod set's minCount as the object writes it (its field, or its annotation parsed as a Go
    integer), whatever its range; None when it writes none."""
    rule = element.source.min_count
    if rule is None:
        return None
    if rule.path is not None:
        return as_int(rule.path.get(element.value))
    raw = annotation(element.obj, rule.annotation)
    return None if raw is None else parse_go_int(raw)


def accepts_partial_admission(element: Element) -> bool:
    """Whether the pod set's count field follows its admission: its minCount reads as an integer (Kueue's
    Job tests ``minPodsCount() != nil`` whatever the count is then; a running one may run minCount pods)."""
    return len(element.source.count) == 1 and written_min_count(element) is not None


def element_min_count(element: Element) -> int | None:
    """The pod set's Workload ``minCount`` (its ``MinCount`` field or annotation), None when it is all or
    nothing: no such value, not an integer, or (unless ``as_written``) outside ``1..count-1``."""
    value = written_min_count(element)
    if value is None or element.source.min_count is None or element.source.min_count.as_written:
        return value
    return value if 1 <= value < element_count(element) else None


def min_count(integration: Integration, obj: Mapping[str, Any]) -> int | None:
    """The ``minCount`` of the object's partially admittable pod set (a Workload has at most one), None
    when it has none."""
    found = (element_min_count(e) for e in elements(integration, obj))
    return next((value for value in found if value is not None), None)


def pod_sets(integration: Integration, obj: Mapping[str, Any]) -> tuple[PodSet, ...] | list[FieldError]:
    """The object's pod sets, or the errors in its pod templates (every one of them at once)."""
    found = elements(integration, obj)
    if not found:
        return [FieldError.required(str(integration.pod_sets[0].path), "no pod set found")]
    errors: list[FieldError] = []
    out: list[PodSet] = []
    for element in found:
        template = element.quota_template()
        where = f"{element.where}.{element.source.template}.spec"
        pod_spec = template.get("spec")
        if not isinstance(pod_spec, Mapping) or not pod_spec.get("containers"):
            errors.append(FieldError.required(f"{where}.containers"))
            continue
        requests, problems = pod_requests(pod_spec, where)
        errors.extend(problems)
        index_label = POD_INDEX_LABELS.get((integration.group, integration.kind))
        out.append(
            PodSet(
                element.name,
                element_count(element),
                requests,
                template,
                element_min_count(element),
                template_topology_request(template, index_label),
            )
        )
    return errors if errors else tuple(out)
