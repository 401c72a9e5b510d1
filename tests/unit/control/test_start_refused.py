"""An admitted Workload whose Job the API server will not start says so; it never looks admitted silently.

* a 422 naming fields can never succeed: Kueue finishes the Workload with reason FailedToStart
  (pkg/controller/jobframework/reconciler.go), which frees its quota;
* a refusal that may be lifted (an admission webhook's 403, RBAC, a webhook's 422 without causes) sets
  ``StartFailed=True`` on the Workload with the server's answer, records a Warning ``FailedToStart`` Event
  on the Workload and on the Job, and is raised so the reconciler retries with backoff; ``StartFailed``
  turns False (reason ``Started``) once the Job starts;
* a JSON Patch whose ``test`` failed is no refusal (the Job changed under us): nothing is written.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.jobs.job_plan import StartJob
from kueue_webhook.control.jobs.reconciler import JobReconciler
from kueue_webhook.control.kube.client import ApiError
from kueue_webhook.control.kube.kinds import JOBS, WORKLOADS, Kind
from kueue_webhook.control.output.metrics import Metrics
from kueue_webhook.control.output.writers import Writer
from tests.unit.control.fakes import control_context

JSON = dict[str, Any]

INVALID = {
    "kind": "Status",
    "code": 422,
    "reason": "Invalid",
    "message": 'Job.batch "train" is invalid: spec.template.spec.tolerations[0].operator: Invalid value',
    "details": {
        "causes": [{"field": "spec.template.spec.tolerations[0].operator", "reason": "FieldValueInvalid"}]
    },
}
FAILED_TEST = {
    "kind": "Status",
    "code": 422,
    "reason": "Invalid",
    "message": "the server rejected our request due to an error in our request",
}
DENIED = {  # our own validating webhook, when it does not know the controller's user name
    "kind": "Status",
    "code": 403,
    "reason": "Forbidden",
    "message": 'admission webhook "vjob.kueue-webhook.io" denied the request: spec.suspend: Forbidden: only '
    "the queueing controller (system:serviceaccount:kueue-system:kueue-webhook) may start a queued Job, "
    'user "kubernetes-admin" may not',
}
DENIED_422 = {**DENIED, "code": 422, "reason": "Invalid"}
CONFLICT = {"kind": "Status", "code": 409, "reason": "Conflict", "message": "the object has been modified"}


class JobApi:
    """Job patches answer the queued Statuses in turn (then succeed); Workload status patches are merged."""

    def __init__(self, workload: JSON, *refusals: JSON) -> None:
        self.refusals = list(refusals)
        self.workload = copy.deepcopy(workload)
        self.status_patches: list[JSON] = []

    async def patch(self, kind: Kind, *, name: str, patch: Any, **_: Any) -> JSON:
        if kind is JOBS:
            if self.refusals:
                raise ApiError.from_status(self.refusals.pop(0))
            return {**JOB, "spec": {"suspend": False}}
        assert kind is WORKLOADS
        self.status_patches.append(patch)
        self.workload.setdefault("status", {}).update(patch["status"])
        self.workload["metadata"]["resourceVersion"] = str(
            int(self.workload["metadata"]["resourceVersion"]) + 1
        )
        return copy.deepcopy(self.workload)

    def condition(self, kind: str) -> JSON | None:
        found = [c for c in self.workload["status"]["conditions"] if c["type"] == kind]
        return found[0] if found else None


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str, str]] = []

    def record(self, obj: JSON, *, type: str, reason: str, message: str) -> None:
        self.seen.append((obj["kind"], type, reason, message))


JOB: JSON = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "train", "namespace": "ns", "uid": "u"},
}
WORKLOAD: JSON = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "Workload",
    "metadata": {"name": "job-train-1a2b3", "namespace": "ns", "resourceVersion": "7"},
    "status": {"conditions": [{"type": "Admitted", "status": "True", "reason": "Admitted"}]},
}
START = StartJob([{"op": "replace", "path": "/spec/suspend", "value": False}], "research", WORKLOAD)


def reconciler(api: JobApi, events: Events) -> JobReconciler:
    store = Store()
    writer = Writer(client=api, store=store, metrics=Metrics())  # type: ignore[arg-type]
    return JobReconciler(control_context(store, writer=writer, events=events))


async def test_a_start_refused_for_good_finishes_the_workload_as_failed_to_start_with_the_reason() -> None:
    api, events = JobApi(WORKLOAD, INVALID), Events()
    await reconciler(api, events).execute(JOB, START)
    finished = api.condition("Finished")
    assert finished is not None and finished["status"] == "True"
    assert finished["reason"] == "FailedToStart"
    assert "tolerations[0].operator" in finished["message"]
    assert ("Workload", "Warning", "Finished", INVALID["message"]) in events.seen
    assert ("Job", "Warning", "FailedToStart", INVALID["message"]) in events.seen
    assert not [e for e in events.seen if e[2] == "Started"]


async def test_a_failed_patch_test_is_not_a_refusal_and_writes_nothing() -> None:
    api, events = JobApi(WORKLOAD, FAILED_TEST), Events()
    step = StartJob([{"op": "test", "path": "/spec/suspend", "value": True}], "research", WORKLOAD)
    await reconciler(api, events).execute(JOB, step)
    assert api.status_patches == []
    assert events.seen == []


@pytest.mark.parametrize("refusal", [DENIED, DENIED_422], ids=["webhook-403", "webhook-422-without-causes"])
async def test_a_refused_start_is_said_on_the_workload_and_the_job_then_retried(refusal: JSON) -> None:
    api, events = JobApi(WORKLOAD, refusal), Events()
    with pytest.raises(ApiError):  # the reconciler's retry with backoff takes it from here
        await reconciler(api, events).execute(JOB, START)
    failed = api.condition("StartFailed")
    assert failed is not None
    assert (failed["status"], failed["reason"]) == ("True", refusal["reason"])
    assert failed["message"].startswith(
        f"Admitted by clusterQueue research, but the API server refused to start the Job "
        f"({refusal['code']} {refusal['reason']}): admission webhook"
    )
    assert 'user "kubernetes-admin" may not' in failed["message"]
    assert api.condition("Admitted") is not None  # the admission stands: the quota stays reserved
    assert [(kind, type_, reason) for kind, type_, reason, _ in events.seen] == [
        ("Workload", "Warning", "FailedToStart"),
        ("Job", "Warning", "FailedToStart"),
    ]
    assert events.seen[0][3] == failed["message"]


async def test_a_reason_a_condition_cannot_carry_is_replaced() -> None:
    api, events = JobApi(WORKLOAD, {**DENIED, "reason": "not allowed today"}), Events()
    with pytest.raises(ApiError):
        await reconciler(api, events).execute(JOB, START)
    failed = api.condition("StartFailed")
    assert failed is not None and failed["reason"] == "Refused"
    assert "(403 not allowed today)" in failed["message"]


async def test_the_same_refusal_again_writes_nothing_new_and_a_start_clears_it() -> None:
    api, events = JobApi(WORKLOAD, DENIED, DENIED), Events()
    controller = reconciler(api, events)
    for _ in range(2):
        with pytest.raises(ApiError):
            await controller.execute(JOB, START)
    assert len(api.status_patches) == 1
    assert len(events.seen) == 2

    await controller.execute(JOB, START)  # the webhook now lets the controller through
    cleared = api.condition("StartFailed")
    assert cleared is not None
    assert (cleared["status"], cleared["reason"]) == ("False", "Started")
    assert cleared["message"] == "Admitted by clusterQueue research"
    assert events.seen[-1] == ("Job", "Normal", "Started", "Admitted by clusterQueue research")


async def test_a_start_that_succeeds_at_once_costs_no_status_write() -> None:
    api, events = JobApi(WORKLOAD), Events()
    await reconciler(api, events).execute(JOB, START)
    assert api.status_patches == []
    assert events.seen == [("Job", "Normal", "Started", "Admitted by clusterQueue research")]


async def test_a_conflict_is_decided_again_not_reported() -> None:
    api, events = JobApi(WORKLOAD, CONFLICT), Events()
    with pytest.raises(ApiError):
        await reconciler(api, events).execute(JOB, START)
    assert api.status_patches == []
    assert events.seen == []
