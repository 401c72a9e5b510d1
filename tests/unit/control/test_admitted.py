"""A Workload whose admission checks pass is admitted once: one ``Admitted`` Event, worded as Kueue's workload
controller words it (pkg/controller/core/workload_controller.go: the wait since the reservation), and one
count in ``kueue_admitted_workloads_total`` with the wait since creation observed."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from kueue_webhook.api.config import parse_configuration
from kueue_webhook.api.config_model import Configuration
from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.kube.kinds import LOCAL_QUEUES, WORKLOADS, Kind
from kueue_webhook.control.output import admitted
from kueue_webhook.control.output.metrics import Metrics
from kueue_webhook.control.scheduling.admission_checks_controller import AdmissionChecksController
from tests.unit.control.fakes import control_context

JSON = dict[str, Any]
NOW = 1_800_000_000.0


def stamp(seconds_ago: int) -> str:
    return datetime.fromtimestamp(NOW - seconds_ago, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class StatusWriter:
    """Applies a status write to the store, as the API server's answer would."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.version = 10

    async def patch_status(self, kind: Kind, obj: JSON, build: Any) -> JSON | None:
        status = build(obj)
        if status is None:
            return None
        self.version += 1
        meta = {**obj["metadata"], "resourceVersion": str(self.version)}
        updated = {**obj, "metadata": meta, "status": {**obj["status"], **status}}
        self.store.upsert(kind, updated)
        return updated


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def record(self, obj: JSON, *, type: str, reason: str, message: str) -> None:
        self.seen.append((reason, message))


def approved_workload() -> JSON:
    """Created 90 s ago, quota reserved 30 s ago in ClusterQueue a100, its one check now Ready."""
    return {
        "kind": "Workload",
        "metadata": {
            "name": "w",
            "namespace": "team",
            "resourceVersion": "5",
            "creationTimestamp": stamp(90),
        },
        "spec": {"queueName": "lq"},
        "status": {
            "admission": {"clusterQueue": "a100", "podSetAssignments": []},
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "lastTransitionTime": stamp(30),
                },
                {
                    "type": "Admitted",
                    "status": "False",
                    "reason": "UnsatisfiedChecks",
                    "lastTransitionTime": stamp(30),
                },
            ],
            "admissionChecks": [
                {"name": "finance", "state": "Ready", "message": "Approved", "lastTransitionTime": stamp(0)}
            ],
        },
    }


async def test_admitted_after_its_checks_once_with_the_wait_since_the_reservation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(admitted, "time", SimpleNamespace(time=lambda: NOW))
    store, events, metrics = Store(), Events(), Metrics()
    store.upsert(WORKLOADS, approved_workload())
    core = SimpleNamespace(cluster_queue=lambda name: SimpleNamespace(admission_checks=("finance",)))
    checks = AdmissionChecksController(
        control_context(store, writer=StatusWriter(store), events=events, metrics=metrics),
        state=lambda: core,  # type: ignore[arg-type,return-value]
    )

    await checks.sync_workload(("team", "w"))
    await checks.sync_workload(("team", "w"))  # already Admitted: nothing more to say

    assert events.seen == [("Admitted", "Admitted by ClusterQueue a100, wait time since reservation was 30s")]
    labels = {"cluster_queue": "a100", "priority_class": "", "replica_role": metrics.role}
    assert metrics.registry.get_sample_value("kueue_admitted_workloads_total", labels) == 1
    assert metrics.registry.get_sample_value("kueue_admission_wait_time_seconds_sum", labels) == 90
    # Kueue's ReportAdmissionChecksWaitTime: from the reservation to the admission its checks allowed
    assert metrics.registry.get_sample_value("kueue_admission_checks_wait_time_seconds_sum", labels) == 30


async def test_a_requeued_workload_waits_from_its_requeue_not_from_its_creation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kueue's QueuedWaitTime: the Requeued condition's transition, when there is one, starts the wait."""
    monkeypatch.setattr(admitted, "time", SimpleNamespace(time=lambda: NOW))
    workload = approved_workload()
    workload["status"]["conditions"].append(
        {"type": "Requeued", "status": "True", "reason": "Preempted", "lastTransitionTime": stamp(40)}
    )
    assert admitted.queued_for(workload) == 40
    del workload["status"]["conditions"][-1]
    assert admitted.queued_for(workload) == 90


async def test_the_local_queue_series_count_the_admission_unless_the_configuration_turns_them_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kueue's LocalQueueMetrics (on by default since v0.17): kueue_local_queue_admitted_workloads_total and
    the waits, labelled by the LocalQueue's name and namespace; ``metrics.localQueueMetrics`` turns them off
    or limits them to the LocalQueues its selector matches."""
    monkeypatch.setattr(admitted, "time", SimpleNamespace(time=lambda: NOW))
    lq = {"kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "team", "labels": {"tier": "gold"}}}
    seen: list[float | None] = []
    for text in (
        "",
        "metrics: {localQueueMetrics: {enable: false}}",
        "metrics: {localQueueMetrics: {enable: true, localQueueSelector: {matchLabels: {tier: gold}}}}",
        "metrics: {localQueueMetrics: {enable: true, localQueueSelector: {matchLabels: {tier: tin}}}}",
    ):
        configuration = parse_configuration(text)
        assert isinstance(configuration, Configuration), configuration
        store, metrics = Store(), Metrics()
        store.upsert(WORKLOADS, approved_workload())
        store.upsert(LOCAL_QUEUES, lq)
        core = SimpleNamespace(cluster_queue=lambda name: SimpleNamespace(admission_checks=("finance",)))
        checks = AdmissionChecksController(
            control_context(
                store, writer=StatusWriter(store), metrics=metrics, configuration=lambda c=configuration: c
            ),
            state=lambda c=core: c,  # type: ignore[misc]
        )
        await checks.sync_workload(("team", "w"))
        labels = {"name": "lq", "namespace": "team", "priority_class": "", "replica_role": metrics.role}
        seen.append(metrics.registry.get_sample_value("kueue_local_queue_admitted_workloads_total", labels))
        if seen[-1] is not None:
            wait = metrics.registry.get_sample_value(
                "kueue_local_queue_admission_wait_time_seconds_sum", labels
            )
            checks_wait = "kueue_local_queue_admission_checks_wait_time_seconds_sum"
            assert (wait, metrics.registry.get_sample_value(checks_wait, labels)) == (90, 30)
    assert seen == [1, None, 1, None]
