"""Each kind's reclaimable pods, computed as Kueue's ``JobWithReclaimablePods`` implementations do, and the
Workload's ``status.reclaimablePods`` as the scheduler reads it."""

from __future__ import annotations

from typing import Any

import pytest

from kueue_webhook.api.integrations import BUILTIN
from kueue_webhook.api.integrations.reclaimable import (
    bounded_to_pod_sets,
    job_reclaimable,
    jobset_reclaimable,
    terminal_index_count,
)
from kueue_webhook.api.objects import Workload, parse_workload
from tests.unit.api.test_trainjob import torch_runtime, trainjob, view

JSON = dict[str, Any]


def batch_job(
    *, parallelism: int | None, completions: int | None, indexed: bool = False, **status: Any
) -> JSON:
    spec: JSON = {}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    if indexed:
        spec["completionMode"] = "Indexed"
    return {"apiVersion": "batch/v1", "kind": "Job", "spec": spec, "status": status}


@pytest.mark.parametrize(
    ("parallelism", "completions", "succeeded", "expected"),
    [
        (5, 10, 0, {}),  # nothing done yet
        (5, 10, 5, {}),  # 5 completions left: every slot still needed
        (5, 10, 7, {"main": 2}),  # 3 completions left: 2 of the 5 slots are free for good
        (5, 10, 10, {"main": 5}),
        (5, 10, 12, {"main": 5}),  # more successes than completions never reclaim more than parallelism
        (2, 4, 2, {}),  # half done, but both slots are still needed
        (2, 4, 3, {"main": 1}),
        (1, 3, 2, {}),  # a single-pod Job has nothing to give back
        (3, None, 1, {"main": 1}),  # completions default to parallelism
    ],
)
def test_a_jobs_reclaimable_pods_are_the_parallel_slots_no_remaining_completion_needs(
    parallelism: int, completions: int | None, succeeded: int, expected: dict[str, int]
) -> None:
    """Kueue's Job.ReclaimablePods: parallelism - (completions - succeeded) once that is positive."""
    job = batch_job(parallelism=parallelism, completions=completions, succeeded=succeeded)
    assert job_reclaimable(job) == expected
    assert BUILTIN["batch/job"].reclaimable is not None
    assert BUILTIN["batch/job"].reclaimable(job) == expected


def test_an_indexed_job_counts_its_completed_and_permanently_failed_indexes_once_each() -> None:
    """Kueue's terminalIndexesCount: completed and failed indexes once each, none past completions."""
    assert terminal_index_count("0-2,5", "2-3", 6) == 5  # 0,1,2,3,5
    assert terminal_index_count("0-9", "", 4) == 4  # a scale-down left indexes 4-9 in the status
    assert terminal_index_count("1,x,4-2", "", 6) == 1  # malformed and descending intervals are skipped
    job = batch_job(
        parallelism=4, completions=6, indexed=True, succeeded=0, completedIndexes="0-3", failedIndexes="4"
    )
    assert job_reclaimable(job) == {"main": 3}  # one index left to run


def test_a_jobset_reclaims_the_pods_of_each_succeeded_replica() -> None:
    """Kueue's JobSet.ReclaimablePods: succeeded replicas times pods per replica (parallelism capped by
    completions), only while the succeeded count is not above the replicas."""
    jobset = {
        "spec": {
            "replicatedJobs": [
                {
                    "name": "workers",
                    "replicas": 3,
                    "template": {"spec": {"parallelism": 4, "completions": 2}},
                },
                {"name": "driver", "replicas": 1, "template": {"spec": {"parallelism": 1}}},
                {"name": "stale", "replicas": 1, "template": {"spec": {"parallelism": 1}}},
            ]
        },
        "status": {
            "replicatedJobsStatus": [
                {"name": "workers", "succeeded": 2},
                {"name": "driver", "succeeded": 0},
                {"name": "stale", "succeeded": 2},
            ]
        },
    }
    assert jobset_reclaimable(jobset) == {"workers": 4}
    assert jobset_reclaimable({"spec": jobset["spec"]}) == {}


def test_a_trainjob_reclaims_the_pods_of_the_succeeded_jobs_of_the_jobset_it_runs() -> None:
    """Kueue's TrainJob.ReclaimablePods: as a JobSet's, from ``status.jobsStatus`` and its runtime's jobs."""
    integration = BUILTIN["trainer.kubeflow.org/trainjob"]
    assert integration.reclaimable is not None
    obj = trainjob()
    obj["status"] = {
        "jobsStatus": [{"name": "dataset-initializer", "succeeded": 1}, {"name": "node", "active": 2}]
    }
    resolved = view(obj, torch_runtime(num_nodes=2))
    assert integration.reclaimable(resolved) == {"dataset-initializer": 1}
    obj["status"]["jobsStatus"][1]["succeeded"] = 1
    assert integration.reclaimable(view(obj, torch_runtime(num_nodes=2))) == {
        "dataset-initializer": 1,
        "node": 2,
    }


def test_counts_are_bounded_to_the_workloads_pod_set_sizes() -> None:
    """Kueue's LimitReclaimablePodsToPodSetSizes; a pod set the Workload lacks would be refused."""
    workload = {"spec": {"podSets": [{"name": "main", "count": 2}]}}
    assert bounded_to_pod_sets({"main": 5, "other": 1}, workload) == {"main": 2}


def test_the_workloads_reclaimable_pods_are_read_by_pod_set_name() -> None:
    body = {
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"podSets": [{"name": "main", "count": 4, "template": {"spec": {"containers": []}}}]},
        "status": {"reclaimablePods": [{"name": "main", "count": 3}]},
    }
    parsed = parse_workload(body)
    assert isinstance(parsed, Workload), parsed
    assert parsed.reclaimable_pods == {"main": 3}
    body["status"] = {"reclaimablePods": [{"name": "main", "count": -1}]}
    assert not isinstance(parse_workload(body), Workload)
