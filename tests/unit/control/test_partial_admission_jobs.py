"""A Job that accepts partial admission (``kueue.x-k8s.io/job-min-parallelism``): its Workload's ``minCount``,
the start at the admitted count and the restore of its parallelism on stop (Kueue's Job PodSets,
RunWithPodSetsInfo, RestorePodSetsInfo and Stop)."""

from __future__ import annotations

import copy
from typing import Any

from kueue_webhook.api.integrations import JOB
from kueue_webhook.api.integrations.engine import workload_for
from kueue_webhook.control.jobs.job_plan import CreateWorkload, StartJob, StopJob, UpdatePodSets
from kueue_webhook.control.output.conditions import admitted_status, evicted_status
from tests.unit.admission.golden import apply_patch
from tests.unit.control.plans import ADMISSION, NOW, job, plan, workload

MIN = "kueue.x-k8s.io/job-min-parallelism"
SYNC = "kueue.x-k8s.io/job-completions-equal-parallelism"
STOPPING = "kueue.x-k8s.io/stopping"


def partial_job(*, suspend: bool = True, parallelism: int = 4, **annotations: str) -> dict[str, Any]:
    obj = job(suspend=suspend)
    obj["metadata"]["annotations"] = {MIN: "2", **annotations}
    obj["spec"].update(parallelism=parallelism, completions=8)
    return obj


def partial_workload(admitted_count: int | None = None, *, evicted: bool = False) -> dict[str, Any]:
    base = workload()
    base["spec"]["podSets"][0].update(count=4, minCount=2)
    if admitted_count is None:
        return base
    assignment = {**ADMISSION["podSetAssignments"][0], "count": admitted_count}
    admission = {**ADMISSION, "podSetAssignments": [assignment]}
    status = admitted_status(base, admission=admission, now=NOW)
    out = {**base, "status": status}
    if evicted:
        out["status"] = evicted_status(
            out,
            reason="Preempted",
            message="Preempted by a test",
            preemption_reason="InClusterQueue",
            now=NOW,
            counted_as=("Preempted", ""),
        )
    return out


def test_the_workload_pod_set_gets_min_count_from_the_annotation() -> None:
    (pod_set,) = workload_for(JOB, partial_job())["spec"]["podSets"]
    assert (pod_set["count"], pod_set["minCount"]) == (4, 2)
    unparsable = partial_job()
    unparsable["metadata"]["annotations"][MIN] = "two"
    assert "minCount" not in workload_for(JOB, unparsable)["spec"]["podSets"][0]  # Kueue's minPodsCount


def test_the_start_runs_the_admitted_count() -> None:
    step = plan(partial_job(), partial_workload(2))
    assert isinstance(step, StartJob)
    started = apply_patch(partial_job(), step.patch)
    assert (started["spec"]["suspend"], started["spec"]["parallelism"]) == (False, 2)
    assert started["spec"]["completions"] == 8  # completions stay unless told to follow parallelism


def test_completions_follow_parallelism_when_the_annotation_says_so() -> None:
    synced = partial_job(**{SYNC: "true"})
    step = plan(synced, partial_workload(3))
    assert isinstance(step, StartJob)
    started = apply_patch(synced, step.patch)
    assert (started["spec"]["parallelism"], started["spec"]["completions"]) == (3, 3)


def test_a_job_without_the_annotation_starts_as_it_is() -> None:
    plain = job()
    step = plan(plain, workload(admitted_status(workload(), admission=ADMISSION, now=NOW)))
    assert isinstance(step, StartJob)
    assert not [op for op in step.patch if op["path"] in ("/spec/parallelism", "/spec/completions")]


def test_eviction_suspends_first_then_restores_the_parallelism_from_the_workload() -> None:
    running = partial_job(suspend=False, parallelism=2)
    step = plan(running, partial_workload(2, evicted=True))
    assert isinstance(step, StopJob)
    suspended = apply_patch(running, list(step.first))
    # the first patch keeps parallelism: the Job webhook forbids changing it on a running partial Job
    assert suspended["spec"]["parallelism"] == 2
    assert (suspended["spec"]["suspend"], suspended["metadata"]["annotations"][STOPPING]) == (True, "true")
    restored = apply_patch(suspended, step.patch)
    assert (restored["spec"]["suspend"], restored["spec"]["parallelism"]) == (True, 4)
    assert STOPPING not in restored["metadata"]["annotations"]


def test_a_half_done_stop_is_finished_before_the_quota_is_released() -> None:
    half = partial_job(suspend=True, parallelism=2, **{STOPPING: "true"})
    step = plan(half, partial_workload(2, evicted=True))
    assert isinstance(step, StopJob) and not step.first
    restored = apply_patch(half, step.patch)
    assert restored["spec"]["parallelism"] == 4
    assert STOPPING not in restored["metadata"]["annotations"]


def test_a_suspended_job_whose_min_parallelism_changed_updates_its_workload() -> None:
    edited = partial_job()
    edited["metadata"]["annotations"][MIN] = "3"
    step = plan(edited, partial_workload())
    assert isinstance(step, UpdatePodSets)
    assert step.pod_sets[0]["minCount"] == 3
    assert plan(copy.deepcopy(partial_job()), partial_workload()) is None


def test_a_half_stopped_job_readmitted_is_restored_before_it_starts_at_the_new_count() -> None:
    half = partial_job(suspend=True, parallelism=2, **{STOPPING: "true"})
    step = plan(half, partial_workload(3))
    assert isinstance(step, StopJob)
    restored = apply_patch(half, step.patch)
    assert (restored["spec"]["parallelism"], STOPPING in restored["metadata"]["annotations"]) == (4, False)
    start = plan(restored, partial_workload(3))
    assert isinstance(start, StartJob)
    assert apply_patch(restored, start.patch)["spec"]["parallelism"] == 3


def test_a_half_stopped_job_whose_workload_is_gone_drops_the_mark_and_gets_a_new_workload() -> None:
    half = partial_job(suspend=True, parallelism=2, **{STOPPING: "true"})
    step = plan(half, None)
    assert isinstance(step, StopJob)
    unmarked = apply_patch(half, step.patch)
    assert STOPPING not in unmarked["metadata"]["annotations"]
    assert isinstance(plan(unmarked, None), CreateWorkload)
