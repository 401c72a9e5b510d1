"""Job -> Workload derivation and the patches that start and stop a Job, as Kueue's Job integration does."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kueue_webhook.api.config import Configuration, parse_configuration
from kueue_webhook.api.integrations import JOB, engine
from kueue_webhook.api.integrations.engine import FlavorConflict, workload_name
from kueue_webhook.api.integrations.managed import ON_ITS_OWN, is_managed
from kueue_webhook.api.integrations.owners import Ancestry
from kueue_webhook.api.objects import PodSet, ResourceFlavor, Workload, parse_resource_flavor, parse_workload
from tests.golden import GOLDEN


def golden_job() -> dict[str, Any]:
    body: dict[str, Any] = json.loads((GOLDEN / "job-create.json").read_text())["response"]["body"]
    return body


def job(spec: dict[str, Any] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ns", "uid": "uid-1", "labels": labels or {}},
        "spec": spec or {"template": {"spec": {"containers": [{"name": "c"}]}}},
    }


def flavor(labels: dict[str, str], tolerations: list[dict[str, Any]] | None = None) -> ResourceFlavor:
    parsed = parse_resource_flavor(
        {"metadata": {"name": "gpu"}, "spec": {"nodeLabels": labels, "tolerations": tolerations or []}}
    )
    assert isinstance(parsed, ResourceFlavor)
    return parsed


# Kueue's own expectations for GetWorkloadNameForOwnerWithGVK (jobframework/workload_names_test.go)
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("name", "job-name-ef3a1"),
        (
            "marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-department-"
            "social-media-engagement-tracker-and-analytics-dashboard-v2-final-revision-by-engineering-team-lead-"
            "senior-architect-validation-checked-approved-by-legal-and-ops-dept",
            "job-marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-department-"
            "social-media-engagement-tracker-and-analytics-dashboard-v2-final-revision-by-engineering-team-lead-"
            "senior-architect-validation-checked-approved-by-l-218b8",
        ),
    ],
)
def test_workload_name_matches_kueue(name: str, expected: str) -> None:
    assert workload_name(name, "uid") == expected
    assert len(workload_name(name * 3, "uid")) <= 253


def test_workload_name_is_stable_for_a_uid_and_differs_between_uids() -> None:
    assert workload_name("train", "a") == workload_name("train", "a")
    assert workload_name("train", "a") != workload_name("train", "b")


@pytest.mark.parametrize(
    ("spec", "count"),
    [
        ({}, 1),  # parallelism defaults to 1
        ({"parallelism": 4}, 4),  # completions unset: parallelism
        ({"parallelism": 4, "completions": 2}, 2),
        ({"parallelism": 2, "completions": 10}, 2),
        ({"parallelism": 0}, 0),
    ],
)
def test_pod_count_is_min_of_parallelism_and_completions(spec: dict[str, Any], count: int) -> None:
    assert engine.pod_count(JOB, {"spec": spec}) == count


def test_golden_job_gives_one_main_pod_set_of_two_gpus() -> None:
    pod_sets = engine.pod_sets(JOB, golden_job())
    assert isinstance(pod_sets, tuple)
    assert [(p.name, p.count, p.requests) for p in pod_sets] == [("main", 1, {"nvidia.com/gpu": 2 * 10**9})]


def test_job_without_containers_is_an_error_not_an_exception() -> None:
    result = engine.pod_sets(JOB, job({"template": {"spec": {}}}))
    assert [str(e) for e in result] == ["spec.template.spec.containers: Required value"]  # type: ignore[union-attr]


def test_queue_name_from_label_then_legacy_annotation() -> None:
    assert engine.queue_name(job(labels={"kueue.x-k8s.io/queue-name": "q"})) == "q"
    legacy = job()
    legacy["metadata"]["annotations"] = {"kueue.x-k8s.io/queue-name": "old"}
    assert engine.queue_name(legacy) == "old"
    assert not is_managed(job(), JOB, ancestry=ON_ITS_OWN)
    assert is_managed(job(labels={"kueue.x-k8s.io/queue-name": "q"}), JOB, ancestry=ON_ITS_OWN)


def test_a_job_run_by_a_real_queued_owner_is_not_queued_on_its_own() -> None:
    """Kueue queues the owner (the PyTorchJob, JobSet, ...), not its Jobs; whether the owner is real is the
    owner walk's (tests/unit/api/test_owners.py)."""
    owned = job(labels={"kueue.x-k8s.io/queue-name": "q"})
    assert not is_managed(owned, JOB, ancestry=Ancestry(ancestor={"metadata": {"name": "x"}}))


