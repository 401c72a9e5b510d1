"""ResourceFlavor: which nodes a flavor stands for, and the taints and tolerations that come with it.

Taints and tolerations have rules of their own (Kueue's CRD caps and CEL rules on every toleration list,
its webhook's key, value and uniqueness checks), which a Workload's ``podSetUpdates`` share through
:func:`validate_tolerations`; they sit with the one kind that owns them. Where kube-apiserver skips CEL
rules on an object that already failed its schema (an enum, a required field, a size limit), so does
:func:`parse_resource_flavor`: schema errors and rule errors are gathered apart, and only one list is
answered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kueue_webhook.api.errors import ErrorType, FieldError, WordedError
from kueue_webhook.api.objects.cel import cel_all, cel_check, cel_eval, select
from kueue_webhook.api.objects.common import (
    Meta,
    NamedByMeta,
    Parsed,
    finish,
    list_field,
    name_reference,
    parse_meta,
    parse_spec,
)
from kueue_webhook.api.validation import (
    label_value_problems,
    string_map,
    validate_label_name,
    validate_labels,
)

__all__ = [
    "FLAVOR_LIST_LIMIT",
    "TAINT_EFFECTS",
    "TOLERATION_OPERATORS",
    "ResourceFlavor",
    "Taint",
    "parse_resource_flavor",
    "validate_tolerations",
]

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")
#: the most taints, tolerations and node labels a flavor may carry (Kueue's CRD)
FLAVOR_LIST_LIMIT = 8


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        # corev1.Taint.ToString: key=value:effect (value omitted when empty)
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"


@dataclass(frozen=True, slots=True)
class ResourceFlavor(NamedByMeta):
    """Cluster-scoped: which nodes a flavor stands for (labels injected, taints to tolerate)."""

    meta: Meta
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Mapping[str, Any], ...] = ()
    topology_name: str = ""


def _flavor_taints(raw: Any, errors: list[FieldError], rule_errors: list[FieldError]) -> list[Taint]:
    """``spec.nodeTaints``: the CRD's shape (key and effect required, effect enum) and Kueue's webhook checks
    (key a qualified name, value a label value, unique by key and effect)."""
    items = list_field(raw, "spec.nodeTaints", errors)
    if len(items) > FLAVOR_LIST_LIMIT:
        errors.append(FieldError.too_many("spec.nodeTaints", len(items), FLAVOR_LIST_LIMIT))
    taints: list[Taint] = []
    seen: set[tuple[str, str]] = set()
    for index, item in enumerate(items):
        path = f"spec.nodeTaints[{index}]"
        if not isinstance(item, Mapping) or not item.get("key"):
            errors.append(FieldError.required(f"{path}.key"))
            continue
        effect = item.get("effect")
        if effect not in TAINT_EFFECTS:
            errors.append(FieldError.not_supported(f"{path}.effect", effect, TAINT_EFFECTS))
            continue
        taint = Taint(str(item["key"]), str(item.get("value") or ""), str(effect))
        rule_errors.extend(validate_label_name(taint.key, f"{path}.key"))
        value_problems = label_value_problems(taint.value)
        if value_problems:
            rule_errors.append(FieldError.invalid(f"{path}.value", taint.value, ";".join(value_problems)))
        if (taint.key, taint.effect) in seen:
            rule_errors.append(
                WordedError(
                    path,
                    ErrorType.DUPLICATE,
                    body=f"Duplicate value: {_go_taint(item)}: taints must be unique by key and effect pair",
                )
            )
            continue
        seen.add((taint.key, taint.effect))
        taints.append(taint)
    return taints


def _go_taint(raw: Mapping[str, Any]) -> str:
    """A taint as Go's ``%#v`` prints a ``corev1.Taint``: the shape of Kueue's duplicate-taint error. (Go
    prints a set ``timeAdded`` as a pointer address, which no one can reproduce; we print the time.)"""
    added = "(*v1.Time)(nil)" if raw.get("timeAdded") is None else f"(*v1.Time)({raw['timeAdded']})"
    key, value, effect = (str(raw.get(k) or "") for k in ("key", "value", "effect"))
    return f'v1.Taint{{Key:"{key}", Value:"{value}", Effect:"{effect}", TimeAdded:{added}}}'


#: Kueue's CRD rules on every toleration list, in its order (CEL's has() is true for a field set to "")
_TOLERATION_RULES: tuple[tuple[str, Any], ...] = (
    (
        "operator must be Exists when 'key' is empty, which means 'match all values and all keys'",
        lambda x: "key" in x or select(x, "operator") == "Exists",
    ),
    (
        "effect must be 'NoExecute' when 'tolerationSeconds' is set",
        lambda x: "tolerationSeconds" not in x or select(x, "effect") == "NoExecute",
    ),
    (
        "supported toleration values: 'Equal'(default), 'Exists'",
        lambda x: "operator" not in x or x["operator"] in TOLERATION_OPERATORS,
    ),
    (
        "a value must be empty when 'operator' is 'Exists'",
        lambda x: not (x.get("operator") == "Exists" and "value" in x),
    ),
    (
        "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",
        lambda x: "effect" not in x or x["effect"] in TAINT_EFFECTS,
    ),
)


def _toleration_list(
    raw: Any, path: str, errors: list[FieldError], rule_errors: list[FieldError], *, enums: bool
) -> list[Mapping[str, Any]]:
    """A toleration list as Kueue's CRD and webhook check it: at most 8, the five CEL rules on the list,
    and every non-empty key a qualified name.

    Tolerations end up in pod templates, so one a pod would refuse has to be refused where it is written.
    ``enums``: the schema also has enums on ``operator`` and ``effect`` (our ResourceFlavor CRD keeps them, so
    "Unsupported value" names the field at fault); an enum failure stops the CEL rules, so the two rules
    restating the enums can then never be what fails.
    """
    items = list_field(raw, path, errors)
    if len(items) > FLAVOR_LIST_LIMIT:
        errors.append(FieldError.too_many(path, len(items), FLAVOR_LIST_LIMIT))
    tolerations: list[Mapping[str, Any]] = []
    for index, item in enumerate(items):
        ipath = f"{path}[{index}]"
        if not isinstance(item, Mapping):
            errors.append(FieldError.invalid(ipath, None, "must be a toleration"))
            continue
        if enums and "operator" in item and item["operator"] not in TOLERATION_OPERATORS:
            errors.append(
                FieldError.not_supported(f"{ipath}.operator", item["operator"], TOLERATION_OPERATORS)
            )
        if enums and "effect" in item and item["effect"] not in TAINT_EFFECTS:
            errors.append(FieldError.not_supported(f"{ipath}.effect", item["effect"], TAINT_EFFECTS))
        key = item.get("key")
        if isinstance(key, str) and key:
            rule_errors.extend(validate_label_name(key, f"{ipath}.key"))
        tolerations.append(dict(item))
    for message, predicate in _TOLERATION_RULES:
        cel_check(cel_all(tolerations, predicate), path, "array", message, rule_errors)
    return tolerations


def validate_tolerations(raw: Any, path: str) -> list[FieldError]:
    """A toleration list with no enums in its schema (a Workload's ``podSetUpdates``): the schema's errors
    if any, else the CEL rules' and the webhook's, as kube-apiserver then Kueue's webhook would answer."""
    errors: list[FieldError] = []
    rule_errors: list[FieldError] = []
    _toleration_list(raw, path, errors, rule_errors, enums=False)
    return errors or rule_errors


def parse_resource_flavor(obj: Mapping[str, Any]) -> Parsed[ResourceFlavor]:
    """Kueue's ResourceFlavor rules: the CRD's schema first; its CEL rules and Kueue's webhook checks only
    when the schema holds, because kube-apiserver skips CEL rules on an object that already failed an enum,
    a required field or a size limit (and never calls the webhook)."""
    errors: list[FieldError] = []
    rule_errors: list[FieldError] = []
    meta = parse_meta(obj, errors, namespaced=False)
    spec = parse_spec(obj, errors)
    labels = string_map(spec.get("nodeLabels"), "spec.nodeLabels", errors)
    if len(labels) > FLAVOR_LIST_LIMIT:
        errors.append(FieldError.too_many("spec.nodeLabels", len(labels), FLAVOR_LIST_LIMIT))
    if "topologyName" in spec:
        # Kueue's CRD rule on spec: a topology needs node labels to find its nodes
        cel_check(
            cel_eval(lambda s: len(select(s, "nodeLabels") or {}) >= 1, spec),
            "spec",
            "object",
            "at least one nodeLabel is required when topology is set",
            rule_errors,
        )
    taints = _flavor_taints(spec.get("nodeTaints"), errors, rule_errors)
    tolerations = _toleration_list(
        spec.get("tolerations"), "spec.tolerations", errors, rule_errors, enums=True
    )
    rule_errors.extend(validate_labels(labels, "spec.nodeLabels"))
    topology = name_reference(spec.get("topologyName"), "spec.topologyName", errors)
    if not errors:
        errors = rule_errors
    flavor = ResourceFlavor(meta, labels, tuple(taints), tuple(tolerations), topology)
    return finish(flavor, errors)
