"""``simulate`` queues a kind the input's ConfigMap declares or enables (a TrainJob with the runtime it
names in the input), and names an unknown one."""

from __future__ import annotations

import pytest
import yaml

from kueue_webhook.simulate.replay import replay
from kueue_webhook.simulate.scenario import SimulationError, scenario_from_documents
from tests.crds.declared_kind import config_yaml, training_run
from tests.crds.trainer import cluster_runtime, trainjob


def configmap(text: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kueue-webhook-config", "namespace": "kueue-system"},
        "data": {"config.yaml": text},
    }


def test_a_declared_kind_becomes_a_workload_named_and_sized_as_the_controller_would() -> None:
    run = training_run("llm", "ml", queue="q", gpus=2, workers=3)
    scenario = scenario_from_documents([("in.yaml", 0, run), ("in.yaml", 1, configmap(config_yaml()))])
    [submission] = scenario.submissions
    workload = submission.workload
    assert workload.meta.name.startswith("trainingrun-llm-")
    assert [(p.name, p.count) for p in workload.pod_sets] == [("launcher", 1), ("gpu", 3)]
    assert workload.queue_name == "q"


def test_an_object_of_a_kind_nobody_declared_is_refused_with_what_to_do() -> None:
    run = training_run("llm", "ml", queue="q")
    with pytest.raises(SimulationError) as failure:
        scenario_from_documents([("in.yaml", 0, run), ("in.yaml", 1, configmap(config_yaml(declared=False)))])
    assert str(failure.value) == (
        "in.yaml: document 1 (TrainingRun/llm): TrainingRun of example.com/v1 is not a kind simulate queues: "
        "enable its integration in the ConfigMap's integrations.frameworks, or declare it in "
        "integrations.declaredKinds"
    )


def test_a_built_in_kind_is_simulated_once_its_framework_is_on() -> None:
    jobset = yaml.safe_load(
        """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: ml, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  replicatedJobs:
  - name: workers
    replicas: 2
    template: {spec: {parallelism: 3, template: {spec: {containers: [{name: c, image: x}]}}}}
"""
    )
    on = configmap("integrations: {frameworks: [batch/job, jobset.x-k8s.io/jobset]}")
    scenario = scenario_from_documents([("in.yaml", 0, on), ("in.yaml", 1, jobset)])
    assert [(p.name, p.count) for p in scenario.submissions[0].workload.pod_sets] == [("workers", 6)]


QUOTA = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: ml}
spec: {clusterQueue: cq}
"""


def test_a_declared_min_count_lets_simulate_admit_the_pods_that_fit() -> None:
    """A trainer of 6 one-GPU pods, content with 2, on a 4-GPU queue: admitted at once with 4 pods, as the
    controller would start it."""
    run = training_run("elastic", "ml", queue="q", trainer=(6, 2))
    documents = [configmap(config_yaml()), *yaml.safe_load_all(QUOTA), run]
    scenario = scenario_from_documents([("in.yaml", i, d) for i, d in enumerate(documents)])
    [submission] = scenario.submissions
    assert [(p.name, p.count, p.min_count) for p in submission.workload.pod_sets] == [
        ("launcher", 1, None),
        ("trainer", 6, 2),
    ]
    [record] = replay(scenario).records.values()
    assert record.admitted_at == 0
    assert dict(record.admitted_counts) == {"launcher": 1, "trainer": 4}


def test_a_trainjob_is_simulated_with_the_runtime_it_names_wherever_the_runtime_is_in_the_input() -> None:
    frameworks = configmap("integrations: {frameworks: [batch/job, trainer.kubeflow.org/trainjob]}")
    job = trainjob("llm", "ml", "q", "torch", nodes=4)
    scenario = scenario_from_documents(
        [("in.yaml", 0, frameworks), ("in.yaml", 1, job), ("in.yaml", 2, cluster_runtime("torch"))]
    )
    [submission] = scenario.submissions
    assert submission.workload.meta.name.startswith("trainjob-llm-")
    assert [(p.name, p.count) for p in submission.workload.pod_sets] == [("node", 4)]

    with pytest.raises(SimulationError) as failure:
        scenario_from_documents([("in.yaml", 0, frameworks), ("in.yaml", 1, job)])
    assert str(failure.value) == (
        "in.yaml: document 2 (TrainJob/llm): ClusterTrainingRuntime 'torch' not found (spec.runtimeRef): "
        "the TrainJob gets its Workload once it exists in the input"
    )
