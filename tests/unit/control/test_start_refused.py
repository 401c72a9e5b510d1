"""A Job the API server refuses to start (422 naming fields) finishes its Workload as FailedToStart.

Kueue finishes the Workload with reason FailedToStart when a start can never succeed
(pkg/controller/jobframework/reconciler.go); an admitted Job that silently stays suspended would hold
its quota for ever. A JSON Patch whose ``test`` failed is a different 422 (no causes): the Job changed
under us, and the next reconcile decides again.
"""

from __future__ import annotations

import copy
from typing import Any

from webhook.api.config import Configuration
from webhook.control.kinds import JOBS, WORKLOADS, Kind
from webhook.control.kube import ApiError
from webhook.control.metrics import Metrics
from webhook.control.reconciler import JobReconciler, StartJob
from webhook.control.store import Store
from webhook.control.writers import Writer

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
    "message": "the server rejected our request",
}


class RefusingApi:
    """Job patches answer the given 422 Status; Workload status patches are merged."""

    def __init__(self, refusal: JSON, workload: JSON) -> None:
        self.refusal = refusal
        self.workload = copy.deepcopy(workload)
        self.status_patches: list[JSON] = []

    async def patch(self, kind: Kind, *, name: str, patch: Any, **_: Any) -> JSON:
        if kind is JOBS:
            raise ApiError.from_status(self.refusal)
        assert kind is WORKLOADS
        self.status_patches.append(patch)
        self.workload.setdefault("status", {}).update(patch["status"])
        return copy.deepcopy(self.workload)


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def record(self, obj: JSON, *, type: str, reason: str, message: str) -> None:
        self.seen.append((type, reason, message))


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


def reconciler(api: RefusingApi, events: Events) -> JobReconciler:
    store = Store()
    writer = Writer(client=api, store=store, metrics=Metrics())  # type: ignore[arg-type]
    return JobReconciler(store=store, writer=writer, events=events, config=Configuration)


async def test_a_refused_start_finishes_the_workload_as_failed_to_start_with_the_servers_reason() -> None:
    api, events = RefusingApi(INVALID, WORKLOAD), Events()
    step = StartJob([{"op": "replace", "path": "/spec/suspend", "value": False}], "research", WORKLOAD)
    await reconciler(api, events)._execute(JOB, step)
    finished = [c for c in api.workload["status"]["conditions"] if c["type"] == "Finished"]
    assert finished and finished[0]["status"] == "True"
    assert finished[0]["reason"] == "FailedToStart"
    assert "tolerations[0].operator" in finished[0]["message"]
    assert ("Warning", "Finished", INVALID["message"]) in events.seen
    assert not [e for e in events.seen if e[1] == "Started"]


async def test_a_failed_patch_test_is_not_a_refusal_and_finishes_nothing() -> None:
    api, events = RefusingApi(FAILED_TEST, WORKLOAD), Events()
    step = StartJob([{"op": "test", "path": "/spec/suspend", "value": True}], "research", WORKLOAD)
    await reconciler(api, events)._execute(JOB, step)
    assert api.status_patches == []
    assert events.seen == []
