"""A queued object edited after its Workload reserved quota (Kueue's jobframework ``ensureOneWorkload`` with
``EquivalentToWorkload``): a running one that now asks for more is stopped with ``NoMatchingWorkload``, its
Workload deleted and a new one queued for the new shape; one admitted but not started yet loses its Workload
instead of starting; what admission itself changes (the flavor's nodeSelector and tolerations, a partial
admission's count) is never taken for an edit. For every kind the engine serves."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from kueue_webhook.api.integrations import BUILTIN, JOB, Integration, engine
from kueue_webhook.api.integrations.builtin import POD
from kueue_webhook.control.jobs.job_plan import (
    NO_MATCHING_WORKLOAD,
    CreateWorkload,
    DeleteObjects,
    DeleteWorkload,
    RemoveFinalizer,
    StartJob,
    StopJob,
    UpdatePodSets,
    plan_job,
)
from kueue_webhook.control.output.conditions import admitted_status
from tests.support import builders
from tests.unit.admission.golden import apply_patch
from tests.unit.api.test_declared_min_count import declared, training_run
from tests.unit.control.plans import NOW, flavor_lookup, held

JSON = dict[str, Any]
JOBSET, PYTORCHJOB, RAYCLUSTER = (
    BUILTIN[n] for n in ("jobset.x-k8s.io/jobset", "kubeflow.org/pytorchjob", "ray.io/raycluster")
)
MIN = "kueue.x-k8s.io/job-min-parallelism"
QUEUE = "kueue.x-k8s.io/queue-name"


def template(cpu: str = "1") -> JSON:
    return {"spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}}


def job(*, parallelism: int = 1, completions: int = 4, annotations: JSON | None = None) -> JSON:
    return builders.job(
        "train",
        "team-a",
        queue="q",
        metadata={"uid": "job-uid", "annotations": annotations or {}},
        parallelism=parallelism,
        completions=completions,
        pod_spec=template()["spec"],
    )


def jobset() -> JSON:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "team-a", "uid": "js-uid"},
        "spec": {
            "suspend": True,
            "replicatedJobs": [
                {"name": "workers", "replicas": 2, "template": {"spec": {"template": template()}}}
            ],
        },
    }


def pytorchjob() -> JSON:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pt", "namespace": "team-a", "uid": "pt-uid"},
        "spec": {
            "runPolicy": {"suspend": True},
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": template()},
                "Worker": {"replicas": 2, "template": template()},
            },
        },
    }


def raycluster() -> JSON:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc", "namespace": "team-a", "uid": "rc-uid"},
        "spec": {
            "suspend": True,
            "headGroupSpec": {"template": template()},
            "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "template": template()}],
        },
    }


def raise_job(obj: JSON) -> None:
    obj["spec"]["parallelism"] = 3


def raise_jobset(obj: JSON) -> None:
    obj["spec"]["replicatedJobs"][0]["replicas"] = 5


def raise_pytorchjob(obj: JSON) -> None:
    obj["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 6


def raise_raycluster(obj: JSON) -> None:
    obj["spec"]["workerGroupSpecs"][0]["replicas"] = 4


def raise_training_run(obj: JSON) -> None:
    obj["spec"]["launcher"]["replicas"] = 2


KINDS: list[tuple[str, Integration, Callable[[], JSON], Callable[[JSON], None]]] = [
    ("job", JOB, job, raise_job),
    ("jobset", JOBSET, jobset, raise_jobset),
    ("pytorchjob", PYTORCHJOB, pytorchjob, raise_pytorchjob),
    ("raycluster", RAYCLUSTER, raycluster, raise_raycluster),
    ("declared", declared(), lambda: training_run(min_replicas=None), raise_training_run),
]
IDS = [k[0] for k in KINDS]


def admitted(integration: Integration, obj: JSON, counts: dict[str, int] | None = None) -> JSON:
    """The object's Workload with quota reserved and admitted on the flavor ``gpu-nodes`` (node label
    pool=a100, toleration gpu), each pod set at its count or at ``counts``."""
    workload = engine.workload_for(integration, obj)
    workload["metadata"]["resourceVersion"] = "5"
    assignments = [
        {
            "name": p["name"],
            "flavors": {"cpu": "gpu-nodes"},
            "resourceUsage": {"cpu": str(p["count"])},
            "count": (counts or {}).get(p["name"], p["count"]),
        }
        for p in workload["spec"]["podSets"]
    ]
    admission = {"clusterQueue": "cq", "podSetAssignments": assignments}
    workload["status"] = admitted_status(workload, admission=admission, now=NOW)
    return workload


def plan(integration: Integration, obj: JSON, workload: JSON | None) -> object:
    return plan_job(obj, workload, flavors=flavor_lookup, integration=integration)


def started(integration: Integration, obj: JSON, workload: JSON) -> JSON:
    """The object as the start of its admitted Workload leaves it (flavor nodeSelector and tolerations)."""
    step = plan(integration, obj, workload)
    assert isinstance(step, StartJob)
    # (the patch's guard that the object is still suspended is the API server's to check)
    return apply_patch(obj, [op for op in step.patch if op["op"] != "test"])


def stopped(obj: JSON, step: StopJob) -> JSON:
    return apply_patch(apply_patch(obj, list(step.first)), step.patch)


@pytest.mark.parametrize(("name", "integration", "make", "grow"), KINDS, ids=IDS)
def test_a_started_object_matches_its_admitted_workload_despite_the_flavors_injection(
    name: str, integration: Integration, make: Callable[[], JSON], grow: Callable[[JSON], None]
) -> None:
    workload = admitted(integration, make())
    running = started(integration, make(), workload)
    assert running != make()  # the flavor's nodeSelector and tolerations were written into it
    assert plan(integration, running, workload) is None


@pytest.mark.parametrize(("name", "integration", "make", "grow"), KINDS, ids=IDS)
def test_more_pods_on_a_running_object_stop_it_and_replace_its_workload(
    name: str, integration: Integration, make: Callable[[], JSON], grow: Callable[[JSON], None]
) -> None:
    workload = admitted(integration, make())
    running = started(integration, make(), workload)
    grow(running)
    stop = plan(integration, running, workload)
    assert isinstance(stop, StopJob)
    assert stop.message == NO_MATCHING_WORKLOAD
    suspended = stopped(running, stop)
    assert engine.is_suspended(integration, suspended)
    # the restore put back the template as the Workload recorded it (no flavor nodeSelector left)
    first = engine.elements(integration, suspended)[0].template() or {}
    assert "nodeSelector" not in (first.get("spec") or {})
    delete = plan(integration, suspended, workload)
    assert isinstance(delete, DeleteWorkload)
    meta = workload["metadata"]
    assert delete.message == f"Deleted not matching Workload: {meta['namespace']}/{meta['name']}"


def test_the_raised_job_queues_again_for_its_new_shape_once_its_pods_are_gone() -> None:
    workload = admitted(JOB, job())
    running = started(JOB, job(), workload)
    raise_job(running)
    step = plan(JOB, running, workload)
    assert isinstance(step, StopJob)
    suspended = stopped(running, step)
    deleted = held(workload, deleted=True)
    # the deleted Workload keeps its quota while the pods of the raised Job are still there
    assert plan(JOB, {**suspended, "status": {"active": 3}}, deleted) is None
    assert isinstance(plan(JOB, suspended, deleted), RemoveFinalizer)
    create = plan(JOB, suspended, None)
    assert isinstance(create, CreateWorkload)
    assert create.body["spec"]["podSets"][0]["count"] == 3


def test_bigger_requests_on_a_running_job_are_an_edit_too() -> None:
    workload = admitted(JOB, job())
    running = started(JOB, job(), workload)
    running["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4"
    step = plan(JOB, running, workload)
    assert isinstance(step, StopJob) and step.message == NO_MATCHING_WORKLOAD


def test_an_image_change_asks_no_more_quota_and_leaves_the_running_job_alone() -> None:
    workload = admitted(JOB, job())
    running = started(JOB, job(), workload)
    running["spec"]["template"]["spec"]["containers"][0]["image"] = "other"
    assert plan(JOB, running, workload) is None


def test_an_admitted_job_edited_before_its_start_loses_its_workload_instead_of_starting() -> None:
    workload = admitted(JOB, job())
    edited = job(parallelism=3)
    step = plan(JOB, edited, workload)
    assert isinstance(step, DeleteWorkload)


def test_a_partial_admission_runs_its_admitted_count_without_being_taken_for_an_edit() -> None:
    partial = job(parallelism=4, completions=8, annotations={MIN: "2"})
    workload = admitted(JOB, partial, counts={"main": 2})
    running = started(JOB, partial, workload)
    assert running["spec"]["parallelism"] == 2
    assert plan(JOB, running, workload) is None
    # still raised past the admitted count (by someone the webhook trusts): stopped, the count restored
    running["spec"]["parallelism"] = 3
    step = plan(JOB, running, workload)
    assert isinstance(step, StopJob) and step.message == NO_MATCHING_WORKLOAD
    restored = stopped(running, step)
    assert restored["spec"]["parallelism"] == 4
    # restored to the Workload's shape: it matches again and starts at the admitted count
    assert isinstance(plan(JOB, restored, workload), StartJob)


def test_a_declared_kinds_partial_admission_at_its_min_count_is_not_an_edit() -> None:
    integration = declared()
    run = training_run(replicas=4, min_replicas=2)
    workload = admitted(integration, run, counts={"trainer": 2})
    running = started(integration, run, workload)
    assert running["spec"]["trainer"]["replicas"] == 2
    assert plan(integration, running, workload) is None


def test_a_pending_jobs_new_tolerations_update_its_workload() -> None:
    pending = engine.workload_for(JOB, job())
    edited = job()
    edited["spec"]["template"]["spec"]["tolerations"] = [{"key": "spot", "operator": "Exists"}]
    step = plan(JOB, edited, pending)
    assert isinstance(step, UpdatePodSets)
    assert step.pod_sets[0]["template"]["spec"]["tolerations"] == [{"key": "spot", "operator": "Exists"}]
    assert plan(JOB, copy.deepcopy(job()), pending) is None


def test_only_the_workloads_pod_sets_are_read_so_nothing_else_in_it_stops_a_running_job() -> None:
    workload = admitted(JOB, job())
    running = started(JOB, job(), workload)
    workload["spec"]["priority"] = "high"  # unreadable as a whole Workload, its pod sets still are
    assert plan(JOB, running, workload) is None


def test_a_started_pod_resized_past_its_admission_is_deleted_with_kueues_stop_reason() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "team-a", "uid": "pod-uid", "labels": {QUEUE: "q"}},
        "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}], **template()["spec"]},
    }
    workload = admitted(POD, pod)
    running = started(POD, pod, workload)
    assert plan(POD, running, workload) is None
    running["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"  # an in-place resize
    step = plan(POD, running, workload)
    assert isinstance(step, DeleteObjects)
    assert (step.reason, step.message) == ("NoMatchingWorkload", NO_MATCHING_WORKLOAD)


def test_an_assignment_without_a_count_runs_its_whole_pod_set_and_that_is_no_edit() -> None:
    integration = declared()
    run = training_run(replicas=4, min_replicas=2)
    workload = admitted(integration, run, counts={"trainer": 2})
    launcher = workload["status"]["admission"]["podSetAssignments"][0]
    assert launcher["name"] == "launcher"
    del launcher["count"]  # Kueue's podset.FromAssignment then takes the pod set's own count
    running = started(integration, run, workload)
    assert (running["spec"]["launcher"]["replicas"], running["spec"]["trainer"]["replicas"]) == (1, 2)
    assert plan(integration, running, workload) is None
