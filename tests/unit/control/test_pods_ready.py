"""waitForPodsReady on the controller side: the reconciler's PodsReady step (Kueue's jobframework step
"handle WaitForPodsReady") and the timers of its workload controller, the latter on looptime's fake clock so
a 5-minute timeout takes no real time."""

from __future__ import annotations

import asyncio
import copy
import time
from typing import Any

import pytest

from kueue_webhook.api.config import Configuration, RequeuingStrategy, WaitForPodsReady
from kueue_webhook.api.pods_ready import rfc3339
from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.jobs.job_plan import SyncPodsReady, plan_job
from kueue_webhook.control.kube.kinds import WORKLOADS, Kind
from kueue_webhook.control.output.conditions import admitted_status, find, pending_status
from kueue_webhook.control.scheduling.pods_ready_timers import PodsReadyTimers
from tests.unit.control.fakes import control_context
from tests.unit.control.plans import ADMISSION, NOW, admitted, flavor_lookup, job, workload

JSON = dict[str, Any]


def running_job(ready: int) -> JSON:
    started = job(suspend=False, active=1)
    started["status"]["ready"] = ready
    return started


def with_pods_ready(w: JSON, status: str, reason: str) -> JSON:
    out = copy.deepcopy(w)
    out["status"]["conditions"].append({"type": "PodsReady", "status": status, "reason": reason})
    return out


def plan(j: JSON, w: JSON, *, enabled: bool = True) -> object:
    return plan_job(j, w, flavors=flavor_lookup, pods_ready=enabled)


def test_admission_writes_pods_ready_false_wait_for_start_in_the_same_status_write() -> None:
    status = admitted_status(workload(), admission=ADMISSION, now=NOW, pods_ready=True)
    condition = find(status["conditions"], "PodsReady")
    assert condition is not None
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "WaitForStart",
        "Not all pods are ready or succeeded",
    )
    assert find(admitted_status(workload(), admission=ADMISSION, now=NOW)["conditions"], "PodsReady") is None


def test_the_first_pending_reason_carries_pods_ready_false_wait_for_start() -> None:
    status = pending_status(workload(), reason="WaitingForQuota", message="m", now=NOW, pods_ready=True)
    assert status is not None
    condition = find(status["conditions"], "PodsReady")
    assert condition is not None and (condition["status"], condition["reason"]) == ("False", "WaitForStart")
    without = pending_status(workload(), reason="WaitingForQuota", message="m", now=NOW)
    assert without is not None and find(without["conditions"], "PodsReady") is None


def test_a_running_jobs_ready_pods_turn_pods_ready_true() -> None:
    waiting = with_pods_ready(admitted(), "False", "WaitForStart")
    assert plan(running_job(ready=0), waiting) is None  # already says so: no write
    step = plan(running_job(ready=1), waiting)
    assert isinstance(step, SyncPodsReady)
    assert step.condition[:2] == ("True", "Started")


