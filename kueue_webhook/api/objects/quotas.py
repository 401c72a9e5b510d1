"""The quota table ClusterQueue and Cohort share: resource groups, each flavor's quota per resource with its
borrowing and lending limits, and the fair-sharing weight.

Both kinds write ``spec.resourceGroups`` and ``spec.fairSharing`` in the same shape and Kueue checks them with
the same rules, except where a Cohort differs (its parent plays the cohort's part, and its lending limit may
exceed its nominal quota). The ledger reads these views; ClusterQueue-only bounds on the whole table live with
ClusterQueue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.objects.common import list_field, name_reference, object_items, quantity_field
from kueue_webhook.api.quantity import Quantity
from kueue_webhook.api.validation import validate_label_name

__all__ = [
    "FlavorQuotas",
    "ResourceGroup",
    "ResourceQuota",
    "flavor_names",
    "parse_fair_sharing_weight",
    "parse_resource_groups",
]


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    """One resource's quota in one flavor; ``None`` limits mean "no limit" (borrow all, lend all)."""

    name: str
    nominal: Quantity
    borrowing_limit: Quantity | None = None
    lending_limit: Quantity | None = None


@dataclass(frozen=True, slots=True)
class FlavorQuotas:
    name: str
    resources: tuple[ResourceQuota, ...]


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    """Resources that must all come from the same flavor, and the flavors to try in order."""

    covered_resources: tuple[str, ...]
    flavors: tuple[FlavorQuotas, ...]


def flavor_names(groups: Iterable[ResourceGroup]) -> tuple[str, ...]:
    """Every flavor the groups name, in spec order, without repeats."""
    return tuple(dict.fromkeys(flavor.name for group in groups for flavor in group.flavors))


def parse_resource_groups(
    raw: Any, path: str, errors: list[FieldError], *, has_parent: bool, is_cohort: bool
) -> tuple[ResourceGroup, ...]:
    """``spec.resourceGroups``: at most 16 groups and 256 flavors in all; each resource covered once, each
    flavor named once across the groups, each flavor's resources in the order of ``coveredResources``."""
    # why a limit is refused when there is nothing to borrow from or lend to ("" when there is)
    unparented = "" if has_parent else f"must be nil when {'parent' if is_cohort else 'cohort'} is empty"
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    groups: list[ResourceGroup] = []
    raw_groups = list_field(raw, path, errors)
    if len(raw_groups) > 16:
        errors.append(FieldError.invalid(path, len(raw_groups), "must have at most 16 items"))
    total_flavors = 0
    for _, gpath, group in object_items(raw_groups, path, errors):
        covered = _covered_resources(group, gpath, seen_resources, errors)
        flavors: list[FlavorQuotas] = []
        raw_flavors = list_field(group.get("flavors"), f"{gpath}.flavors", errors)
        if not raw_flavors:
            errors.append(FieldError.required(f"{gpath}.flavors"))
        total_flavors += len(raw_flavors)
        for _, fpath, flavor in object_items(raw_flavors, f"{gpath}.flavors", errors):
            fname = name_reference(flavor.get("name"), f"{fpath}.name", errors, required=True)
            if fname in seen_flavors:
                errors.append(FieldError.duplicate(f"{fpath}.name", fname))
            seen_flavors.add(fname)
            quotas = _flavor_quotas(
                flavor, fpath, gpath, covered, errors, unparented=unparented, is_cohort=is_cohort
            )
            flavors.append(FlavorQuotas(fname, quotas))
        groups.append(ResourceGroup(tuple(covered), tuple(flavors)))
    if total_flavors > 256:
        errors.append(
            FieldError.invalid(
                path,
                total_flavors,
                f"total number of flavors across all resourceGroups must be ≤ 256, got {total_flavors}",
            )
        )
    return tuple(groups)


def _covered_resources(
    group: Mapping[str, Any], gpath: str, seen: set[str], errors: list[FieldError]
) -> list[str]:
    """``coveredResources``: at least one; resource names (``nvidia.com/gpu``, ``cpu``) are checked as label
    keys (Kueue's ``IsLabelKey``) and may not repeat across the groups."""
    covered: list[str] = []
    for ri, name in enumerate(list_field(group.get("coveredResources"), f"{gpath}.coveredResources", errors)):
        rpath = f"{gpath}.coveredResources[{ri}]"
        name = str(name)
        errors.extend(validate_label_name(name, rpath))
        if name in seen:
            errors.append(FieldError.duplicate(rpath, name))
        seen.add(name)
        covered.append(name)
    if not covered:
        errors.append(FieldError.required(f"{gpath}.coveredResources"))
    return covered


def _flavor_quotas(
    flavor: Mapping[str, Any],
    fpath: str,
    gpath: str,
    covered: list[str],
    errors: list[FieldError],
    *,
    unparented: str,
    is_cohort: bool,
) -> tuple[ResourceQuota, ...]:
    """One flavor's ``resources``: a quota per covered resource, in the same order; a nominal quota each."""
    raw_resources = list_field(flavor.get("resources"), f"{fpath}.resources", errors)
    if len(raw_resources) != len(covered):
        errors.append(
            FieldError.invalid(
                gpath, "object", "flavors must have the same number of resources as the coveredResources"
            )
        )
    quotas: list[ResourceQuota] = []
    for qi, qpath, quota in object_items(raw_resources, f"{fpath}.resources", errors):
        rname = str(quota.get("name") or "")
        if qi < len(covered) and rname != covered[qi]:
            errors.append(
                FieldError.invalid(f"{qpath}.name", rname, "must match the name in coveredResources")
            )
        if "nominalQuota" not in quota:
            errors.append(FieldError.required(f"{qpath}.nominalQuota"))
            continue
        nominal = quantity_field(quota["nominalQuota"], f"{qpath}.nominalQuota", errors)
        borrowing = _limit(quota, "borrowingLimit", qpath, errors, unparented=unparented)
        lending = _limit(quota, "lendingLimit", qpath, errors, unparented=unparented)
        if lending is not None and nominal is not None and not is_cohort and lending > nominal:
            errors.append(
                FieldError.invalid(
                    f"{qpath}.lendingLimit",
                    lending.canonical(),
                    "must be less than or equal to the nominalQuota",
                )
            )
        if nominal is not None:
            quotas.append(ResourceQuota(rname, nominal, borrowing, lending))
    return tuple(quotas)


def _limit(
    quota: Mapping[str, Any], key: str, qpath: str, errors: list[FieldError], *, unparented: str
) -> Quantity | None:
    """A ``borrowingLimit`` or ``lendingLimit``: a quantity, refused with ``unparented`` when set on a queue
    with no cohort (or a cohort with no parent) to borrow from or lend to."""
    if quota.get(key) is None:
        return None
    path = f"{qpath}.{key}"
    limit = quantity_field(quota[key], path, errors)
    if limit is not None and unparented:
        errors.append(FieldError.invalid(path, limit.canonical(), unparented))
    return limit


def parse_fair_sharing_weight(raw: Any, path: str, errors: list[FieldError]) -> Quantity | None:
    """``spec.fairSharing.weight``, ``None`` when unset; a positive weight of 1e-9 or less is refused."""
    if not isinstance(raw, Mapping) or raw.get("weight") is None:
        return None
    weight = quantity_field(raw["weight"], f"{path}.weight", errors)
    if weight is not None and 0 < weight.nanos <= 1:
        errors.append(FieldError.invalid(path, weight.canonical(), "When not 0, weight must be > 10e-9"))
    return weight
