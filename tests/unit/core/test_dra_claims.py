"""A Workload whose pods claim devices through DRA is held ``Misconfigured``, as Kueue holds one whose
claims it cannot count (KueueDRAIntegration, on by default: ``handleDRA`` in
pkg/controller/core/workload_controller.go): the devices appear in no container request, so admitting it
would run them outside quota."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.dra import CLAIMS_NOT_SUPPORTED
from kueue_webhook.core.scheduler import Admit, SchedulerState

from .builders import cluster_queue, last_wait, run_until_quiet, state_with, workload


def state() -> SchedulerState:
    return state_with(cluster_queue("cq", {"default": {"cpu": 4}}), local_queues={"lq": "cq"})


def claiming(name: str, *claims: dict[str, Any]) -> Any:
    return workload(name, pod_spec={"resourceClaims": list(claims)} if claims else None)


def test_a_workload_claiming_devices_through_a_template_is_held_misconfigured() -> None:
    s = state()
    s.upsert_workload(claiming("w", {"name": "gpu", "resourceClaimTemplateName": "eight-gpus"}))
    decisions = run_until_quiet(s)
    assert not [d for d in decisions if isinstance(d, Admit)]
    wait = last_wait(decisions, "ns/w")
    assert (wait.reason, wait.message) == (
        "Misconfigured",
        "spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName: Not found: "
        '"the DeviceClasses of ResourceClaimTemplate eight-gpus are not mapped in DRA configuration for '
        'podset main"',
    )
    assert s.pending_count("cq") == 0  # in no queue, as Kueue does not queue it


def test_a_named_resource_claim_is_not_supported_in_kueues_words() -> None:
    s = state()
    s.upsert_workload(
        claiming(
            "w",
            {"name": "gpu", "resourceClaimTemplateName": "eight-gpus"},
            {"name": "shared", "resourceClaimName": "the-shared-gpu"},
        )
    )
    wait = last_wait(run_until_quiet(s), "ns/w")
    assert (wait.reason, wait.message) == ("Misconfigured", CLAIMS_NOT_SUPPORTED)


def test_a_workload_without_claims_is_admitted() -> None:
    s = state()
    s.upsert_workload(claiming("w"))
    assert [d.workload for d in run_until_quiet(s) if isinstance(d, Admit)] == ["ns/w"]
