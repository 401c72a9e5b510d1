"""Partial admission for a declared kind (``podSets[].minCountPath``): the pod set's Workload gets
``minCount`` from the object's field, a partial admission starts it with the admitted count written into its
count field, and stopping it writes the full count back, as Kueue's Job does with parallelism
(``RunWithPodSetsInfo``/``RestorePodSetsInfo``). A declaration that could not write the count back is
refused, naming the field."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kueue_webhook.api.config import Configuration, ConfigurationErrors, parse_configuration
from kueue_webhook.api.integrations import engine
from kueue_webhook.api.integrations.model import Integration

PREFIX = "integrations.declaredKinds[0].podSets"
LAUNCHER = {"path": "spec.launcher", "name": "launcher", "countPath": "replicas"}
TRAINER = {"path": "spec.trainer", "name": "trainer", "countPath": "replicas", "minCountPath": "minReplicas"}


def declaration(*pod_sets: dict[str, Any]) -> dict[str, Any]:
    return {
        "group": "example.com",
        "version": "v1",
        "kind": "TrainingRun",
        "resource": "trainingruns",
        "suspendPath": "spec.suspend",
        "podSets": list(pod_sets),
    }


def parsed(*pod_sets: dict[str, Any]) -> Configuration | ConfigurationErrors:
    text = yaml.safe_dump({"integrations": {"declaredKinds": [declaration(*pod_sets)]}})
    return parse_configuration(text)


def declared() -> Integration:
    config = parsed(LAUNCHER, TRAINER)
    assert isinstance(config, Configuration), config
    integration = config.integrations.for_kind("example.com", "TrainingRun")
    assert integration is not None
    return integration


def template(gpus: int) -> dict[str, Any]:
    resources = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return {"spec": {"containers": [{"name": "c", "image": "x", "resources": resources}]}}


def training_run(*, replicas: int = 4, min_replicas: Any = 2, suspend: bool = True) -> dict[str, Any]:
    trainer: dict[str, Any] = {"replicas": replicas, "template": template(1)}
    if min_replicas is not None:
        trainer["minReplicas"] = min_replicas
    return {
        "apiVersion": "example.com/v1",
        "kind": "TrainingRun",
        "metadata": {"name": "llm", "namespace": "team", "uid": "u-1"},
        "spec": {
            "suspend": suspend,
            "launcher": {"replicas": 1, "template": template(0)},
            "trainer": trainer,
        },
    }


def test_the_workload_pod_set_gets_min_count_from_the_declared_field() -> None:
    workload = engine.workload_for(declared(), training_run())
    pod_sets = {p["name"]: p for p in workload["spec"]["podSets"]}
    assert (pod_sets["trainer"]["count"], pod_sets["trainer"]["minCount"]) == (4, 2)
    assert "minCount" not in pod_sets["launcher"]
    parsed_sets = engine.pod_sets(declared(), training_run())
    assert not isinstance(parsed_sets, list)
    assert [(p.name, p.min_count) for p in parsed_sets] == [("launcher", None), ("trainer", 2)]


@pytest.mark.parametrize("min_replicas", [None, 0, 4, 5, "2", True])
def test_a_min_count_that_leaves_nothing_to_shrink_keeps_the_pod_set_all_or_nothing(
    min_replicas: Any,
) -> None:
    """As Kueue's CanBePartiallyAdmitted: only a minCount below the count lets a pod set shrink; anything
    else (unset, not an integer, outside 1..count-1) would only make the Workload invalid."""
    workload = engine.workload_for(declared(), training_run(min_replicas=min_replicas))
    assert all("minCount" not in p for p in workload["spec"]["podSets"])


def test_a_partial_start_writes_the_admitted_count_and_the_stop_writes_the_full_count_back() -> None:
    integration = declared()
    obj = training_run()
    ops = engine.start_patch(integration, obj, {}, counts={"launcher": 1, "trainer": 3})
    assert ops == [
        {"op": "test", "path": "/spec/suspend", "value": True},
        {"op": "replace", "path": "/spec/suspend", "value": False},
        {"op": "add", "path": "/spec/trainer/replicas", "value": 3},
    ]
    running = training_run(replicas=3, suspend=False)
    templates = [p["template"] for p in engine.workload_for(integration, obj)["spec"]["podSets"]]
    # one patch: a declared kind has no rule against changing a running count (a Job's takes two)
    assert engine.stop_patches(integration, running, templates, {"launcher": 1, "trainer": 4}) == [
        [
            {"op": "replace", "path": "/spec/suspend", "value": True},
            {"op": "add", "path": "/spec/trainer/replicas", "value": 4},
        ]
    ]


def test_a_run_admitted_at_its_min_count_is_still_restored() -> None:
    """Running at minCount pods, its minCount is no longer below its count; the count field still follows
    the admission, as Kueue's Job restores parallelism whenever its min-parallelism annotation reads."""
    running = training_run(replicas=2, suspend=False)
    stop = engine.stop_patches(declared(), running, [{}, {}], {"launcher": 1, "trainer": 4})
    assert {"op": "add", "path": "/spec/trainer/replicas", "value": 4} in stop[-1]


