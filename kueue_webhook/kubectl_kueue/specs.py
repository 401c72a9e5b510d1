"""The objects ``kubectl kueue create`` sends, built from kueuectl's flags with kueuectl's rules and messages.

``--nominal-quota``/``--borrowing-limit``/``--lending-limit`` take ``FLAVOR:RESOURCE=QUANTITY;...`` per flavor
(several flavors comma-separated or repeated); quotas of one flavor are merged across the three flags, and
flavors covering the same resources share a resource group, as kueuectl's ``parseResourceGroups`` does.
``--node-taints`` and ``--tolerations`` are ``KEY[=VALUE]:EFFECT`` lists checked as kueuectl checks them.
Pure: returns plain dicts (or raises ``SpecError`` with kueuectl's message).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from kueue_webhook.api.quantity import QuantityError, parse_quantity

__all__ = [
    "SpecError",
    "cluster_queue",
    "key_values",
    "local_queue",
    "resource_flavor",
    "taints",
    "tolerations",
]

JSON = dict[str, Any]
API_VERSION = "kueue.x-k8s.io/v1beta2"
#: kueuectl's pattern of one flavor's resources (create_clusterqueue.go parseUserSpecifiedResourceQuotas)
_FLAVOR_SPEC = re.compile(
    r"^([a-z0-9][a-z0-9\-\.]{0,252}):((\w+[\.-]?)*\/?\w+=\w+;)*(\w+[\.-]?)*\/?\w+=\w+;?$"
)
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_FIELDS = {
    "nominal-quota": "nominalQuota",
    "borrowing-limit": "borrowingLimit",
    "lending-limit": "lendingLimit",
}


class SpecError(ValueError):
    """A flag value kueuectl would refuse; the message is kueuectl's."""


def _split(values: Sequence[str]) -> list[str]:
    """pflag's string slices: each occurrence comma-separated."""
    return [item for value in values for item in value.split(",")]


def key_values(text: str | None) -> dict[str, str]:
    """pflag's ``StringToString``: ``k1=v1,k2=v2``."""
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep:
            raise SpecError(f"{item} must be formatted as key=value")
        out[key] = value
    return out


def local_queue(name: str, namespace: str, cluster_queue: str) -> JSON:
    return {
        "apiVersion": API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue},
    }


def _flavor_quotas(specs: Sequence[str], flag: str) -> list[tuple[str, list[tuple[str, str]]]]:
    out = []
    for spec in _split(specs):
        if not _FLAVOR_SPEC.match(spec):
            raise SpecError("invalid resources specification")
        flavor, _, rest = spec.partition(":")
        pairs = []
        for item in rest.split(";"):
            if not item:
                continue
            resource, _, quantity = item.partition("=")
            try:
                parse_quantity(quantity.strip())
            except (QuantityError, ValueError):
                raise SpecError("invalid resource quota") from None
            pairs.append((resource.strip(), quantity.strip()))
        out.append((flavor.strip(), pairs))
    return out


def _resource_groups(nominal: Sequence[str], borrowing: Sequence[str], lending: Sequence[str]) -> list[JSON]:
    """kueuectl's mergeResourcesByFlavor then mergeFlavorsByCoveredResources."""
    flavors: dict[str, list[JSON]] = {}
    order: list[str] = []
    for flag, specs in (
        ("nominal-quota", nominal),
        ("borrowing-limit", borrowing),
        ("lending-limit", lending),
    ):
        for flavor, pairs in _flavor_quotas(specs, flag):
            quotas = [{"name": resource, _FIELDS[flag]: quantity} for resource, quantity in pairs]
            if flavor not in flavors:
                flavors[flavor] = quotas
                order.append(flavor)
                continue
            merged = flavors[flavor]
            if {q["name"] for q in quotas} != {q["name"] for q in merged} or len(quotas) != len(merged):
                raise SpecError("invalid flavor")
            by_name = {q["name"]: q for q in quotas}
            for quota in merged:
                for key, value in by_name[quota["name"]].items():
                    quota.setdefault(key, value)
    groups: list[JSON] = []
    by_covered: dict[str, JSON] = {}
    for flavor in order:
        resources = flavors[flavor]
        for quota in resources:
            quota.setdefault("nominalQuota", "0")
        covered = [q["name"] for q in resources]
        key = ".".join(sorted(covered))
        if key in by_covered:
            by_covered[key]["flavors"].append({"name": flavor, "resources": resources})
            continue
        if any(key in other for other in by_covered):
            raise SpecError("invalid resource group")
        group = {"coveredResources": covered, "flavors": [{"name": flavor, "resources": resources}]}
        by_covered[key] = group
        groups.append(group)
    return groups


