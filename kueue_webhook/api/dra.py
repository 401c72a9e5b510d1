"""Devices claimed through dynamic resource allocation (DRA) in a Workload's pod sets.

A pod may ask for devices (GPUs...) through ``spec.resourceClaims`` instead of container requests: a
``resourceClaimName`` names a ResourceClaim shared by whoever names it, a ``resourceClaimTemplateName`` a
ResourceClaimTemplate from which one claim per pod is made. No container request shows those devices, so
a Workload counted from its containers alone would run them outside quota. As Kueue does
(KueueDRAIntegration, on by default), the devices of a claim template count against quota as the resource
that ``resources.deviceClassMappings`` names for their DeviceClass, per pod; a Workload whose claims cannot
be counted is held inadmissible, ``QuotaReserved=False`` reason ``Misconfigured``, with Kueue's words: one
naming a ResourceClaim, one whose template is missing, asks devices in a way Kueue does not count, or
names a DeviceClass no mapping has (``pkg/controller/core/workload_controller.go`` ``handleDRA``,
``pkg/dra/claims.go``). Kueue also checks CEL selectors against the devices its cluster publishes; here a
request with selectors is held, said so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

__all__ = ["CLAIMS_NOT_SUPPORTED", "ClaimsCount", "count_claims", "dra_problem", "has_claims"]

#: Kueue's message for a pod set that names a ResourceClaim
CLAIMS_NOT_SUPPORTED = "KueueDRAIntegration feature does not support use of resource claims"
NANO = 10**9

#: per pod set name, the quota resources (nano-units) one pod's claims count as; or why they cannot count
ClaimsCount = dict[str, dict[str, int]] | str


def _claims(template: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = template.get("spec")
    claims = spec.get("resourceClaims") if isinstance(spec, Mapping) else None
    return [c for c in claims if isinstance(c, Mapping)] if isinstance(claims, list) else []


def has_claims(pod_sets: Iterable[tuple[str, Mapping[str, Any]]]) -> bool:
    return any(_claims(template) for _, template in pod_sets)


def _template_claims(pod_sets: list[tuple[str, Mapping[str, Any]]]) -> Iterator[tuple[str, str, str]]:
    """(field path of the claim, pod set name, ResourceClaimTemplate name) of every claim by template."""
    for index, (name, template) in enumerate(pod_sets):
        for position, claim in enumerate(_claims(template)):
            if claim_template := claim.get("resourceClaimTemplateName"):
                yield (
                    f"spec.podSets[{index}].template.spec.resourceClaims[{position}]",
                    name,
                    str(claim_template),
                )


def _names_a_claim(pod_sets: list[tuple[str, Mapping[str, Any]]]) -> bool:
    return any(c.get("resourceClaimName") for _, template in pod_sets for c in _claims(template))


def dra_problem(pod_sets: Iterable[tuple[str, Mapping[str, Any]]]) -> str | None:
    """Why a Workload of these pod sets (name, template) cannot be admitted while no ResourceClaimTemplate
    has been read for it (no ``deviceClassMappings``: nothing could count its devices); None when none of
    its pods claims devices."""
    pod_sets = list(pod_sets)
    if _names_a_claim(pod_sets):
        return CLAIMS_NOT_SUPPORTED
    first = next(_template_claims(pod_sets), None)
    if first is None:
        return None
    path, name, claim_template = first
    detail = f"the DeviceClasses of ResourceClaimTemplate {claim_template} are not mapped in DRA"
    return f'{path}.resourceClaimTemplateName: Not found: "{detail} configuration for podset {name}"'


def count_claims(
    pod_sets: Iterable[tuple[str, Mapping[str, Any]]],
    template: Callable[[str], Mapping[str, Any] | None],
    mappings: Mapping[str, str],
) -> ClaimsCount:
    """What the claims of each pod set count as per pod, by the ResourceClaimTemplates of the Workload's
    namespace (``template`` by name) and the DeviceClass -> resource ``mappings``; or Kueue's message for
    the first claim that cannot be counted."""
    pod_sets = list(pod_sets)
    if _names_a_claim(pod_sets):
        return CLAIMS_NOT_SUPPORTED
    counted: dict[str, dict[str, int]] = {}
    for path, name, claim_template in _template_claims(pod_sets):
        found = template(claim_template)
        if found is None:
            missing = f'resourceclaimtemplates.resource.k8s.io "{claim_template}" not found'
            return (
                f"{path}: Internal error: failed to get claim spec for ResourceClaimTemplate "
                f"{claim_template} in podset {name}: {missing}"
            )
        devices = _devices(found, path, claim_template)
        if isinstance(devices, str):
            return devices
        for device_class, count in devices.items():
            resource = mappings.get(device_class)
            if resource is None:
                detail = f"DeviceClass {device_class} is not mapped in DRA configuration for podset {name}"
                return f'{path}.resourceClaimTemplateName: Not found: "{detail}"'
            per_pod = counted.setdefault(name, {})
            per_pod[resource] = per_pod.get(resource, 0) + count * NANO
    return counted


def _devices(claim_template: Mapping[str, Any], path: str, name: str) -> dict[str, int] | str:
    """Devices per DeviceClass one claim of the template asks for (Kueue's ``countDevicesPerClass``)."""
    spec = claim_template.get("spec")
    claim_spec = spec.get("spec") if isinstance(spec, Mapping) else None
    devices = claim_spec.get("devices") if isinstance(claim_spec, Mapping) else None
    requests = devices.get("requests") if isinstance(devices, Mapping) else None
    out: dict[str, int] = {}
    for position, request in enumerate(requests if isinstance(requests, list) else []):
        where = f"{path}.devices.requests[{position}]"
        if not isinstance(request, Mapping):
            continue
        refused = f"{where}: Invalid value: null: ResourceClaimTemplate {name}"
        if request.get("firstAvailable") is not None:
            return f"{refused}: FirstAvailable device selection is not supported"
        exactly = request.get("exactly")
        if not isinstance(exactly, Mapping):
            return f"{refused}: Exactly must be set if FirstAvailable is nil"
        if exactly.get("selectors"):
            return (
                f"{where}.exactly.selectors: Invalid value: null: ResourceClaimTemplate {name}: CEL "
                "selectors are not supported by kueue-webhook"
            )
        if exactly.get("adminAccess") is True:
            continue  # admin access takes no quota
        mode = exactly.get("allocationMode") or "ExactCount"
        if mode == "All":
            return (
                f'{where}.exactly.allocationMode: Invalid value: "All": ResourceClaimTemplate {name}: '
                "AllocationMode 'All' is not supported"
            )
        if mode != "ExactCount":
            return (
                f'{where}.exactly.allocationMode: Invalid value: "{mode}": ResourceClaimTemplate {name}: '
                f"unsupported allocation mode: {mode}"
            )
        device_class = exactly.get("deviceClassName")
        count = exactly.get("count", 1)
        if not device_class or not isinstance(count, int) or isinstance(count, bool):
            continue
        out[str(device_class)] = out.get(str(device_class), 0) + count
    return out
