"""Devices claimed through dynamic resource allocation (DRA) in a Workload's pod sets.

A pod may ask for devices (GPUs...) through ``spec.resourceClaims`` instead of container requests: a
``resourceClaimName`` names a ResourceClaim shared by whoever names it, a ``resourceClaimTemplateName`` a
ResourceClaimTemplate from which one claim per pod is made. No container request shows those devices, so
a Workload counted from its containers alone would run them outside quota. Kueue (KueueDRAIntegration, on
by default) counts the devices of claim templates whose DeviceClass its configuration maps to a quota
resource (``resources.deviceClassMappings``) and holds every other such Workload inadmissible,
``QuotaReserved=False`` reason ``Misconfigured``: one naming a ResourceClaim ("KueueDRAIntegration
feature does not support use of resource claims"), one whose DeviceClass is not mapped. kueue-webhook maps
no DeviceClass, so it holds both, with Kueue's words for the first and the field path Kueue names for
the second (``pkg/controller/core/workload_controller.go`` ``handleDRA``, ``pkg/dra/claims.go``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["CLAIMS_NOT_SUPPORTED", "dra_problem"]

#: Kueue's message for a pod set that names a ResourceClaim
CLAIMS_NOT_SUPPORTED = "KueueDRAIntegration feature does not support use of resource claims"


def _claims(template: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = template.get("spec")
    claims = spec.get("resourceClaims") if isinstance(spec, Mapping) else None
    return [c for c in claims if isinstance(c, Mapping)] if isinstance(claims, list) else []


def dra_problem(pod_sets: Iterable[tuple[str, Mapping[str, Any]]]) -> str | None:
    """Why a Workload of these pod sets (name, template) cannot be admitted: it claims devices; None when
    none of its pods does."""
    pod_sets = list(pod_sets)
    if any(c.get("resourceClaimName") for _, template in pod_sets for c in _claims(template)):
        return CLAIMS_NOT_SUPPORTED
    for index, (name, template) in enumerate(pod_sets):
        for position, claim in enumerate(_claims(template)):
            if claim_template := claim.get("resourceClaimTemplateName"):
                claim_path = f"spec.podSets[{index}].template.spec.resourceClaims[{position}]"
                path = f"{claim_path}.resourceClaimTemplateName"
                detail = f"the DeviceClasses of ResourceClaimTemplate {claim_template} are not mapped"
                return f'{path}: Not found: "{detail} in DRA configuration for podset {name}"'
    return None
