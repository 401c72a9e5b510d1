"""The controller's side of owners: a Job left to a real queued owner gets no Workload and is suspended
while that owner's Workload is not admitted (Kueue's shouldSuspendChildJob, with its Event); a chain of
owners deeper than Kueue's limit queues the Job on its own with Kueue's JobNestingTooDeep Event."""

from __future__ import annotations

import copy
from typing import Any

from kueue_webhook.api.config import Configuration, parse_configuration
from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.jobs.reconciler import JobReconciler
from kueue_webhook.control.kube.kinds import JOBS, WORKLOADS, Kind, integration_kind
from kueue_webhook.control.output.metrics import Metrics
from kueue_webhook.control.output.writers import Writer
from tests.unit.control.fakes import control_context

JSON = dict[str, Any]
JOBSETS = integration_kind("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets")
CONFIG = parse_configuration("integrations: {frameworks: [batch/job, jobset.x-k8s.io/jobset]}")
assert isinstance(CONFIG, Configuration)
QUEUE = {"kueue.x-k8s.io/queue-name": "q"}


class Api:
    """Records the writes; a create answers the object with a uid."""

    def __init__(self) -> None:
        self.patches: list[tuple[str, str, Any]] = []
        self.created: list[tuple[str, JSON]] = []

    async def patch(self, kind: Kind, *, name: str, patch: Any, **_: Any) -> JSON:
        self.patches.append((kind.kind, name, patch))
        return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": "99"}}

    async def create(self, kind: Kind, body: JSON, **_: Any) -> JSON:
        self.created.append((kind.kind, copy.deepcopy(body)))
        return {**body, "metadata": {**body["metadata"], "uid": "w-uid", "resourceVersion": "100"}}


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def record(self, obj: JSON, *, type: str, reason: str, message: str) -> None:
        self.seen.append((type, reason, message))


def jobset(name: str, uid: str, owner: JSON | None = None) -> JSON:
    meta: JSON = {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": "1", "labels": QUEUE}
    if owner is not None:
        meta["ownerReferences"] = [reference(owner)]
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta, "spec": {}}


def reference(owner: JSON) -> JSON:
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
    }


def child(owner: JSON, *, labels: dict[str, str] | None = None) -> JSON:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "child",
            "namespace": "ns",
            "uid": "child-uid",
            "resourceVersion": "5",
            "labels": labels or {},
            "ownerReferences": [reference(owner)],
        },
        "spec": {
            "suspend": False,
            "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}},
        },
    }


def setup(*objects: tuple[Kind, JSON]) -> tuple[JobReconciler, Api, Events]:
    store = Store()
    for kind in (JOBS, JOBSETS, WORKLOADS):
        store.mark_synced(kind)
    for kind, obj in objects:
        store.upsert(kind, obj)
    api, events = Api(), Events()
    writer = Writer(client=api, store=store, metrics=Metrics())  # type: ignore[arg-type]
    context = control_context(store, writer=writer, events=events, configuration=lambda: CONFIG)
    return JobReconciler(context), api, events


def jobset_workload(admitted: bool) -> JSON:
    status = "True" if admitted else "False"
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "jobset-train-1a2b3",
            "namespace": "ns",
            "resourceVersion": "3",
            "ownerReferences": [{**reference(jobset("train", "js-uid")), "kind": "JobSet"}],
        },
        "status": {"conditions": [{"type": "Admitted", "status": status, "reason": "x"}]},
    }


async def test_a_running_job_of_a_jobset_waiting_for_quota_is_suspended_and_gets_no_workload() -> None:
    owner = jobset("train", "js-uid")
    reconciler, api, events = setup(
        (JOBSETS, owner), (JOBS, child(owner)), (WORKLOADS, jobset_workload(admitted=False))
    )
    await reconciler.reconcile(("batch/job", "ns", "child"))
    assert api.patches == [
        (
            "Job",
            "child",
            [
                {"op": "test", "path": "/metadata/resourceVersion", "value": "5"},
                {"op": "replace", "path": "/spec/suspend", "value": True},
            ],
        )
    ]
    assert events.seen == [("Normal", "Suspended", "Kueue managed child job suspended")]
    assert api.created == []


async def test_a_running_job_of_an_admitted_jobset_is_left_running() -> None:
    owner = jobset("train", "js-uid")
    reconciler, api, events = setup(
        (JOBSETS, owner), (JOBS, child(owner)), (WORKLOADS, jobset_workload(admitted=True))
    )
    await reconciler.reconcile(("batch/job", "ns", "child"))
    assert api.patches == [] and api.created == [] and events.seen == []


async def test_a_chain_too_deep_queues_the_job_on_its_own_with_kueues_event() -> None:
    chain = [jobset("js-0", "uid-0")]
    for i in range(1, 12):
        chain.append(jobset(f"js-{i}", f"uid-{i}"))
        chain[i - 1]["metadata"]["ownerReferences"] = [reference(chain[i])]
    reconciler, api, events = setup(*((JOBSETS, j) for j in chain), (JOBS, child(chain[0], labels=QUEUE)))
    await reconciler.reconcile(("batch/job", "ns", "child"))
    assert events.seen[0] == (
        "Warning",
        "JobNestingTooDeep",
        "Terminated search for Kueue-managed Job because ancestor depth exceeded limit of 10",
    )
    # queued on its own: a running Job with no admitted Workload is stopped first, as any other
    assert api.patches == [("Job", "child", [{"op": "replace", "path": "/spec/suspend", "value": True}])]
    assert "Suspended" not in [reason for _, reason, _ in events.seen]  # not as somebody's child
