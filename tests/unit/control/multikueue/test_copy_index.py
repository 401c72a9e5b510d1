"""What a worker's watched copies tell the dispatcher: the manager Workload to look at again, once per real
change (a relist of unchanged copies queues nothing), and again when a copy is gone; through a watch that
breaks (resumed) or expires (listed again)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from kueue_webhook.api.multikueue import PREBUILT_WORKLOAD_LABEL
from kueue_webhook.control.cache.informer import Informer
from kueue_webhook.control.kube.backoff import Backoff
from kueue_webhook.control.kube.client import ApiError
from kueue_webhook.control.kube.kinds import JOBS, WORKLOADS
from kueue_webhook.control.multikueue.worker_watch import CopyIndex
from tests.unit.control.test_informer import ScriptedApi

JSON = dict[str, Any]


def obj(name: str, version: str, labels: dict[str, str] | None = None) -> JSON:
    return {"metadata": {"name": name, "namespace": "ml", "resourceVersion": version, "labels": labels or {}}}


def index() -> tuple[CopyIndex, list[tuple[str, str]]]:
    touched: list[tuple[str, str]] = []
    return CopyIndex(touched.append), touched


def test_a_workload_copy_changing_queues_its_workload_once_per_version() -> None:
    copies, touched = index()
    assert copies.upsert(WORKLOADS, obj("job-train", "5"))
    assert not copies.upsert(WORKLOADS, obj("job-train", "5"))  # the same copy listed again
    assert copies.upsert(WORKLOADS, obj("job-train", "6"))
    assert touched == [("ml", "job-train"), ("ml", "job-train")]


def test_a_job_copy_queues_the_workload_its_prebuilt_label_names() -> None:
    copies, touched = index()
    copies.upsert(JOBS, obj("train", "7", {PREBUILT_WORKLOAD_LABEL: "job-train"}))
    copies.upsert(JOBS, obj("stray", "8"))  # names no Workload: nothing to look at
    assert touched == [("ml", "job-train")]


def test_copies_deleted_or_missing_from_a_relist_queue_their_workload() -> None:
    copies, touched = index()
    copies.upsert(WORKLOADS, obj("a", "1"))
    copies.upsert(WORKLOADS, obj("b", "2"))
    copies.upsert(JOBS, obj("train", "3", {PREBUILT_WORKLOAD_LABEL: "b"}))
    touched.clear()
    copies.remove(WORKLOADS, obj("a", "4"))
    copies.retain_only(WORKLOADS, set())  # "b" was not in the new list
    assert touched == [("ml", "a"), ("ml", "b")]
    touched.clear()
    copies.retain_only(JOBS, {("ml", "train")})  # still there: nothing
    assert touched == []


async def test_a_worker_s_broken_watch_resumes_and_an_expired_one_relists_queueing_copies_gone_meanwhile(
    caplog: pytest.LogCaptureFixture,
) -> None:
    expired = ApiError(status=410, reason="Expired", message="too old resource version: 10 (60)")
    api = ScriptedApi(
        lists=[([obj("a", "10"), obj("b", "9")], "10"), ([obj("b", "9")], "60")],
        watches=[[ConnectionResetError("dropped")], [expired]],
    )
    copies, touched = index()
    informer = Informer(
        client=api,
        kind=WORKLOADS,
        sink=copies,
        backoff=Backoff(base=0.001, cap=0.002, rng=random.Random(1)),
        cluster="worker-a",
    )
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(api.exhausted.wait(), 5)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    # listed once, resumed after the drop without a list, listed again after the 410: "a" went meanwhile,
    # "b" did not change
    assert api.list_calls == 2
    assert api.watch_versions == ["10", "10", "60"]
    assert touched == [("ml", "a"), ("ml", "b"), ("ml", "a")]
    # the retry is logged with the worker it concerns
    assert any(getattr(record, "cluster", None) == "worker-a" for record in caplog.records)
