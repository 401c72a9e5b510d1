"""The job controller's step "update reclaimable counts" (Kueue's jobframework reconciler): a running Job
whose finished pods leave parallel slots idle writes them into its Workload's ``status.reclaimablePods``,
only when they change, bounded to the pod set sizes and, while quota is reserved, never lowered."""

from __future__ import annotations

from typing import Any

from kueue_webhook.control.jobs.job_plan import (
    StartJob,
    UpdateReclaimablePods,
    plan_job,
    reclaimable_to_record,
)
from kueue_webhook.control.output.conditions import admitted_status
from tests.unit.control import plans
from tests.unit.control.plans import NOW, flavor_lookup

JSON = dict[str, Any]
POD = {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}
ADMISSION = {
    "clusterQueue": "research",
    "podSetAssignments": [
        {
            "name": "main",
            "flavors": {"nvidia.com/gpu": "gpu-nodes"},
            "resourceUsage": {"nvidia.com/gpu": "4"},
            "count": 2,
        }
    ],
}


def job(*, succeeded: int, suspend: bool = False) -> JSON:
    return plans.job(suspend=suspend, parallelism=2, completions=4, active=2, succeeded=succeeded)


def workload(*, reclaimable: int = 0, reserved: bool = True) -> JSON:
    body: JSON = {
        "metadata": {"name": "job-train-abcde", "namespace": "team-a", "resourceVersion": "5"},
        "spec": {"podSets": [{"name": "main", "count": 2, "template": {"spec": POD}}], "queueName": "gpu"},
        "status": {},
    }
    if reserved:
        body["status"] = admitted_status(body, admission=ADMISSION, now=NOW)
    if reclaimable:
        body["status"]["reclaimablePods"] = [{"name": "main", "count": reclaimable}]
    return body


def plan(j: JSON, w: JSON) -> object:
    return plan_job(j, w, flavors=flavor_lookup)


def test_a_running_job_reports_its_idle_slots_once_fewer_completions_remain_than_parallelism() -> None:
    assert plan(job(succeeded=2), workload()) is None  # two completions left: both slots still needed
    step = plan(job(succeeded=3), workload())
    assert isinstance(step, UpdateReclaimablePods)
    assert step.counts == (("main", 1),)


def test_nothing_is_written_when_the_workload_already_says_so() -> None:
    assert plan(job(succeeded=3), workload(reclaimable=1)) is None


def test_the_count_is_bounded_to_the_pod_set_size() -> None:
    """Kueue's LimitReclaimablePodsToPodSetSizes: a Workload for fewer pods than the Job's parallelism."""
    w = workload()
    w["spec"]["podSets"][0]["count"] = 1
    w["status"]["admission"]["podSetAssignments"][0].update(count=1, resourceUsage={"nvidia.com/gpu": "2"})
    step = plan(job(succeeded=4), w)
    assert isinstance(step, UpdateReclaimablePods)
    assert step.counts == (("main", 1),)


def test_while_quota_is_reserved_a_recorded_count_is_never_lowered() -> None:
    """Kueue's Workload webhook refuses a lower count while quota is reserved (the quota given back may
    already be another Workload's), so the controller keeps the higher one instead of writing a refusal."""
    assert reclaimable_to_record({}, workload(reclaimable=1)) == {"main": 1}
    assert reclaimable_to_record({}, workload(reclaimable=1, reserved=False)) == {}
    assert plan(job(succeeded=0), workload(reclaimable=1)) is None


def test_a_suspended_job_with_succeeded_pods_records_them_before_it_starts() -> None:
    """Kueue's step order: the reclaimable counts are brought up to date before the Job is started."""
    step = plan(job(succeeded=3, suspend=True), workload())
    assert isinstance(step, UpdateReclaimablePods)
    assert isinstance(plan(job(succeeded=3, suspend=True), workload(reclaimable=1)), StartJob)
