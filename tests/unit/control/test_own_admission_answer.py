"""The answer of the scheduler's own admission write is not parsed again: the core, which charged the quota
when it decided, is only told that the write landed (when, and whether Admitted is True). A Workload whose
answer shows anything else new is parsed as any other change. Either way the core ends where a full parse
leaves it: the reservation counts as seen, so a later event without it gives the quota back."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from kueue_webhook.api.objects import parse_timestamp
from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.kube.kinds import WORKLOADS
from kueue_webhook.control.output.metrics import Metrics
from kueue_webhook.control.output.writers import Writer
from kueue_webhook.control.scheduling.scheduler_loop import SchedulerLoop
from kueue_webhook.control.scheduling.unparsed_changes import answers_own_admission
from kueue_webhook.core.model import WorkloadKey
from tests.support import builders
from tests.unit.control.fakes import control_context
from tests.unit.control.small_cluster import RecordingApi, install, queue

JSON = dict[str, Any]
ADMISSION = {
    "clusterQueue": "cq",
    "podSetAssignments": [
        {"name": "main", "flavors": {"cpu": "rf"}, "resourceUsage": {"cpu": "1"}, "count": 1}
    ],
}


def workload(name: str = "w") -> JSON:
    return builders.workload(
        name, uid=f"uid-{name}", pod_sets=[builders.pod_set(requests={"cpu": "1"})], priority=0
    )


def answered(before: JSON) -> JSON:
    """``before`` as the API server answers our admission write of ``ADMISSION``."""
    after = copy.deepcopy(before)
    after["metadata"]["resourceVersion"] = "9"
    after["metadata"]["managedFields"] = [{"manager": "kueue-webhook", "subresource": "status"}]
    after["status"] = {
        "admission": copy.deepcopy(ADMISSION),
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "m"},
            {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "m"},
        ],
    }
    return after


def test_an_answer_showing_only_the_written_admission_is_recognised() -> None:
    before = workload()
    before["metadata"]["resourceVersion"] = "8"
    assert answers_own_admission(before, answered(before), ADMISSION)
    assert not answers_own_admission(None, answered(before), ADMISSION)


@pytest.mark.parametrize(
    "edit",
    [
        lambda w: w["status"]["admission"].update(clusterQueue="other"),
        lambda w: w["status"].update(admissionChecks=[{"name": "check", "state": "Pending"}]),
        lambda w: w["status"].update(requeueState={"count": 1}),
        lambda w: w["status"]["conditions"].append({"type": "Finished", "status": "True"}),
        lambda w: w["status"]["conditions"].append({"type": "Evicted", "status": "True"}),
        lambda w: w["status"]["conditions"][0].update(status="False"),
        lambda w: w["spec"].update(priority=7),
        lambda w: w["spec"].update(active=False),
        lambda w: w["metadata"].update(labels={"a": "b"}),
        lambda w: w["metadata"].update(deletionTimestamp="2026-01-01T00:00:02Z"),
    ],
)
def test_an_answer_showing_anything_else_new_is_parsed(edit: Any) -> None:
    before = workload()
    after = answered(before)
    edit(after)
    assert not answers_own_admission(before, after, ADMISSION)


def test_a_workload_that_held_an_admission_before_is_parsed() -> None:
    before = answered(workload())
    after = copy.deepcopy(before)
    after["metadata"]["resourceVersion"] = "10"
    assert not answers_own_admission(before, after, ADMISSION)


async def admit_one(*, label_on_answer: bool = False) -> tuple[SchedulerLoop, Store, list[Any]]:
    """One Workload admitted through the real writer; the objects the core parsed from then on."""
    api, store = RecordingApi(), Store()
    writer = Writer(client=api, store=store, metrics=Metrics())
    loop = SchedulerLoop(control_context(store, writer=writer))
    install(api, store, [*queue(cpus=1), (WORKLOADS, workload())])
    loop.rebuild()
    store.subscribe(loop.on_change)
    if label_on_answer:  # someone labels the Workload in the same instant: our write's answer shows it
        api.objects[("workloads", "team", "w")]["metadata"]["labels"] = {"team": "a"}
    parsed: list[Any] = []
    apply = loop.state.apply
    loop.state.apply = lambda obj: (parsed.append(obj), apply(obj))  # type: ignore[method-assign]
    await loop._cycle()  # one cycle and its writes, as the running loop does them
    await loop.wait_writes()
    return loop, store, parsed


async def test_the_answer_of_an_admission_confirms_the_core_without_a_parse() -> None:
    loop, store, parsed = await admit_one()
    assert parsed == []
    answer = store.get(WORKLOADS, "w", "team")
    assert answer is not None and answer["status"]["admission"]["clusterQueue"] == "cq"
    tracked = loop.state.tracker.workloads[WorkloadKey("team/w")]
    reserved = next(c for c in answer["status"]["conditions"] if c["type"] == "QuotaReserved")
    assert (tracked.assumed, tracked.admitted) == (False, True)
    assert tracked.reserved_at[0] == parse_timestamp(reserved["lastTransitionTime"])

    # seen, not assumed: the reservation cleared (an eviction) gives the quota back and it queues again
    cleared = copy.deepcopy(answer)
    cleared["metadata"]["resourceVersion"] = "200"
    cleared["status"] = {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending"}]}
    store.upsert(WORKLOADS, cleared)
    assert len(parsed) == 1
    assert [str(d.workload) for d in loop.state.cycle(time.monotonic())] == ["team/w"]


async def test_an_answer_with_another_change_is_parsed() -> None:
    loop, _, parsed = await admit_one(label_on_answer=True)
    assert len(parsed) == 1
    tracked = loop.state.tracker.workloads[WorkloadKey("team/w")]
    assert (tracked.assumed, tracked.admitted) == (False, True)
