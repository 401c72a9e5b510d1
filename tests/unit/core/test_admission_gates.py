"""A Workload with admission gates is not queued and says why; once its last gate goes it queues (Kueue's
AdmissionGatedBy, on by default since v0.19: pkg/controller/core/workload_controller.go)."""

from __future__ import annotations

from kueue_webhook.api.admission_gates import ANNOTATION
from kueue_webhook.api.objects import Workload
from kueue_webhook.core.scheduler import Admit, SchedulerState

from .builders import cluster_queue, last_wait, run_until_quiet, state_with, workload


def with_gates(name: str, gates: str | None) -> Workload:
    return workload(name, annotations={ANNOTATION: gates} if gates is not None else None)


def state() -> SchedulerState:
    return state_with(cluster_queue("cq", {"default": {"cpu": 4}}), local_queues={"lq": "cq"})


def test_a_gated_workload_waits_with_kueues_reason_while_quota_is_free() -> None:
    s = state()
    s.upsert_workload(with_gates("w", "example.com/scan,example.com/approve"))
    decisions = run_until_quiet(s)
    assert not [d for d in decisions if isinstance(d, Admit)]
    wait = last_wait(decisions, "ns/w")
    assert (wait.reason, wait.message) == (
        "AdmissionGated",
        "Admission is gated by: example.com/scan,example.com/approve",
    )
    assert s.pending_count("cq") == 0  # in no queue: nothing counts it as pending there


def test_removing_the_last_gate_queues_it_and_it_is_admitted() -> None:
    s = state()
    s.upsert_workload(with_gates("w", "example.com/scan"))
    run_until_quiet(s)
    s.upsert_workload(with_gates("w", None))
    decisions = run_until_quiet(s)
    waits = [(d.reason, d.message) for d in decisions if not isinstance(d, Admit)]
    assert waits == [("PendingEvaluation", "AdmissionGatedBy cleared, waiting for quota reservation")]
    assert [d.workload for d in decisions if isinstance(d, Admit)] == ["ns/w"]


def test_an_empty_annotation_gates_nothing() -> None:
    s = state()
    s.upsert_workload(with_gates("w", ""))
    assert [d.workload for d in run_until_quiet(s) if isinstance(d, Admit)] == ["ns/w"]


def test_a_gated_workload_that_finishes_while_gated_is_forgotten() -> None:
    s = state()
    s.upsert_workload(with_gates("w", "example.com/scan"))
    run_until_quiet(s)
    done = {"conditions": [{"type": "Finished", "status": "True", "reason": "Succeeded"}]}
    s.upsert_workload(workload("w", status=done, annotations={ANNOTATION: "example.com/scan"}))
    # a Workload of the same name made afresh later is not told its (old) gate was cleared
    s.upsert_workload(workload("w"))
    waits = [(d.reason, d.message) for d in run_until_quiet(s) if not isinstance(d, Admit)]
    assert ("PendingEvaluation", "AdmissionGatedBy cleared, waiting for quota reservation") not in waits
