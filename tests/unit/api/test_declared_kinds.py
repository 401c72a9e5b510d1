"""Kinds declared in the ConfigMap (``integrations.declaredKinds``): parsed into the same description as the
built-in kinds, refused whole with every problem named by its field, and run by the same engine."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kueue_webhook.api.config import Configuration, ConfigurationErrors, parse_configuration
from kueue_webhook.api.integrations import engine
from kueue_webhook.api.integrations.model import Integration
from kueue_webhook.api.objects import ResourceFlavor, parse_object

TRAINING_RUN = """
integrations:
  frameworks: [batch/job]
  declaredKinds:
  - group: example.com
    version: v1
    kind: TrainingRun
    resource: trainingruns
    suspendPath: spec.suspend
    podSets:
    - path: spec.launcher
      name: Launcher
      countPath: replicas
    - path: spec.roles
      each: list
      nameField: name
      countPaths: [replicas, {path: hostsPerReplica, default: 1}]
    finished:
      succeededConditions: [Succeeded]
      failedConditions: [Failed]
    active:
      countPaths: [status.roles.*.active]
    podsReady:
      conditions: [Running]
"""


def declared(text: str = TRAINING_RUN) -> Integration:
    config = parse_configuration(text)
    assert isinstance(config, Configuration), config
    integration = config.integrations.for_kind("example.com", "TrainingRun")
    assert integration is not None
    return integration


def errors(text: str) -> list[str]:
    config = parse_configuration(text)
    assert isinstance(config, ConfigurationErrors)
    return list(config.errors)


def template(gpus: int, **spec: Any) -> dict[str, Any]:
    resources = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return {"spec": {"containers": [{"name": "c", "image": "x", "resources": resources}], **spec}}


def training_run(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "TrainingRun",
        "metadata": {
            "name": "llm",
            "namespace": "team",
            "uid": "u-1",
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
        },
        "spec": {
            "suspend": True,
            "launcher": {"template": template(0)},
            "roles": [
                {"name": "Trainer", "replicas": 2, "hostsPerReplica": 4, "template": template(1)},
                {"name": "eval", "template": template(1, nodeSelector={"zone": "a"})},
            ],
        },
        "status": status,
    }


def test_a_declared_kind_is_enabled_next_to_the_frameworks_and_named_like_kueue_frameworks() -> None:
    config = parse_configuration(TRAINING_RUN)
    assert isinstance(config, Configuration)
    assert config.integrations.names() == ("batch/job", "example.com/trainingrun")
    integration = declared()
    assert integration.declared and integration.plural == "trainingruns"
    assert integration.api_version == "example.com/v1"
    # its children (a Job it creates) are queued through it, as for the built-in kinds
    assert config.integrations.managing_owner("example.com/v1", "TrainingRun")


def test_the_engine_reads_pod_sets_counts_and_names_of_a_declared_kind() -> None:
    integration = declared()
    obj = training_run()
    pod_sets = engine.pod_sets(integration, obj)
    assert not isinstance(pod_sets, list)
    assert [(p.name, p.count) for p in pod_sets] == [("launcher", 1), ("trainer", 8), ("eval", 1)]
    workload = engine.workload_for(integration, obj)
    assert workload["metadata"]["name"] == engine.workload_name(
        "llm", "u-1", kind="TrainingRun", group="example.com"
    )
    assert workload["metadata"]["name"].startswith("trainingrun-llm-")
    assert workload["metadata"]["ownerReferences"][0]["kind"] == "TrainingRun"
    assert engine.is_suspended(integration, obj)


def test_starting_a_declared_kind_clears_its_suspend_field_and_injects_each_pod_sets_flavor() -> None:
    integration = declared()
    flavor = parse_object(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "gpu"},
            "spec": {"nodeLabels": {"pool": "gpu"}},
        }
    )
    assert isinstance(flavor, ResourceFlavor)
    ops = engine.start_patch(integration, training_run(), {"trainer": [flavor], "eval": [flavor]})
    assert ops[:2] == [
        {"op": "test", "path": "/spec/suspend", "value": True},
        {"op": "replace", "path": "/spec/suspend", "value": False},
    ]
    selectors = {op["path"]: op["value"] for op in ops[2:]}
    assert selectors == {
        "/spec/roles/0/template/spec/nodeSelector": {"pool": "gpu"},
        "/spec/roles/1/template/spec/nodeSelector": {"zone": "a", "pool": "gpu"},
    }


def test_finished_active_and_ready_follow_the_declared_rules() -> None:
    integration = declared()
    condition = {"type": "Failed", "status": "True", "message": "OOM"}
    assert engine.finished(integration, training_run(conditions=[condition])) == (True, False, "OOM")
    assert engine.finished(integration, training_run()) == (False, True, "")
    assert engine.has_active_pods(integration, training_run(roles=[{"active": 0}, {"active": 2}]))
    assert not engine.has_active_pods(integration, training_run(roles=[{"active": 0}]))
    assert engine.pods_ready(integration, training_run(conditions=[{"type": "Running", "status": "True"}]))


def test_a_map_of_pod_sets_with_a_phase_and_a_state_rule() -> None:
    text = """
