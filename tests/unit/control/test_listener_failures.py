"""A failing store listener neither starves the others nor undoes a write the API server accepted.

Every consumer of store changes is a listener (the webhook's live configuration, the scheduler, the
reconciler, ...). One that raises is logged and counted in ``kueue_webhook_store_listener_errors_total``,
and the rest still hear the change. An admission whose answer cannot be put back into the store (the store
or one of its listeners raising during the write-back) still counts: the scheduler neither hands the quota
back nor admits someone else into it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from kueue_webhook.control.cache.store import Change, Store
from kueue_webhook.control.kube.kinds import CLUSTER_QUEUES, NAMESPACES, WORKLOADS, Kind
from kueue_webhook.control.output.metrics import Metrics
from kueue_webhook.control.output.writers import Writer
from kueue_webhook.control.replica.controller import Controller
from kueue_webhook.control.replica.controller_settings import ControllerSettings
from kueue_webhook.control.scheduling.scheduler_loop import SchedulerLoop
from tests.unit.control.fakes import control_context
from tests.unit.control.small_cluster import RecordingApi, cluster, install

JSON = dict[str, Any]


def broken(change: Change) -> None:
    raise RuntimeError("listener bug")


def namespace(name: str) -> JSON:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "resourceVersion": "1"}}


def test_a_listener_that_raises_is_reported_and_the_others_still_hear_the_change(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = Store()
    heard_before: list[Change] = []
    heard_after: list[Change] = []
    failures: list[tuple[str, str]] = []
    store.on_listener_error = lambda change, listener: failures.append((change.kind.kind, listener))
    store.subscribe(heard_before.append)
    store.subscribe(broken)
    store.subscribe(heard_after.append)
    assert store.upsert(NAMESPACES, namespace("team"))
    assert len(heard_before) == len(heard_after) == 1
    assert store.get(NAMESPACES, "team") is not None  # the change is kept, whoever failed on it
    assert failures == [("Namespace", "broken")]
    [record] = [r for r in caplog.records if r.name == "kueue_webhook.store"]
    assert record.levelno == logging.ERROR
    assert record.__dict__["listener"] == "broken" and record.__dict__["object"] == "team"
    assert record.exc_info is not None


def test_a_failing_leader_task_listener_is_counted_and_does_not_starve_the_others() -> None:
    controller = Controller(
        client=RecordingApi(),  # type: ignore[arg-type]
        namespace="kueue-system",
        identity="a",
        settings=ControllerSettings(leader_election=False),
    )
    controller.leading.set()  # as if leading, without starting its tasks

    def scheduler_bug(kind: Kind, key: tuple[str, str], obj: JSON | None) -> None:
        raise RuntimeError("scheduler bug")

    controller.scheduler._apply = scheduler_bug  # type: ignore[method-assign]
    queue = next(obj for kind, obj in cluster(0) if kind is CLUSTER_QUEUES)
    queue["metadata"]["resourceVersion"] = "1"
    controller.store.upsert(CLUSTER_QUEUES, queue)
    assert "cq" in controller.status._dirty_cq  # the queue status reporter, after it, still heard it
    exposition = controller.metrics.exposition().decode()
    labels = 'kind="ClusterQueue",listener="SchedulerLoop.on_change"'
    assert f"kueue_webhook_store_listener_errors_total{{{labels}}} 1.0" in exposition


class StoreRefusingAdmissions(Store):
    """A store that cannot take a Workload holding an admission (a bug, memory, anything)."""

    def upsert(self, kind: Kind, obj: JSON) -> bool:
        if kind is WORKLOADS and (obj.get("status") or {}).get("admission"):
            raise MemoryError("cannot store it")
        return super().upsert(kind, obj)


def listener_failing_on_admissions(change: Change) -> None:
    if change.kind is WORKLOADS and ((change.new or {}).get("status") or {}).get("admission"):
        raise RuntimeError("listener bug on the write-back")


@pytest.mark.parametrize("failing", ["a listener of the write-back", "the store itself"])
async def test_an_admission_that_landed_still_counts_when_its_write_back_fails(failing: str) -> None:
    """Quota for one Workload, two queued: the first is admitted and its answer cannot be stored. The
    admission stands: the quota stays charged, so the second is not admitted into it, and the first is
    not admitted a second time."""
    api = RecordingApi()
    store = StoreRefusingAdmissions() if failing == "the store itself" else Store()
    metrics = Metrics()
    loop = SchedulerLoop(
        control_context(store, writer=Writer(client=api, store=store, metrics=metrics), metrics=metrics)
    )
    install(api, store, cluster(2, cpus=1))
    store.subscribe(loop.on_change)
    store.subscribe(listener_failing_on_admissions)
    loop.rebuild()
    admitted: list[str] = []
    loop.on_admitted.append(admitted.append)
    for _ in range(5):  # cycles as the loop runs them until nothing is left to decide (or a bounded few)
        if not loop.state.has_work(asyncio.get_running_loop().time()):
            break
        await loop._cycle()
        await loop.wait_writes()
    assert admitted == ["team/w0"]
    assert api.patched == ["workloads/w0"]  # sent once, and nothing for w1: its quota was not handed back
    assert api.objects[("workloads", "team", "w0")]["status"]["admission"]["clusterQueue"] == "cq"
    assert [str(info.key) for info in loop.state.pending_in("cq")] == ["team/w1"]