def test_a_job_whose_success_is_decided_gets_no_pods_ready_write_its_finished_write_comes_next() -> None:
    """Pods that succeed without having been reported ready (a short Job): the Job controller first sets
    SuccessCriteriaMet with the pod uncounted, then Complete. A PodsReady write planned in between would
    still be in flight when Complete arrives and hold back the Finished write that releases the quota;
    Kueue's reconciler, seeing both updates at once, writes Finished alone too."""
    waiting = with_pods_ready(admitted(), "False", "WaitForStart")
    succeeding = running_job(ready=0)
    succeeding["status"]["uncountedTerminatedPods"] = {"succeeded": ["pod-uid"]}
    failing = copy.deepcopy(succeeding)
    decided = {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached"}
    succeeding["status"]["conditions"] = [decided]
    failing["status"]["conditions"] = [
        {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"}
    ]
    assert plan(succeeding, waiting) is None
    assert plan(failing, waiting) is None
    ready = running_job(ready=1)  # a Job still running: its ready pods are still recorded
    assert isinstance(plan(ready, waiting), SyncPodsReady)


def test_without_wait_for_pods_ready_the_reconciler_never_writes_pods_ready() -> None:
    assert plan(running_job(ready=1), admitted(), enabled=False) is None


# -- the timers --------------------------------------------------------------------------------------------


class StoreWriter:
    """Applies status merge patches straight to the store, as the API server and the watch would."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.patches: list[JSON] = []

    async def patch_status(self, kind: Kind, obj: JSON, build: Any) -> JSON | None:
        name, namespace = obj["metadata"]["name"], obj["metadata"]["namespace"]
        current = self.store.get(kind, name, namespace)
        assert current is not None
        status = build(current)
        if status is None:
            return None
        self.patches.append(status)
        updated = copy.deepcopy(current)
        for field, value in status.items():
            if isinstance(value, dict) and isinstance(updated["status"].get(field), dict):
                merged = {**updated["status"][field], **value}
                updated["status"][field] = {k: v for k, v in merged.items() if v is not None}
            elif value is None:
                updated["status"].pop(field, None)
            else:
                updated["status"][field] = value
        updated["metadata"]["resourceVersion"] = str(int(updated["metadata"]["resourceVersion"]) + 1)
        self.store.upsert(kind, updated)
        return updated

    async def patch(self, kind: Kind, obj: JSON, patch: Any, *, patch_type: str = "json") -> JSON | None:
        current = self.store.get(kind, obj["metadata"]["name"], obj["metadata"]["namespace"])
        assert current is not None
        updated = copy.deepcopy(current)
        updated["spec"].update(patch["spec"])
        self.store.upsert(kind, updated)
        return updated


def config(**strategy: Any) -> Configuration:
    return Configuration(
        wait_for_pods_ready=WaitForPodsReady(
            enable=True, timeout_seconds=300.0, requeuing_strategy=RequeuingStrategy(**strategy)
        )
    )


def admitted_now() -> JSON:
    """An admitted Workload whose Admitted condition turned True at the current wall-clock second."""
    w = workload(admitted_status(workload(), admission=ADMISSION, now=rfc3339(time.time()), pods_ready=True))
    w["metadata"]["ownerReferences"] = [{"kind": "Job", "name": "train", "controller": True, "uid": "u"}]
    return w


async def started_timers(
    store: Store, configuration: Configuration
) -> tuple[StoreWriter, asyncio.Task[None]]:
    writer = StoreWriter(store)
    timers = PodsReadyTimers(control_context(store, writer=writer, configuration=lambda: configuration))
    store.subscribe(timers.on_change)
    timers.resync()
    return writer, asyncio.create_task(timers.run())


def evicted(store: Store) -> JSON | None:
    current = store.get(WORKLOADS, "job-train-abcde", "team-a")
    return find((current or {}).get("status", {}).get("conditions"), "Evicted")


@pytest.mark.looptime
async def test_reconcile_not_ready_timeout_evicts_once_the_timeout_since_admission_has_passed() -> None:
    store = Store()
    store.upsert(WORKLOADS, admitted_now())
    writer, task = await started_timers(store, config(backoff_base_seconds=10))
    try:
        await asyncio.sleep(298)
        assert evicted(store) is None
        await asyncio.sleep(3)
        condition = evicted(store)
        assert condition is not None and condition["status"] == "True"
        assert (condition["reason"], condition["message"]) == (
            "PodsReadyTimeout",
            "Exceeded the PodsReady timeout team-a/job-train-abcde",
        )
        current = store.get(WORKLOADS, "job-train-abcde", "team-a")
        assert current is not None and current["status"]["requeueState"]["count"] == 1
        assert len(writer.patches) == 1
    finally:
        task.cancel()


@pytest.mark.looptime
async def test_a_workload_that_becomes_ready_in_time_is_not_evicted() -> None:
    store = Store()
    store.upsert(WORKLOADS, admitted_now())
    writer, task = await started_timers(store, config())
    try:
        await asyncio.sleep(100)
        ready = copy.deepcopy(store.get(WORKLOADS, "job-train-abcde", "team-a"))
        assert ready is not None
        pods_ready = find(ready["status"]["conditions"], "PodsReady")
        assert pods_ready is not None
        pods_ready.update(status="True", reason="Started")
        ready["metadata"]["resourceVersion"] = "99"
        store.upsert(WORKLOADS, ready)
        await asyncio.sleep(1000)
        assert evicted(store) is None and writer.patches == []
    finally:
        task.cancel()


@pytest.mark.looptime
async def test_the_backoff_ends_at_requeue_at_with_requeued_true_backoff_finished() -> None:
    store = Store()
    waiting = workload(
        {
            "conditions": [
                {"type": "Requeued", "status": "False", "reason": "PodsReadyTimeout", "message": "m"},
            ],
            "requeueState": {"count": 1, "requeueAt": rfc3339(time.time() + 60)},
        }
    )
    store.upsert(WORKLOADS, waiting)
    _, task = await started_timers(store, config())
    try:
        await asyncio.sleep(58)
        current = store.get(WORKLOADS, "job-train-abcde", "team-a")
        assert current is not None
        assert find(current["status"]["conditions"], "Requeued")["status"] == "False"  # type: ignore[index]
        await asyncio.sleep(3)
        current = store.get(WORKLOADS, "job-train-abcde", "team-a")
        assert current is not None
        requeued = find(current["status"]["conditions"], "Requeued")
        assert requeued is not None
        assert (requeued["status"], requeued["reason"], requeued["message"]) == (
            "True",
            "BackoffFinished",
            "The workload backoff was finished",
        )
        assert current["status"]["requeueState"] == {"count": 1}
    finally:
        task.cancel()