integrations:
  declaredKinds:
  - {group: ml.example.org, version: v1beta1, kind: Sweep, resource: sweeps, suspendPath: spec.control.paused,
     podSets: [{path: spec.replicas, each: map, order: [Chief, Worker], templatePath: pod}],
     finished: {phasePath: status.phase, succeededPhases: [Done], failedPhases: [Error]},
     active: {when: {path: status.phase, in: [Running]}}}
"""
    config = parse_configuration(text)
    assert isinstance(config, Configuration), config
    integration = config.integrations.for_kind("ml.example.org", "Sweep")
    assert integration is not None
    obj = {
        "spec": {
            "control": {"paused": True},
            "replicas": {
                "Worker": {"pod": template(1)},
                "Chief": {"pod": template(0)},
                "Other": {"pod": template(5)},
            },
        },
        "status": {"phase": "Running"},
    }
    pod_sets = engine.pod_sets(integration, obj)
    assert not isinstance(pod_sets, list)
    assert [(p.name, p.count) for p in pod_sets] == [("chief", 1), ("worker", 1)]
    assert engine.suspend_ops(integration, {"spec": {}}) == [
        {"op": "add", "path": "/spec/control", "value": {"paused": True}}
    ]
    assert engine.has_active_pods(integration, obj)
    assert engine.finished(integration, {"status": {"phase": "Done"}})[:2] == (True, True)


BASE: dict[str, Any] = {
    "group": "example.com",
    "version": "v1",
    "kind": "TrainingRun",
    "resource": "trainingruns",
    "suspendPath": "spec.suspend",
    "podSets": [{"path": "spec", "name": "main"}],
}
PREFIX = "integrations.declaredKinds[0]"
MISSING = object()


def config_with(*declarations: dict[str, Any]) -> str:
    return yaml.safe_dump({"integrations": {"declaredKinds": list(declarations)}})


def changed(**fields: Any) -> dict[str, Any]:
    out = {**BASE, **fields}
    return {k: v for k, v in out.items() if v is not MISSING}


@pytest.mark.parametrize(
    ("declaration", "expected"),
    [
        (changed(group=MISSING), ".group: Required value"),
        (changed(version="one"), ".version: must be an API version such as v1 or v1beta2, got 'one'"),
        (changed(kind="trainingRun"), ".kind: must be a kind such as TrainingRun"),
        (changed(resource="TrainingRuns"), ".resource: must be the lowercase plural resource name"),
        (changed(suspendPath=MISSING), ".suspendPath: Required value"),
        (changed(suspendPath="spec.*"), ".suspendPath: '*' is not allowed here"),
        (changed(podSets=MISSING), ".podSets: Required value"),
        (changed(podSets=[{"path": "spec"}]), ".podSets[0].name: Required value"),
        (
            changed(podSets=[{"path": "spec.roles", "each": "lists"}]),
            ".podSets[0].each: must be one of one, list, map, got 'lists'",
        ),
        (
            changed(podSets=[{"path": "spec", "name": "main", "countPath": "a b"}]),
            ".podSets[0].countPath: 'a b' is not a field name",
        ),
        (
            changed(podSets=[{"path": "spec", "name": "main", "replicas": 2}]),
            ".podSets[0].replicas: unknown field",
        ),
        (changed(finished={"succeededPhases": ["Done"]}), ".finished.phasePath: Required value"),
        (changed(active={"when": {"path": "status.state"}}), ".active.when.in: Required value"),
        (changed(suspend="spec.suspend"), ".suspend: unknown field"),
        (
            changed(group="jobset.x-k8s.io", kind="JobSet"),
            ": JobSet.jobset.x-k8s.io is built in: enable it with integrations.frameworks: "
            "[jobset.x-k8s.io/jobset]",
        ),
    ],
)
def test_a_bad_declaration_is_refused_with_the_field_that_is_wrong(
    declaration: dict[str, Any], expected: str
) -> None:
    problems = errors(config_with(declaration))
    assert any(p.startswith(PREFIX + expected) for p in problems), problems


def test_every_problem_is_reported_at_once_and_a_kind_cannot_be_declared_twice() -> None:
    problems = errors(config_with(BASE, BASE, {"group": "example.com"}, 3))  # type: ignore[arg-type]
    assert (
        "integrations.declaredKinds[1]: kind example.com/TrainingRun is already declared by "
        "integrations.declaredKinds[0]"
    ) in problems
    assert "integrations.declaredKinds[2].version: Required value" in problems
    assert "integrations.declaredKinds[2].kind: Required value" in problems
    assert "integrations.declaredKinds[3]: must be a mapping, got int" in problems
    assert errors("integrations:\n  declaredKinds: {kind: X}\n") == [
        "integrations.declaredKinds: must be a list of kind declarations, got dict"
    ]
