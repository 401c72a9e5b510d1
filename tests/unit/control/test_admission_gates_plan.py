"""A queued object's admission gates reach its Workload: when the Workload is created, and when a
controller removes its name from the object later (Kueue's PropagateAdmissionGatedByAnnotation)."""

from __future__ import annotations

from kueue_webhook.api.admission_gates import ANNOTATION
from kueue_webhook.api.integrations import JOB, engine
from kueue_webhook.control.jobs.job_plan import UpdateAdmissionGates
from tests.unit.control.plans import held, job, plan, workload


def test_the_workload_is_created_with_the_jobs_gates() -> None:
    gated = job()
    gated["metadata"]["annotations"] = {ANNOTATION: "example.com/scan"}
    assert engine.workload_for(JOB, gated)["metadata"]["annotations"] == {ANNOTATION: "example.com/scan"}
    assert "annotations" not in engine.workload_for(JOB, job())["metadata"]


def test_a_gate_removed_from_the_job_is_removed_from_its_workload() -> None:
    pending = held(workload())
    pending["metadata"]["annotations"] = {ANNOTATION: "a.io/one,b.io/two"}
    fewer = job()
    fewer["metadata"]["annotations"] = {ANNOTATION: "b.io/two"}
    assert plan(fewer, pending) == UpdateAdmissionGates(pending, "b.io/two")
    assert plan(job(), pending) == UpdateAdmissionGates(pending, "")
    same = job()
    same["metadata"]["annotations"] = {ANNOTATION: "a.io/one,b.io/two"}
    assert not isinstance(plan(same, pending), UpdateAdmissionGates)