def cluster_queue(
    name: str,
    *,
    cohort: str = "",
    queuing_strategy: str | None = None,
    namespace_selector: str | None = None,
    reclaim_within_cohort: str | None = None,
    preemption_within_cluster_queue: str | None = None,
    nominal_quota: Sequence[str] = (),
    borrowing_limit: Sequence[str] = (),
    lending_limit: Sequence[str] = (),
) -> JSON:
    """kueuectl's ClusterQueue: BestEffortFIFO, no preemption and every namespace unless said otherwise."""
    spec: JSON = {
        "queueingStrategy": queuing_strategy or "BestEffortFIFO",
        "namespaceSelector": {"matchLabels": key_values(namespace_selector)} if namespace_selector else {},
        "preemption": {
            "reclaimWithinCohort": reclaim_within_cohort or "Never",
            "withinClusterQueue": preemption_within_cluster_queue or "Never",
        },
    }
    if cohort:
        spec["cohortName"] = cohort
    groups = _resource_groups(nominal_quota, borrowing_limit, lending_limit)
    if groups:
        spec["resourceGroups"] = groups
    return {"apiVersion": API_VERSION, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def _split_item(text: str) -> tuple[str, str, str]:
    parts = text.split(":")
    if len(parts) > 2:
        raise ValueError(text)
    kv = parts[0].split("=")
    if len(kv) > 2:
        raise ValueError(text)
    return kv[0], kv[1] if len(kv) > 1 else "", parts[1] if len(parts) > 1 else ""


def _check_effect(effect: str) -> None:
    if effect not in _EFFECTS:
        raise SpecError(f"invalid taint effect: {effect}, unsupported taint effect")


def _check_key(text: str, key: str, what: str) -> None:
    prefix, _, name = key.rpartition("/")
    if (
        not name
        or len(name) > 63
        or not _LABEL_NAME.match(name)
        or (prefix and not _DNS_SUBDOMAIN.match(prefix))
    ):
        raise SpecError(f"invalid {what} spec: {text}, not a valid label key")


def _check_value(text: str, value: str, what: str) -> None:
    if value and (len(value) > 63 or not _LABEL_NAME.match(value)):
        raise SpecError(f"invalid {what} spec: {text}, not a valid label value")


def taints(specs: Sequence[str]) -> list[JSON]:
    out: list[JSON] = []
    seen: set[tuple[str, str]] = set()
    for text in _split(specs):
        if not text:
            raise SpecError("invalid taint spec")
        try:
            key, value, effect = _split_item(text)
        except ValueError:
            raise SpecError(f"invalid taint spec: {text}") from None
        if not effect:
            raise SpecError(f"invalid taint spec: {text}")
        _check_effect(effect)
        _check_key(text, key, "taint")
        _check_value(text, value, "taint")
        if (key, effect) in seen:
            raise SpecError(f"duplicated taints with the same key and effect: {key}={value}:{effect}")
        seen.add((key, effect))
        taint = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        out.append(taint)
    return out


def tolerations(specs: Sequence[str]) -> list[JSON]:
    out: list[JSON] = []
    for text in _split(specs):
        if not text:
            raise SpecError("invalid toleration spec")
        try:
            key, value, effect = _split_item(text)
        except ValueError:
            raise SpecError(f"invalid toleration spec: {text}") from None
        if not key and value:
            raise SpecError(f"invalid toleration spec: {text}")
        if effect:
            _check_effect(effect)
        if key:
            _check_key(text, key, "toleration")
        _check_value(text, value, "toleration")
        toleration: JSON = {"operator": "Equal" if key and value else "Exists"}
        if key:
            toleration["key"] = key
        if value:
            toleration["value"] = value
        if effect:
            toleration["effect"] = effect
        out.append(toleration)
    return out


def resource_flavor(
    name: str, *, node_labels: str | None = None, node_taints: Sequence[str] = (), extra: Sequence[str] = ()
) -> JSON:
    spec: JSON = {}
    labels = key_values(node_labels)
    if labels:
        spec["nodeLabels"] = labels
    parsed_taints = taints(node_taints)
    if parsed_taints:
        spec["nodeTaints"] = parsed_taints
    parsed_tolerations = tolerations(extra)
    if parsed_tolerations:
        spec["tolerations"] = parsed_tolerations
    return {"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}