def test_jobs_without_a_queue_are_managed_only_where_the_configuration_says() -> None:
    config = parse_configuration("manageJobsWithoutQueueName: true")
    assert isinstance(config, Configuration)
    assert not is_managed(job(), JOB, ancestry=ON_ITS_OWN)  # Kueue's default
    assert is_managed(
        job(),
        JOB,
        ancestry=ON_ITS_OWN,
        config=config,
        namespace_labels={"kubernetes.io/metadata.name": "team-a"},
    )
    assert not is_managed(
        job(),
        JOB,
        ancestry=ON_ITS_OWN,
        config=config,
        namespace_labels={"kubernetes.io/metadata.name": "kube-system"},
    )


def test_priority_from_workload_priority_class_label_wins_over_pod_priority() -> None:
    spec = {"template": {"spec": {"priorityClassName": "pod-high", "containers": [{"name": "c"}]}}}
    labelled = job(spec, labels={"kueue.x-k8s.io/priority-class": "urgent"})
    assert engine.priority(JOB, labelled, engine.PriorityClasses(workload={"urgent": 1000})) == (
        1000,
        "urgent",
        "kueue.x-k8s.io",
    )
    assert engine.priority(JOB, job(spec), engine.PriorityClasses(pod={"pod-high": 50})) == (
        50,
        "pod-high",
        "scheduling.k8s.io",
    )
    assert engine.priority(JOB, job(), engine.NO_CLASSES) == (0, "", "")


def test_workload_manifest_for_golden_job_parses_back_to_the_same_requests() -> None:
    source = golden_job()
    manifest = engine.workload_for(JOB, source)
    assert manifest["metadata"]["name"] == workload_name("sample", source["metadata"]["uid"])
    assert manifest["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "sample",
            "uid": source["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    # Kueue's jobframework.NewWorkload: a Job's Workload holds its quota until the controller lets go
    assert manifest["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
    assert manifest["spec"]["queueName"] == "team-a-gpu"
    assert manifest["spec"]["podSets"][0]["template"] == source["spec"]["template"]
    parsed = parse_workload(manifest)
    assert isinstance(parsed, Workload)
    assert parsed.pod_sets[0].requests == {"nvidia.com/gpu": 2 * 10**9}


def test_workload_manifest_records_the_priority_class() -> None:
    manifest = engine.workload_for(
        JOB,
        job(labels={"kueue.x-k8s.io/queue-name": "q", "kueue.x-k8s.io/priority-class": "urgent"}),
        engine.PriorityClasses(workload={"urgent": 7}),
    )
    assert manifest["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "urgent",
    }
    assert manifest["spec"]["priority"] == 7


def test_unsuspend_injects_node_labels_and_tolerations() -> None:
    source = job({"suspend": True, "template": {"spec": {"containers": [{"name": "c"}]}}})
    toleration = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
    ops = engine.start_patch(
        JOB, source, {"main": [flavor({"nvidia.com/gpu.present": "true"}, [toleration])]}
    )
    assert ops == [
        {"op": "test", "path": "/spec/suspend", "value": True},
        {"op": "replace", "path": "/spec/suspend", "value": False},
        {
            "op": "add",
            "path": "/spec/template/spec/nodeSelector",
            "value": {"nvidia.com/gpu.present": "true"},
        },
        {"op": "add", "path": "/spec/template/spec/tolerations", "value": [toleration]},
    ]


def test_unsuspend_refuses_a_flavor_that_contradicts_the_jobs_node_selector() -> None:
    source = job({"template": {"spec": {"nodeSelector": {"zone": "a"}, "containers": [{"name": "c"}]}}})
    with pytest.raises(FlavorConflict, match="zone"):
        engine.start_patch(JOB, source, {"main": [flavor({"zone": "b"})]})


def test_resuspend_restores_the_original_template() -> None:
    original = {"spec": {"containers": [{"name": "c"}]}}
    running = job({"template": copy.deepcopy(original), "suspend": False})  # the API server defaults suspend
    running["spec"]["template"]["spec"]["nodeSelector"] = {"a": "b"}
    running["spec"]["template"]["spec"]["tolerations"] = [{"key": "x", "operator": "Exists"}]
    assert engine.restore_ops(JOB, running, [original]) == [
        {"op": "replace", "path": "/spec/suspend", "value": True},
        {"op": "remove", "path": "/spec/template/spec/nodeSelector"},
        {"op": "remove", "path": "/spec/template/spec/tolerations"},
    ]
    with_selector = {"spec": {"nodeSelector": {"keep": "me"}, "containers": [{"name": "c"}]}}
    assert engine.restore_ops(JOB, running, [with_selector])[1] == {
        "op": "add",
        "path": "/spec/template/spec/nodeSelector",
        "value": {"keep": "me"},
    }


def test_pod_set_total_scales_per_pod_requests() -> None:
    pod_set = PodSet("main", 3, {"cpu": 500_000_000})
    assert pod_set.total() == {"cpu": 1_500_000_000}
