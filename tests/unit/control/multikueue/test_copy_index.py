"""What a worker's watched copies tell the dispatcher: the manager Workload to look at again, once per real
change (a relist of unchanged copies queues nothing), and again when a copy is gone."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.multikueue import PREBUILT_WORKLOAD_LABEL
from kueue_webhook.control.kube.kinds import JOBS, WORKLOADS
from kueue_webhook.control.multikueue.worker_watch import CopyIndex

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