def test_a_full_admission_and_an_object_without_min_count_leave_the_count_field_alone() -> None:
    integration = declared()
    full = engine.start_patch(integration, training_run(), {}, counts={"launcher": 1, "trainer": 4})
    assert [op["path"] for op in full] == ["/spec/suspend", "/spec/suspend"]
    whole = training_run(min_replicas=None)
    ops = engine.start_patch(integration, whole, {}, counts={"trainer": 3})
    assert not any(op["path"].endswith("/replicas") for op in ops)


def test_an_unset_count_field_is_created_when_written() -> None:
    obj = training_run()
    del obj["spec"]["trainer"]["replicas"]  # one pod by default: nothing to shrink, but restore creates it
    ops = engine.stop_patches(
        declared(), {**obj, "spec": {**obj["spec"], "suspend": False}}, [{}, {}], {"trainer": 1}
    )
    assert {"op": "add", "path": "/spec/trainer/replicas", "value": 1} in ops[-1]


@pytest.mark.parametrize(
    ("pod_sets", "expected"),
    [
        (
            [{"path": "spec.workers", "each": "list", "countPath": "replicas", "minCountPath": "min"}],
            "[0].minCountPath: only for each: one (each list item is a pod set, and one pod set may have it)",
        ),
        (
            [{"path": "spec.trainer", "name": "trainer", "minCountPath": "minReplicas"}],
            "[0].minCountPath: needs countPath: the field the admitted count is written into",
        ),
        (
            [{**TRAINER, "countPath": None, "countPaths": ["replicas", "hosts"]}],
            "[0].minCountPath: needs one count field (countPath), not a product of countPaths",
        ),
        (
            [{**TRAINER, "minCountPath": "replicas"}],
            "[0].minCountPath: must differ from the count field replicas",
        ),
        ([{**TRAINER, "minCountPath": "min.*"}], "[0].minCountPath: '*' is not allowed here"),
        (
            [{**LAUNCHER, "minCountPath": "min"}, TRAINER],
            "[1].minCountPath: only one pod set may have a minCount (a Workload allows one), "
            f"{PREFIX}[0] has one",
        ),
    ],
)
def test_a_min_count_path_that_could_not_be_honoured_is_refused_with_its_field(
    pod_sets: list[dict[str, Any]], expected: str
) -> None:
    config = parsed(*({k: v for k, v in p.items() if v is not None} for p in pod_sets))
    assert isinstance(config, ConfigurationErrors)
    assert any(e.startswith(PREFIX + expected) for e in config.errors), config.errors


def test_a_single_count_paths_entry_with_a_cap_may_have_a_min_count() -> None:
    capped = {**TRAINER, "countPath": None, "countPaths": [{"path": "replicas", "atMost": "maxReplicas"}]}
    config = parsed({k: v for k, v in capped.items() if v is not None})
    assert isinstance(config, Configuration), config
