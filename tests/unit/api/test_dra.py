"""Devices claimed through DRA counted as Kueue counts them (``pkg/dra/claims.go``
``GetResourceRequestsForResourceClaimTemplates`` and ``countDevicesPerClass``): per pod, each claim
template's ExactCount requests as the resource its DeviceClass is mapped to; Kueue's words for what it does
not count."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.dra import CLAIMS_NOT_SUPPORTED, count_claims

G = 10**9
MAPPINGS = {"gpu.example.com": "example.com/gpus", "fpga.example.com": "example.com/fpgas"}


def pod_set(name: str, *claims: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return name, {"spec": {"containers": [{"name": "c"}], "resourceClaims": list(claims)}}


def template(*requests: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"spec": {"devices": {"requests": list(requests)}}}}


def exactly(device_class: str, **fields: Any) -> dict[str, Any]:
    return {"name": "r", "exactly": {"deviceClassName": device_class, **fields}}


TEMPLATES = {
    "two-gpus": template(exactly("gpu.example.com", allocationMode="ExactCount", count=2)),
    "gpu-and-fpga": template(exactly("gpu.example.com"), exactly("fpga.example.com", count=3)),
    "admin": template(exactly("gpu.example.com", adminAccess=True, count=8)),
    "all": template(exactly("gpu.example.com", allocationMode="All")),
    "first-available": template({"name": "r", "firstAvailable": [{"name": "a", "deviceClassName": "x"}]}),
    "selected": template(exactly("gpu.example.com", selectors=[{"cel": {"expression": "true"}}])),
    "unmapped": template(exactly("nic.example.com")),
}


def count(*pod_sets: tuple[str, dict[str, Any]]) -> Any:
    return count_claims(pod_sets, TEMPLATES.get, MAPPINGS)


def test_each_claim_templates_devices_count_per_pod_as_the_mapped_resource() -> None:
    assert count(
        pod_set(
            "main",
            {"name": "a", "resourceClaimTemplateName": "two-gpus"},
            {"name": "b", "resourceClaimTemplateName": "gpu-and-fpga"},
        ),
        pod_set("plain"),
        pod_set("admin", {"name": "c", "resourceClaimTemplateName": "admin"}),
    ) == {"main": {"example.com/gpus": 3 * G, "example.com/fpgas": 3 * G}}  # count defaults to 1


def test_what_kueue_does_not_count_holds_the_workload_in_kueues_words() -> None:
    claim = "spec.podSets[0].template.spec.resourceClaims[0]"
    assert count(pod_set("main", {"name": "a", "resourceClaimName": "shared"})) == CLAIMS_NOT_SUPPORTED
    assert count(pod_set("main", {"name": "a", "resourceClaimTemplateName": "gone"})) == (
        f"{claim}: Internal error: failed to get claim spec for ResourceClaimTemplate gone in podset main: "
        'resourceclaimtemplates.resource.k8s.io "gone" not found'
    )
    assert count(pod_set("main", {"name": "a", "resourceClaimTemplateName": "unmapped"})) == (
        f'{claim}.resourceClaimTemplateName: Not found: "DeviceClass nic.example.com is not mapped in DRA '
        'configuration for podset main"'
    )
    assert count(pod_set("main", {"name": "a", "resourceClaimTemplateName": "all"})) == (
        f'{claim}.devices.requests[0].exactly.allocationMode: Invalid value: "All": '
        "ResourceClaimTemplate all: AllocationMode 'All' is not supported"
    )
    assert count(pod_set("main", {"name": "a", "resourceClaimTemplateName": "first-available"})) == (
        f"{claim}.devices.requests[0]: Invalid value: null: ResourceClaimTemplate first-available: "
        "FirstAvailable device selection is not supported"
    )
    selected = count(pod_set("main", {"name": "a", "resourceClaimTemplateName": "selected"}))
    assert isinstance(selected, str) and "CEL selectors are not supported" in selected
